// RUN: npu-opt %s --split-input-file -p cse | filecheck %s

// Constants with the same value merge, whatever their names; the first one
// (and its name) survives. Different values or types stay apart.
// CHECK-LABEL: func.func @constants
// CHECK-NEXT:    %[[A:.*]] = nn.constant dense<1.000000e+00> : tensor<3xf32> {name = "a"}
// CHECK-NEXT:    %[[C:.*]] = nn.constant dense<2.000000e+00> : tensor<3xf32> {name = "c"}
// CHECK-NEXT:    %[[D:.*]] = nn.constant dense<1.000000e+00> : tensor<1x3xf32>
// CHECK-NEXT:    func.return %[[A]], %[[A]], %[[A]], %[[C]], %[[D]] :
func.func @constants() -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<1x3xf32>) {
  %a = nn.constant dense<1.0> : tensor<3xf32> {name = "a"}
  %b = nn.constant dense<1.0> : tensor<3xf32> {name = "b"}
  %a2 = nn.constant dense<1.0> : tensor<3xf32> {name = "a"}
  %c = nn.constant dense<2.0> : tensor<3xf32> {name = "c"}
  %d = nn.constant dense<1.0> : tensor<1x3xf32>
  func.return %a, %b, %a2, %c, %d : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<1x3xf32>
}

// -----

// Identical ops on identical operands merge, also through chains and across
// names; ops that differ in a property or an operand stay.
// CHECK-LABEL: func.func @ops
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<5.000000e-01> : tensor<2x2xf32> {name = "w1"}
// CHECK-NEXT:    %[[F:.*]] = nn.fully_connected %x, %[[W]] {name = "fc1"} :
// CHECK-NEXT:    %[[R:.*]] = nn.relu %[[F]] :
// CHECK-NEXT:    %[[G:.*]] = nn.fully_connected %x, %[[W]] {activation = "clip", activation_min = 0.000000e+00 : f32} :
// CHECK-NEXT:    %[[H:.*]] = nn.fully_connected %y, %[[W]] :
// CHECK-NEXT:    func.return %[[R]], %[[R]], %[[G]], %[[H]] :
func.func @ops(%x: tensor<1x2xf32>, %y: tensor<1x2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) {
  %w1 = nn.constant dense<0.5> : tensor<2x2xf32> {name = "w1"}
  %w2 = nn.constant dense<0.5> : tensor<2x2xf32> {name = "w2"}
  %0 = nn.fully_connected %x, %w1 {name = "fc1"} : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  %1 = nn.relu %0 : (tensor<1x2xf32>) -> tensor<1x2xf32>
  %2 = nn.fully_connected %x, %w2 {name = "fc2"} : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  %3 = nn.relu %2 : (tensor<1x2xf32>) -> tensor<1x2xf32>
  %4 = nn.fully_connected %x, %w1 {activation = "clip", activation_min = 0.0 : f32} : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  %5 = nn.fully_connected %y, %w2 : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  func.return %1, %3, %4, %5 : tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>
}

// -----

// Multi-result ops merge as a whole.
// CHECK-LABEL: func.func @split
// CHECK-NEXT:    %[[A:.*]], %[[B:.*]] = nn.split %x {axis = 0 : i64} :
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[A]] :
func.func @split(%x: tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %0, %1 = nn.split %x {axis = 0 : i64} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  %2, %3 = nn.split %x {axis = 0 : i64, name = "other"} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  func.return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// Non-nn ops keep xDSL's rules.
// CHECK-LABEL: func.func @arith
// CHECK-NEXT:    %[[A:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[B:.*]] = arith.addi %[[A]], %[[A]] : i32
// CHECK-NEXT:    func.return %[[B]], %[[B]] : i32, i32
func.func @arith() -> (i32, i32) {
  %a = arith.constant 1 : i32
  %b = arith.constant 1 : i32
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %b, %b : i32
  func.return %0, %1 : i32, i32
}
