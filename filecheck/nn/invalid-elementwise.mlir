// RUN: npu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of the constant, elementwise and activation ops.

func.func @constant_type(%x: tensor<2x3xf32>) {
  %0 = "nn.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return
}
// CHECK: 'nn.constant': value type must equal the result type

// -----

func.func @constant_not_dense(%x: tensor<2x3xf32>) {
  %0 = "nn.constant"() <{value = 1.0 : f32}> : () -> tensor<3xf32>
  func.return
}
// CHECK: 1.000000e+00 : f32 should be of base attribute dense

// -----

func.func @non_f32_operand(%x: tensor<2x3xi32>) {
  %0 = "nn.relu"(%x) : (tensor<2x3xi32>) -> tensor<2x3xf32>
  func.return
}
// CHECK:      operand 'input' at position 0 does not verify:
// CHECK-NEXT: Expected attribute f32 but got i32

// -----

func.func @non_f32_result(%x: tensor<2x3xf32>) {
  %0 = "nn.add"(%x, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf16>
  func.return
}
// CHECK:      result 'output' at position 0 does not verify:
// CHECK-NEXT: attribute f32 expected from variable 'T', but got f16

// -----

func.func @non_tensor_operand(%x: f32) {
  %0 = "nn.neg"(%x) : (f32) -> tensor<f32>
  func.return
}
// CHECK:      operand 'input' at position 0 does not verify:
// CHECK-NEXT: f32 should be of base attribute tensor

// -----

func.func @name_not_string(%x: tensor<2x3xf32>) {
  %0 = nn.relu %x {name = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: 1 : i64 should be of base attribute string

// -----

func.func @unary_result_shape(%x: tensor<2x3xf32>) {
  %0 = nn.sigmoid %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}
// CHECK: 'nn.sigmoid': result shape must be 2x3, got 3x2

// -----

func.func @binary_no_broadcast(%x: tensor<2x3xf32>, %y: tensor<4xf32>) {
  %0 = nn.add %x, %y : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: 'nn.add': shapes 2x3, 4 do not broadcast

// -----

func.func @binary_result_shape(%x: tensor<2x3xf32>, %y: tensor<3xf32>) {
  %0 = nn.maximum %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}
// CHECK: 'nn.maximum': result shape must be 2x3, got 3

// -----

func.func @scalar_result_shape(%x: tensor<f32>) {
  %0 = nn.mul %x, %x : (tensor<f32>, tensor<f32>) -> tensor<1xf32>
  func.return
}
// CHECK: 'nn.mul': result shape must be scalar, got 1

// -----

func.func @prelu_slope_too_big(%x: tensor<2x3xf32>, %s: tensor<4x2x3xf32>) {
  %0 = nn.prelu %x, %s : (tensor<2x3xf32>, tensor<4x2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: 'nn.prelu': slope 4x2x3 does not broadcast to input 2x3

// -----

func.func @gelu_approximate(%x: tensor<2x3xf32>) {
  %0 = nn.gelu %x {approximate = "fast"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: 'nn.gelu': approximate must be "none" or "tanh"

// -----

func.func @clip_min_above_max(%x: tensor<2x3xf32>) {
  %0 = nn.clip %x {min = 2.0 : f32, max = 1.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: 'nn.clip': min must not exceed max

// -----

func.func @clip_bound_type(%x: tensor<2x3xf32>) {
  %0 = nn.clip %x {min = 0.0 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Expected attribute f32 but got f64

// -----

func.func @leaky_relu_alpha_missing(%x: tensor<2x3xf32>) {
  %0 = nn.leaky_relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: property 'alpha' expected in operation 'nn.leaky_relu'

// -----

func.func @hard_sigmoid_beta_missing(%x: tensor<2x3xf32>) {
  %0 = nn.hard_sigmoid %x {alpha = 0.2 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: property 'beta' expected in operation 'nn.hard_sigmoid'

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) {
  %0 = nn.softmax %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: 'nn.softmax': axis 2 is out of range for rank 2

// -----

func.func @log_softmax_axis(%x: tensor<2x3xf32>) {
  %0 = nn.log_softmax %x {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: 'nn.log_softmax': axis -3 is out of range for rank 2

// -----

func.func @unknown_activation(%x: tensor<2x3xf32>) {
  %0 = nn.add %x, %x {activation = "relu"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: 'nn.add': activation must be one of clip, leaky_relu

// -----

func.func @activation_min_without_clip(%x: tensor<2x3xf32>) {
  %0 = nn.sub %x, %x {activation_min = 0.0 : f32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: 'nn.sub': activation_min/max need activation = "clip"

// -----

func.func @activation_max_with_leaky_relu(%x: tensor<2x3xf32>) {
  %0 = nn.mul %x, %x {activation = "leaky_relu", activation_alpha = 0.1 : f32, activation_max = 6.0 : f32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: 'nn.mul': activation_min/max need activation = "clip"

// -----

func.func @leaky_relu_activation_without_alpha(%x: tensor<2x3xf32>) {
  %0 = nn.add %x, %x {activation = "leaky_relu"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: 'nn.add': activation_alpha goes with activation = "leaky_relu"

// -----

func.func @alpha_with_clip(%x: tensor<2x3xf32>) {
  %0 = nn.add %x, %x {activation = "clip", activation_alpha = 0.1 : f32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: 'nn.add': activation_alpha goes with activation = "leaky_relu"

// -----

func.func @activation_min_above_max(%x: tensor<2x3xf32>) {
  %0 = nn.add %x, %x {activation = "clip", activation_min = 6.0 : f32, activation_max = 0.0 : f32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: 'nn.add': activation_min must not exceed activation_max

// -----

func.func @activation_not_string(%x: tensor<2x3xf32>) {
  %0 = nn.add %x, %x {activation = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: 1 : i64 should be of base attribute string

// -----

func.func @prelu_result_shape(%x: tensor<2x3xf32>, %s: tensor<3xf32>) {
  %0 = nn.prelu %x, %s : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}
// CHECK: 'nn.prelu': result shape must be 2x3, got 3

// -----

func.func @softmax_result_shape(%x: tensor<2x3xf32>) {
  %0 = nn.softmax %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  func.return
}
// CHECK: 'nn.softmax': result shape must be 2x3, got 2x1
