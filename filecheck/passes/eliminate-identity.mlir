// RUN: npu-opt %s --split-input-file -p eliminate-identity | filecheck %s

// Reshape to the same shape and a reshape round trip are x; a reshape chain
// that does not come back keeps both reshapes (merging them is canonicalize's job).
// CHECK-LABEL: func.func @reshape
// CHECK-NEXT:    %[[A:.*]] = nn.reshape %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.reshape %[[A]] : (tensor<3x2xf32>) -> tensor<6xf32>
// CHECK-NEXT:    func.return %x, %x, %[[B]]
func.func @reshape(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<6xf32>) {
  %0 = nn.reshape %x {name = "same"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = nn.reshape %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %2 = nn.reshape %1 : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %3 = nn.reshape %1 : (tensor<3x2xf32>) -> tensor<6xf32>
  func.return %0, %2, %3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<6xf32>
}

// -----

// Identity transposes and inverse pairs are x; non-inverse pairs stay.
// CHECK-LABEL: func.func @transpose
// CHECK-NEXT:    %[[A:.*]] = nn.transpose %x {perm = array<i64: 0, 2, 3, 1>} :
// CHECK-NEXT:    %[[B:.*]] = nn.transpose %[[A]] {perm = array<i64: 0, 2, 3, 1>} :
// CHECK-NEXT:    func.return %x, %x, %[[B]]
func.func @transpose(%x: tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x4x2x3xf32>) {
  %0 = nn.transpose %x {perm = array<i64: 0, 1, 2, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %1 = nn.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x4x2xf32>
  %2 = nn.transpose %1 {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x4x2xf32>) -> tensor<1x2x3x4xf32>
  %3 = nn.transpose %1 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x4x2xf32>) -> tensor<1x4x2x3xf32>
  func.return %0, %2, %3 : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x4x2x3xf32>
}

// -----

// Slices taking everything are x; reversing and cropping slices stay.
// CHECK-LABEL: func.func @slice
// CHECK-NEXT:    %[[R:.*]] = nn.slice %x {starts = array<i64: 1, 0>, ends = array<i64: -1, 3>, steps = array<i64: -1, 1>} :
// CHECK-NEXT:    %[[C:.*]] = nn.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 2, 3>, steps = array<i64: 1, 2>} :
// CHECK-NEXT:    func.return %x, %[[R]], %[[C]]
func.func @slice(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>) {
  %0 = nn.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 2, 3>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = nn.slice %x {starts = array<i64: 1, 0>, ends = array<i64: -1, 3>, steps = array<i64: -1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = nn.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 2, 3>, steps = array<i64: 1, 2>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>
}

// -----

// Zero pads in any mode are x; a crop (negative pad) stays.
// CHECK-LABEL: func.func @pad
// CHECK-NEXT:    %[[P:.*]] = nn.pad %x {pads = array<i64: 0, -1, 0, 0>} :
// CHECK-NEXT:    func.return %x, %x, %[[P]]
func.func @pad(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>) {
  %0 = nn.pad %x {pads = array<i64: 0, 0, 0, 0>, value = 1.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = nn.pad %x {pads = array<i64: 0, 0, 0, 0>, mode = "edge"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = nn.pad %x {pads = array<i64: 0, -1, 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>
}

// -----

// clip without bounds or with (-inf, inf) is x; a one-sided clip stays; so
// does clip(clip(x)) (merging is canonicalize's job).
// CHECK-LABEL: func.func @clip
// CHECK-NEXT:    %[[A:.*]] = nn.clip %x {max = 0x7f800000 : f32, min = -1.000000e+00 : f32} :
// CHECK-NEXT:    %[[B:.*]] = nn.clip %[[A]] {max = 1.000000e+00 : f32} :
// CHECK-NEXT:    func.return %x, %x, %[[A]], %[[B]]
func.func @clip(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = nn.clip %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = nn.clip %x {min = 0xFF800000 : f32, max = 0x7F800000 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = nn.clip %x {max = 0x7F800000 : f32, min = -1.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = nn.clip %2 {max = 1.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Broadcast to the same shape, concat of one operand and split into one
// piece are x; real broadcasts, concats and splits stay.
// CHECK-LABEL: func.func @data_movement
// CHECK-NEXT:    %[[B:.*]] = nn.broadcast %x : (tensor<2x1xf32>) -> tensor<2x5xf32>
// CHECK-NEXT:    %[[C:.*]] = nn.concat %x, %x {axis = 1 : i64} :
// CHECK-NEXT:    %[[S:.*]], %{{.*}} = nn.split %x {axis = 0 : i64} :
// CHECK-NEXT:    func.return %x, %x, %x, %[[B]], %[[C]], %[[S]] :
func.func @data_movement(%x: tensor<2x1xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x5xf32>, tensor<2x2xf32>, tensor<1x1xf32>) {
  %0 = nn.broadcast %x : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %1 = nn.concat %x {axis = 0 : i64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %2 = nn.split %x {axis = 1 : i64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %3 = nn.broadcast %x : (tensor<2x1xf32>) -> tensor<2x5xf32>
  %4 = nn.concat %x, %x {axis = 1 : i64} : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %5, %6 = nn.split %x {axis = 0 : i64} : (tensor<2x1xf32>) -> (tensor<1x1xf32>, tensor<1x1xf32>)
  func.return %0, %1, %2, %3, %4, %5 : tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x5xf32>, tensor<2x2xf32>, tensor<1x1xf32>
}

// -----

// Neutral arithmetic is not an identity op here: x + 0 stays.
// CHECK-LABEL: func.func @neutral_arithmetic_stays
// CHECK:         %[[A:.*]] = nn.add %x, %{{.*}}
// CHECK-NEXT:    func.return %[[A]]
func.func @neutral_arithmetic_stays(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %zero = nn.constant dense<0.0> : tensor<2x3xf32>
  %0 = nn.add %x, %zero : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

// Removing an identity exposes the next one; the surviving producer keeps its name.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %[[R:.*]] = nn.relu %x {name = "act"} :
// CHECK-NEXT:    func.return %[[R]]
func.func @chain(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %0 = nn.relu %x {name = "act"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %1 = nn.reshape %0 : (tensor<1x4xf32>) -> tensor<4xf32>
  %2 = nn.pad %1 {pads = array<i64: 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  %3 = nn.reshape %2 : (tensor<4xf32>) -> tensor<1x4xf32>
  %4 = nn.transpose %3 {perm = array<i64: 0, 1>} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %4 : tensor<1x4xf32>
}
