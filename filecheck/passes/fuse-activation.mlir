// RUN: npu-opt %s --split-input-file -p fuse-activation | filecheck %s

// relu -> clip with min 0; the producer keeps its name, the relu's is dropped.
// CHECK-LABEL: func.func @relu_into_conv
// CHECK-NEXT:    %[[C:.*]] = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, name = "conv", activation = "clip", activation_min = 0.000000e+00 : f32} :
// CHECK-NEXT:    func.return %[[C]]
func.func @relu_into_conv(%x: tensor<1x3x4x4xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x2x2xf32> {
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, name = "conv"} : (tensor<1x3x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x2x2xf32>
  %1 = nn.relu %0 {name = "relu"} : (tensor<1x8x2x2xf32>) -> tensor<1x8x2x2xf32>
  func.return %1 : tensor<1x8x2x2xf32>
}

// -----

// clip(min, max) -> clip activation, with one-sided bounds kept one-sided.
// CHECK-LABEL: func.func @clip
// CHECK-NEXT:    %[[A:.*]] = nn.conv_transpose2d %x, %w {{{.*}}activation = "clip", activation_min = 0.000000e+00 : f32, activation_max = 6.000000e+00 : f32} :
// CHECK-NEXT:    %[[B:.*]] = nn.fully_connected %v, %u {activation = "clip", activation_max = 1.000000e+00 : f32} :
// CHECK-NEXT:    %[[C:.*]] = nn.matmul %v, %t {activation = "clip", activation_min = -1.000000e+00 : f32} :
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[C]]
func.func @clip(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x2x2xf32>, %v: tensor<2x3xf32>, %u: tensor<5x3xf32>, %t: tensor<3x5xf32>) -> (tensor<1x4x4x4xf32>, tensor<2x5xf32>, tensor<2x5xf32>) {
  %0 = nn.conv_transpose2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x4x2x2xf32>) -> tensor<1x4x4x4xf32>
  %1 = nn.clip %0 {min = 0.0 : f32, max = 6.0 : f32} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %2 = nn.fully_connected %v, %u : (tensor<2x3xf32>, tensor<5x3xf32>) -> tensor<2x5xf32>
  %3 = nn.clip %2 {max = 1.0 : f32} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %4 = nn.matmul %v, %t : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  %5 = nn.clip %4 {min = -1.0 : f32} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %1, %3, %5 : tensor<1x4x4x4xf32>, tensor<2x5xf32>, tensor<2x5xf32>
}

// -----

// leaky_relu -> leaky_relu activation with the same alpha.
// CHECK-LABEL: func.func @leaky_relu
// CHECK-NEXT:    %[[A:.*]] = nn.avg_pool2d %x {{{.*}}name = "pool", activation = "leaky_relu", activation_alpha = 1.000000e-01 : f32} :
// CHECK-NEXT:    func.return %[[A]]
func.func @leaky_relu(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %0 = nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, name = "pool"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %1 = nn.leaky_relu %0 {alpha = 0.1 : f32} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  func.return %1 : tensor<1x2x2x2xf32>
}

// -----

// add, sub and mul take activations too.
// CHECK-LABEL: func.func @elementwise
// CHECK-NEXT:    %[[A:.*]] = nn.add %x, %y {activation = "clip", activation_min = 0.000000e+00 : f32} :
// CHECK-NEXT:    %[[S:.*]] = nn.sub %x, %y {activation = "clip", activation_min = 0.000000e+00 : f32, activation_max = 6.000000e+00 : f32} :
// CHECK-NEXT:    %[[M:.*]] = nn.mul %x, %y {activation = "leaky_relu", activation_alpha = 2.000000e-01 : f32} :
// CHECK-NEXT:    func.return %[[A]], %[[S]], %[[M]]
func.func @elementwise(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = nn.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = nn.relu %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = nn.sub %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = nn.clip %2 {min = 0.0 : f32, max = 6.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %4 = nn.mul %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %5 = nn.leaky_relu %4 {alpha = 0.2 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1, %3, %5 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Not fused: the producer has another user; the producer cannot carry an
// activation (div, max_pool2d, relu); a clip without bounds.
// CHECK-LABEL: func.func @not_fused
// CHECK-NEXT:    %[[A:.*]] = nn.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.relu %[[A]] :
// CHECK-NEXT:    %[[C:.*]] = nn.div %x, %y :
// CHECK-NEXT:    %[[D:.*]] = nn.relu %[[C]] :
// CHECK-NEXT:    %[[E:.*]] = nn.relu %[[D]] :
// CHECK-NEXT:    %[[F:.*]] = nn.mul %x, %y :
// CHECK-NEXT:    %[[G:.*]] = nn.clip %[[F]] :
// CHECK-NEXT:    func.return %[[B]], %[[A]], %[[E]], %[[G]]
func.func @not_fused(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = nn.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = nn.relu %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = nn.div %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = nn.relu %2 : (tensor<4xf32>) -> tensor<4xf32>
  %4 = nn.relu %3 : (tensor<4xf32>) -> tensor<4xf32>
  %5 = nn.mul %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %6 = nn.clip %5 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1, %0, %4, %6 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// max_pool2d is not ActivationFusable.
// CHECK-LABEL: func.func @max_pool
// CHECK-NEXT:    %[[P:.*]] = nn.max_pool2d %x
// CHECK-NEXT:    %[[R:.*]] = nn.relu %[[P]]
// CHECK-NEXT:    func.return %[[R]]
func.func @max_pool(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %0 = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %1 = nn.relu %0 : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  func.return %1 : tensor<1x2x2x2xf32>
}

// -----

// A chain of clips composes into the producer's activation, also when the
// ranges are disjoint; leaky_relu does not compose with a clip activation,
// nor a clip with a leaky_relu activation.
// CHECK-LABEL: func.func @compose
// CHECK-NEXT:    %[[A:.*]] = nn.add %x, %y {activation = "clip", activation_min = 0.000000e+00 : f32, activation_max = 6.000000e+00 : f32} :
// CHECK-NEXT:    %[[B:.*]] = nn.sub %x, %y {activation = "clip", activation_min = 2.000000e+00 : f32, activation_max = 2.000000e+00 : f32} :
// CHECK-NEXT:    %[[C:.*]] = nn.mul %x, %y {activation = "clip", activation_min = 0.000000e+00 : f32} :
// CHECK-NEXT:    %[[D:.*]] = nn.leaky_relu %[[C]] {alpha = 1.000000e-01 : f32} :
// CHECK-NEXT:    %[[E:.*]] = nn.matmul %x, %y {activation = "leaky_relu", activation_alpha = 1.000000e-01 : f32} :
// CHECK-NEXT:    %[[F:.*]] = nn.clip %[[E]] {max = 1.000000e+00 : f32} :
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[D]], %[[F]]
func.func @compose(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) {
  %0 = nn.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = nn.relu %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = nn.clip %1 {min = -3.0 : f32, max = 6.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %3 = nn.sub %x, %y {activation = "clip", activation_max = 1.0 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = nn.clip %3 {min = 2.0 : f32, max = 5.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %5 = nn.mul %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %6 = nn.relu %5 : (tensor<4xf32>) -> tensor<4xf32>
  %7 = nn.leaky_relu %6 {alpha = 0.1 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %8 = nn.matmul %x, %y {activation = "leaky_relu", activation_alpha = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  %9 = nn.clip %8 {max = 1.0 : f32} : (tensor<f32>) -> tensor<f32>
  func.return %2, %4, %7, %9 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>
}
