// RUN: npu-opt %s -p fold-constants | filecheck %s

// Integer and bool ops fold with their integer semantics (truncating division, casts that
// truncate toward zero), and the folded constants keep their element types.

// CHECK-LABEL: func.func @shape_arithmetic
// CHECK-NEXT:    %[[S:.*]] = nn.constant dense<[2, 12]> : tensor<2xi64> {name = "target"}
// CHECK-NEXT:    %[[Q:.*]] = nn.constant dense<[-3, 3]> : tensor<2xi32> {name = "quotient"}
// CHECK-NEXT:    %[[M:.*]] = nn.constant dense<[true, false]> : tensor<2xi1> {name = "mask"}
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<[2.500000e+00, 0.000000e+00]> : tensor<2xf32> {name = "picked"}
// CHECK-NEXT:    func.return %[[S]], %[[Q]], %[[M]], %[[W]]
func.func @shape_arithmetic() -> (tensor<2xi64>, tensor<2xi32>, tensor<2xi1>, tensor<2xf32>) {
  %dims = nn.constant dense<[2, 3, 4]> : tensor<3xi64>
  %lead = nn.slice %dims {starts = array<i64: 0>, ends = array<i64: 1>, steps = array<i64: 1>} : (tensor<3xi64>) -> tensor<1xi64>
  %rest = nn.constant dense<[12]> : tensor<1xi64>
  %target = nn.concat %lead, %rest {axis = 0 : i64, name = "target"} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %f = nn.constant dense<[-7.9, 7.9]> : tensor<2xf32>
  %i = nn.cast %f : (tensor<2xf32>) -> tensor<2xi32>
  %two = nn.constant dense<2> : tensor<2xi32>
  %q = nn.div %i, %two {name = "quotient"} : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %zero = nn.constant dense<0> : tensor<2xi32>
  %m = nn.less %q, %zero {name = "mask"} : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
  %a = nn.constant dense<2.5> : tensor<2xf32>
  %b = nn.constant dense<0.0> : tensor<2xf32>
  %w = nn.where %m, %a, %b {name = "picked"} : (tensor<2xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %target, %q, %m, %w : tensor<2xi64>, tensor<2xi32>, tensor<2xi1>, tensor<2xf32>
}
