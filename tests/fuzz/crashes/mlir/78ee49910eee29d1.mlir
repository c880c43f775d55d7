func.func @split_and_argmax() -> (tensor<4294967296xf32>, tensor<3xf32>, tensor<1xi64>) {
  %a = nn.constant dense<[1.0, 5.0, 3.0, 2.0, 4.0]> : tensor<5xf32>
}
