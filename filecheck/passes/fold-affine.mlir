// RUN: npu-opt %s --split-input-file -p fold-affine | filecheck %s

// mul by s = [2, 3] then add t = [1, -1] fold into the conv:
// weight [1, 2] -> [2, 6], bias [0.5, 1] -> [0.5 * 2 + 1, 1 * 3 - 1] = [2, 2].
// CHECK-LABEL: func.func @conv2d
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<[{{\[\[\[}}2.000000e+00]]], {{\[\[\[}}6.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.constant dense<2.000000e+00> : tensor<2xf32>
// CHECK-NEXT:    %[[C:.*]] = nn.conv2d %x, %[[W]], %[[B]] {{{.*}}name = "conv"}
// CHECK-NEXT:    func.return %[[C]]
func.func @conv2d(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = nn.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %b = nn.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %s = nn.constant dense<[[[2.0]], [[3.0]]]> : tensor<2x1x1xf32>
  %t = nn.constant dense<[[[1.0]], [[-1.0]]]> : tensor<2x1x1xf32>
  %0 = nn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, name = "conv"} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %1 = nn.mul %0, %s : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  %2 = nn.add %1, %t : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  func.return %2 : tensor<1x2x2x2xf32>
}

// -----

// (x * 2 + 1) * 3 + 4 = x * 6 + 7; the add keeps the outer add's name.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %[[S:.*]] = nn.constant dense<6.000000e+00> : tensor<2x1x1xf32>
// CHECK-NEXT:    %[[M:.*]] = nn.mul %x, %[[S]]
// CHECK-NEXT:    %[[T:.*]] = nn.constant dense<7.000000e+00> : tensor<2x1x1xf32>
// CHECK-NEXT:    %[[A:.*]] = nn.add %[[M]], %[[T]] {name = "scale"}
// CHECK-NEXT:    func.return %[[A]]
func.func @chain(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %s1 = nn.constant dense<2.0> : tensor<2x1x1xf32>
  %t1 = nn.constant dense<1.0> : tensor<2x1x1xf32>
  %s2 = nn.constant dense<3.0> : tensor<2x1x1xf32>
  %t2 = nn.constant dense<4.0> : tensor<2x1x1xf32>
  %0 = nn.mul %x, %s1 : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = nn.add %0, %t1 : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %2 = nn.mul %1, %s2 : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %3 = nn.add %2, %t2 {name = "scale"} : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  func.return %3 : tensor<1x2x3x3xf32>
}
