// RUN: npu-opt %s --split-input-file -p dce | filecheck %s

// Unused nn ops go, including whole dead chains and unused constants; values
// reaching func.return stay.
// CHECK-LABEL: func.func @dead_chain
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<1.000000e+00> : tensor<2x2xf32> {name = "live"}
// CHECK-NEXT:    %[[F:.*]] = nn.fully_connected %x, %[[W]] {name = "fc"} :
// CHECK-NEXT:    func.return %[[F]]
func.func @dead_chain(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
  %w = nn.constant dense<1.0> : tensor<2x2xf32> {name = "live"}
  %dead = nn.constant dense<2.0> : tensor<2x2xf32> {name = "dead"}
  %0 = nn.fully_connected %x, %w {name = "fc"} : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  %1 = nn.fully_connected %x, %dead : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  %2 = nn.relu %1 : (tensor<1x2xf32>) -> tensor<1x2xf32>
  %3, %4 = nn.split %2 {axis = 1 : i64} : (tensor<1x2xf32>) -> (tensor<1x1xf32>, tensor<1x1xf32>)
  %5 = nn.argmax %0 {axis = 1 : i64} : (tensor<1x2xf32>) -> tensor<1x1xi64>
  func.return %0 : tensor<1x2xf32>
}

// -----

// A multi-result op stays while any of its results is used.
// CHECK-LABEL: func.func @partly_used
// CHECK-NEXT:    %{{.*}}, %[[B:.*]] = nn.split %x
// CHECK-NEXT:    func.return %[[B]]
func.func @partly_used(%x: tensor<4xf32>) -> tensor<3xf32> {
  %0, %1 = nn.split %x {axis = 0 : i64} : (tensor<4xf32>) -> (tensor<1xf32>, tensor<3xf32>)
  func.return %1 : tensor<3xf32>
}
