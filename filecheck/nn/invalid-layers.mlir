// RUN: npu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of the compute, pooling, normalisation and reduction ops.

func.func @conv_strides_length(%x: tensor<1x3x4x4xf32>, %w: tensor<8x3x3x3xf32>) {
  %0 = nn.conv2d %x, %w {strides = array<i64: 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x2x2xf32>
  func.return
}
// CHECK:      'nn.conv2d': strides must have 2 values, got 1

// -----

func.func @conv_strides_zero(%x: tensor<1x3x4x4xf32>, %w: tensor<8x3x3x3xf32>) {
  %0 = nn.conv2d %x, %w {strides = array<i64: 0, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x2x2xf32>
  func.return
}
// CHECK:      'nn.conv2d': strides must be >= 1, got [0, 1]

// -----

func.func @conv_pads_length(%x: tensor<1x3x4x4xf32>, %w: tensor<8x3x3x3xf32>) {
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x2x2xf32>
  func.return
}
// CHECK:      'nn.conv2d': pads must have 4 values, got 3

// -----

func.func @conv_pads_negative(%x: tensor<1x3x4x4xf32>, %w: tensor<8x3x3x3xf32>) {
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: -1, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x2x2xf32>
  func.return
}
// CHECK:      'nn.conv2d': pads must be >= 0, got [-1, 0, 0, 0]

// -----

func.func @conv_dilations_zero(%x: tensor<1x3x4x4xf32>, %w: tensor<8x3x3x3xf32>) {
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 0>, groups = 1 : i64} : (tensor<1x3x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x2x2xf32>
  func.return
}
// CHECK:      'nn.conv2d': dilations must be >= 1, got [1, 0]

// -----

func.func @conv_groups_missing(%x: tensor<1x3x4x4xf32>, %w: tensor<8x3x3x3xf32>) {
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x2x2xf32>
  func.return
}
// CHECK:      property 'groups' expected in operation 'nn.conv2d'

// -----

func.func @conv_bias_shape(%x: tensor<1x3x4x4xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<4xf32>) {
  %0 = nn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x4x4xf32>, tensor<8x3x3x3xf32>, tensor<4xf32>) -> tensor<1x8x2x2xf32>
  func.return
}
// CHECK:      'nn.conv2d': bias must have shape 8, got 4

// -----

func.func @conv_rank(%x: tensor<3x4x4xf32>, %w: tensor<8x3x3x3xf32>) {
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<3x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<8x2x2xf32>
  func.return
}
// CHECK:      'nn.conv2d': conv2d needs rank-4 input and weight, got 3x4x4 and 8x3x3x3

// -----

func.func @conv_channels(%x: tensor<1x4x4x4xf32>, %w: tensor<8x3x3x3xf32>) {
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x2x2xf32>
  func.return
}
// CHECK:      'nn.conv2d': input channels 4 != weight channels 3 x groups 1

// -----

func.func @conv_groups_zero(%x: tensor<1x3x4x4xf32>, %w: tensor<8x3x3x3xf32>) {
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 0 : i64} : (tensor<1x3x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x2x2xf32>
  func.return
}
// CHECK:      'nn.conv2d': input channels 3 != weight channels 3 x groups 0

// -----

func.func @conv_groups_output_channels(%x: tensor<1x4x4x4xf32>, %w: tensor<5x2x3x3xf32>) {
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x4x4xf32>, tensor<5x2x3x3xf32>) -> tensor<1x5x2x2xf32>
  func.return
}
// CHECK:      'nn.conv2d': output channels 5 are not divisible by groups 2

// -----

func.func @conv_window_too_big(%x: tensor<1x3x2x2xf32>, %w: tensor<8x3x3x3xf32>) {
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x2x2xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x1x1xf32>
  func.return
}
// CHECK:      'nn.conv2d': window of extent 3 does not fit an input of length 2 with padding

// -----

func.func @conv_result_shape(%x: tensor<1x3x4x4xf32>, %w: tensor<8x3x3x3xf32>) {
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x3x3xf32>
  func.return
}
// CHECK:      'nn.conv2d': result shape must be 1x8x2x2, got 1x8x3x3

// -----

func.func @conv_transpose_bias_shape(%x: tensor<1x4x2x2xf32>, %w: tensor<4x3x1x1xf32>, %b: tensor<3xf32>) {
  %0 = nn.conv_transpose2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 2 : i64} : (tensor<1x4x2x2xf32>, tensor<4x3x1x1xf32>, tensor<3xf32>) -> tensor<1x6x2x2xf32>
  func.return
}
// CHECK:      'nn.conv_transpose2d': bias must have shape 6, got 3

// -----

func.func @conv_transpose_rank(%x: tensor<1x4x2x2xf32>, %w: tensor<4x3x1xf32>) {
  %0 = nn.conv_transpose2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<4x3x1xf32>) -> tensor<1x3x2x2xf32>
  func.return
}
// CHECK:      'nn.conv_transpose2d': conv_transpose2d needs rank-4 input and weight, got 1x4x2x2 and 4x3x1

// -----

func.func @conv_transpose_channels(%x: tensor<1x4x2x2xf32>, %w: tensor<3x3x1x1xf32>) {
  %0 = nn.conv_transpose2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<3x3x1x1xf32>) -> tensor<1x3x2x2xf32>
  func.return
}
// CHECK:      'nn.conv_transpose2d': input channels 4 != weight input channels 3

// -----

func.func @conv_transpose_output_padding(%x: tensor<1x4x2x2xf32>, %w: tensor<4x3x1x1xf32>) {
  %0 = nn.conv_transpose2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0>, groups = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<4x3x1x1xf32>) -> tensor<1x3x2x2xf32>
  func.return
}
// CHECK:      'nn.conv_transpose2d': output_padding must have 2 values, got 1

// -----

func.func @conv_transpose_empty(%x: tensor<1x4x1x1xf32>, %w: tensor<4x3x1x1xf32>) {
  %0 = nn.conv_transpose2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 0, 1, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x4x1x1xf32>, tensor<4x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  func.return
}
// CHECK:      'nn.conv_transpose2d': conv_transpose2d output would be empty

// -----

func.func @conv_transpose_result_shape(%x: tensor<1x4x2x2xf32>, %w: tensor<4x3x2x2xf32>) {
  %0 = nn.conv_transpose2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<4x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  func.return
}
// CHECK:      'nn.conv_transpose2d': result shape must be 1x3x3x3, got 1x3x2x2

// -----

func.func @fully_connected_rank(%x: tensor<2x3x4xf32>, %w: tensor<5x4xf32>) {
  %0 = nn.fully_connected %x, %w : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
  func.return
}
// CHECK:      'nn.fully_connected': expects x NxK and weight OxK, got 2x3x4 and 5x4

// -----

func.func @fully_connected_k(%x: tensor<2x3xf32>, %w: tensor<5x4xf32>) {
  %0 = nn.fully_connected %x, %w : (tensor<2x3xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
  func.return
}
// CHECK:      'nn.fully_connected': expects x NxK and weight OxK, got 2x3 and 5x4

// -----

func.func @fully_connected_bias(%x: tensor<2x4xf32>, %w: tensor<5x4xf32>, %b: tensor<4xf32>) {
  %0 = nn.fully_connected %x, %w, %b : (tensor<2x4xf32>, tensor<5x4xf32>, tensor<4xf32>) -> tensor<2x5xf32>
  func.return
}
// CHECK:      'nn.fully_connected': bias must have shape 5, got 4

// -----

func.func @fully_connected_result_shape(%x: tensor<2x4xf32>, %w: tensor<5x4xf32>) {
  %0 = nn.fully_connected %x, %w : (tensor<2x4xf32>, tensor<5x4xf32>) -> tensor<5x2xf32>
  func.return
}
// CHECK:      'nn.fully_connected': result shape must be 2x5, got 5x2

// -----

func.func @matmul_scalar(%x: tensor<f32>, %y: tensor<3xf32>) {
  %0 = nn.matmul %x, %y : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}
// CHECK:      'nn.matmul': matmul operands must have rank >= 1

// -----

func.func @matmul_contraction(%x: tensor<2x3xf32>, %y: tensor<4x5xf32>) {
  %0 = nn.matmul %x, %y : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return
}
// CHECK:      'nn.matmul': matmul contraction mismatch: 2x3 and 4x5

// -----

func.func @matmul_batch(%x: tensor<2x2x3xf32>, %y: tensor<3x3x5xf32>) {
  %0 = nn.matmul %x, %y : (tensor<2x2x3xf32>, tensor<3x3x5xf32>) -> tensor<2x2x5xf32>
  func.return
}
// CHECK:      'nn.matmul': shapes 2, 3 do not broadcast

// -----

func.func @matmul_result_shape(%x: tensor<3xf32>, %y: tensor<3x5xf32>) {
  %0 = nn.matmul %x, %y : (tensor<3xf32>, tensor<3x5xf32>) -> tensor<1x5xf32>
  func.return
}
// CHECK:      'nn.matmul': result shape must be 5, got 1x5

// -----

func.func @max_pool_rank(%x: tensor<1x4x4xf32>) {
  %0 = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x4xf32>) -> tensor<1x3x3xf32>
  func.return
}
// CHECK:      'nn.max_pool2d': pooling needs a rank-4 NCHW input, got 1x4x4

// -----

func.func @max_pool_kernel_length(%x: tensor<1x1x4x4xf32>) {
  %0 = nn.max_pool2d %x {kernel = array<i64: 2, 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  func.return
}
// CHECK:      'nn.max_pool2d': kernel must have 2 values, got 3

// -----

func.func @max_pool_kernel_zero(%x: tensor<1x1x4x4xf32>) {
  %0 = nn.max_pool2d %x {kernel = array<i64: 0, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  func.return
}
// CHECK:      'nn.max_pool2d': kernel must be >= 1, got [0, 2]

// -----

func.func @max_pool_dilations_length(%x: tensor<1x1x4x4xf32>) {
  %0 = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  func.return
}
// CHECK:      'nn.max_pool2d': dilations must have 2 values, got 0

// -----

func.func @max_pool_window_too_big(%x: tensor<1x1x4x4xf32>) {
  %0 = nn.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x1x1xf32>
  func.return
}
// CHECK:      'nn.max_pool2d': window of extent 5 does not fit an input of length 4 with padding

// -----

func.func @avg_pool_strides_zero(%x: tensor<1x1x4x4xf32>) {
  %0 = nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 1, 0>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  func.return
}
// CHECK:      'nn.avg_pool2d': strides must be >= 1, got [1, 0]

// -----

func.func @avg_pool_pads_negative(%x: tensor<1x1x4x4xf32>) {
  %0 = nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, -1, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  func.return
}
// CHECK:      'nn.avg_pool2d': pads must be >= 0, got [0, 0, -1, 0]

// -----

func.func @avg_pool_dilations_zero(%x: tensor<1x1x4x4xf32>) {
  %0 = nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 0, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  func.return
}
// CHECK:      'nn.avg_pool2d': dilations must be >= 1, got [0, 1]

// -----

func.func @avg_pool_ceil_mode_result_shape(%x: tensor<1x1x5x5xf32>) {
  %0 = nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32>
  func.return
}
// CHECK:      'nn.avg_pool2d': result shape must be 1x1x3x3, got 1x1x2x2

// -----

func.func @global_avg_pool_rank(%x: tensor<2x3xf32>) {
  %0 = nn.global_avg_pool %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK:      'nn.global_avg_pool': expects an input of rank >= 3, got 2x3

// -----

func.func @global_max_pool_result_shape(%x: tensor<2x3x4x5xf32>) {
  %0 = nn.global_max_pool %x : (tensor<2x3x4x5xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK:      'nn.global_max_pool': result shape must be 2x3x1x1, got 2x3

// -----

func.func @batch_norm_rank(%x: tensor<3xf32>, %c: tensor<3xf32>) {
  %0 = nn.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f32} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}
// CHECK:      'nn.batch_norm': expects an input of rank >= 2, got 3

// -----

func.func @batch_norm_parameters(%x: tensor<1x3x2x2xf32>, %c: tensor<3xf32>, %v: tensor<4xf32>) {
  %0 = nn.batch_norm %x, %c, %c, %c, %v {epsilon = 1.0e-05 : f32} : (tensor<1x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<1x3x2x2xf32>
  func.return
}
// CHECK:      'nn.batch_norm': batch_norm parameters must have shape 3, got 4

// -----

func.func @batch_norm_epsilon_missing(%x: tensor<1x3x2x2xf32>, %c: tensor<3xf32>) {
  %0 = nn.batch_norm %x, %c, %c, %c, %c : (tensor<1x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  func.return
}
// CHECK:      property 'epsilon' expected in operation 'nn.batch_norm'

// -----

func.func @instance_norm_rank(%x: tensor<2x3xf32>, %c: tensor<3xf32>) {
  %0 = nn.instance_norm %x, %c, %c {epsilon = 1.0e-05 : f32} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK:      'nn.instance_norm': expects an input of rank >= 3, got 2x3

// -----

func.func @instance_norm_parameters(%x: tensor<1x3x2x2xf32>, %c: tensor<3xf32>, %d: tensor<1x3xf32>) {
  %0 = nn.instance_norm %x, %c, %d {epsilon = 1.0e-05 : f32} : (tensor<1x3x2x2xf32>, tensor<3xf32>, tensor<1x3xf32>) -> tensor<1x3x2x2xf32>
  func.return
}
// CHECK:      'nn.instance_norm': instance_norm parameters must have shape 3, got 1x3

// -----

func.func @layer_norm_axis(%x: tensor<2x3x4x4xf32>, %s: tensor<4xf32>) {
  %0 = nn.layer_norm %x, %s {axis = 4 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x3x4x4xf32>, tensor<4xf32>) -> tensor<2x3x4x4xf32>
  func.return
}
// CHECK:      'nn.layer_norm': axis 4 is out of range for rank 4

// -----

func.func @layer_norm_scale(%x: tensor<2x3x4x4xf32>, %s: tensor<3xf32>) {
  %0 = nn.layer_norm %x, %s {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x3x4x4xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  func.return
}
// CHECK:      'nn.layer_norm': shapes 4x4, 3 do not broadcast

// -----

func.func @layer_norm_bias_too_big(%x: tensor<2x3x4x4xf32>, %s: tensor<4xf32>, %b: tensor<2x4x4xf32>) {
  %0 = nn.layer_norm %x, %s, %b {axis = -2 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x3x4x4xf32>, tensor<4xf32>, tensor<2x4x4xf32>) -> tensor<2x3x4x4xf32>
  func.return
}
// CHECK:      'nn.layer_norm': parameter shape 2x4x4 does not broadcast to 4x4

// -----

func.func @lrn_size(%x: tensor<1x3x2x2xf32>) {
  %0 = nn.lrn %x {size = 0 : i64, alpha = 1.0e-04 : f32, beta = 0.75 : f32, bias = 1.0 : f32} : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  func.return
}
// CHECK:      'nn.lrn': size must be a positive odd number, got 0

// -----

func.func @lrn_rank(%x: tensor<1x3xf32>) {
  %0 = nn.lrn %x {size = 3 : i64, alpha = 1.0e-04 : f32, beta = 0.75 : f32, bias = 1.0 : f32} : (tensor<1x3xf32>) -> tensor<1x3xf32>
  func.return
}
// CHECK:      'nn.lrn': expects an input of rank >= 3, got 1x3

// -----

func.func @reduce_axis(%x: tensor<2x3x4xf32>) {
  %0 = nn.reduce_mean %x {axes = array<i64: 1, 3>} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  func.return
}
// CHECK:      'nn.reduce_mean': axis 3 is out of range for rank 3

// -----

func.func @reduce_keepdims_result_shape(%x: tensor<2x3x4xf32>) {
  %0 = nn.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  func.return
}
// CHECK:      'nn.reduce_sum': result shape must be 3, got 1x3x1

// -----

func.func @reduce_all_result_shape(%x: tensor<2x3x4xf32>) {
  %0 = nn.reduce_max %x {axes = array<i64>} : (tensor<2x3x4xf32>) -> tensor<f32>
  func.return
}
// CHECK:      'nn.reduce_max': result shape must be 1x1x1, got scalar

// -----

func.func @argmax_axis(%x: tensor<2x3xf32>) {
  %0 = nn.argmax %x {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<1x3xi64>
  func.return
}
// CHECK:      'nn.argmax': axis -3 is out of range for rank 2

// -----

func.func @argmax_result_type(%x: tensor<2x3xf32>) {
  %0 = "nn.argmax"(%x) <{axis = 0 : i64}> : (tensor<2x3xf32>) -> tensor<1x3xf32>
  func.return
}
// CHECK:      result 'output' at position 0 does not verify:
// CHECK-NEXT: Expected one of i32, i64, but got f32

// -----

func.func @argmin_result_shape(%x: tensor<2x3xf32>) {
  %0 = nn.argmin %x {axis = 1 : i64, keepdims = false} : (tensor<2x3xf32>) -> tensor<2x1xi64>
  func.return
}
// CHECK:      'nn.argmin': result shape must be 2, got 2x1

// -----

func.func @max_pool_result_shape(%x: tensor<1x1x4x4xf32>) {
  %0 = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  func.return
}
// CHECK:      'nn.max_pool2d': result shape must be 1x1x2x2, got 1x1x3x3

// -----

func.func @batch_norm_result_shape(%x: tensor<1x3x2x2xf32>, %c: tensor<3xf32>) {
  %0 = nn.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f32} : (tensor<1x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4xf32>
  func.return
}
// CHECK:      'nn.batch_norm': result shape must be 1x3x2x2, got 1x3x4

// -----

func.func @instance_norm_result_shape(%x: tensor<1x3x2x2xf32>, %c: tensor<3xf32>) {
  %0 = nn.instance_norm %x, %c, %c {epsilon = 1.0e-05 : f32} : (tensor<1x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x1x1xf32>
  func.return
}
// CHECK:      'nn.instance_norm': result shape must be 1x3x2x2, got 1x3x1x1

// -----

func.func @layer_norm_result_shape(%x: tensor<2x4xf32>, %s: tensor<4xf32>) {
  %0 = nn.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x1xf32>
  func.return
}
// CHECK:      'nn.layer_norm': result shape must be 2x4, got 2x1

// -----

func.func @lrn_result_shape(%x: tensor<1x3x2x2xf32>) {
  %0 = nn.lrn %x {size = 3 : i64, alpha = 1.0e-04 : f32, beta = 0.75 : f32, bias = 1.0 : f32} : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x1xf32>
  func.return
}
// CHECK:      'nn.lrn': result shape must be 1x3x2x2, got 1x3x2x1

// -----

func.func @conv_transpose_groups_zero(%x: tensor<1x4x2x2xf32>, %w: tensor<4x3x1x1xf32>) {
  %0 = nn.conv_transpose2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 0 : i64} : (tensor<1x4x2x2xf32>, tensor<4x3x1x1xf32>) -> tensor<1x3x2x2xf32>
  func.return
}
// CHECK:      'nn.conv_transpose2d': groups must be >= 1, got 0

// -----

func.func @conv_transpose_groups_divide(%x: tensor<1x4x2x2xf32>, %w: tensor<4x3x1x1xf32>) {
  %0 = nn.conv_transpose2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 3 : i64} : (tensor<1x4x2x2xf32>, tensor<4x3x1x1xf32>) -> tensor<1x9x2x2xf32>
  func.return
}
// CHECK:      'nn.conv_transpose2d': input channels 4 are not divisible by groups 3

// -----

func.func @conv_transpose_output_padding(%x: tensor<1x4x2x2xf32>, %w: tensor<4x3x1x1xf32>) {
  %0 = nn.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 2, 0>, groups = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<4x3x1x1xf32>) -> tensor<1x3x5x3xf32>
  func.return
}
// CHECK:      'nn.conv_transpose2d': output_padding 2 must be smaller than the stride or dilation

// -----

func.func @lrn_even_size(%x: tensor<1x3x2x2xf32>) {
  %0 = nn.lrn %x {size = 2 : i64, alpha = 1.0e-04 : f32, beta = 0.75 : f32, bias = 1.0 : f32} : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  func.return
}
// CHECK:      'nn.lrn': size must be a positive odd number, got 2
