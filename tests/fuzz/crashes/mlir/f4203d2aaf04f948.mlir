func.func @not_constant(%x: tensor<3xf32>) -> tensor<3xf32> {
  %a = nn.constant dense<2.0> : tensor<3xf32>
  %0 = nn.mul %0, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
