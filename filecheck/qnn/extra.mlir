// RUN: sed '/^\/\/ -----/,$d' %s | npu-opt | npu-opt | filecheck %s --check-prefix=RT
// RUN: sed '/^\/\/ -----/,$d' %s | npu-opt --print-op-generic | npu-opt | filecheck %s --check-prefix=RT
// RUN: npu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// qnn.maximum, qnn.minimum, qnn.gather, qnn.reduce_max and qnn.argmax: ops on stored
// integers that keep the input's quantization (argmax yields i64 indices).
// The first section round-trips (custom and generic form); the others are verifier errors.

// RT-LABEL: func.func @extra
// RT-NEXT:    %0 = qnn.maximum %x, %y : (tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<1x1x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>
// RT-NEXT:    %1 = qnn.minimum %x, %x {name = "min"} : (tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>
// RT-NEXT:    %2 = qnn.gather %x, %i {axis = 1 : i64} : (tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x2xi64>) -> tensor<2x2x2x8x!qnn.uniform<i8:f32, 0.05:-3>>
// RT-NEXT:    %3 = qnn.reduce_max %x {axes = array<i64: 2>, keepdims = false} : (tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>
// RT-NEXT:    %4 = qnn.reduce_max %x {axes = array<i64: 0, 1>} : (tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x1x8x!qnn.uniform<i8:f32, 0.05:-3>>
// RT-NEXT:    %5 = qnn.argmax %x {axis = -1 : i64, keepdims = false} : (tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x3xi64>
// RT-NEXT:    %6 = qnn.argmax %x {axis = 0 : i64} : (tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x3x8xi64>
// RT-NEXT:    func.return
// RT-NEXT:  }
func.func @extra(%x: tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>, %y: tensor<1x1x8x!qnn.uniform<i8:f32, 0.05:-3>>, %i: tensor<2x2xi64>) {
  %0 = qnn.maximum %x, %y : (tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<1x1x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>
  %1 = qnn.minimum %x, %x {name = "min"} : (tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>
  %2 = qnn.gather %x, %i {axis = 1 : i64} : (tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x2xi64>) -> tensor<2x2x2x8x!qnn.uniform<i8:f32, 0.05:-3>>
  %3 = qnn.reduce_max %x {axes = array<i64: 2>, keepdims = false} : (tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>
  %4 = qnn.reduce_max %x {axes = array<i64: 0, 1>} : (tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x1x8x!qnn.uniform<i8:f32, 0.05:-3>>
  %5 = qnn.argmax %x {axis = -1 : i64, keepdims = false} : (tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x3xi64>
  %6 = qnn.argmax %x {axis = 0 : i64} : (tensor<2x3x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x3x8xi64>
  func.return
}

// -----

func.func @maximum_rhs_type(%x: tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>, %y: tensor<2x3x!qnn.uniform<i8:f32, 0.07:-3>>) {
  %0 = qnn.maximum %x, %y : (tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x3x!qnn.uniform<i8:f32, 0.07:-3>>) -> tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.maximum': result element type !qnn.uniform<i8:f32, 0.07:-3> must equal the input's !qnn.uniform<i8:f32, 0.05:-3>

// -----

func.func @minimum_result_type(%x: tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.minimum %x, %x : (tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x3x!qnn.uniform<u8:f32, 0.05:128>>
  func.return
}
// CHECK: 'qnn.minimum': result element type !qnn.uniform<u8:f32, 0.05:128> must equal the input's

// -----

func.func @maximum_shape(%x: tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>, %y: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.maximum %x, %y : (tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.maximum': shapes 2x3, 4 do not broadcast

// -----

func.func @gather_result_type(%x: tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>, %i: tensor<2xi64>) {
  %0 = qnn.gather %x, %i {axis = 0 : i64} : (tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2xi64>) -> tensor<2x3x!qnn.uniform<i8:f32, 0.05:-2>>
  func.return
}
// CHECK: 'qnn.gather': result element type !qnn.uniform<i8:f32, 0.05:-2> must equal the input's

// -----

func.func @gather_i32_indices(%x: tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>, %i: tensor<2xi32>) {
  %0 = qnn.gather %x, %i {axis = 0 : i64} : (tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2xi32>) -> tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: Expected attribute i64 but got i32

// -----

func.func @gather_shape(%x: tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>, %i: tensor<4xi64>) {
  %0 = qnn.gather %x, %i {axis = 1 : i64} : (tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<4xi64>) -> tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.gather': result shape must be 2x4, got 2x3

// -----

func.func @gather_per_axis(%x: tensor<2x3x!qnn.uniform<i8:f32:0, {0.5, 0.25}>>, %i: tensor<1xi64>) {
  %0 = qnn.gather %x, %i {axis = 1 : i64} : (tensor<2x3x!qnn.uniform<i8:f32:0, {0.5, 0.25}>>, tensor<1xi64>) -> tensor<2x1x!qnn.uniform<i8:f32:0, {0.5, 0.25}>>
  func.return
}
// CHECK: 'qnn.gather': the input must be quantized per tensor

// -----

func.func @reduce_max_type(%x: tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x!qnn.uniform<i8:f32, 0.1:-3>>
  func.return
}
// CHECK: 'qnn.reduce_max': result element type !qnn.uniform<i8:f32, 0.1:-3> must equal the input's

// -----

func.func @reduce_max_shape(%x: tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.reduce_max %x {axes = array<i64: 1>} : (tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'qnn.reduce_max': result shape must be 2x1, got 2

// -----

func.func @reduce_max_per_axis(%x: tensor<2x3x!qnn.uniform<i8:f32:0, {0.5, 0.25}>>) {
  %0 = qnn.reduce_max %x {axes = array<i64: 1>} : (tensor<2x3x!qnn.uniform<i8:f32:0, {0.5, 0.25}>>) -> tensor<2x1x!qnn.uniform<i8:f32:0, {0.5, 0.25}>>
  func.return
}
// CHECK: 'qnn.reduce_max': the input must be quantized per tensor

// -----

func.func @argmax_i16(%x: tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.argmax %x {axis = 1 : i64, keepdims = false} : (tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2xi16>
  func.return
}
// CHECK: Expected one of i32, i64, but got i16

// -----

func.func @argmax_shape(%x: tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = qnn.argmax %x {axis = 1 : i64} : (tensor<2x3x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2xi64>
  func.return
}
// CHECK: 'qnn.argmax': result shape must be 2x1, got 2

// -----

func.func @argmax_per_axis(%x: tensor<2x3x!qnn.uniform<i8:f32:0, {0.5, 0.25}>>) {
  %0 = qnn.argmax %x {axis = 1 : i64, keepdims = false} : (tensor<2x3x!qnn.uniform<i8:f32:0, {0.5, 0.25}>>) -> tensor<2xi64>
  func.return
}
// CHECK: 'qnn.argmax': the input must be quantized per tensor
