// RUN: npu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of the example plugin's ops.

func.func @limit_not_positive(%x: tensor<2xf32>) {
  %0 = example.soft_clip %x {limit = 0.0 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  func.return
}
// CHECK: 'example.soft_clip': limit must be positive

// -----

func.func @shape_changes(%x: tensor<2xf32>) {
  %0 = example.soft_clip %x {limit = 1.0 : f32} : (tensor<2xf32>) -> tensor<3xf32>
  func.return
}
// CHECK: 'example.soft_clip': result shape must be 2, got 3

// -----

func.func @short_table(%q: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = example.qsoft_clip %q {table = dense<0> : tensor<255xi8>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'example.qsoft_clip': the table must have 256 entries

// -----

func.func @entry_out_of_range(%q: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = example.qsoft_clip %q {table = dense<300> : tensor<256xi16>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'example.qsoft_clip': table entries must lie in the output storage range

// -----

func.func @float_table(%q: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = example.qsoft_clip %q {table = dense<0.0> : tensor<256xf32>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}
// CHECK: 'example.qsoft_clip': the table must hold integers
