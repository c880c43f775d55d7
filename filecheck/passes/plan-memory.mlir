// RUN: npu-opt %s --split-input-file -p 'plan-memory{target=mcu-64}' | filecheck %s
// RUN: npu-opt %s --split-input-file -p 'plan-memory{target=mcu-64 schedule=false}' | filecheck %s --check-prefix=FILE
// RUN: npu-opt %s --split-input-file -p 'plan-memory{target=mcu-64 alignment=16}' | filecheck %s --check-prefix=A16
// RUN: npu-opt %s --split-input-file -p 'plan-memory{target=mcu-64},plan-memory{target=mcu-64}' | filecheck %s
// RUN: not npu-opt %s -p 'plan-memory{target=no-such-npu}' 2>&1 | filecheck %s --check-prefix=BAD-TARGET
// RUN: not npu-opt %s -p 'plan-memory{target=mcu-64 alignment=48}' 2>&1 | filecheck %s --check-prefix=BAD-ALIGN
// RUN: not npu-opt %s -p 'plan-memory' 2>&1 | filecheck %s --check-prefix=NO-TARGET

// BAD-TARGET: npu-opt: error: unknown target 'no-such-npu' (available: {{.*}}mcu-64
// BAD-ALIGN: npu-opt: error: plan-memory: alignment must be a power of two, got 48
// NO-TARGET: npu-opt: error: plan-memory needs a target: plan-memory{target=NAME or "PATH"}

// Views and in-place reuse (mcu-64: 64-byte alignment). Tensors are 128 bytes (1x2x4x4
// f32), the concat 256. %r (relu, in place of %a) and %g (two reshapes of %b) are written
// straight into their slices of %c at 0 and 128; the input and the output live in the
// mutable region, which is x (128 bytes) then y (256 bytes). Activations: the concat's
// 256 bytes, live from the first slice's producer to the tanh (lower bound = size).
// Running plan-memory twice re-plans from scratch and gives the same result.
// CHECK:       mem.region @constants {memory = "flash", size = 0 : i64, alignment = 64 : i64, lower_bound = 0 : i64, naive = 0 : i64}
// CHECK-NEXT:  mem.region @mutable {memory = "sram", size = 384 : i64, alignment = 64 : i64, lower_bound = 384 : i64, naive = 384 : i64}
// CHECK-NEXT:  mem.region @activations {memory = "sram", size = 256 : i64, alignment = 64 : i64, lower_bound = 256 : i64, naive = 896 : i64}
// CHECK-NOT:   mem.region
// CHECK-LABEL: func.func @views
// CHECK-SAME:    {nn.name = "x", mem.buffer = #mem.buffer<"mutable", 0, 128>}
// CHECK-SAME:    {nn.name = "y", mem.buffer = #mem.buffer<"mutable", 128, 256>}
// CHECK-NEXT:    %a = nn.exp %x {mem.buffer = #mem.buffer<"activations", 0, 128, live [0, 1]>}
// CHECK-NEXT:    %r = nn.relu %a {mem.buffer = #mem.buffer<"activations", 0, 128, live [1, 5]>}
// CHECK-NEXT:    %b = nn.neg %x {mem.buffer = #mem.buffer<"activations", 128, 128, live [2, 3]>}
// CHECK-NEXT:    %f = nn.reshape %b {mem.buffer = #mem.buffer<"activations", 128, 128, live [3, 4]>}
// CHECK-NEXT:    %g = nn.reshape %f {mem.buffer = #mem.buffer<"activations", 128, 128, live [4, 5]>}
// CHECK-NEXT:    %c = nn.concat %r, %g {mem.buffer = #mem.buffer<"activations", 0, 256, live [0, 6]>, axis = 1 : i64}
// CHECK-NEXT:    %y = nn.tanh %c {mem.buffer = #mem.buffer<"mutable", 128, 256>}
// CHECK-NEXT:    func.return %y
func.func @views(%x: tensor<1x2x4x4xf32> {nn.name = "x"}) -> (tensor<1x4x4x4xf32> {nn.name = "y"}) {
  %a = nn.exp %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %r = nn.relu %a : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %b = nn.neg %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %f = nn.reshape %b : (tensor<1x2x4x4xf32>) -> tensor<1x32xf32>
  %g = nn.reshape %f : (tensor<1x32xf32>) -> tensor<1x2x4x4xf32>
  %c = nn.concat %r, %g {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
  %y = nn.tanh %c : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}

// -----

// Scheduling: in file order both 256-byte branches are live together with %ga (576
// bytes); the chosen order finishes branch a first: peak %b + %ga + %gb (64 aligned
// each) = 384. Reshapes are views: of the input in the mutable region, of %b in the
// activations. A reshape that is a graph output gets its own mutable bytes (x at 0,
// y at 256, z at 320).
// CHECK:       mem.region @mutable {memory = "sram", size = 384 : i64
// CHECK-NEXT:  mem.region @activations {memory = "sram", size = 384 : i64, alignment = 64 : i64, lower_bound = 384 : i64, naive = 896 : i64}
// CHECK-LABEL: func.func @schedule
// CHECK-NEXT:    %v = nn.reshape %x {mem.buffer = #mem.buffer<"mutable", 0, 256>}
// CHECK-NEXT:    %a = nn.exp %x {mem.buffer = #mem.buffer<"activations", 0, 256, live [1, 2]>
// CHECK-NEXT:    %ga = nn.global_avg_pool %a {mem.buffer = #mem.buffer<"activations", 256, 16, live [2, 6]>
// CHECK-NEXT:    %b = nn.neg %v {mem.buffer = #mem.buffer<"activations", 0, 256, live [3, 5]>
// CHECK-NEXT:    %c = nn.reshape %b {mem.buffer = #mem.buffer<"activations", 0, 256, live [4, 5]>}
// CHECK-NEXT:    %gb = nn.global_max_pool %c {mem.buffer = #mem.buffer<"activations", 320, 16, live [5, 6]>
// CHECK-NEXT:    %y = nn.add %ga, %gb {mem.buffer = #mem.buffer<"mutable", 256, 16>
// CHECK-NEXT:    %z = nn.reshape %y {mem.buffer = #mem.buffer<"mutable", 320, 16>}
// CHECK-NEXT:    func.return %y, %z
// FILE:        mem.region @activations {memory = "sram", size = 576 : i64, alignment = 64 : i64, lower_bound = 576 : i64, naive = 896 : i64}
// FILE-LABEL:  func.func @schedule
// FILE-NEXT:     %a = nn.exp %x
// FILE-NEXT:     %v = nn.reshape %x
// FILE-NEXT:     %b = nn.neg %v
func.func @schedule(%x: tensor<1x4x4x4xf32> {nn.name = "x"}) -> (tensor<1x4x1x1xf32> {nn.name = "y"}, tensor<4xf32> {nn.name = "z"}) {
  %a = nn.exp %x {name = "a"} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %v = nn.reshape %x : (tensor<1x4x4x4xf32>) -> tensor<1x4x16xf32>
  %b = nn.neg %v {name = "b"} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %c = nn.reshape %b : (tensor<1x4x16xf32>) -> tensor<1x4x4x4xf32>
  %ga = nn.global_avg_pool %a {name = "ga"} : (tensor<1x4x4x4xf32>) -> tensor<1x4x1x1xf32>
  %gb = nn.global_max_pool %c {name = "gb"} : (tensor<1x4x4x4xf32>) -> tensor<1x4x1x1xf32>
  %y = nn.add %ga, %gb {name = "y"} : (tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x1xf32>
  %z = nn.reshape %y : (tensor<1x4x1x1xf32>) -> tensor<4xf32>
  func.return %y, %z : tensor<1x4x1x1xf32>, tensor<4xf32>
}

// -----

// A concat whose slices are not contiguous (axis 2 with 2 channels before it) copies:
// every operand keeps its own bytes.
// CHECK-LABEL: func.func @strided_concat
// CHECK-NEXT:    %a = nn.exp %x {mem.buffer = #mem.buffer<"activations", [[A:[0-9]+]], 64, live [0, 2]>}
// CHECK-NEXT:    %b = nn.neg %x {mem.buffer = #mem.buffer<"activations", [[B:[0-9]+]], 64, live [1, 2]>}
// CHECK-NOT:     #mem.buffer<"activations", [[A]],
// CHECK-NOT:     #mem.buffer<"activations", [[B]],
// CHECK:         func.return
func.func @strided_concat(%x: tensor<1x2x2x4xf32> {nn.name = "x"}) -> (tensor<1x2x4x4xf32> {nn.name = "y"}) {
  %a = nn.exp %x : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %b = nn.neg %x : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %c = nn.concat %a, %b {axis = 2 : i64} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %y = nn.relu %c : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// Quantized: sizes from the storage type (i8: 16 bytes, i32 bias: 8 bytes). Constants
// are stacked in order (alignment 16: w at 0, b at 16, region 32 bytes); the lut runs
// in place of the add (its input dies there); the requantize is the output.
// A16:       mem.region @constants {memory = "flash", size = 32 : i64, alignment = 16 : i64, lower_bound = 32 : i64, naive = 32 : i64}
// A16-NEXT:  mem.region @mutable {memory = "sram", size = 32 : i64, alignment = 16 : i64
// A16-NEXT:  mem.region @activations {memory = "sram", size = 16 : i64, alignment = 16 : i64, lower_bound = 16 : i64, naive = 32 : i64}
// A16-LABEL: func.func @quantized
// A16-NEXT:    %w = qnn.constant {mem.buffer = #mem.buffer<"constants", 0, 4>
// A16-NEXT:    %s = qnn.add %x, %w {mem.buffer = #mem.buffer<"activations", 0, 16, live [0, 2]>
// A16-NEXT:    %t = qnn.lut %s {mem.buffer = #mem.buffer<"activations", 0, 16, live [1, 2]>
// A16-NEXT:    %b = qnn.constant {mem.buffer = #mem.buffer<"constants", 16, 8>
// A16-NEXT:    %y = qnn.requantize %t {mem.buffer = #mem.buffer<"mutable", 16, 16>
func.func @quantized(%x: tensor<1x4x2x2x!qnn.uniform<i8:f32, 0.05:-3>> {nn.name = "x"}) -> (tensor<1x4x2x2x!qnn.uniform<u8:f32, 0.1:128>> {nn.name = "y"}) {
  %w = qnn.constant {value = dense<[[[[1]], [[2]], [[3]], [[4]]]]> : tensor<1x4x1x1xi8>, name = "w"} : tensor<1x4x1x1x!qnn.uniform<i8:f32, 0.05:-3>>
  %s = qnn.add %x, %w {left_shift = 20 : i64, lhs_multiplier = 1073741824 : i64, lhs_shift = 31 : i64, rhs_multiplier = 1073741824 : i64, rhs_shift = 31 : i64, multiplier = array<i64: 1073741824>, shift = array<i64: 50>} : (tensor<1x4x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<1x4x1x1x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x2x2x!qnn.uniform<i8:f32, 0.05:-3>>
  %t = qnn.lut %s {table = dense<7> : tensor<256xi8>} : (tensor<1x4x2x2x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x2x2x!qnn.uniform<i8:f32, 0.05:-3>>
  %b = qnn.constant {value = dense<[5, 6]> : tensor<2xi32>, name = "b"} : tensor<2xi32>
  %y = qnn.requantize %t {multiplier = array<i64: 1518500250>, shift = array<i64: 30>} : (tensor<1x4x2x2x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x2x2x!qnn.uniform<u8:f32, 0.1:128>>
  func.return %y : tensor<1x4x2x2x!qnn.uniform<u8:f32, 0.1:128>>
}
