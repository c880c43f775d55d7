func.func @reshape_identity(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = nn.reshape %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = nn.reshape %1 : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %1 = nn.reshape %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %0, %2 : tensor<2x3xf32>, tensor<2x3xf32>
}
