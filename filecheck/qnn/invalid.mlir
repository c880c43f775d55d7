// RUN: npu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of the qnn dialect and of !qnn.uniform types.

// Types: zero point, scale, storage range, expressed type.

func.func @zp_range(%x: tensor<4x!qnn.uniform<i8:f32, 0.5:200>>) {
  func.return
}
// CHECK: zero point 200 is outside the storage range [-128, 127]

// -----

func.func @zp_narrow(%x: tensor<4x!qnn.uniform<i8<-127:127>:f32, 0.5:-128>>) {
  func.return
}
// CHECK: zero point -128 is outside the storage range [-127, 127]

// -----

func.func @zp_i4(%x: tensor<4x!qnn.uniform<i4:f32, 0.5:8>>) {
  func.return
}
// CHECK: zero point 8 is outside the storage range [-8, 7]

// -----

func.func @zp_per_axis(%x: tensor<2x!qnn.uniform<u8:f32:0, {0.5:3, 0.5:-1}>>) {
  func.return
}
// CHECK: zero point -1 is outside the storage range [0, 255]

// -----

func.func @scale_zero(%x: tensor<4x!qnn.uniform<i8:f32, 0.0>>) {
  func.return
}
// CHECK: scale must be positive and finite, got 0.0

// -----

func.func @scale_negative(%x: tensor<4x!qnn.uniform<i8:f32, -0.5:1>>) {
  func.return
}
// CHECK: scale must be positive and finite, got -0.5

// -----

func.func @scale_infinite(%x: tensor<4x!qnn.uniform<i16:f32, 1.0e400>>) {
  func.return
}
// CHECK: scale must be positive and finite, got inf

// -----

func.func @scale_per_axis(%x: tensor<2x!qnn.uniform<i8:f32:0, {0.5, 0.0}>>) {
  func.return
}
// CHECK: scale must be positive and finite, got 0.0

// -----

func.func @storage_below(%x: tensor<4x!qnn.uniform<i8<-200:127>:f32, 0.5>>) {
  func.return
}
// CHECK: storage range [-200, 127] must lie within i8's [-128, 127] and be non-empty

// -----

func.func @storage_above(%x: tensor<4x!qnn.uniform<i4<-7:8>:f32, 0.5>>) {
  func.return
}
// CHECK: storage range [-7, 8] must lie within i4's [-8, 7] and be non-empty

// -----

func.func @storage_empty(%x: tensor<4x!qnn.uniform<u8<5:5>:f32, 0.5:5>>) {
  func.return
}
// CHECK: storage range [5, 5] must lie within u8's [0, 255] and be non-empty

// -----

func.func @expressed(%x: tensor<4x!qnn.uniform<i8:f16, 0.5>>) {
  func.return
}
// CHECK: the expressed type must be f32

// -----

// Quantization axes.

func.func @axis_range(%x: tensor<4x4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.reshape %x : (tensor<4x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<16x!qnn.uniform<i8:f32:1, {0.5}>>
  func.return
}
// CHECK: 'qnn.reshape': quantization axis 1 is out of range for a tensor of rank 1

// -----

func.func @axis_size(%x: tensor<2x3x!qnn.uniform<i8:f32:1, {0.5, 0.25}>>) {
  %0 = qnn.dequantize %x : (tensor<2x3x!qnn.uniform<i8:f32:1, {0.5, 0.25}>>) -> tensor<2x3xf32>
  func.return
}
// CHECK: 'qnn.dequantize': 2 scales do not match dimension 1 of size 3

// -----

// A quantized type checked against its tensor where no qnn op sees it: function and block
// arguments, results of other dialects' ops, declared function types.

func.func @arg_axis_range(%x: tensor<4x!qnn.uniform<i8:f32:7, {0.5, 0.5}>>) -> tensor<4x!qnn.uniform<i8:f32:7, {0.5, 0.5}>> {
  func.return %x : tensor<4x!qnn.uniform<i8:f32:7, {0.5, 0.5}>>
}
// CHECK: 'func.func' @arg_axis_range argument 0: quantization axis 7 is out of range for a tensor of rank 1

// -----

func.func @arg_axis_size(%x: tensor<4x!qnn.uniform<i8:f32:0, {0.5, 0.5}>>) -> tensor<4x!qnn.uniform<i8:f32:0, {0.5, 0.5}>> {
  func.return %x : tensor<4x!qnn.uniform<i8:f32:0, {0.5, 0.5}>>
}
// CHECK: 'func.func' @arg_axis_size argument 0: 2 scales do not match dimension 0 of size 4

// -----

func.func private @declared(tensor<2x3x!qnn.uniform<i8:f32:1, {0.5, 0.5}>>)
// CHECK: 'func.func' @declared function_type input 0: 2 scales do not match dimension 1 of size 3

// -----

func.func @scalar_per_axis(%x: !qnn.uniform<i8:f32:0, {0.5}>) {
  func.return
}
// CHECK: 'func.func' @scalar_per_axis argument 0: a per-axis type (axis 0) must be the element type of a tensor

// -----

func.func @block_arg(%x: tensor<2xf32>) {
  func.return
^bb1(%y: tensor<2x!qnn.uniform<i8:f32:0, {0.5, 0.5, 0.5}>>):
  func.return
}
// CHECK: 'func.func' @block_arg region 0 block 1 argument 0: 3 scales do not match dimension 0 of size 2

// -----

func.func @cast_result(%x: tensor<3xf32>) {
  %0 = builtin.unrealized_conversion_cast %x : tensor<3xf32> to tensor<3x!qnn.uniform<i8:f32:0, {0.5, 0.5}>>
  func.return
}
// CHECK: 'builtin.unrealized_conversion_cast' result 0: 2 scales do not match dimension 0 of size 3

// -----

// Requantization parameters.

func.func @mult_shift_length(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.requantize %x {multiplier = array<i64: 1073741824>, shift = array<i64: 31, 31>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.requantize': multiplier and shift must have one length

// -----

func.func @mult_count(%x: tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>, %w: tensor<4x4x1x1x!qnn.uniform<i8:f32, 0.02>>) {
  %0 = qnn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, multiplier = array<i64: 1, 2, 3>, shift = array<i64: 1, 2, 3>} : (tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<4x4x1x1x!qnn.uniform<i8:f32, 0.02>>) -> tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.conv2d': needs 1 or 4 multipliers, got 3

// -----

func.func @mult_count_per_tensor(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.requantize %x {multiplier = array<i64: 1073741824, 1073741824>, shift = array<i64: 31, 31>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.requantize': needs 1 multiplier, got 2

// -----

func.func @mult_negative(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.requantize %x {multiplier = array<i64: -5>, shift = array<i64: 31>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.requantize': multipliers must be in [0, 2^31)

// -----

func.func @mult_large(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.requantize %x {multiplier = array<i64: 2147483648>, shift = array<i64: 31>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.requantize': multipliers must be in [0, 2^31)

// -----

func.func @shift_large(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.requantize %x {multiplier = array<i64: 1073741824>, shift = array<i64: 63>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.requantize': shifts must be in [-31, 62]

// -----

func.func @shift_small(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.requantize %x {multiplier = array<i64: 1073741824>, shift = array<i64: -32>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.requantize': shifts must be in [-31, 62]

// -----

func.func @rounding_name(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.requantize %x {multiplier = array<i64: 1073741824>, shift = array<i64: 31>, rounding = "nearest"} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.requantize': rounding must be one of half_away_from_zero, half_to_even, tflite

// -----

func.func @clamp_below(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.requantize %x {multiplier = array<i64: 1073741824>, shift = array<i64: 31>, clamp_min = -1 : i64} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.requantize': clamp [-1, 255] must lie within the output storage range [0, 255]

// -----

func.func @clamp_above(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.requantize %x {multiplier = array<i64: 1073741824>, shift = array<i64: 31>, clamp_max = 300 : i64} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.requantize': clamp [0, 300] must lie within the output storage range [0, 255]

// -----

func.func @clamp_narrow(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.requantize %x {multiplier = array<i64: 1073741824>, shift = array<i64: 31>, clamp_min = -128 : i64} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8<-127:127>:f32, 0.1>>
  func.return
}
// CHECK: 'qnn.requantize': clamp [-128, 127] must lie within the output storage range [-127, 127]

// -----

func.func @clamp_inverted(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.requantize %x {multiplier = array<i64: 1073741824>, shift = array<i64: 31>, clamp_min = 200 : i64, clamp_max = 100 : i64} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.requantize': clamp [200, 100] must lie within the output storage range [0, 255]

// -----

func.func @requantize_axes(%x: tensor<2x2x!qnn.uniform<i8:f32:0, {0.5, 0.25}>>) {
  %0 = qnn.requantize %x {multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (tensor<2x2x!qnn.uniform<i8:f32:0, {0.5, 0.25}>>) -> tensor<2x2x!qnn.uniform<i8:f32:1, {0.5, 0.25}>>
  func.return
}
// CHECK: 'qnn.requantize': input and result must share their axis

// -----

func.func @add_left_shift(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.add %x, %x {left_shift = 32 : i64, lhs_multiplier = 1073741824 : i64, lhs_shift = 31 : i64, rhs_multiplier = 1073741824 : i64, rhs_shift = 31 : i64, multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.add': left_shift must be in [0, 31]

// -----

func.func @add_lhs_multiplier(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.add %x, %x {left_shift = 20 : i64, lhs_multiplier = 2147483648 : i64, lhs_shift = 31 : i64, rhs_multiplier = 1073741824 : i64, rhs_shift = 31 : i64, multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.add': multipliers must be in [0, 2^31)

// -----

func.func @sub_rhs_shift(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.sub %x, %x {left_shift = 20 : i64, lhs_multiplier = 1073741824 : i64, lhs_shift = 31 : i64, rhs_multiplier = 1073741824 : i64, rhs_shift = 70 : i64, multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.sub': shifts must be in [-31, 62]

// -----

func.func @add_missing_property(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.add %x, %x {left_shift = 20 : i64, lhs_multiplier = 1073741824 : i64, lhs_shift = 31 : i64, rhs_multiplier = 1073741824 : i64, multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: property 'rhs_shift' expected in operation 'qnn.add'

// -----

// Per-tensor and per-channel operands.

func.func @weights_axis(%x: tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>, %w: tensor<4x4x1x1x!qnn.uniform<i8:f32:1, {0.1, 0.1, 0.1, 0.1}>>) {
  %0 = qnn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<4x4x1x1x!qnn.uniform<i8:f32:1, {0.1, 0.1, 0.1, 0.1}>>) -> tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.conv2d': per-channel weights must be quantized on axis 0

// -----

func.func @activations_per_axis(%x: tensor<2x4x!qnn.uniform<i8:f32:1, {0.1, 0.1, 0.1, 0.1}>>, %w: tensor<3x4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.fully_connected %x, %w {multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (tensor<2x4x!qnn.uniform<i8:f32:1, {0.1, 0.1, 0.1, 0.1}>>, tensor<3x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.fully_connected': activations must be quantized per tensor

// -----

func.func @mul_per_axis(%x: tensor<2x!qnn.uniform<i8:f32, 0.05:-3>>, %y: tensor<2x!qnn.uniform<i8:f32:0, {0.1, 0.2}>>) {
  %0 = qnn.mul %x, %y {multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (tensor<2x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x!qnn.uniform<i8:f32:0, {0.1, 0.2}>>) -> tensor<2x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.mul': operands must be quantized per tensor

// -----

func.func @conv_bias(%x: tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>, %w: tensor<4x4x1x1x!qnn.uniform<i8:f32, 0.02>>, %b: tensor<3xi32>) {
  %0 = qnn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<4x4x1x1x!qnn.uniform<i8:f32, 0.02>>, tensor<3xi32>) -> tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.conv2d': bias must have shape 4, got 3

// -----

func.func @conv_result_shape(%x: tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>, %w: tensor<4x4x1x1x!qnn.uniform<i8:f32, 0.02>>) {
  %0 = qnn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<4x4x1x1x!qnn.uniform<i8:f32, 0.02>>) -> tensor<1x4x3x3x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.conv2d': result shape must be 1x4x4x4, got 1x4x3x3

// -----

// Conversions.

func.func @quantize_shape(%x: tensor<4xf32>) {
  %0 = qnn.quantize %x : (tensor<4xf32>) -> tensor<2x2x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.quantize': input and result shapes differ

// -----

func.func @quantize_rounding(%x: tensor<4xf32>) {
  %0 = qnn.quantize %x {rounding = "tflite"} : (tensor<4xf32>) -> tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.quantize': rounding must be one of half_away_from_zero, half_to_even

// -----

func.func @dequantize_shape(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.dequantize %x : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<5xf32>
  func.return
}
// CHECK: 'qnn.dequantize': input and result shapes differ

// -----

func.func @requantize_shape(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.requantize %x {multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.requantize': input and result shapes differ

// -----

// Constants.

func.func @constant_shape() {
  %0 = qnn.constant {value = dense<1> : tensor<3xi8>} : tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.constant': value and result shapes differ

// -----

func.func @constant_width() {
  %0 = qnn.constant {value = dense<1> : tensor<4xi16>} : tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.constant': value must hold i8 storage integers

// -----

func.func @constant_float() {
  %0 = qnn.constant {value = dense<1.0> : tensor<4xf32>} : tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.constant': value must hold i8 storage integers

// -----

func.func @constant_sign() {
  %0 = qnn.constant {value = dense<1> : tensor<4xsi8>} : tensor<4x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.constant': value must hold u8 storage integers

// -----

func.func @constant_i4() {
  %0 = qnn.constant {value = dense<[1, 8]> : tensor<2xi8>} : tensor<2x!qnn.uniform<i4:f32, 0.5>>
  func.return
}
// CHECK: 'qnn.constant': values must lie in the storage range [-8, 7]

// -----

func.func @constant_narrow() {
  %0 = qnn.constant {value = dense<[-128, 0]> : tensor<2xi8>} : tensor<2x!qnn.uniform<i8<-127:127>:f32, 0.5>>
  func.return
}
// CHECK: 'qnn.constant': values must lie in the storage range [-127, 127]

// -----

func.func @constant_bias() {
  %0 = qnn.constant {value = dense<1> : tensor<4xi64>} : tensor<4xi32>
  func.return
}
// CHECK: 'qnn.constant': value type must equal the result type

// -----

// LUTs.

func.func @lut_size(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.lut %x {table = dense<0> : tensor<255xi8>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.lut': the table must have 256 entries

// -----

func.func @lut_size_i4(%x: tensor<4x!qnn.uniform<i4:f32, 0.5>>) {
  %0 = qnn.lut %x {table = dense<0> : tensor<256xi8>} : (tensor<4x!qnn.uniform<i4:f32, 0.5>>) -> tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.lut': the table must have 16 entries

// -----

func.func @lut_entries(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.lut %x {table = dense<-1> : tensor<256xi16>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.lut': table entries must lie in the output storage range

// -----

func.func @lut_float(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.lut %x {table = dense<0.5> : tensor<256xf32>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.lut': the table must hold integers

// -----

func.func @lut_wide(%x: tensor<4x!qnn.uniform<i32:f32, 0.5>>) {
  %0 = qnn.lut %x {table = dense<0> : tensor<256xi8>} : (tensor<4x!qnn.uniform<i32:f32, 0.5>>) -> tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.lut': the input storage must have at most 16 bits

// -----

func.func @lut_shape(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.lut %x {table = dense<0> : tensor<256xi8>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x2x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.lut': input and result shapes differ

// -----

// Data movement.

func.func @movement_type(%x: tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<3x2x!qnn.uniform<i8:f32, 0.05:-2>>
  func.return
}
// CHECK: 'qnn.transpose': result element type !qnn.uniform<i8:f32, 0.05:-2> must equal the input's !qnn.uniform<i8:f32, 0.05:-3> (insert qnn.requantize to change it)

// -----

func.func @concat_type(%x: tensor<2x!qnn.uniform<i8:f32, 0.05:-3>>, %y: tensor<2x!qnn.uniform<u8:f32, 0.1:128>>) {
  %0 = qnn.concat %x, %y {axis = 0 : i64} : (tensor<2x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x!qnn.uniform<u8:f32, 0.1:128>>) -> tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.concat': result element type !qnn.uniform<u8:f32, 0.1:128> must equal the input's !qnn.uniform<i8:f32, 0.05:-3>

// -----

func.func @max_pool_type(%x: tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x2x2x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.max_pool2d': result element type !qnn.uniform<u8:f32, 0.1:128> must equal the input's

// -----

func.func @reshape_size(%x: tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.reshape %x : (tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<5x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.reshape': cannot reshape 2x3 into 5

// -----

func.func @split_pieces(%x: tensor<2x6x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0, %1 = qnn.split %x {axis = 1 : i64} : (tensor<2x6x!qnn.uniform<i8:f32, 0.05:-3>>) -> (tensor<2x2x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>)
  func.return
}
// CHECK: 'qnn.split': result pieces 2x2, 2x3 make 2x5, not the input 2x6

// -----

func.func @split_mismatch(%x: tensor<2x6x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0, %1 = qnn.split %x {axis = 1 : i64} : (tensor<2x6x!qnn.uniform<i8:f32, 0.05:-3>>) -> (tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<1x3x!qnn.uniform<i8:f32, 0.05:-3>>)
  func.return
}
// CHECK: 'qnn.split': concat operands 2x3, 1x3 differ outside axis 1

// -----

func.func @split_axis(%x: tensor<2x6x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.split %x {axis = 2 : i64} : (tensor<2x6x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x6x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.split': axis 2 is out of range for rank 2

// -----

func.func @split_none(%x: tensor<2x6x!qnn.uniform<i8:f32, 0.05:-3>>) {
  qnn.split %x {axis = 0 : i64} : (tensor<2x6x!qnn.uniform<i8:f32, 0.05:-3>>) -> ()
  func.return
}
// CHECK: 'qnn.split': needs at least one result

// -----

func.func @pad_value(%x: tensor<2x!qnn.uniform<u8:f32, 0.1:128>>) {
  %0 = qnn.pad %x {pads = array<i64: 1, 1>, value = -1 : i64} : (tensor<2x!qnn.uniform<u8:f32, 0.1:128>>) -> tensor<4x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.pad': value -1 is outside the storage range [0, 255]

// -----

func.func @pad_mode(%x: tensor<2x!qnn.uniform<u8:f32, 0.1:128>>) {
  %0 = qnn.pad %x {pads = array<i64: 1, 1>, mode = "mirror"} : (tensor<2x!qnn.uniform<u8:f32, 0.1:128>>) -> tensor<4x!qnn.uniform<u8:f32, 0.1:128>>
  func.return
}
// CHECK: 'qnn.pad': mode must be one of constant, reflect, edge, wrap, got "mirror"

// -----

func.func @resize_coordinate_mode(%x: tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.resize %x {scales = array<f32: 1.0, 1.0, 2.0, 2.0>, coordinate_mode = "centre"} : (tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.resize': unknown coordinate_mode

// -----

func.func @resize_nearest_mode(%x: tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.resize %x {scales = array<f32: 1.0, 1.0, 2.0, 2.0>, nearest_mode = "round"} : (tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.resize': unknown nearest_mode

// -----

func.func @resize_rank(%x: tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.resize %x {scales = array<f32: 2.0, 2.0>} : (tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.resize': input, result and scales must have one rank

// -----

func.func @resize_scales(%x: tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.resize %x {scales = array<f32: 1.0, 1.0, 0.0, 2.0>} : (tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.resize': scales must be positive

// -----

func.func @avg_pool_per_axis(%x: tensor<1x2x4x4x!qnn.uniform<i8:f32:1, {0.1, 0.2}>>) {
  %0 = qnn.global_avg_pool %x {multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (tensor<1x2x4x4x!qnn.uniform<i8:f32:1, {0.1, 0.2}>>) -> tensor<1x2x1x1x!qnn.uniform<i8:f32:1, {0.1, 0.2}>>
  func.return
}
// CHECK: 'qnn.global_avg_pool': operands must be quantized per tensor

// -----

func.func @avg_pool_tflite_rescales(%x: tensor<1x1x2x2x!qnn.uniform<i8:f32, 0.1:17>>) {
  %0 = qnn.avg_pool2d %x {kernel = array<i64: 1, 2>, strides = array<i64: 1, 2>, pads = array<i64: 0, 0, 0, 0>, multiplier = array<i64: 1073741824>, shift = array<i64: 31>, rounding = "tflite"} : (tensor<1x1x2x2x!qnn.uniform<i8:f32, 0.1:17>>) -> tensor<1x1x2x1x!qnn.uniform<i8:f32, 0.2:17>>
  func.return
}
// CHECK: 'qnn.avg_pool2d': tflite rounding needs the output type to equal the input type
