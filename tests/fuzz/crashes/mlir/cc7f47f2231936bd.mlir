func.func @chain(%x: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %0 = nn.reshape %x : (tensor<1x8xf32>) -> tensor<2x4xf32>
  %1 = nn.transpose %0 {perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %2 = nn.transpose %1 {perm = array<i64: 1, 0>} : (tensor<4x2xf32>) -> tensor<2x4xf32>
  %3 = nn.reshape %2 : (tensor<2x4xf32>) -> tensor<1x8xf32>
  %4 = nn.add %3, %zero : (tensor<1x8xf32>, tensor<8xf32>) -> tensor<1x8xf32>
  %zero = nn.constant dense<0.0> : tensor<8xf32>
  %5 = nn.clip %4 : (tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %5 : tensor<1x8xf32>
}
