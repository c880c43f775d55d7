func.func @clip_of_clip(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = nn.clip %x {min = 0.0 : f32, max = 6.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = nn.clip %0 {min = 1.0 : f32, max = 8.0 : f32, name = "outer"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = nn.clip %x {max = 1.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = nn.clip %2 {min = 2.0 : f32, max = 5.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = nn.clip %4 {max = 3.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = nn.clip %x {max = 4.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %1, %3, %5 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
