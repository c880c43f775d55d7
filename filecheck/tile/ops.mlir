// RUN: npu-opt %s | npu-opt | filecheck %s
// RUN: npu-opt %s --print-op-generic | npu-opt | filecheck %s

// Round trip of every tile op (custom and generic form): views, DMA, assembling.

// CHECK-LABEL: func.func @float
// CHECK-NEXT:    %s = tile.slice %x {offsets = array<i64: 0, 1, 2, 0>} : tensor<1x4x8x8xf32> -> tensor<1x2x3x8xf32>
// CHECK-NEXT:    %l = tile.load %x {offsets = array<i64: 0, 0, 5, 6>, from = "dram", to = "sram"} : tensor<1x4x8x8xf32> -> tensor<1x4x3x2xf32>
// CHECK-NEXT:    %e = tile.empty : tensor<1x4x8x8xf32>
// CHECK-NEXT:    %i = tile.insert %s into %e {offsets = array<i64: 0, 2, 5, 0>} : tensor<1x2x3x8xf32> into tensor<1x4x8x8xf32>
// CHECK-NEXT:    %d = tile.empty {to = "dram"} : tensor<1x4x8x8xf32>
// CHECK-NEXT:    %t = tile.store %l into %d {offsets = array<i64: 0, 0, 0, 0>, from = "sram", to = "dram"} : tensor<1x4x3x2xf32> into tensor<1x4x8x8xf32>
// CHECK-NEXT:    %tagged = tile.slice %x {tile.layer = 3 : i64, tile.part = array<i64: 0, 1, 0>, offsets = array<i64: 0, 0, 0, 0>} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    func.return %i, %t : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
func.func @float(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %s = tile.slice %x {offsets = array<i64: 0, 1, 2, 0>} : tensor<1x4x8x8xf32> -> tensor<1x2x3x8xf32>
  %l = tile.load %x {offsets = array<i64: 0, 0, 5, 6>, from = "dram", to = "sram"} : tensor<1x4x8x8xf32> -> tensor<1x4x3x2xf32>
  %e = tile.empty : tensor<1x4x8x8xf32>
  %i = tile.insert %s into %e {offsets = array<i64: 0, 2, 5, 0>} : tensor<1x2x3x8xf32> into tensor<1x4x8x8xf32>
  %d = tile.empty {to = "dram"} : tensor<1x4x8x8xf32>
  %t = tile.store %l into %d {offsets = array<i64: 0, 0, 0, 0>, from = "sram", to = "dram"} : tensor<1x4x3x2xf32> into tensor<1x4x8x8xf32>
  %tagged = tile.slice %x {offsets = array<i64: 0, 0, 0, 0>, tile.layer = 3 : i64, tile.part = array<i64: 0, 1, 0>} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  func.return %i, %t : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// Quantized tensors: a per-axis type keeps its scales except along its axis, where they
// are sliced with the data (weights split by output channel); rank-1 bias slices.

// CHECK-LABEL: func.func @quantized
// CHECK-NEXT:    %a = tile.slice %x {offsets = array<i64: 0, 0, 4, 4>} : tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>> -> tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %w0 = tile.load %w {offsets = array<i64: 1, 0, 0, 0>, from = "flash", to = "sram"} : tensor<3x4x3x3x!qnn.uniform<i8<-127:127>:f32:0, {0.1, 0.2:1, 0.3}>> -> tensor<2x4x3x3x!qnn.uniform<i8<-127:127>:f32:0, {0.2:1, 0.3}>>
// CHECK-NEXT:    %w1 = tile.slice %w {offsets = array<i64: 0, 1, 0, 0>} : tensor<3x4x3x3x!qnn.uniform<i8<-127:127>:f32:0, {0.1, 0.2:1, 0.3}>> -> tensor<3x2x3x3x!qnn.uniform<i8<-127:127>:f32:0, {0.1, 0.2:1, 0.3}>>
// CHECK-NEXT:    %b0 = tile.load %b {offsets = array<i64: 2>, from = "flash", to = "sram"} : tensor<3xi32> -> tensor<1xi32>
// CHECK-NEXT:    %e = tile.empty : tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %i = tile.insert %a into %e {offsets = array<i64: 0, 0, 0, 4>} : tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>> into tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    func.return
func.func @quantized(%x: tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>, %w: tensor<3x4x3x3x!qnn.uniform<i8<-127:127>:f32:0, {0.1, 0.2:1, 0.3}>>, %b: tensor<3xi32>) {
  %a = tile.slice %x {offsets = array<i64: 0, 0, 4, 4>} : tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>> -> tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>
  %w0 = tile.load %w {offsets = array<i64: 1, 0, 0, 0>, from = "flash", to = "sram"} : tensor<3x4x3x3x!qnn.uniform<i8<-127:127>:f32:0, {0.1, 0.2:1, 0.3}>> -> tensor<2x4x3x3x!qnn.uniform<i8<-127:127>:f32:0, {0.2:1, 0.3}>>
  %w1 = tile.slice %w {offsets = array<i64: 0, 1, 0, 0>} : tensor<3x4x3x3x!qnn.uniform<i8<-127:127>:f32:0, {0.1, 0.2:1, 0.3}>> -> tensor<3x2x3x3x!qnn.uniform<i8<-127:127>:f32:0, {0.1, 0.2:1, 0.3}>>
  %b0 = tile.load %b {offsets = array<i64: 2>, from = "flash", to = "sram"} : tensor<3xi32> -> tensor<1xi32>
  %e = tile.empty : tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>
  %i = tile.insert %a into %e {offsets = array<i64: 0, 0, 0, 4>} : tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>> into tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
