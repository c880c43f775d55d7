// RUN: npu-opt %s | npu-opt | filecheck %s
// RUN: npu-opt %s --print-op-generic | npu-opt | filecheck %s

// Round trips of the qnn ops added for TFLite int8 MEAN, SQUARED_DIFFERENCE, PRELU,
// RESIZE_BILINEAR and DIV (dialects/qnn_more.py).

func.func @reduce_sum(%0: tensor<1x7x7x8x!qnn.uniform<i8:f32, 0.05000000074505806:-7>>) -> tensor<1x1x1x8x!qnn.uniform<i8:f32, 0.019999999552965164:3>> {
  %1 = qnn.reduce_sum %0 {multiplier = array<i64: 876523970>, shift = array<i64: 34>, rounding = "tflite", clamp_min = -128 : i64, clamp_max = 127 : i64, axes = array<i64: 1, 2>, name = "y"} : (tensor<1x7x7x8x!qnn.uniform<i8:f32, 0.05000000074505806:-7>>) -> tensor<1x1x1x8x!qnn.uniform<i8:f32, 0.019999999552965164:3>>
  func.return %1 : tensor<1x1x1x8x!qnn.uniform<i8:f32, 0.019999999552965164:3>>
}
func.func @squared_difference(%0: tensor<2x4x8x!qnn.uniform<i8:f32, 0.05000000074505806:-3>>, %1: tensor<2x4x8x!qnn.uniform<i8:f32, 0.10999999940395355:12>>) -> tensor<2x4x8x!qnn.uniform<i8:f32, 0.4000000059604645:-128>> {
  %2 = qnn.squared_difference %0, %1 {multiplier = array<i64: 2078764118>, shift = array<i64: 48>, rounding = "tflite", clamp_min = -128 : i64, clamp_max = 127 : i64, left_shift = 7 : i64, lhs_multiplier = 1952257901 : i64, lhs_shift = 33 : i64, rhs_multiplier = 1073741824 : i64, rhs_shift = 31 : i64, name = "y"} : (tensor<2x4x8x!qnn.uniform<i8:f32, 0.05000000074505806:-3>>, tensor<2x4x8x!qnn.uniform<i8:f32, 0.10999999940395355:12>>) -> tensor<2x4x8x!qnn.uniform<i8:f32, 0.4000000059604645:-128>>
  func.return %2 : tensor<2x4x8x!qnn.uniform<i8:f32, 0.4000000059604645:-128>>
}
func.func @prelu(%0: tensor<1x4x4x8x!qnn.uniform<i8:f32, 0.05000000074505806:-10>>, %1: tensor<1x1x8x!qnn.uniform<i8:f32, 0.004000000189989805:3>>) -> tensor<1x4x4x8x!qnn.uniform<i8:f32, 0.03999999910593033:-20>> {
  %2 = qnn.prelu %0, %1 {multiplier = array<i64: 1342177280>, shift = array<i64: 30>, rounding = "tflite", clamp_min = -128 : i64, clamp_max = 127 : i64, alpha_multiplier = 1374389632 : i64, alpha_shift = 38 : i64, name = "y"} : (tensor<1x4x4x8x!qnn.uniform<i8:f32, 0.05000000074505806:-10>>, tensor<1x1x8x!qnn.uniform<i8:f32, 0.004000000189989805:3>>) -> tensor<1x4x4x8x!qnn.uniform<i8:f32, 0.03999999910593033:-20>>
  func.return %2 : tensor<1x4x4x8x!qnn.uniform<i8:f32, 0.03999999910593033:-20>>
}
func.func @resize_bilinear(%0: tensor<1x2x3x4x!qnn.uniform<i8:f32, 0.05000000074505806:-9>>) -> tensor<1x2x5x7x!qnn.uniform<i8:f32, 0.05000000074505806:-9>> {
  %1 = qnn.resize_bilinear %0 {name = "y"} : (tensor<1x2x3x4x!qnn.uniform<i8:f32, 0.05000000074505806:-9>>) -> tensor<1x2x5x7x!qnn.uniform<i8:f32, 0.05000000074505806:-9>>
  func.return %1 : tensor<1x2x5x7x!qnn.uniform<i8:f32, 0.05000000074505806:-9>>
}
func.func @div(%0: tensor<2x16x!qnn.uniform<i8:f32, 0.05000000074505806:-5>>, %1: tensor<2x16x!qnn.uniform<i8:f32, 0.019999999552965164:4>>) -> tensor<2x16x!qnn.uniform<i8:f32, 0.10000000149011612:3>> {
  %2 = qnn.div %0, %1 {multiplier = array<i64: 1677721600>, shift = array<i64: 26>, rounding = "tflite", clamp_min = -128 : i64, clamp_max = 127 : i64, overshift = "x86", name = "y"} : (tensor<2x16x!qnn.uniform<i8:f32, 0.05000000074505806:-5>>, tensor<2x16x!qnn.uniform<i8:f32, 0.019999999552965164:4>>) -> tensor<2x16x!qnn.uniform<i8:f32, 0.10000000149011612:3>>
  func.return %2 : tensor<2x16x!qnn.uniform<i8:f32, 0.10000000149011612:3>>
}

// CHECK: qnn.reduce_sum %{{.*}} {multiplier = array<i64: 876523970>, shift = array<i64: 34>, rounding = "tflite", clamp_min = -128 : i64, clamp_max = 127 : i64, axes = array<i64: 1, 2>, name = "y"} : (tensor<1x7x7x8x!qnn.uniform<i8:f32, 0.05000000074505806:-7>>) -> tensor<1x1x1x8x!qnn.uniform<i8:f32, 0.019999999552965164:3>>
// CHECK: qnn.squared_difference %{{.*}}, %{{.*}} {multiplier = array<i64: 2078764118>, shift = array<i64: 48>, rounding = "tflite", clamp_min = -128 : i64, clamp_max = 127 : i64, left_shift = 7 : i64, lhs_multiplier = 1952257901 : i64, lhs_shift = 33 : i64, rhs_multiplier = 1073741824 : i64, rhs_shift = 31 : i64, name = "y"} : (tensor<2x4x8x!qnn.uniform<i8:f32, 0.05000000074505806:-3>>, tensor<2x4x8x!qnn.uniform<i8:f32, 0.10999999940395355:12>>) -> tensor<2x4x8x!qnn.uniform<i8:f32, 0.4000000059604645:-128>>
// CHECK: qnn.prelu %{{.*}}, %{{.*}} {multiplier = array<i64: 1342177280>, shift = array<i64: 30>, rounding = "tflite", clamp_min = -128 : i64, clamp_max = 127 : i64, alpha_multiplier = 1374389632 : i64, alpha_shift = 38 : i64, name = "y"} : (tensor<1x4x4x8x!qnn.uniform<i8:f32, 0.05000000074505806:-10>>, tensor<1x1x8x!qnn.uniform<i8:f32, 0.004000000189989805:3>>) -> tensor<1x4x4x8x!qnn.uniform<i8:f32, 0.03999999910593033:-20>>
// CHECK: qnn.resize_bilinear %{{.*}} {name = "y"} : (tensor<1x2x3x4x!qnn.uniform<i8:f32, 0.05000000074505806:-9>>) -> tensor<1x2x5x7x!qnn.uniform<i8:f32, 0.05000000074505806:-9>>
// CHECK: qnn.div %{{.*}}, %{{.*}} {multiplier = array<i64: 1677721600>, shift = array<i64: 26>, rounding = "tflite", clamp_min = -128 : i64, clamp_max = 127 : i64, overshift = "x86", name = "y"} : (tensor<2x16x!qnn.uniform<i8:f32, 0.05000000074505806:-5>>, tensor<2x16x!qnn.uniform<i8:f32, 0.019999999552965164:4>>) -> tensor<2x16x!qnn.uniform<i8:f32, 0.10000000149011612:3>>
