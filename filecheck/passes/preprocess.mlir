// RUN: npu-opt %s -p 'preprocess{mean=1.0,2.0,3.0 scale=0.5 reverse_channels=true}' | filecheck %s

func.func @main(%x: tensor<1x3x4x4xf32> {nn.name = "image"}) -> (tensor<1x3x4x4xf32> {nn.name = "y"}) {
  %0 = nn.relu %x {name = "relu"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  func.return %0 : tensor<1x3x4x4xf32>
}

// CHECK:      func.func @main(%[[X:.*]]: tensor<1x3x4x4xf32> {nn.name = "image"})
// CHECK-NEXT:   %[[REV:.*]] = nn.slice %[[X]] {starts = array<i64: 0, 2, 0, 0>, ends = array<i64: 1, -1, 4, 4>, steps = array<i64: 1, -1, 1, 1>, name = "image/reverse_channels"}
// CHECK-NEXT:   %[[MEAN:.*]] = nn.constant dense<{{\[\[\[\[}}1.000000e+00]], {{\[\[}}2.000000e+00]], {{\[\[}}3.000000e+00]]]]> : tensor<1x3x1x1xf32> {name = "image/mean"}
// CHECK-NEXT:   %[[SUB:.*]] = nn.sub %[[REV]], %[[MEAN]] {name = "image/mean"}
// CHECK-NEXT:   %[[SCALE:.*]] = nn.constant dense<5.000000e-01> : tensor<1x1x1x1xf32> {name = "image/scale"}
// CHECK-NEXT:   %[[MUL:.*]] = nn.mul %[[SUB]], %[[SCALE]] {name = "image/scale"}
// CHECK-NEXT:   %{{.*}} = nn.relu %[[MUL]] {name = "relu"}
