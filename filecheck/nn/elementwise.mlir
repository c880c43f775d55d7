// RUN: npu-opt %s | npu-opt | filecheck %s
// RUN: npu-opt %s --print-op-generic | npu-opt | filecheck %s

// Round trip of the constant and elementwise ops (custom and generic form).

// CHECK-LABEL: func.func @constants
// CHECK-NEXT:    %0 = nn.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32> {name = "weight"}
// CHECK-NEXT:    %1 = nn.constant dense<5.000000e-01> : tensor<3xf32>
// CHECK-NEXT:    %2 = nn.constant dense<[1, -2]> : tensor<2xi64>
// CHECK-NEXT:    %3 = nn.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    func.return
func.func @constants() {
  %0 = nn.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32> {name = "weight"}
  %1 = nn.constant dense<0.5> : tensor<3xf32>
  %2 = nn.constant dense<[1, -2]> : tensor<2xi64>
  %3 = nn.constant dense<0.0> : tensor<f32>
  func.return
}

// CHECK-LABEL: func.func @binary
// CHECK-NEXT:    %0 = nn.add %x, %y {name = "add"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = nn.add %x, %y {activation = "clip", activation_min = 0.000000e+00 : f32, activation_max = 6.000000e+00 : f32} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %2 = nn.sub %x, %y {activation = "leaky_relu", activation_alpha = 1.000000e-01 : f32} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = nn.mul %y, %x {activation = "clip", activation_max = 1.000000e+00 : f32} : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %4 = nn.div %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %5 = nn.pow %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %6 = nn.maximum %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %7 = nn.minimum %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %8 = nn.prelu %x, %s : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return
func.func @binary(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %s: tensor<1x3xf32>) {
  %0 = nn.add %x, %y {name = "add"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = nn.add %x, %y {activation = "clip", activation_min = 0.0 : f32, activation_max = 6.0 : f32} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = nn.sub %x, %y {activation = "leaky_relu", activation_alpha = 0.1 : f32} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %3 = nn.mul %y, %x {activation = "clip", activation_max = 1.0 : f32} : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = nn.div %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %5 = nn.pow %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %6 = nn.maximum %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %7 = nn.minimum %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %8 = nn.prelu %x, %s : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  func.return
}

// CHECK-LABEL: func.func @unary
// CHECK-NEXT:    %0 = nn.relu %x {name = "relu"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = nn.sigmoid %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %2 = nn.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = nn.exp %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %4 = nn.log %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %5 = nn.sqrt %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %6 = nn.erf %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %7 = nn.abs %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %8 = nn.neg %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %9 = nn.reciprocal %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %10 = nn.floor %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %11 = nn.ceil %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %12 = nn.softplus %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %13 = nn.hard_swish %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %14 = nn.gelu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %15 = nn.gelu %x {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %16 = nn.leaky_relu %x {alpha = 1.000000e-02 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %17 = nn.elu %x {alpha = 1.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %18 = nn.hard_sigmoid %x {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %19 = nn.clip %x {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %20 = nn.clip %x {max = 1.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %21 = nn.clip %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %22 = nn.softmax %x {axis = -1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %23 = nn.log_softmax %x {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return
func.func @unary(%x: tensor<2x3xf32>) {
  %0 = nn.relu %x {name = "relu"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = nn.sigmoid %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = nn.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = nn.exp %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = nn.log %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = nn.sqrt %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = nn.erf %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = nn.abs %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %8 = nn.neg %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %9 = nn.reciprocal %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %10 = nn.floor %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %11 = nn.ceil %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %12 = nn.softplus %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %13 = nn.hard_swish %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %14 = nn.gelu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %15 = nn.gelu %x {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %16 = nn.leaky_relu %x {alpha = 0.01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %17 = nn.elu %x {alpha = 1.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %18 = nn.hard_sigmoid %x {alpha = 0.2 : f32, beta = 0.5 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %19 = nn.clip %x {min = 0.0 : f32, max = 6.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %20 = nn.clip %x {max = 1.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %21 = nn.clip %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %22 = nn.softmax %x {axis = -1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %23 = nn.log_softmax %x {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
