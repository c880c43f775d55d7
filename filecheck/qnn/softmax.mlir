// RUN: sed '/^\/\/ -----/,$d' %s | npu-opt | npu-opt | filecheck %s --check-prefix=RT
// RUN: sed '/^\/\/ -----/,$d' %s | npu-opt --print-op-generic | npu-opt | filecheck %s --check-prefix=RT
// RUN: npu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// qnn.softmax: TFLite's reference int8 softmax over the last axis (docs/quantization.md).
// The first section round-trips (custom and generic form); the others are verifier errors.

// RT-LABEL: func.func @softmax
// RT-NEXT:    %0 = qnn.softmax %x {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = -496 : i64, name = "sm"} : (tensor<2x10x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x10x!qnn.uniform<i8:f32, 0.00390625:-128>>
// RT-NEXT:    %1 = qnn.softmax %v {input_multiplier = 2147483647 : i64, input_left_shift = 31 : i64, diff_min = 0 : i64} : (tensor<7x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<7x!qnn.uniform<i8:f32, 0.0039025:-128>>
// RT-NEXT:    func.return %0 : tensor<2x10x!qnn.uniform<i8:f32, 0.00390625:-128>>
func.func @softmax(%x: tensor<2x10x!qnn.uniform<i8:f32, 0.05:-3>>, %v: tensor<7x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x10x!qnn.uniform<i8:f32, 0.00390625:-128>> {
  %0 = qnn.softmax %x {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = -496 : i64, name = "sm"} : (tensor<2x10x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x10x!qnn.uniform<i8:f32, 0.00390625:-128>>
  %1 = qnn.softmax %v {input_multiplier = 2147483647 : i64, input_left_shift = 31 : i64, diff_min = 0 : i64} : (tensor<7x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<7x!qnn.uniform<i8:f32, 0.0039025:-128>>
  func.return %0 : tensor<2x10x!qnn.uniform<i8:f32, 0.00390625:-128>>
}

// -----

func.func @output_scale(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.softmax %x {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = -496 : i64} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.0078125:-128>>
  func.return
}
// CHECK: 'qnn.softmax': the result must be i8 with scale 1/256 and zero point -128

// -----

func.func @output_zero_point(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.softmax %x {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = -496 : i64} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.00390625>>
  func.return
}
// CHECK: 'qnn.softmax': the result must be i8 with scale 1/256 and zero point -128

// -----

func.func @output_u8(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.softmax %x {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = -496 : i64} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<u8:f32, 0.00390625>>
  func.return
}
// CHECK: 'qnn.softmax': the result must be i8 with scale 1/256 and zero point -128

// -----

func.func @input_u8(%x: tensor<4x!qnn.uniform<u8:f32, 0.05:128>>) {
  %0 = qnn.softmax %x {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = -496 : i64} : (tensor<4x!qnn.uniform<u8:f32, 0.05:128>>) -> tensor<4x!qnn.uniform<i8:f32, 0.00390625:-128>>
  func.return
}
// CHECK: 'qnn.softmax': the input must be i8 with the full range

// -----

func.func @input_narrow(%x: tensor<4x!qnn.uniform<i8<-127:127>:f32, 0.05>>) {
  %0 = qnn.softmax %x {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = -496 : i64} : (tensor<4x!qnn.uniform<i8<-127:127>:f32, 0.05>>) -> tensor<4x!qnn.uniform<i8:f32, 0.00390625:-128>>
  func.return
}
// CHECK: 'qnn.softmax': the input must be i8 with the full range

// -----

func.func @input_per_axis(%x: tensor<2x!qnn.uniform<i8:f32:0, {0.05, 0.1}>>) {
  %0 = qnn.softmax %x {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = -496 : i64} : (tensor<2x!qnn.uniform<i8:f32:0, {0.05, 0.1}>>) -> tensor<2x!qnn.uniform<i8:f32, 0.00390625:-128>>
  func.return
}
// CHECK: 'qnn.softmax': operands must be quantized per tensor

// -----

func.func @shape(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.softmax %x {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = -496 : i64} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x2x!qnn.uniform<i8:f32, 0.00390625:-128>>
  func.return
}
// CHECK: 'qnn.softmax': result shape must be 4, got 2x2

// -----

func.func @scalar(%x: tensor<!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.softmax %x {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = -496 : i64} : (tensor<!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<!qnn.uniform<i8:f32, 0.00390625:-128>>
  func.return
}
// CHECK: 'qnn.softmax': the input must have rank >= 1

// -----

func.func @multiplier(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.softmax %x {input_multiplier = 2147483648 : i64, input_left_shift = 22 : i64, diff_min = -496 : i64} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.00390625:-128>>
  func.return
}
// CHECK: 'qnn.softmax': input_multiplier must be in [0, 2^31)

// -----

func.func @left_shift(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.softmax %x {input_multiplier = 1073741824 : i64, input_left_shift = 32 : i64, diff_min = 0 : i64} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.00390625:-128>>
  func.return
}
// CHECK: 'qnn.softmax': input_left_shift must be in [0, 31]

// -----

func.func @diff_min_positive(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.softmax %x {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = 1 : i64} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.00390625:-128>>
  func.return
}
// CHECK: 'qnn.softmax': diff_min must be <= 0 with -diff_min * 2^input_left_shift < 2^31

// -----

func.func @diff_min_radius(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.softmax %x {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = -512 : i64} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.00390625:-128>>
  func.return
}
// CHECK: 'qnn.softmax': diff_min must be <= 0 with -diff_min * 2^input_left_shift < 2^31
