// RUN: npu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of the data-movement ops.

func.func @reshape_element_count(%x: tensor<2x3xf32>) {
  %0 = nn.reshape %x : (tensor<2x3xf32>) -> tensor<4x2xf32>
  func.return
}
// CHECK:      'nn.reshape': cannot reshape 2x3 into 4x2

// -----

func.func @broadcast_incompatible(%x: tensor<2x3xf32>) {
  %0 = nn.broadcast %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return
}
// CHECK:      'nn.broadcast': (2, 3) does not broadcast to (2, 4)

// -----

func.func @broadcast_to_lower_rank(%x: tensor<2x3xf32>) {
  %0 = nn.broadcast %x : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return
}
// CHECK:      'nn.broadcast': (2, 3) does not broadcast to (3,)

// -----

func.func @transpose_not_permutation(%x: tensor<2x3xf32>) {
  %0 = nn.transpose %x {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return
}
// CHECK:      'nn.transpose': perm (0, 0) is not a permutation of rank 2

// -----

func.func @transpose_perm_length(%x: tensor<2x3xf32>) {
  %0 = nn.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}
// CHECK:      'nn.transpose': perm (1, 0, 2) is not a permutation of rank 2

// -----

func.func @transpose_result_shape(%x: tensor<2x3xf32>) {
  %0 = nn.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK:      'nn.transpose': result shape must be 3x2, got 2x3

// -----

func.func @concat_mismatch(%x: tensor<2x3xf32>, %y: tensor<2x4xf32>) {
  %0 = nn.concat %x, %y {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  func.return
}
// CHECK:      'nn.concat': concat operands 2x3, 2x4 differ outside axis 0

// -----

func.func @concat_rank(%x: tensor<2x3xf32>, %y: tensor<2x3x1xf32>) {
  %0 = nn.concat %x, %y {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<2x6xf32>
  func.return
}
// CHECK:      'nn.concat': concat operands 2x3, 2x3x1 differ outside axis 1

// -----

func.func @concat_axis(%x: tensor<2x3xf32>) {
  %0 = nn.concat %x, %x {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return
}
// CHECK:      'nn.concat': axis 2 is out of range for rank 2

// -----

func.func @concat_no_operands(%x: tensor<2x3xf32>) {
  %0 = "nn.concat"() <{axis = 0 : i64}> : () -> tensor<0xf32>
  func.return
}
// CHECK:      'nn.concat': concat needs at least one operand

// -----

func.func @concat_result_shape(%x: tensor<2x3xf32>) {
  %0 = nn.concat %x, %x {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}
// CHECK:      'nn.concat': result shape must be 2x6, got 4x3

// -----

func.func @split_pieces_do_not_tile(%x: tensor<2x3xf32>) {
  %0, %1 = nn.split %x {axis = 1 : i64} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>)
  func.return
}
// CHECK:      'nn.split': result pieces 2x1, 2x1 make 2x2, not the input 2x3

// -----

func.func @split_pieces_differ(%x: tensor<2x3xf32>) {
  %0, %1 = nn.split %x {axis = 1 : i64} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<1x2xf32>)
  func.return
}
// CHECK:      'nn.split': concat operands 2x1, 1x2 differ outside axis 1

// -----

func.func @split_axis(%x: tensor<2x3xf32>) {
  %0, %1 = nn.split %x {axis = 2 : i64} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>)
  func.return
}
// CHECK:      'nn.split': axis 2 is out of range for rank 2

// -----

func.func @split_no_results(%x: tensor<2x3xf32>) {
  "nn.split"(%x) <{axis = 0 : i64}> : (tensor<2x3xf32>) -> ()
  func.return
}
// CHECK:      'nn.split': needs at least one result

// -----

func.func @slice_lengths(%x: tensor<2x3xf32>) {
  %0 = nn.slice %x {starts = array<i64: 0>, ends = array<i64: 2, 3>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK:      'nn.slice': slice needs one start, end and step per dimension

// -----

func.func @slice_step_zero(%x: tensor<2x3xf32>) {
  %0 = nn.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 2, 3>, steps = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK:      'nn.slice': slice step must not be zero

// -----

func.func @slice_start(%x: tensor<2x3xf32>) {
  %0 = nn.slice %x {starts = array<i64: 0, 4>, ends = array<i64: 2, 3>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x0xf32>
  func.return
}
// CHECK:      'nn.slice': slice start 4 is outside [0, 3]

// -----

func.func @slice_start_reversed(%x: tensor<2x3xf32>) {
  %0 = nn.slice %x {starts = array<i64: 0, 3>, ends = array<i64: 2, -1>, steps = array<i64: 1, -1>} : (tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return
}
// CHECK:      'nn.slice': slice start 3 is outside [0, 2]

// -----

func.func @slice_end(%x: tensor<2x3xf32>) {
  %0 = nn.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 2, 5>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  func.return
}
// CHECK:      'nn.slice': slice end 5 is outside [-1, 3]

// -----

func.func @slice_result_shape(%x: tensor<2x3xf32>) {
  %0 = nn.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 2, 3>, steps = array<i64: 1, 2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK:      'nn.slice': result shape must be 2x2, got 2x3

// -----

func.func @pad_mode(%x: tensor<2x3xf32>) {
  %0 = nn.pad %x {pads = array<i64: 0, 0, 0, 0>, mode = "symmetric"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK:      'nn.pad': mode must be one of constant, reflect, edge, wrap, got "symmetric"

// -----

func.func @pad_length(%x: tensor<2x3xf32>) {
  %0 = nn.pad %x {pads = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}
// CHECK:      'nn.pad': pad needs 4 values (begins then ends), got 2

// -----

func.func @pad_crop_too_much(%x: tensor<2x3xf32>) {
  %0 = nn.pad %x {pads = array<i64: 0, -2, 0, -2>} : (tensor<2x3xf32>) -> tensor<2x0xf32>
  func.return
}
// CHECK:      'nn.pad': negative padding removes more than the input holds: 2x-1

// -----

func.func @pad_result_shape(%x: tensor<2x3xf32>) {
  %0 = nn.pad %x {pads = array<i64: 0, 1, 0, 1>} : (tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return
}
// CHECK:      'nn.pad': result shape must be 2x5, got 2x4

// -----

func.func @resize_mode(%x: tensor<1x1x2x2xf32>) {
  %0 = nn.resize %x {scales = array<f32: 1.0, 1.0, 2.0, 2.0>, mode = "area"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}
// CHECK:      'nn.resize': mode must be one of nearest, linear, cubic

// -----

func.func @resize_mode_missing(%x: tensor<1x1x2x2xf32>) {
  %0 = nn.resize %x {scales = array<f32: 1.0, 1.0, 2.0, 2.0>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}
// CHECK:      property 'mode' expected in operation 'nn.resize'

// -----

func.func @resize_coordinate_mode(%x: tensor<1x1x2x2xf32>) {
  %0 = nn.resize %x {scales = array<f32: 1.0, 1.0, 2.0, 2.0>, mode = "linear", coordinate_mode = "centered"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}
// CHECK:      'nn.resize': unknown coordinate_mode

// -----

func.func @resize_nearest_mode(%x: tensor<1x1x2x2xf32>) {
  %0 = nn.resize %x {scales = array<f32: 1.0, 1.0, 2.0, 2.0>, mode = "nearest", nearest_mode = "round"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}
// CHECK:      'nn.resize': unknown nearest_mode

// -----

func.func @resize_scales_rank(%x: tensor<1x1x2x2xf32>) {
  %0 = nn.resize %x {scales = array<f32: 1.0, 2.0, 2.0>, mode = "nearest"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}
// CHECK:      'nn.resize': input, result and scales must have one rank

// -----

func.func @resize_result_rank(%x: tensor<1x1x2x2xf32>) {
  %0 = nn.resize %x {scales = array<f32: 1.0, 1.0, 2.0, 2.0>, mode = "nearest"} : (tensor<1x1x2x2xf32>) -> tensor<1x4x4xf32>
  func.return
}
// CHECK:      'nn.resize': input, result and scales must have one rank

// -----

func.func @resize_scales_positive(%x: tensor<1x1x2x2xf32>) {
  %0 = nn.resize %x {scales = array<f32: 1.0, 1.0, 0.0, 2.0>, mode = "nearest"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x1x4xf32>
  func.return
}
// CHECK:      'nn.resize': scales must be positive

// -----

func.func @resize_scales_type(%x: tensor<1x1x2x2xf32>) {
  %0 = nn.resize %x {scales = array<i64: 1, 1, 2, 2>, mode = "nearest"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}
// CHECK:      Expected attribute f32 but got i64

// -----

func.func @gather_axis(%x: tensor<2x3xf32>, %i: tensor<2xi64>) {
  %0 = nn.gather %x, %i {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  func.return
}
// CHECK:      'nn.gather': axis 2 is out of range for rank 2

// -----

func.func @gather_indices_type(%x: tensor<2x3xf32>, %i: tensor<2xf32>) {
  %0 = "nn.gather"(%x, %i) <{axis = 0 : i64}> : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK:      operand 'indices' at position 1 does not verify:
// CHECK-NEXT: Expected one of i32, i64, but got f32

// -----

func.func @gather_result_shape(%x: tensor<2x3xf32>, %i: tensor<4xi64>) {
  %0 = nn.gather %x, %i {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<2x3xf32>
  func.return
}
// CHECK:      'nn.gather': result shape must be 2x4, got 2x3

// -----

func.func @depth_to_space_mode(%x: tensor<1x8x2x2xf32>) {
  %0 = nn.depth_to_space %x {block_size = 2 : i64, mode = "RCD"} : (tensor<1x8x2x2xf32>) -> tensor<1x2x4x4xf32>
  func.return
}
// CHECK:      'nn.depth_to_space': mode must be "DCR" or "CRD"

// -----

func.func @depth_to_space_block(%x: tensor<1x8x2x2xf32>) {
  %0 = nn.depth_to_space %x {block_size = 3 : i64} : (tensor<1x8x2x2xf32>) -> tensor<1x1x6x6xf32>
  func.return
}
// CHECK:      'nn.depth_to_space': channels 8 are not divisible by block_size^2 = 9

// -----

func.func @depth_to_space_block_zero(%x: tensor<1x8x2x2xf32>) {
  %0 = nn.depth_to_space %x {block_size = 0 : i64} : (tensor<1x8x2x2xf32>) -> tensor<1x8x2x2xf32>
  func.return
}
// CHECK:      'nn.depth_to_space': block_size must be >= 1, got 0

// -----

func.func @depth_to_space_result_shape(%x: tensor<1x8x2x2xf32>) {
  %0 = nn.depth_to_space %x {block_size = 2 : i64} : (tensor<1x8x2x2xf32>) -> tensor<1x2x2x8xf32>
  func.return
}
// CHECK:      'nn.depth_to_space': result shape must be 1x2x4x4, got 1x2x2x8

// -----

func.func @space_to_depth_block(%x: tensor<1x2x3x4xf32>) {
  %0 = nn.space_to_depth %x {block_size = 2 : i64} : (tensor<1x2x3x4xf32>) -> tensor<1x8x1x2xf32>
  func.return
}
// CHECK:      'nn.space_to_depth': space_to_depth: spatial dims (3, 4) not divisible by block 2

// -----

func.func @space_to_depth_result_shape(%x: tensor<1x2x4x4xf32>) {
  %0 = nn.space_to_depth %x {block_size = 2 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  func.return
}
// CHECK:      'nn.space_to_depth': result shape must be 1x8x2x2, got 1x2x2x2

// -----

func.func @depth_to_space_rank(%x: tensor<8x2x2xf32>) {
  %0 = nn.depth_to_space %x {block_size = 2 : i64} : (tensor<8x2x2xf32>) -> tensor<2x4x4xf32>
  func.return
}
// CHECK:      'nn.depth_to_space': expects a rank-4 NCHW input, got 8x2x2

// -----

func.func @unknown_property(%x: tensor<2x3xf32>) {
  %0 = nn.div %x, %x {activation = "clip"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK:      'nn.div': unknown properties activation

// -----

func.func @misspelt_property(%x: tensor<2x3xf32>) {
  %0 = nn.transpose %x {perm = array<i64: 1, 0>, prem = 1 : i64} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}
// CHECK:      'nn.transpose': unknown properties prem

// -----

func.func @constant_unknown_property() {
  %0 = "nn.constant"() <{value = dense<1.0> : tensor<2xf32>}> {valeu = 1 : i64} : () -> tensor<2xf32>
  func.return
}
// CHECK:      'nn.constant': unknown properties valeu

// -----

func.func @pad_reflect_too_far(%x: tensor<2x3xf32>) {
  %0 = nn.pad %x {pads = array<i64: 0, 3, 0, 0>, mode = "reflect"} : (tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return
}
// CHECK:      'nn.pad': reflect padding of dim 1 must be at most 2
