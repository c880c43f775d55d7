func.func @not_constant(%x: tensor<3xf32>) -> tensor<3xf32> {
}
