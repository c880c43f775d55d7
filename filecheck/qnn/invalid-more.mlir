// RUN: npu-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @reduce_sum_invalid(%0: tensor<1x7x7x8x!qnn.uniform<i8:f32, 0.05000000074505806:-7>>) -> tensor<1x1x1x8x!qnn.uniform<i8:f32, 0.019999999552965164:3>> {
  %1 = qnn.reduce_sum %0 {multiplier = array<i64: 876523970>, shift = array<i64: 34>, rounding = "tflite", clamp_min = -128 : i64, clamp_max = 127 : i64, axes = array<i64: 1, 9>, name = "y"} : (tensor<1x7x7x8x!qnn.uniform<i8:f32, 0.05000000074505806:-7>>) -> tensor<1x1x1x8x!qnn.uniform<i8:f32, 0.019999999552965164:3>>
  func.return %1 : tensor<1x1x1x8x!qnn.uniform<i8:f32, 0.019999999552965164:3>>
}
// CHECK: 'qnn.reduce_sum': axis 9 is out of range for rank 4

// -----

func.func @div_invalid(%0: tensor<2x16x!qnn.uniform<i8:f32, 0.05000000074505806:-5>>, %1: tensor<2x16x!qnn.uniform<i8:f32, 0.019999999552965164:4>>) -> tensor<2x16x!qnn.uniform<i8:f32, 0.10000000149011612:3>> {
  %2 = qnn.div %0, %1 {multiplier = array<i64: 1677721600>, shift = array<i64: 26>, rounding = "tflite", clamp_min = -128 : i64, clamp_max = 127 : i64, overshift = "arm", name = "y"} : (tensor<2x16x!qnn.uniform<i8:f32, 0.05000000074505806:-5>>, tensor<2x16x!qnn.uniform<i8:f32, 0.019999999552965164:4>>) -> tensor<2x16x!qnn.uniform<i8:f32, 0.10000000149011612:3>>
  func.return %2 : tensor<2x16x!qnn.uniform<i8:f32, 0.10000000149011612:3>>
}
// CHECK: 'qnn.div': overshift must be exact or x86

// -----

func.func @div_invalid(%0: tensor<2x16x!qnn.uniform<i8:f32, 0.05000000074505806:-5>>, %1: tensor<2x16x!qnn.uniform<i8:f32, 0.019999999552965164:4>>) -> tensor<2x16x!qnn.uniform<i8:f32, 0.10000000149011612:3>> {
  %2 = qnn.div %0, %1 {multiplier = array<i64: 1677721600>, shift = array<i64: 26>, rounding = "half_to_even", clamp_min = -128 : i64, clamp_max = 127 : i64, overshift = "x86", name = "y"} : (tensor<2x16x!qnn.uniform<i8:f32, 0.05000000074505806:-5>>, tensor<2x16x!qnn.uniform<i8:f32, 0.019999999552965164:4>>) -> tensor<2x16x!qnn.uniform<i8:f32, 0.10000000149011612:3>>
  func.return %2 : tensor<2x16x!qnn.uniform<i8:f32, 0.10000000149011612:3>>
}
// CHECK: 'qnn.div': rounding must be tflite
