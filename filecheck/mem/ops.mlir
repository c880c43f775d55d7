// RUN: npu-opt %s | npu-opt | filecheck %s
// RUN: npu-opt %s --print-op-generic | npu-opt | filecheck %s

// Round trip of the mem dialect: regions, and buffers on ops (one per result, an array
// for several results) and on function arguments and results.

// CHECK:      mem.region @constants {memory = "flash", size = 64 : i64, alignment = 64 : i64}
// CHECK-NEXT: mem.region @mutable {memory = "sram", size = 128 : i64, alignment = 64 : i64, lower_bound = 128 : i64, naive = 128 : i64}
// CHECK-NEXT: mem.region @activations {memory = "sram", size = 128 : i64, alignment = 16 : i64, lower_bound = 64 : i64, naive = 256 : i64}
// CHECK-NEXT: mem.region @sram {memory = "sram", size = 0 : i64, alignment = 16 : i64}
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%x: tensor<2x4xf32> {nn.name = "x", mem.buffer = #mem.buffer<"mutable", 0, 32>})
// CHECK-SAME:    -> (tensor<2x4xf32> {nn.name = "y", mem.buffer = #mem.buffer<"mutable", 64, 32>})
// CHECK-NEXT:    %w = qnn.constant {mem.buffer = #mem.buffer<"constants", 0, 4>, value = dense<1> : tensor<4xi8>} : tensor<4x!qnn.uniform<i8:f32, 0.5>>
// CHECK-NEXT:    %r = nn.relu %x {mem.buffer = #mem.buffer<"activations", 0, 32, live [0, 1]>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %a, %b = nn.split %r {mem.buffer = [#mem.buffer<"activations", 0, 16, live [1, 2]>, #mem.buffer<"activations", 16, 16, live [1, 2]>], axis = 0 : i64} : (tensor<2x4xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>)
// CHECK-NEXT:    %c = nn.concat %a, %b {mem.buffer = #mem.buffer<"activations", 64, 32, live [2, 3]>, axis = 0 : i64} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %y = nn.neg %c {mem.buffer = #mem.buffer<"mutable", 64, 32>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %y : tensor<2x4xf32>
mem.region @constants {memory = "flash", size = 64 : i64, alignment = 64 : i64}
mem.region @mutable {memory = "sram", size = 128 : i64, alignment = 64 : i64, lower_bound = 128 : i64, naive = 128 : i64}
mem.region @activations {memory = "sram", size = 128 : i64, alignment = 16 : i64, lower_bound = 64 : i64, naive = 256 : i64}
mem.region @sram {memory = "sram", size = 0 : i64, alignment = 16 : i64}
func.func @main(%x: tensor<2x4xf32> {nn.name = "x", mem.buffer = #mem.buffer<"mutable", 0, 32>}) -> (tensor<2x4xf32> {nn.name = "y", mem.buffer = #mem.buffer<"mutable", 64, 32>}) {
  %w = qnn.constant {mem.buffer = #mem.buffer<"constants", 0, 4>, value = dense<1> : tensor<4xi8>} : tensor<4x!qnn.uniform<i8:f32, 0.5>>
  %r = nn.relu %x {mem.buffer = #mem.buffer<"activations", 0, 32, live [0, 1]>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %a, %b = nn.split %r {mem.buffer = [#mem.buffer<"activations", 0, 16, live [1, 2]>, #mem.buffer<"activations", 16, 16, live [1, 2]>], axis = 0 : i64} : (tensor<2x4xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>)
  %c = nn.concat %a, %b {mem.buffer = #mem.buffer<"activations", 64, 32, live [2, 3]>, axis = 0 : i64} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  %y = nn.neg %c {mem.buffer = #mem.buffer<"mutable", 64, 32>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
