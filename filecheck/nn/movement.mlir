// RUN: npu-opt %s | npu-opt | filecheck %s
// RUN: npu-opt %s --print-op-generic | npu-opt | filecheck %s

// Round trip of the data-movement ops (custom and generic form).

// CHECK-LABEL: func.func @shapes
// CHECK-NEXT:    %0 = nn.reshape %x {name = "flatten"} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT:    %1 = nn.reshape %x : (tensor<2x3x4xf32>) -> tensor<24xf32>
// CHECK-NEXT:    %2 = nn.broadcast %y : (tensor<3x1xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT:    %3 = nn.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    func.return
func.func @shapes(%x: tensor<2x3x4xf32>, %y: tensor<3x1xf32>) {
  %0 = nn.reshape %x {name = "flatten"} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %1 = nn.reshape %x : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %2 = nn.broadcast %y : (tensor<3x1xf32>) -> tensor<2x3x5xf32>
  %3 = nn.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  func.return
}

// CHECK-LABEL: func.func @join_and_cut
// CHECK-NEXT:    %0 = nn.concat %x, %y, %x {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x1x4xf32>, tensor<2x3x4xf32>) -> tensor<2x7x4xf32>
// CHECK-NEXT:    %1 = nn.concat %y {axis = -1 : i64} : (tensor<2x1x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:    %2, %3, %4 = nn.split %x {axis = -1 : i64, name = "split"} : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x2xf32>, tensor<2x3x1xf32>)
// CHECK-NEXT:    %5 = nn.split %x {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %6 = nn.slice %x {starts = array<i64: 0, 1, 3>, ends = array<i64: 2, 3, -1>, steps = array<i64: 1, 1, -2>} : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
// CHECK-NEXT:    func.return
func.func @join_and_cut(%x: tensor<2x3x4xf32>, %y: tensor<2x1x4xf32>) {
  %0 = nn.concat %x, %y, %x {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x1x4xf32>, tensor<2x3x4xf32>) -> tensor<2x7x4xf32>
  %1 = nn.concat %y {axis = -1 : i64} : (tensor<2x1x4xf32>) -> tensor<2x1x4xf32>
  %2, %3, %4 = nn.split %x {axis = -1 : i64, name = "split"} : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x2xf32>, tensor<2x3x1xf32>)
  %5 = nn.split %x {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %6 = nn.slice %x {starts = array<i64: 0, 1, 3>, ends = array<i64: 2, 3, -1>, steps = array<i64: 1, 1, -2>} : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  func.return
}

// CHECK-LABEL: func.func @padding
// CHECK-NEXT:    %0 = nn.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 2>} : (tensor<1x2x3x3xf32>) -> tensor<1x2x5x6xf32>
// CHECK-NEXT:    %1 = nn.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, mode = "reflect"} : (tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>
// CHECK-NEXT:    %2 = nn.pad %x {pads = array<i64: 0, 1, 0, 0, 0, 0, 0, 0>, value = -1.000000e+00 : f32} : (tensor<1x2x3x3xf32>) -> tensor<1x3x3x3xf32>
// CHECK-NEXT:    %3 = nn.pad %x {pads = array<i64: 0, 0, 2, 0, 0, 0, 0, 2>, mode = "edge"} : (tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>
// CHECK-NEXT:    %4 = nn.pad %x {pads = array<i64: 0, 0, 1, 0, 0, 0, 0, -1>, mode = "wrap"} : (tensor<1x2x3x3xf32>) -> tensor<1x2x4x2xf32>
// CHECK-NEXT:    func.return
func.func @padding(%x: tensor<1x2x3x3xf32>) {
  %0 = nn.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 2>} : (tensor<1x2x3x3xf32>) -> tensor<1x2x5x6xf32>
  %1 = nn.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, mode = "reflect"} : (tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  %2 = nn.pad %x {pads = array<i64: 0, 1, 0, 0, 0, 0, 0, 0>, mode = "constant", value = -1.0 : f32} : (tensor<1x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  %3 = nn.pad %x {pads = array<i64: 0, 0, 2, 0, 0, 0, 0, 2>, mode = "edge"} : (tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  %4 = nn.pad %x {pads = array<i64: 0, 0, 1, 0, 0, 0, 0, -1>, mode = "wrap"} : (tensor<1x2x3x3xf32>) -> tensor<1x2x4x2xf32>
  func.return
}

// CHECK-LABEL: func.func @resize
// CHECK-NEXT:    %0 = nn.resize %x {scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>, mode = "nearest"} : (tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32>
// CHECK-NEXT:    %1 = nn.resize %x {scales = array<f32: 1.000000e+00, 1.000000e+00, 1.500000e+00, 1.500000e+00>, mode = "linear", coordinate_mode = "align_corners", name = "up"} : (tensor<1x2x3x3xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %2 = nn.resize %x {scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>, mode = "nearest", coordinate_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32>
// CHECK-NEXT:    %3 = nn.resize %x {scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>, mode = "cubic", cubic_coeff_a = -5.000000e-01 : f32, exclude_outside = true} : (tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32>
// CHECK-NEXT:    func.return
func.func @resize(%x: tensor<1x2x3x3xf32>) {
  %0 = nn.resize %x {scales = array<f32: 1.0, 1.0, 2.0, 2.0>, mode = "nearest"} : (tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  %1 = nn.resize %x {scales = array<f32: 1.0, 1.0, 1.5, 1.5>, mode = "linear", coordinate_mode = "align_corners", name = "up"} : (tensor<1x2x3x3xf32>) -> tensor<1x2x4x4xf32>
  %2 = nn.resize %x {scales = array<f32: 1.0, 1.0, 2.0, 2.0>, mode = "nearest", coordinate_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  %3 = nn.resize %x {scales = array<f32: 1.0, 1.0, 2.0, 2.0>, mode = "cubic", cubic_coeff_a = -0.5 : f32, exclude_outside = true} : (tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  func.return
}

// CHECK-LABEL: func.func @gather_and_blocks
// CHECK-NEXT:    %0 = nn.gather %x, %i {axis = 1 : i64} : (tensor<1x8x2x2xf32>, tensor<3xi64>) -> tensor<1x3x2x2xf32>
// CHECK-NEXT:    %1 = nn.gather %x, %j {axis = -1 : i64} : (tensor<1x8x2x2xf32>, tensor<2x2xi64>) -> tensor<1x8x2x2x2xf32>
// CHECK-NEXT:    %2 = nn.depth_to_space %x {block_size = 2 : i64} : (tensor<1x8x2x2xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %3 = nn.depth_to_space %x {block_size = 2 : i64, mode = "CRD"} : (tensor<1x8x2x2xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %4 = nn.space_to_depth %x {block_size = 2 : i64} : (tensor<1x8x2x2xf32>) -> tensor<1x32x1x1xf32>
// CHECK-NEXT:    func.return
func.func @gather_and_blocks(%x: tensor<1x8x2x2xf32>, %i: tensor<3xi64>, %j: tensor<2x2xi64>) {
  %0 = nn.gather %x, %i {axis = 1 : i64} : (tensor<1x8x2x2xf32>, tensor<3xi64>) -> tensor<1x3x2x2xf32>
  %1 = nn.gather %x, %j {axis = -1 : i64} : (tensor<1x8x2x2xf32>, tensor<2x2xi64>) -> tensor<1x8x2x2x2xf32>
  %2 = nn.depth_to_space %x {block_size = 2 : i64} : (tensor<1x8x2x2xf32>) -> tensor<1x2x4x4xf32>
  %3 = nn.depth_to_space %x {block_size = 2 : i64, mode = "CRD"} : (tensor<1x8x2x2xf32>) -> tensor<1x2x4x4xf32>
  %4 = nn.space_to_depth %x {block_size = 2 : i64} : (tensor<1x8x2x2xf32>) -> tensor<1x32x1x1xf32>
  func.return
}
