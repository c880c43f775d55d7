// RUN: npu-opt %s --split-input-file -p fold-constants | filecheck %s
// RUN: npu-opt %s --split-input-file -p 'fold-constants{max_size=4}' | filecheck %s --check-prefix=SMALL

// An op whose operands are all constants becomes a constant with the op's name;
// chains fold completely.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %[[C:.*]] = nn.constant dense<[5.000000e+00, 7.000000e+00, 9.000000e+00]> : tensor<3xf32> {name = "sum"}
// CHECK-NEXT:    %[[R:.*]] = nn.constant dense<[5.000000e+00, 6.000000e+00, 6.000000e+00]> : tensor<3xf32> {name = "relu6"}
// CHECK-NEXT:    %[[Y:.*]] = nn.add %x, %[[R]] :
// CHECK-NEXT:    func.return %[[Y]], %[[C]]
func.func @chain(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %a = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = nn.constant dense<[4.0, 5.0, 6.0]> : tensor<3xf32>
  %0 = nn.add %a, %b {name = "sum"} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = nn.clip %0 {min = 0.0 : f32, max = 6.0 : f32, name = "relu6"} : (tensor<3xf32>) -> tensor<3xf32>
  %2 = nn.add %x, %1 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %2, %0 : tensor<3xf32>, tensor<3xf32>
}

// -----

// Fused activations are part of the folded value.
// CHECK-LABEL: func.func @fused_activation
// CHECK-NEXT:    %[[C:.*]] = nn.constant dense<[0.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    func.return %[[C]]
func.func @fused_activation() -> tensor<2xf32> {
  %a = nn.constant dense<[-1.0, 1.0]> : tensor<2xf32>
  %0 = nn.add %a, %a {activation = "clip", activation_min = 0.0 : f32} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

// Data movement on a weight: transpose of a constant.
// CHECK-LABEL: func.func @transposed_weight
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<{{\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32> {name = "wt"}
// CHECK-NEXT:    %[[Y:.*]] = nn.matmul %x, %[[W]] :
// CHECK-NEXT:    func.return %[[Y]]
func.func @transposed_weight(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
  %w = nn.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %0 = nn.transpose %w {perm = array<i64: 1, 0>, name = "wt"} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = nn.matmul %x, %0 : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  func.return %1 : tensor<1x2xf32>
}

// -----

// Multi-result ops fold into one constant per result; i64 results stay i64.
// CHECK-LABEL: func.func @split_and_argmax
// CHECK-NEXT:    %[[A:.*]] = nn.constant dense<[1.000000e+00, 5.000000e+00]> : tensor<2xf32> {name = "s"}
// CHECK-NEXT:    %[[B:.*]] = nn.constant dense<[3.000000e+00, 2.000000e+00, 4.000000e+00]> : tensor<3xf32> {name = "s"}
// CHECK-NEXT:    %[[I:.*]] = nn.constant dense<1> : tensor<1xi64>
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[I]]
func.func @split_and_argmax() -> (tensor<2xf32>, tensor<3xf32>, tensor<1xi64>) {
  %a = nn.constant dense<[1.0, 5.0, 3.0, 2.0, 4.0]> : tensor<5xf32>
  %0, %1 = nn.split %a {axis = 0 : i64, name = "s"} : (tensor<5xf32>) -> (tensor<2xf32>, tensor<3xf32>)
  %2 = nn.argmax %a {axis = 0 : i64} : (tensor<5xf32>) -> tensor<1xi64>
  func.return %0, %1, %2 : tensor<2xf32>, tensor<3xf32>, tensor<1xi64>
}

// -----

// A gather with constant i64 indices folds.
// CHECK-LABEL: func.func @gather
// CHECK-NEXT:    %[[G:.*]] = nn.constant dense<[3.000000e+00, 1.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    func.return %[[G]]
func.func @gather() -> tensor<2xf32> {
  %a = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %i = nn.constant dense<[-1, 0]> : tensor<2xi64>
  %0 = nn.gather %a, %i {axis = 0 : i64} : (tensor<3xf32>, tensor<2xi64>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

// Ops with a non-constant operand stay.
// CHECK-LABEL: func.func @not_constant
// CHECK-NEXT:    %[[A:.*]] = nn.constant
// CHECK-NEXT:    %[[Y:.*]] = nn.mul %x, %[[A]]
// CHECK-NEXT:    func.return %[[Y]]
func.func @not_constant(%x: tensor<3xf32>) -> tensor<3xf32> {
  %a = nn.constant dense<2.0> : tensor<3xf32>
  %0 = nn.mul %x, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

// max_size bounds the folded result: with max_size = 4 the 2x3 broadcast stays
// an op, while the 3-element add folds.
// CHECK-LABEL: func.func @max_size
// CHECK-NEXT:    %[[A:.*]] = nn.constant dense<[2.000000e+00, 4.000000e+00, 6.000000e+00]> : tensor<3xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [1.000000e+00, 2.000000e+00, 3.000000e+00]]> : tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[A]], %[[B]]
// SMALL-LABEL: func.func @max_size
// SMALL-NEXT:    %[[C:.*]] = nn.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// SMALL-NEXT:    %[[A:.*]] = nn.constant dense<[2.000000e+00, 4.000000e+00, 6.000000e+00]> : tensor<3xf32>
// SMALL-NEXT:    %[[B:.*]] = nn.broadcast %[[C]] : (tensor<3xf32>) -> tensor<2x3xf32>
// SMALL-NEXT:    func.return %[[A]], %[[B]]
func.func @max_size() -> (tensor<3xf32>, tensor<2x3xf32>) {
  %a = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %0 = nn.add %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = nn.broadcast %a : (tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0, %1 : tensor<3xf32>, tensor<2x3xf32>
}

// -----

// Non-nn ops are left alone.
// CHECK-LABEL: func.func @arith
// CHECK-NEXT:    arith.constant 2 : i32
// CHECK-NEXT:    arith.addi
func.func @arith() -> i32 {
  %a = arith.constant 2 : i32
  %b = arith.addi %a, %a : i32
  func.return %b : i32
}
