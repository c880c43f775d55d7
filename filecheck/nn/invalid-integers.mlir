// RUN: npu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of the integer and bool paths: element types must agree where an op says so.

func.func @equal_mixed_types(%x: tensor<3xi32>, %y: tensor<3xi64>) {
  %0 = "nn.equal"(%x, %y) : (tensor<3xi32>, tensor<3xi64>) -> tensor<3xi1>
  func.return
}
// CHECK:      operand 'rhs' at position 1 does not verify:
// CHECK-NEXT: attribute i32 expected from variable 'T', but got i64

// -----

func.func @equal_not_bool(%x: tensor<3xi32>) {
  %0 = "nn.equal"(%x, %x) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  func.return
}
// CHECK: Expected attribute i1 but got i32

// -----

func.func @compare_shape(%x: tensor<3xi32>) {
  %0 = "nn.less"(%x, %x) : (tensor<3xi32>, tensor<3xi32>) -> tensor<4xi1>
  func.return
}
// CHECK: 'nn.less': result shape must be 3, got 4

// -----

func.func @integer_add_result(%x: tensor<3xi32>) {
  %0 = "nn.add"(%x, %x) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi64>
  func.return
}
// CHECK: attribute i32 expected from variable 'T', but got i64

// -----

func.func @integer_add_activation(%x: tensor<3xi32>) {
  %0 = "nn.add"(%x, %x) <{activation = "clip", activation_min = 0.0 : f32}> : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  func.return
}
// CHECK: 'nn.add': a fused activation needs f32 tensors

// -----

func.func @bool_add(%x: tensor<3xi1>) {
  %0 = "nn.add"(%x, %x) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  func.return
}
// CHECK: Expected one of f32, i16, i32, i64, i8, ui16, ui32, ui64, ui8, but got i1

// -----

func.func @float_only_op(%x: tensor<3xi32>) {
  %0 = "nn.exp"(%x) : (tensor<3xi32>) -> tensor<3xi32>
  func.return
}
// CHECK: Expected attribute f32 but got i32

// -----

func.func @not_of_integers(%x: tensor<3xi32>) {
  %0 = "nn.not"(%x) : (tensor<3xi32>) -> tensor<3xi1>
  func.return
}
// CHECK: Expected attribute i1 but got i32

// -----

func.func @where_condition(%c: tensor<3xi32>, %x: tensor<3xf32>) {
  %0 = "nn.where"(%c, %x, %x) : (tensor<3xi32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}
// CHECK: Expected attribute i1 but got i32

// -----

func.func @where_branches(%c: tensor<3xi1>, %x: tensor<3xf32>, %y: tensor<3xi32>) {
  %0 = "nn.where"(%c, %x, %y) : (tensor<3xi1>, tensor<3xf32>, tensor<3xi32>) -> tensor<3xf32>
  func.return
}
// CHECK: attribute f32 expected from variable 'T', but got i32

// -----

func.func @cast_shape(%x: tensor<3xi32>) {
  %0 = "nn.cast"(%x) : (tensor<3xi32>) -> tensor<4xf32>
  func.return
}
// CHECK: 'nn.cast': result shape must be 3, got 4

// -----

func.func @cast_to_f16(%x: tensor<3xi32>) {
  %0 = "nn.cast"(%x) : (tensor<3xi32>) -> tensor<3xf16>
  func.return
}
// CHECK: Expected one of f32, i1, i16, i32, i64, i8, ui16, ui32, ui64, ui8, but got f16

// -----

func.func @reshape_changes_type(%x: tensor<2x3xi32>) {
  %0 = "nn.reshape"(%x) : (tensor<2x3xi32>) -> tensor<6xf32>
  func.return
}
// CHECK: attribute i32 expected from variable 'T', but got f32

// -----

func.func @concat_mixed(%x: tensor<2xi32>, %y: tensor<2xi64>) {
  %0 = "nn.concat"(%x, %y) <{axis = 0 : i64}> : (tensor<2xi32>, tensor<2xi64>) -> tensor<4xi32>
  func.return
}
// CHECK: attribute i32 expected from variable 'T', but got i64

// -----

func.func @argmax_of_bool(%x: tensor<3xi1>) {
  %0 = "nn.argmax"(%x) <{axis = 0 : i64}> : (tensor<3xi1>) -> tensor<1xi64>
  func.return
}
// CHECK: Expected one of f32, i16, i32, i64, i8, ui16, ui32, ui64, ui8, but got i1

// -----

func.func @reduce_mean_of_integers(%x: tensor<3xi32>) {
  %0 = "nn.reduce_mean"(%x) <{axes = array<i64: 0>}> : (tensor<3xi32>) -> tensor<1xi32>
  func.return
}
// CHECK: Expected attribute f32 but got i32
