// RUN: npu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of qnn.conv_transpose2d, qnn.argmax/argmin and qnn.reduce_sum's storage_view.

func.func @weight_axis(%x: tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, %w: tensor<2x3x3x3x!qnn.uniform<i8:f32:0, {0.011, 0.02}>>, %b: tensor<3xi32>) -> tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>> {
  %0 = qnn.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, multiplier = array<i64: 1511828480, 1374389504, 1202590848>, shift = array<i64: 38, 37, 36>, rounding = "tflite"} : (tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x3x3x3x!qnn.uniform<i8:f32:0, {0.011, 0.02}>>, tensor<3xi32>) -> tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>>
  func.return %0 : tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>>
}
// CHECK: 'qnn.conv_transpose2d': per-channel weights must be quantized on axis 1

// -----

func.func @per_axis_input(%x: tensor<1x2x2x2x!qnn.uniform<i8:f32:1, {0.05, 0.06}>>, %w: tensor<2x3x3x3x!qnn.uniform<i8:f32:1, {0.011, 0.02, 0.035}>>, %b: tensor<3xi32>) -> tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>> {
  %0 = qnn.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, multiplier = array<i64: 1511828480, 1374389504, 1202590848>, shift = array<i64: 38, 37, 36>, rounding = "tflite"} : (tensor<1x2x2x2x!qnn.uniform<i8:f32:1, {0.05, 0.06}>>, tensor<2x3x3x3x!qnn.uniform<i8:f32:1, {0.011, 0.02, 0.035}>>, tensor<3xi32>) -> tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>>
  func.return %0 : tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>>
}
// CHECK: 'qnn.conv_transpose2d': activations must be quantized per tensor

// -----

func.func @multipliers(%x: tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, %w: tensor<2x3x3x3x!qnn.uniform<i8:f32:1, {0.011, 0.02, 0.035}>>, %b: tensor<3xi32>) -> tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>> {
  %0 = qnn.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, multiplier = array<i64: 1511828480, 1374389504>, shift = array<i64: 38, 37>, rounding = "tflite"} : (tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x3x3x3x!qnn.uniform<i8:f32:1, {0.011, 0.02, 0.035}>>, tensor<3xi32>) -> tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>>
  func.return %0 : tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>>
}
// CHECK: 'qnn.conv_transpose2d': needs 1 or 3 multipliers, got 2

// -----

func.func @result_shape(%x: tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, %w: tensor<2x3x3x3x!qnn.uniform<i8:f32:1, {0.011, 0.02, 0.035}>>, %b: tensor<3xi32>) -> tensor<1x3x5x5x!qnn.uniform<i8:f32, 0.1:7>> {
  %0 = qnn.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, multiplier = array<i64: 1511828480, 1374389504, 1202590848>, shift = array<i64: 38, 37, 36>, rounding = "tflite"} : (tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x3x3x3x!qnn.uniform<i8:f32:1, {0.011, 0.02, 0.035}>>, tensor<3xi32>) -> tensor<1x3x5x5x!qnn.uniform<i8:f32, 0.1:7>>
  func.return %0 : tensor<1x3x5x5x!qnn.uniform<i8:f32, 0.1:7>>
}
// CHECK: 'qnn.conv_transpose2d': result shape must be 1x3x4x4

// -----

func.func @bias_shape(%x: tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, %w: tensor<2x3x3x3x!qnn.uniform<i8:f32:1, {0.011, 0.02, 0.035}>>, %b: tensor<2xi32>) -> tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>> {
  %0 = qnn.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, multiplier = array<i64: 1511828480, 1374389504, 1202590848>, shift = array<i64: 38, 37, 36>, rounding = "tflite"} : (tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x3x3x3x!qnn.uniform<i8:f32:1, {0.011, 0.02, 0.035}>>, tensor<2xi32>) -> tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>>
  func.return %0 : tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>>
}
// CHECK: 'qnn.conv_transpose2d': bias must have shape 3, got 2

// -----

func.func @output_padding(%x: tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, %w: tensor<2x3x3x3x!qnn.uniform<i8:f32:1, {0.011, 0.02, 0.035}>>, %b: tensor<3xi32>) -> tensor<1x3x6x6x!qnn.uniform<i8:f32, 0.1:7>> {
  %0 = qnn.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 2, 2>, multiplier = array<i64: 1511828480, 1374389504, 1202590848>, shift = array<i64: 38, 37, 36>, rounding = "tflite"} : (tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x3x3x3x!qnn.uniform<i8:f32:1, {0.011, 0.02, 0.035}>>, tensor<3xi32>) -> tensor<1x3x6x6x!qnn.uniform<i8:f32, 0.1:7>>
  func.return %0 : tensor<1x3x6x6x!qnn.uniform<i8:f32, 0.1:7>>
}
// CHECK: 'qnn.conv_transpose2d': output_padding 2 must be smaller than the stride or dilation

// -----

func.func @clamp(%x: tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, %w: tensor<2x3x3x3x!qnn.uniform<i8:f32:1, {0.011, 0.02, 0.035}>>, %b: tensor<3xi32>) -> tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>> {
  %0 = qnn.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, multiplier = array<i64: 1511828480, 1374389504, 1202590848>, shift = array<i64: 38, 37, 36>, rounding = "tflite", clamp_min = 5 : i64, clamp_max = 200 : i64} : (tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x3x3x3x!qnn.uniform<i8:f32:1, {0.011, 0.02, 0.035}>>, tensor<3xi32>) -> tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>>
  func.return %0 : tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>>
}
// CHECK: 'qnn.conv_transpose2d': clamp [5, 200] must lie within the output storage range [-128, 127]

// -----

// The index ops' verifier errors.

func.func @argmin_per_axis(%x: tensor<3x2x!qnn.uniform<i8:f32:1, {0.1, 0.2}>>) -> tensor<3xi32> {
  %0 = qnn.argmin %x {axis = 1 : i64, keepdims = false} : (tensor<3x2x!qnn.uniform<i8:f32:1, {0.1, 0.2}>>) -> tensor<3xi32>
  func.return %0 : tensor<3xi32>
}
// CHECK: 'qnn.argmin': the input must be quantized per tensor

// -----

func.func @argmax_i16(%x: tensor<3x10x!qnn.uniform<i8:f32, 0.1:2>>) -> tensor<3xi16> {
  %0 = qnn.argmax %x {axis = 1 : i64, keepdims = false} : (tensor<3x10x!qnn.uniform<i8:f32, 0.1:2>>) -> tensor<3xi16>
  func.return %0 : tensor<3xi16>
}
// CHECK: Expected one of i32, i64, but got i16

// -----

func.func @argmin_shape(%x: tensor<3x10x!qnn.uniform<i8:f32, 0.1:2>>) -> tensor<10xi32> {
  %0 = qnn.argmin %x {axis = 1 : i64, keepdims = false} : (tensor<3x10x!qnn.uniform<i8:f32, 0.1:2>>) -> tensor<10xi32>
  func.return %0 : tensor<10xi32>
}
// CHECK: 'qnn.argmin': result shape must be 3, got 10

// -----

// qnn.reduce_sum's storage_view.

func.func @sum_view_unknown(%x: tensor<2x6x!qnn.uniform<i8:f32, 0.1:3>>) -> tensor<2x!qnn.uniform<i8:f32, 0.3:-2>> {
  %0 = qnn.reduce_sum %x {multiplier = array<i64: 1717986918>, shift = array<i64: 32>, axes = array<i64: 1>, keepdims = false, storage_view = "int4"} : (tensor<2x6x!qnn.uniform<i8:f32, 0.1:3>>) -> tensor<2x!qnn.uniform<i8:f32, 0.3:-2>>
  func.return %0 : tensor<2x!qnn.uniform<i8:f32, 0.3:-2>>
}
// CHECK: 'qnn.reduce_sum': storage_view must be native or uint8

// -----

func.func @sum_view_u8(%x: tensor<2x6x!qnn.uniform<u8:f32, 0.1:3>>) -> tensor<2x!qnn.uniform<i8:f32, 0.3:-2>> {
  %0 = qnn.reduce_sum %x {multiplier = array<i64: 1717986918>, shift = array<i64: 32>, axes = array<i64: 1>, keepdims = false, storage_view = "uint8"} : (tensor<2x6x!qnn.uniform<u8:f32, 0.1:3>>) -> tensor<2x!qnn.uniform<i8:f32, 0.3:-2>>
  func.return %0 : tensor<2x!qnn.uniform<i8:f32, 0.3:-2>>
}
// CHECK: 'qnn.reduce_sum': storage_view uint8 needs full-range i8 input and result

// -----

func.func @sum_view_clamp(%x: tensor<2x6x!qnn.uniform<i8:f32, 0.1:3>>) -> tensor<2x!qnn.uniform<i8:f32, 0.3:-2>> {
  %0 = qnn.reduce_sum %x {multiplier = array<i64: 1717986918>, shift = array<i64: 32>, clamp_min = 0 : i64, axes = array<i64: 1>, keepdims = false, storage_view = "uint8"} : (tensor<2x6x!qnn.uniform<i8:f32, 0.1:3>>) -> tensor<2x!qnn.uniform<i8:f32, 0.3:-2>>
  func.return %0 : tensor<2x!qnn.uniform<i8:f32, 0.3:-2>>
}
// CHECK: 'qnn.reduce_sum': storage_view uint8 takes no clamp
