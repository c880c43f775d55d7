// RUN: npu-opt %s | npu-opt | filecheck %s
// RUN: npu-opt %s --print-op-generic | npu-opt | filecheck %s

// Round trip of the compute, pooling, normalisation and reduction ops (custom and generic form).

// CHECK-LABEL: func.func @convolutions
// CHECK-NEXT:    %0 = nn.conv2d %x, %w, %b {strides = array<i64: 2, 1>, pads = array<i64: 1, 1, 1, 0>, dilations = array<i64: 1, 2>, groups = 2 : i64, name = "conv"} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x5xf32>
// CHECK-NEXT:    %1 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64, activation = "clip", activation_min = 0.000000e+00 : f32} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
// CHECK-NEXT:    %2 = nn.conv_transpose2d %x, %tw, %tb {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 0>, groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x3x2x2xf32>, tensor<6xf32>) -> tensor<1x6x16x15xf32>
// CHECK-NEXT:    %3 = nn.conv_transpose2d %x, %tw {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 1 : i64, activation = "leaky_relu", activation_alpha = 2.000000e-01 : f32} : (tensor<1x4x8x8xf32>, tensor<4x3x2x2xf32>) -> tensor<1x3x9x9xf32>
// CHECK-NEXT:    func.return
func.func @convolutions(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>, %tw: tensor<4x3x2x2xf32>, %tb: tensor<6xf32>) {
  %0 = nn.conv2d %x, %w, %b {strides = array<i64: 2, 1>, pads = array<i64: 1, 1, 1, 0>, dilations = array<i64: 1, 2>, groups = 2 : i64, name = "conv"} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x5xf32>
  %1 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64, activation = "clip", activation_min = 0.0 : f32} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  %2 = nn.conv_transpose2d %x, %tw, %tb {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 0>, groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x3x2x2xf32>, tensor<6xf32>) -> tensor<1x6x16x15xf32>
  %3 = nn.conv_transpose2d %x, %tw {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 1 : i64, activation = "leaky_relu", activation_alpha = 0.2 : f32} : (tensor<1x4x8x8xf32>, tensor<4x3x2x2xf32>) -> tensor<1x3x9x9xf32>
  func.return
}

// CHECK-LABEL: func.func @linear
// CHECK-NEXT:    %0 = nn.fully_connected %x, %w, %b {name = "fc"} : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %1 = nn.fully_connected %x, %w {activation = "clip", activation_min = -1.000000e+00 : f32, activation_max = 1.000000e+00 : f32} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %2 = nn.matmul %a, %m : (tensor<3x2x5xf32>, tensor<5x7xf32>) -> tensor<3x2x7xf32>
// CHECK-NEXT:    %3 = nn.matmul %a, %v {activation = "clip", activation_min = 0.000000e+00 : f32} : (tensor<3x2x5xf32>, tensor<5xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    func.return
func.func @linear(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>, %a: tensor<3x2x5xf32>, %m: tensor<5x7xf32>, %v: tensor<5xf32>) {
  %0 = nn.fully_connected %x, %w, %b {name = "fc"} : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = nn.fully_connected %x, %w {activation = "clip", activation_min = -1.0 : f32, activation_max = 1.0 : f32} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %2 = nn.matmul %a, %m : (tensor<3x2x5xf32>, tensor<5x7xf32>) -> tensor<3x2x7xf32>
  %3 = nn.matmul %a, %v {activation = "clip", activation_min = 0.0 : f32} : (tensor<3x2x5xf32>, tensor<5xf32>) -> tensor<3x2xf32>
  func.return
}

// CHECK-LABEL: func.func @pooling
// CHECK-NEXT:    %0 = nn.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
// CHECK-NEXT:    %1 = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 2, 1>, ceil_mode = true} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %2 = nn.avg_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = true, name = "pool"} : (tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
// CHECK-NEXT:    %3 = nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true, activation = "clip", activation_max = 6.000000e+00 : f32} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %4 = nn.global_avg_pool %x : (tensor<1x3x7x7xf32>) -> tensor<1x3x1x1xf32>
// CHECK-NEXT:    %5 = nn.global_max_pool %x : (tensor<1x3x7x7xf32>) -> tensor<1x3x1x1xf32>
// CHECK-NEXT:    %6 = nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 3>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x5x4xf32>
// CHECK-NEXT:    func.return
func.func @pooling(%x: tensor<1x3x7x7xf32>) {
  %0 = nn.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
  %1 = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 2, 1>, ceil_mode = true} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
  %2 = nn.avg_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = true, name = "pool"} : (tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  %3 = nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true, activation = "clip", activation_max = 6.0 : f32} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
  %4 = nn.global_avg_pool %x : (tensor<1x3x7x7xf32>) -> tensor<1x3x1x1xf32>
  %5 = nn.global_max_pool %x : (tensor<1x3x7x7xf32>) -> tensor<1x3x1x1xf32>
  %6 = nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 3>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x5x4xf32>
  func.return
}

// CHECK-LABEL: func.func @normalisation
// CHECK-NEXT:    %0 = nn.batch_norm %x, %c, %c, %c, %c {epsilon = 1.000000e-05 : f32, name = "bn"} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
// CHECK-NEXT:    %1 = nn.instance_norm %x, %c, %c {epsilon = 1.000000e-05 : f32} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
// CHECK-NEXT:    %2 = nn.layer_norm %x, %l, %r {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x4x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x3x4x4xf32>
// CHECK-NEXT:    %3 = nn.layer_norm %x, %r {axis = -1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x4x4xf32>, tensor<4xf32>) -> tensor<2x3x4x4xf32>
// CHECK-NEXT:    %4 = nn.lrn %x {size = 3 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
// CHECK-NEXT:    func.return
func.func @normalisation(%x: tensor<2x3x4x4xf32>, %c: tensor<3xf32>, %l: tensor<4x4xf32>, %r: tensor<4xf32>) {
  %0 = nn.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f32, name = "bn"} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  %1 = nn.instance_norm %x, %c, %c {epsilon = 1.0e-05 : f32} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  %2 = nn.layer_norm %x, %l, %r {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x3x4x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x3x4x4xf32>
  %3 = nn.layer_norm %x, %r {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x3x4x4xf32>, tensor<4xf32>) -> tensor<2x3x4x4xf32>
  %4 = nn.lrn %x {size = 3 : i64, alpha = 1.0e-04 : f32, beta = 0.75 : f32, bias = 1.0 : f32} : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  func.return
}

// CHECK-LABEL: func.func @reductions
// CHECK-NEXT:    %0 = nn.reduce_mean %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:    %1 = nn.reduce_sum %x {axes = array<i64: 0, -1>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %2 = nn.reduce_max %x {axes = array<i64>} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
// CHECK-NEXT:    %3 = nn.reduce_min %x {axes = array<i64>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT:    %4 = nn.reduce_prod %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
// CHECK-NEXT:    %5 = nn.argmax %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
// CHECK-NEXT:    %6 = nn.argmax %x {axis = -1 : i64, keepdims = false, select_last_index = true} : (tensor<2x3x4xf32>) -> tensor<2x3xi64>
// CHECK-NEXT:    %7 = nn.argmin %x {axis = 0 : i64, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3x4xi64>
// CHECK-NEXT:    %8 = nn.argmin %x {axis = 0 : i64, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3x4xi32>
// CHECK-NEXT:    func.return
func.func @reductions(%x: tensor<2x3x4xf32>) {
  %0 = nn.reduce_mean %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %1 = nn.reduce_sum %x {axes = array<i64: 0, -1>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %2 = nn.reduce_max %x {axes = array<i64>} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  %3 = nn.reduce_min %x {axes = array<i64>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  %4 = nn.reduce_prod %x {axes = array<i64: 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %5 = nn.argmax %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
  %6 = nn.argmax %x {axis = -1 : i64, keepdims = false, select_last_index = true} : (tensor<2x3x4xf32>) -> tensor<2x3xi64>
  %7 = nn.argmin %x {axis = 0 : i64, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3x4xi64>
  %8 = nn.argmin %x {axis = 0 : i64, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3x4xi32>
  func.return
}
