// RUN: npu-opt %s --split-input-file -p fold-batchnorm | filecheck %s
// RUN: npu-opt %s --split-input-file -p 'fold-batchnorm{standalone=false}' | filecheck %s --check-prefix=LAYER

// s = scale / sqrt(var + eps) = [2, 1], t = bias - mean * s = [1, 0]:
// weight [1, 2] -> [2, 2], bias [0.5, -1] -> [0.5 * 2 + 1, -1 * 1 + 0] = [2, -1].
// The conv keeps its name, the new constants keep the old constants' names.
// CHECK-LABEL: func.func @conv2d
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<2.000000e+00> : tensor<2x1x1x1xf32> {name = "conv.weight"}
// CHECK-NEXT:    %[[B:.*]] = nn.constant dense<[2.000000e+00, -1.000000e+00]> : tensor<2xf32> {name = "conv.bias"}
// CHECK-NEXT:    %[[C:.*]] = nn.conv2d %x, %[[W]], %[[B]] {{{.*}}name = "conv"} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    func.return %[[C]]
// LAYER-LABEL: func.func @conv2d
// LAYER-NOT:     nn.batch_norm
func.func @conv2d(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = nn.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32> {name = "conv.weight"}
  %b = nn.constant dense<[0.5, -1.0]> : tensor<2xf32> {name = "conv.bias"}
  %scale = nn.constant dense<[4.0, 3.0]> : tensor<2xf32>
  %shift = nn.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %mean = nn.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %var = nn.constant dense<[3.0, 8.0]> : tensor<2xf32>
  %0 = nn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, name = "conv"} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %1 = nn.batch_norm %0, %scale, %shift, %mean, %var {epsilon = 1.0 : f32, name = "bn"} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  func.return %1 : tensor<1x2x2x2xf32>
}

// -----

// Without a bias, the folded conv gets bias t, named after the conv.
// CHECK-LABEL: func.func @conv2d_no_bias
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<[{{\[\[\[}}2.000000e+00]]], {{\[\[\[}}3.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.constant dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf32> {name = "conv.bias"}
// CHECK-NEXT:    %[[C:.*]] = nn.conv2d %x, %[[W]], %[[B]] {{{.*}}name = "conv"}
// CHECK-NEXT:    func.return %[[C]]
func.func @conv2d_no_bias(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = nn.constant dense<[[[[1.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %scale = nn.constant dense<[4.0, 3.0]> : tensor<2xf32>
  %shift = nn.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %mean = nn.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %var = nn.constant dense<[3.0, 8.0]> : tensor<2xf32>
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, name = "conv"} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %1 = nn.batch_norm %0, %scale, %shift, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  func.return %1 : tensor<1x2x2x2xf32>
}

// -----

// conv_transpose2d weights are [C, O / groups, kH, kW]: with groups = 2, output
// channel 2 * c + j comes from w[c, j], so s = [1, 2, 3, 4] scales w row-major.
// CHECK-LABEL: func.func @conv_transpose2d_grouped
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<[{{\[\[\[}}1.000000e+00]], {{\[\[}}2.000000e+00]]], {{\[\[\[}}3.000000e+00]], {{\[\[}}4.000000e+00]]]]> : tensor<2x2x1x1xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    %[[C:.*]] = nn.conv_transpose2d %x, %[[W]], %[[B]] {{{.*}}groups = 2 : i64} :
// CHECK-NEXT:    func.return %[[C]]
func.func @conv_transpose2d_grouped(%x: tensor<1x2x2x2xf32>) -> tensor<1x4x2x2xf32> {
  %w = nn.constant dense<1.0> : tensor<2x2x1x1xf32>
  %scale = nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %zero = nn.constant dense<0.0> : tensor<4xf32>
  %var = nn.constant dense<0.75> : tensor<4xf32>
  %0 = nn.conv_transpose2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 2 : i64} : (tensor<1x2x2x2xf32>, tensor<2x2x1x1xf32>) -> tensor<1x4x2x2xf32>
  %1 = nn.batch_norm %0, %scale, %zero, %zero, %var {epsilon = 0.25 : f32} : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x2x2xf32>
  func.return %1 : tensor<1x4x2x2xf32>
}

// -----

// fully_connected: weight [O, K] rows scale by s.
// CHECK-LABEL: func.func @fully_connected
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<{{\[\[}}2.000000e+00, 2.000000e+00, 2.000000e+00], [1.000000e+00, 1.000000e+00, 1.000000e+00]]> : tensor<2x3xf32> {name = "fc.weight"}
// CHECK-NEXT:    %[[B:.*]] = nn.constant dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf32> {name = "fc.bias"}
// CHECK-NEXT:    %[[F:.*]] = nn.fully_connected %x, %[[W]], %[[B]] {name = "fc"}
// CHECK-NEXT:    func.return %[[F]]
func.func @fully_connected(%x: tensor<5x3xf32>) -> tensor<5x2xf32> {
  %w = nn.constant dense<1.0> : tensor<2x3xf32> {name = "fc.weight"}
  %scale = nn.constant dense<[4.0, 3.0]> : tensor<2xf32>
  %shift = nn.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %mean = nn.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %var = nn.constant dense<[3.0, 8.0]> : tensor<2xf32>
  %0 = nn.fully_connected %x, %w {name = "fc"} : (tensor<5x3xf32>, tensor<2x3xf32>) -> tensor<5x2xf32>
  %1 = nn.batch_norm %0, %scale, %shift, %mean, %var {epsilon = 1.0 : f32} : (tensor<5x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<5x2xf32>
  func.return %1 : tensor<5x2xf32>
}

// -----

// A batch norm that cannot fold into a layer becomes x * s + t with [C, 1, 1]
// constants; the add takes the BN's name.
// CHECK-LABEL: func.func @standalone
// CHECK-NEXT:    %[[S:.*]] = nn.constant dense<{{\[\[\[}}2.000000e+00]], {{\[\[}}1.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %[[T:.*]] = nn.constant dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}0.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %[[M:.*]] = nn.mul %x, %[[S]] : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    %[[A:.*]] = nn.add %[[M]], %[[T]] {name = "bn"} : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    func.return %[[A]]
// LAYER-LABEL: func.func @standalone
// LAYER:         nn.batch_norm %x
func.func @standalone(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %scale = nn.constant dense<[4.0, 3.0]> : tensor<2xf32>
  %shift = nn.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %mean = nn.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %var = nn.constant dense<[3.0, 8.0]> : tensor<2xf32>
  %0 = nn.batch_norm %x, %scale, %shift, %mean, %var {epsilon = 1.0 : f32, name = "bn"} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %0 : tensor<1x2x3x3xf32>
}

// -----

// Not folded into the layer: the conv has another user, a fused activation,
// or a non-constant weight; the folds that remain use mul + add.
// LAYER-LABEL: func.func @not_into_layer
// LAYER-NEXT:    %[[W:.*]] = nn.constant
// LAYER-NEXT:    nn.constant
// LAYER-NEXT:    nn.constant
// LAYER-NEXT:    %[[C0:.*]] = nn.conv2d %x, %[[W]] {{{.*}}name = "shared"}
// LAYER-NEXT:    nn.batch_norm %[[C0]]
// LAYER-NEXT:    %[[C1:.*]] = nn.conv2d %x, %[[W]] {{{.*}}activation = "clip"
// LAYER-NEXT:    nn.batch_norm %[[C1]]
// LAYER-NEXT:    %[[C2:.*]] = nn.conv2d %x, %v
// LAYER-NEXT:    nn.batch_norm %[[C2]]
// CHECK-LABEL: func.func @not_into_layer
// CHECK-NOT:     nn.batch_norm
// CHECK-COUNT-3: nn.add
// CHECK-NOT:     nn.batch_norm
func.func @not_into_layer(%x: tensor<1x1x2x2xf32>, %v: tensor<2x1x1x1xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %w = nn.constant dense<1.0> : tensor<2x1x1x1xf32>
  %one = nn.constant dense<1.0> : tensor<2xf32>
  %zero = nn.constant dense<0.0> : tensor<2xf32>
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, name = "shared"} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %1 = nn.batch_norm %0, %one, %zero, %zero, %one {epsilon = 0.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %2 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, activation = "clip", activation_min = 0.0 : f32} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %3 = nn.batch_norm %2, %one, %zero, %zero, %one {epsilon = 0.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %4 = nn.conv2d %x, %v {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %5 = nn.batch_norm %4, %one, %zero, %zero, %one {epsilon = 0.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  func.return %1, %0, %3, %5 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// -----

// Non-constant batch-norm parameters fold nowhere.
// CHECK-LABEL: func.func @dynamic_parameters
// CHECK-NEXT:    nn.constant
// CHECK-NEXT:    %[[C:.*]] = nn.conv2d
// CHECK-NEXT:    %[[B:.*]] = nn.batch_norm %[[C]], %s, %s, %s, %s
// CHECK-NEXT:    func.return %[[B]]
func.func @dynamic_parameters(%x: tensor<1x1x2x2xf32>, %s: tensor<2xf32>) -> tensor<1x2x2x2xf32> {
  %w = nn.constant dense<1.0> : tensor<2x1x1x1xf32>
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %1 = nn.batch_norm %0, %s, %s, %s, %s {epsilon = 0.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  func.return %1 : tensor<1x2x2x2xf32>
}
