// RUN: npu-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Errors raised while parsing !qnn.uniform types.

func.func @unknown_storage(%x: tensor<4x!qnn.uniform<i7:f32, 0.5>>) {
  func.return
}
// CHECK: expected a storage type (i4, i8, u8, i16, u16, i32)

// -----

func.func @missing_scale(%x: tensor<4x!qnn.uniform<i8:f32>>) {
  func.return
}
// CHECK: Expected ','

// -----

func.func @per_axis_without_braces(%x: tensor<2x!qnn.uniform<i8:f32:0, 0.5>>) {
  func.return
}
// CHECK: '{' expected

// -----

func.func @negative_axis(%x: tensor<2x!qnn.uniform<i8:f32:-1, {0.5, 0.5}>>) {
  func.return
}
// CHECK: Expected integer literal

// -----

func.func @scale_not_a_number(%x: tensor<2x!qnn.uniform<i8:f32, abc>>) {
  func.return
}
// CHECK: integer or float literal expected
