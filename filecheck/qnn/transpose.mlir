// RUN: npu-opt %s | npu-opt | filecheck %s
// RUN: npu-opt %s --print-op-generic | npu-opt | filecheck %s

// Round trips of the qnn ops that complete the TFLite int8 list: qnn.conv_transpose2d
// (TRANSPOSE_CONV; dialects/qnn_transpose.py), i32 results of qnn.argmax/argmin, and
// qnn.reduce_sum's storage_view (SUM).

// CHECK-LABEL: func.func @per_channel_bias
// CHECK-NEXT:    %0 = qnn.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, multiplier = array<i64: 1511828480, 1374389504, 1202590848>, shift = array<i64: 38, 37, 36>, rounding = "tflite", clamp_min = -128 : i64, clamp_max = 127 : i64, name = "y"} : (tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x3x3x3x!qnn.uniform<i8:f32:1, {0.011, 0.02, 0.035}>>, tensor<3xi32>) -> tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>>
// CHECK-NEXT:    func.return %0
func.func @per_channel_bias(%x: tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, %w: tensor<2x3x3x3x!qnn.uniform<i8:f32:1, {0.011, 0.02, 0.035}>>, %b: tensor<3xi32>) -> tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>> {
  %0 = qnn.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, multiplier = array<i64: 1511828480, 1374389504, 1202590848>, shift = array<i64: 38, 37, 36>, rounding = "tflite", clamp_min = -128 : i64, clamp_max = 127 : i64, name = "y"} : (tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x3x3x3x!qnn.uniform<i8:f32:1, {0.011, 0.02, 0.035}>>, tensor<3xi32>) -> tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>>
  func.return %0 : tensor<1x3x4x4x!qnn.uniform<i8:f32, 0.1:7>>
}

// CHECK-LABEL: func.func @per_tensor_output_padding
// CHECK-NEXT:    %0 = qnn.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, multiplier = array<i64: 1288490189>, shift = array<i64: 38>} : (tensor<1x3x3x3x!qnn.uniform<i8:f32, 0.05>>, tensor<3x2x3x3x!qnn.uniform<i8<-127:127>:f32, 0.02>>) -> tensor<1x2x8x8x!qnn.uniform<i8:f32, 0.1>>
func.func @per_tensor_output_padding(%x: tensor<1x3x3x3x!qnn.uniform<i8:f32, 0.05>>, %w: tensor<3x2x3x3x!qnn.uniform<i8<-127:127>:f32, 0.02>>) -> tensor<1x2x8x8x!qnn.uniform<i8:f32, 0.1>> {
  %0 = qnn.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, multiplier = array<i64: 1288490189>, shift = array<i64: 38>} : (tensor<1x3x3x3x!qnn.uniform<i8:f32, 0.05>>, tensor<3x2x3x3x!qnn.uniform<i8<-127:127>:f32, 0.02>>) -> tensor<1x2x8x8x!qnn.uniform<i8:f32, 0.1>>
  func.return %0 : tensor<1x2x8x8x!qnn.uniform<i8:f32, 0.1>>
}

// The index ops' results take the model's index type, i32 or i64 (TFLite ARG_MAX/ARG_MIN).

// CHECK-LABEL: func.func @arg_reduce
// CHECK-NEXT:    %0 = qnn.argmax %x {axis = 1 : i64, keepdims = false} : (tensor<3x10x!qnn.uniform<i8:f32, 0.1:2>>) -> tensor<3xi32>
// CHECK-NEXT:    %1 = qnn.argmin %x {axis = 0 : i64, keepdims = false, name = "m"} : (tensor<3x10x!qnn.uniform<i8:f32, 0.1:2>>) -> tensor<10xi64>
// CHECK-NEXT:    %2 = qnn.argmin %x {axis = 1 : i64} : (tensor<3x10x!qnn.uniform<i8:f32, 0.1:2>>) -> tensor<3x1xi32>
func.func @arg_reduce(%x: tensor<3x10x!qnn.uniform<i8:f32, 0.1:2>>) -> (tensor<3xi32>, tensor<10xi64>, tensor<3x1xi32>) {
  %0 = qnn.argmax %x {axis = 1 : i64, keepdims = false} : (tensor<3x10x!qnn.uniform<i8:f32, 0.1:2>>) -> tensor<3xi32>
  %1 = qnn.argmin %x {axis = 0 : i64, keepdims = false, name = "m"} : (tensor<3x10x!qnn.uniform<i8:f32, 0.1:2>>) -> tensor<10xi64>
  %2 = qnn.argmin %x {axis = 1 : i64} : (tensor<3x10x!qnn.uniform<i8:f32, 0.1:2>>) -> tensor<3x1xi32>
  func.return %0, %1, %2 : tensor<3xi32>, tensor<10xi64>, tensor<3x1xi32>
}

// qnn.reduce_sum reading int8 storage as uint8 bytes (LiteRT's reference int8 SUM).

// CHECK-LABEL: func.func @sum_uint8_view
// CHECK-NEXT:    %0 = qnn.reduce_sum %x {multiplier = array<i64: 1717986918>, shift = array<i64: 32>, rounding = "tflite", axes = array<i64: 1>, keepdims = false, storage_view = "uint8"} : (tensor<2x6x!qnn.uniform<i8:f32, 0.1:3>>) -> tensor<2x!qnn.uniform<i8:f32, 0.3:-2>>
func.func @sum_uint8_view(%x: tensor<2x6x!qnn.uniform<i8:f32, 0.1:3>>) -> tensor<2x!qnn.uniform<i8:f32, 0.3:-2>> {
  %0 = qnn.reduce_sum %x {multiplier = array<i64: 1717986918>, shift = array<i64: 32>, rounding = "tflite", axes = array<i64: 1>, keepdims = false, storage_view = "uint8"} : (tensor<2x6x!qnn.uniform<i8:f32, 0.1:3>>) -> tensor<2x!qnn.uniform<i8:f32, 0.3:-2>>
  func.return %0 : tensor<2x!qnn.uniform<i8:f32, 0.3:-2>>
}
