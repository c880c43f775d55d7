// RUN: npu-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Errors raised while parsing the custom form.

func.func @constant_not_dense() {
  %0 = nn.constant 1.0 : f32
  func.return
}
// CHECK: nn.constant expects a dense elements attribute

// -----

func.func @constant_missing_value() {
  %0 = nn.constant {name = "w"}
  func.return
}
// CHECK: nn.constant expects a dense elements attribute
