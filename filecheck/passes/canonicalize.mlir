// RUN: npu-opt %s --split-input-file -p canonicalize | filecheck %s

// reshape(reshape(x)) -> reshape(x), keeping the outer op's name; the inner
// reshape stays while it has another user.
// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-NEXT:    %[[R:.*]] = nn.reshape %x {name = "outer"} : (tensor<2x3x4xf32>) -> tensor<24xf32>
// CHECK-NEXT:    func.return %[[R]]
// CHECK-LABEL: func.func @reshape_of_shared_reshape
// CHECK-NEXT:    %[[A:.*]] = nn.reshape %x {name = "inner"} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.reshape %x {name = "outer"} : (tensor<2x3x4xf32>) -> tensor<24xf32>
// CHECK-NEXT:    func.return %[[B]], %[[A]]
func.func @reshape_of_reshape(%x: tensor<2x3x4xf32>) -> tensor<24xf32> {
  %0 = nn.reshape %x {name = "inner"} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = nn.reshape %0 {name = "outer"} : (tensor<6x4xf32>) -> tensor<24xf32>
  func.return %1 : tensor<24xf32>
}
func.func @reshape_of_shared_reshape(%x: tensor<2x3x4xf32>) -> (tensor<24xf32>, tensor<6x4xf32>) {
  %0 = nn.reshape %x {name = "inner"} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = nn.reshape %0 {name = "outer"} : (tensor<6x4xf32>) -> tensor<24xf32>
  func.return %1, %0 : tensor<24xf32>, tensor<6x4xf32>
}

// -----

// Reshape to the same shape, and a reshape chain back to the start, are x.
// CHECK-LABEL: func.func @reshape_identity
// CHECK-NEXT:    func.return %x, %x : tensor<2x3xf32>, tensor<2x3xf32>
func.func @reshape_identity(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = nn.reshape %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = nn.reshape %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %2 = nn.reshape %1 : (tensor<3x2xf32>) -> tensor<2x3xf32>
  func.return %0, %2 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// transpose(transpose(x)) -> one transpose with the composed perm.
// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-NEXT:    %[[T:.*]] = nn.transpose %x {perm = array<i64: 2, 1, 0>, name = "t2"} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
// CHECK-NEXT:    func.return %[[T]]
func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %0 = nn.transpose %x {perm = array<i64: 1, 0, 2>, name = "t1"} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = nn.transpose %0 {perm = array<i64: 2, 0, 1>, name = "t2"} : (tensor<3x2x4xf32>) -> tensor<4x3x2xf32>
  func.return %1 : tensor<4x3x2xf32>
}

// -----

// Inverse transposes and identity transposes are x; a real transpose stays.
// CHECK-LABEL: func.func @transpose_identity
// CHECK-NEXT:    %[[T:.*]] = nn.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x4x2xf32>
// CHECK-NEXT:    func.return %x, %x, %[[T]]
func.func @transpose_identity(%x: tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x3x4x2xf32>) {
  %0 = nn.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x4x2xf32>
  %1 = nn.transpose %0 {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x4x2xf32>) -> tensor<1x2x3x4xf32>
  %2 = nn.transpose %x {perm = array<i64: 0, 1, 2, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  func.return %1, %2, %0 : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x3x4x2xf32>
}

// -----

// x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1 -> x, also with a splat that
// broadcasts up to x's shape.
// CHECK-LABEL: func.func @neutral_operands
// CHECK-NEXT:    func.return %x, %x, %x, %x, %x, %x :
func.func @neutral_operands(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %zero = nn.constant dense<0.0> : tensor<3xf32>
  %one = nn.constant dense<1.0> : tensor<1x1xf32>
  %0 = nn.add %x, %zero : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = nn.add %zero, %x : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = nn.sub %x, %zero : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %3 = nn.mul %x, %one : (tensor<2x3xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
  %4 = nn.mul %one, %x : (tensor<1x1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = nn.div %x, %one : (tensor<2x3xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
  func.return %0, %1, %2, %3, %4, %5 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Not neutral: 0 - x, 1 / x, x * 0, x + 1, a non-splat constant, a constant
// that broadcasts x to a larger shape, an add with a fused activation, and a
// non-constant zero.
// CHECK-LABEL: func.func @not_neutral
// CHECK:         nn.sub %{{.*}}, %x
// CHECK-NEXT:    nn.div %{{.*}}, %x
// CHECK-NEXT:    nn.mul %x, %{{.*}}
// CHECK-NEXT:    nn.add %x, %{{.*}}
// CHECK-NEXT:    nn.add %x, %{{.*}}
// CHECK-NEXT:    nn.add %x, %{{.*}} : (tensor<2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    nn.add %x, %{{.*}} {activation = "clip", activation_min = 0.000000e+00 : f32}
// CHECK-NEXT:    nn.add %x, %y
// CHECK-NEXT:    func.return
func.func @not_neutral(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %zero = nn.constant dense<0.0> : tensor<2x3xf32>
  %one = nn.constant dense<1.0> : tensor<2x3xf32>
  %mixed = nn.constant dense<[0.0, 0.0, 1.0]> : tensor<3xf32>
  %big = nn.constant dense<0.0> : tensor<4x2x3xf32>
  %0 = nn.sub %zero, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = nn.div %one, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = nn.mul %x, %zero : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = nn.add %x, %one : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = nn.add %x, %mixed : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %5 = nn.add %x, %big : (tensor<2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  %6 = nn.add %x, %zero {activation = "clip", activation_min = 0.0 : f32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = nn.add %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// A clip without bounds, or with infinite bounds, is x; a bounded clip stays.
// CHECK-LABEL: func.func @clip
// CHECK-NEXT:    %[[C:.*]] = nn.clip %x {min = 0.000000e+00 : f32} :
// CHECK-NEXT:    func.return %x, %x, %[[C]]
func.func @clip(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = nn.clip %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = nn.clip %x {min = 0xFF800000 : f32, max = 0x7F800000 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = nn.clip %x {min = 0.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// clip(clip(x)) -> one clip with the composed bounds (the outer op's name);
// disjoint ranges give a clip to a single value.
// CHECK-LABEL: func.func @clip_of_clip
// CHECK-NEXT:    %[[A:.*]] = nn.clip %x {min = 1.000000e+00 : f32, max = 6.000000e+00 : f32, name = "outer"} :
// CHECK-NEXT:    %[[B:.*]] = nn.clip %x {min = 2.000000e+00 : f32, max = 2.000000e+00 : f32} :
// CHECK-NEXT:    %[[C:.*]] = nn.clip %x {max = 3.000000e+00 : f32} :
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[C]]
func.func @clip_of_clip(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = nn.clip %x {min = 0.0 : f32, max = 6.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = nn.clip %0 {min = 1.0 : f32, max = 8.0 : f32, name = "outer"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = nn.clip %x {max = 1.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = nn.clip %2 {min = 2.0 : f32, max = 5.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = nn.clip %x {max = 4.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = nn.clip %4 {max = 3.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %1, %3, %5 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Pads of zero (any mode) are x; real padding stays.
// CHECK-LABEL: func.func @pad
// CHECK-NEXT:    %[[P:.*]] = nn.pad %x {pads = array<i64: 0, 1, 0, 0>} :
// CHECK-NEXT:    func.return %x, %x, %[[P]]
func.func @pad(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x4xf32>) {
  %0 = nn.pad %x {pads = array<i64: 0, 0, 0, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = nn.pad %x {pads = array<i64: 0, 0, 0, 0>, mode = "reflect"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = nn.pad %x {pads = array<i64: 0, 1, 0, 0>} : (tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x4xf32>
}

// -----

// A slice taking everything in order is x (a size-1 dim may have any step);
// reversing or cropping slices stay.
// CHECK-LABEL: func.func @slice
// CHECK-NEXT:    %[[R:.*]] = nn.slice %x {starts = array<i64: 0, 2>, ends = array<i64: 1, -1>, steps = array<i64: 1, -1>} :
// CHECK-NEXT:    %[[C:.*]] = nn.slice %x {starts = array<i64: 0, 1>, ends = array<i64: 1, 3>, steps = array<i64: 1, 1>} :
// CHECK-NEXT:    func.return %x, %x, %[[R]], %[[C]]
func.func @slice(%x: tensor<1x3xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1x2xf32>) {
  %0 = nn.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 1, 3>, steps = array<i64: 1, 1>} : (tensor<1x3xf32>) -> tensor<1x3xf32>
  %1 = nn.slice %x {starts = array<i64: 0, 0>, ends = array<i64: -1, 3>, steps = array<i64: -1, 1>} : (tensor<1x3xf32>) -> tensor<1x3xf32>
  %2 = nn.slice %x {starts = array<i64: 0, 2>, ends = array<i64: 1, -1>, steps = array<i64: 1, -1>} : (tensor<1x3xf32>) -> tensor<1x3xf32>
  %3 = nn.slice %x {starts = array<i64: 0, 1>, ends = array<i64: 1, 3>, steps = array<i64: 1, 1>} : (tensor<1x3xf32>) -> tensor<1x2xf32>
  func.return %0, %1, %2, %3 : tensor<1x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1x2xf32>
}

// -----

// Broadcast to the same shape, concat of one operand, split into one piece
// are x; the real ones stay.
// CHECK-LABEL: func.func @single_operand_data_movement
// CHECK-NEXT:    %[[B:.*]] = nn.broadcast %x : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %[[C:.*]] = nn.concat %x, %x {axis = 0 : i64} :
// CHECK-NEXT:    %{{.*}}, %[[S:.*]] = nn.split %x {axis = 1 : i64} :
// CHECK-NEXT:    func.return %x, %x, %x, %[[B]], %[[C]], %[[S]] :
func.func @single_operand_data_movement(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<4x3xf32>, tensor<2x2xf32>) {
  %0 = nn.broadcast %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = nn.concat %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = nn.split %x {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = nn.broadcast %x : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
  %4 = nn.concat %x, %x {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %5, %6 = nn.split %x {axis = 1 : i64} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>)
  func.return %0, %1, %2, %3, %4, %6 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<4x3xf32>, tensor<2x2xf32>
}

// -----

// Chains collapse fully; unused nn ops are removed.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    func.return %x : tensor<1x8xf32>
func.func @chain(%x: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %zero = nn.constant dense<0.0> : tensor<8xf32>
  %0 = nn.reshape %x : (tensor<1x8xf32>) -> tensor<2x4xf32>
  %1 = nn.transpose %0 {perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %2 = nn.transpose %1 {perm = array<i64: 1, 0>} : (tensor<4x2xf32>) -> tensor<2x4xf32>
  %3 = nn.reshape %2 : (tensor<2x4xf32>) -> tensor<1x8xf32>
  %4 = nn.add %3, %zero : (tensor<1x8xf32>, tensor<8xf32>) -> tensor<1x8xf32>
  %5 = nn.clip %4 : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %unused = nn.relu %x : (tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %5 : tensor<1x8xf32>
}

// -----

// xDSL's own canonicalization patterns and folders run too.
// CHECK-LABEL: func.func @arith
// CHECK-NEXT:    %[[C:.*]] = arith.constant 5 : i32
// CHECK-NEXT:    func.return %[[C]] : i32
func.func @arith() -> i32 {
  %a = arith.constant 2 : i32
  %b = arith.constant 3 : i32
  %c = arith.addi %a, %b : i32
  func.return %c : i32
}

// -----

// pow(x, 2) -> x * x (keeping the name); another exponent, or a square that broadcasts, stays.
// CHECK-LABEL: func.func @square
// CHECK-NEXT:    %three = nn.constant
// CHECK-NEXT:    %twos = nn.constant
// CHECK-NEXT:    %[[S:.*]] = nn.mul %x, %x {name = "var"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[C:.*]] = nn.pow %x, %three : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.pow %x, %{{.*}} : (tensor<2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    func.return %[[S]], %[[C]], %[[B]]
func.func @square(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x2x3xf32>) {
  %two = nn.constant dense<2.0> : tensor<1xf32>
  %three = nn.constant dense<3.0> : tensor<1xf32>
  %twos = nn.constant dense<2.0> : tensor<4x2x3xf32>
  %0 = nn.pow %x, %two {name = "var"} : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %1 = nn.pow %x, %three : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %2 = nn.pow %x, %twos : (tensor<2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  func.return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x2x3xf32>
}

// -----

// x * clip(x + 3, 0, 6) / 6 -> hard_swish(x), keeping the division's name: with / 6, with
// * (1/6) on either side, with the clip fused into the add, and with x on either side of the
// product; the add, clip and product go with it.
// CHECK-LABEL: func.func @hard_swish
// CHECK-NEXT:    %[[A:.*]] = nn.hard_swish %x {name = "div"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.hard_swish %x {name = "mul"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[C:.*]] = nn.hard_swish %x {name = "fused"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[C]]
func.func @hard_swish(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %three = nn.constant dense<3.0> : tensor<1xf32>
  %six = nn.constant dense<6.0> : tensor<f32>
  %sixth = nn.constant dense<0.166666672> : tensor<1x1xf32>
  %a0 = nn.add %x, %three : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %a1 = nn.clip %a0 {min = 0.0 : f32, max = 6.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %a2 = nn.mul %x, %a1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %a3 = nn.div %a2, %six {name = "div"} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %b0 = nn.add %three, %x : (tensor<1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %b1 = nn.clip %b0 {min = 0.0 : f32, max = 6.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b2 = nn.mul %b1, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %b3 = nn.mul %sixth, %b2 {name = "mul"} : (tensor<1x1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %c0 = nn.add %x, %three {activation = "clip", activation_min = 0.0 : f32, activation_max = 6.0 : f32} : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %c1 = nn.mul %x, %c0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %c2 = nn.div %c1, %six {name = "fused"} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %a3, %b3, %c2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Not hard-swish, so nothing changes: x + 3 also used elsewhere, clip to [0, 5], y * clip(x + 3)
// (another tensor), / 5, and a product with an activation of its own.
// CHECK-LABEL: func.func @not_hard_swish
// CHECK-NOT:     nn.hard_swish
// CHECK:         func.return
func.func @not_hard_swish(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %three = nn.constant dense<3.0> : tensor<1xf32>
  %six = nn.constant dense<6.0> : tensor<f32>
  %five = nn.constant dense<5.0> : tensor<f32>
  %a0 = nn.add %x, %three : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %a1 = nn.clip %a0 {min = 0.0 : f32, max = 6.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %a2 = nn.mul %x, %a1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %a3 = nn.div %a2, %six : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %b0 = nn.add %x, %three : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %b1 = nn.clip %b0 {min = 0.0 : f32, max = 5.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b2 = nn.mul %x, %b1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %b3 = nn.div %b2, %six : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %c0 = nn.add %x, %three : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %c1 = nn.clip %c0 {min = 0.0 : f32, max = 6.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c2 = nn.mul %y, %c1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %c3 = nn.div %c2, %six : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %d0 = nn.add %x, %three : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %d1 = nn.clip %d0 {min = 0.0 : f32, max = 6.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %d2 = nn.mul %x, %d1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %d3 = nn.div %d2, %five : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %e0 = nn.add %x, %three : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %e1 = nn.clip %e0 {min = 0.0 : f32, max = 6.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %e2 = nn.mul %x, %e1 {activation = "clip", activation_min = 0.0 : f32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %e3 = nn.div %e2, %six : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %a3, %a0, %b3, %c3, %d3, %e3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
