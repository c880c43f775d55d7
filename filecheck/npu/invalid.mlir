// RUN: npu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of the npu dialect: tensor operands, each instruction kind, host
// bodies, and the program-level rules (regions, I/O, layers, tokens between engines).

// unknown_region
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.dma <"activations", 0, [4], i8> -> <"dram", 0, [4], i8>
}
// CHECK: #npu.tensor: unknown region 'dram' (known: constants, mutable, activations, sram)

// -----

// zero_dimension
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.dma <"activations", 0, [4, 0], i8> -> <"activations", 64, [4, 1], i8>
}
// CHECK: #npu.tensor: dimensions must be positive, got 4x0

// -----

// negative_stride
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.dma <"activations", 0, [4], [-1], i8> -> <"activations", 64, [4], i8>
}
// CHECK: #npu.tensor: strides must be non-negative, got [-1]

// -----

// misaligned
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.dma <"activations", 1, [4], i16> -> <"activations", 64, [4], i16>
}
// CHECK: #npu.tensor: offset 1 is not a multiple of the element size

// -----

// rank_nine
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.dma <"activations", 0, [1, 1, 1, 1, 1, 1, 1, 1, 1], i8> -> <"activations", 64, [1, 1, 1, 1, 1, 1, 1, 1, 1], i8>
}
// CHECK: #npu.tensor: rank must be in [1, 8], got 9

// -----

// too_many_elements
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.dma <"activations", 0, [65536, 65536], [0, 0], i8> -> <"activations", 64, [65536, 65536], [0, 0], i8>
}
// CHECK: #npu.tensor: 4294967296 elements exceed the limit of 268435456

// -----

// stride_count
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.dma <"activations", 0, [4, 4], [1], i8> -> <"activations", 64, [4, 4], i8>
}
// CHECK: #npu.tensor: 1 strides for a rank-2 shape

// -----

// dma_shapes
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.dma <"activations", 0, [4, 2], i8> -> <"activations", 64, [2, 4], i8>
}
// CHECK: 'npu.dma': shapes differ: src 4x2, dst 2x4

// -----

// dma_types
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.dma <"activations", 0, [4], i8> -> <"activations", 64, [4], u8>
}
// CHECK: 'npu.dma': src, dst must have one element type, got i8, u8

// -----

// dma_to_constants
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.dma <"activations", 0, [4], i8> -> <"constants", 0, [4], i8>
}
// CHECK: 'npu.dma': dst: the constants region is read-only

// -----

// dma_overlapping_write
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.dma <"activations", 0, [4, 4], i8> -> <"activations", 64, [4, 4], [2, 1], i8>
}
// CHECK: 'npu.dma': dst: strides [2, 1] make written elements overlap

// -----

// unknown_property
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.dma <"activations", 0, [4], i8> -> <"activations", 64, [4], i8> {lyer = 0 : i64}
}
// CHECK: 'npu.dma': unknown properties lyer

// -----

// layer_out_of_range
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.dma <"activations", 0, [4], i8> -> <"activations", 64, [4], i8> {layer = 3 : i64}
}
// CHECK: 'npu.program': instruction 0 (dma): layer 3 is not among the 1 layers

// -----

// conv_ofm_shape
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.conv2d ifm <"activations", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 4, 1, 1], i8> bias_scale <"constants", 0, [4, 4], i32> ofm <"activations", 64, [1, 4, 3, 3], i8>
}
// CHECK: 'npu.conv2d': ofm shape must be 1x4x4x4, got 1x4x3x3

// -----

// conv_groups
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.conv2d ifm <"activations", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 2, 1, 1], i8> bias_scale <"constants", 0, [4, 4], i32> ofm <"activations", 64, [1, 4, 4, 4], i8> {groups = 3 : i64}
}
// CHECK: 'npu.conv2d': input channels 4 != weight channels 2 x groups 3

// -----

// conv_bias_scale_shape
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.conv2d ifm <"activations", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 4, 1, 1], i8> bias_scale <"constants", 0, [4, 3], i32> ofm <"activations", 64, [1, 4, 4, 4], i8>
}
// CHECK: 'npu.conv2d': bias_scale must be i32 of shape 4x4 (bias, multiplier, shift, weight zero point per output channel), got i32 4x3

// -----

// conv_bias_scale_type
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.conv2d ifm <"activations", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 4, 1, 1], i8> bias_scale <"constants", 0, [4, 4], i16> ofm <"activations", 64, [1, 4, 4, 4], i8>
}
// CHECK: 'npu.conv2d': bias_scale must be i32 of shape 4x4 (bias, multiplier, shift, weight zero point per output channel), got i16 4x4

// -----

// conv_bias_scale_strides
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.conv2d ifm <"activations", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 4, 1, 1], i8> bias_scale <"constants", 0, [4, 4], [8, 1], i32> ofm <"activations", 64, [1, 4, 4, 4], i8>
}
// CHECK: 'npu.conv2d': bias_scale must be contiguous (strides [4, 1]), got [8, 1]

// -----

// conv_float
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.conv2d ifm <"activations", 0, [1, 4, 4, 4], f32> weights <"sram", 0, [4, 4, 1, 1], i8> bias_scale <"constants", 0, [4, 4], i32> ofm <"activations", 64, [1, 4, 4, 4], i8>
}
// CHECK: 'npu.conv2d': ifm must hold 8, 16 or 32-bit integers

// -----

// conv_weight_rank
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.conv2d ifm <"activations", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 4, 1], i8> bias_scale <"constants", 0, [4, 4], i32> ofm <"activations", 64, [1, 4, 4, 4], i8>
}
// CHECK: 'npu.conv2d': weights must have rank 4, got 3

// -----

// conv_stride_zero
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.conv2d ifm <"activations", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 4, 1, 1], i8> bias_scale <"constants", 0, [4, 4], i32> ofm <"activations", 64, [1, 4, 4, 4], i8> {strides = array<i64: 0, 1>}
}
// CHECK: 'npu.conv2d': strides must be positive, got [0, 1]

// -----

// conv_stride_count
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.conv2d ifm <"activations", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 4, 1, 1], i8> bias_scale <"constants", 0, [4, 4], i32> ofm <"activations", 64, [1, 4, 4, 4], i8> {strides = array<i64: 1, 1, 1>}
}
// CHECK: 'npu.conv2d': strides needs 2 values, got 3

// -----

// conv_zero_point
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.conv2d ifm <"activations", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 4, 1, 1], i8> bias_scale <"constants", 0, [4, 4], i32> ofm <"activations", 64, [1, 4, 4, 4], i8> {ifm_zero_point = 128 : i64}
}
// CHECK: 'npu.conv2d': ifm_zero_point 128 is outside [-128, 127]

// -----

// conv_clamp
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.conv2d ifm <"activations", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 4, 1, 1], i8> bias_scale <"constants", 0, [4, 4], i32> ofm <"activations", 64, [1, 4, 4, 4], i8> {clamp_min = 5 : i64, clamp_max = 4 : i64}
}
// CHECK: 'npu.conv2d': clamp_min 5 exceeds clamp_max 4

// -----

// conv_clamp_range
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.conv2d ifm <"activations", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 4, 1, 1], i8> bias_scale <"constants", 0, [4, 4], i32> ofm <"activations", 64, [1, 4, 4, 4], u8> {clamp_min = -1 : i64}
}
// CHECK: 'npu.conv2d': clamp [-1, 255] must lie within the ofm's storage range [0, 255]

// -----

// conv_rounding
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.conv2d ifm <"activations", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 4, 1, 1], i8> bias_scale <"constants", 0, [4, 4], i32> ofm <"activations", 64, [1, 4, 4, 4], i8> {rounding = "nearest"}
}
// CHECK: 'npu.conv2d': rounding must be one of half_away_from_zero, half_to_even, tflite, half_up, got 'nearest'

// -----

// conv_table_shift
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] attributes {constants = dense<[0, 0, 0, 0, 0, 0, 0, 64, 99, 0, 0, 0]> : tensor<12xi8>} {
  %0 = npu.conv2d ifm <"activations", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 4, 1, 1], i8> bias_scale <"constants", 0, [4, 4], i32> ofm <"activations", 64, [1, 4, 4, 4], i8>
}
// CHECK: 'npu.program': instruction 0 (conv2d): bias_scale row 0: shift 99 is outside [-31, 62]

// -----

// matmul_inner
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.matmul lhs <"activations", 0, [2, 3, 8], i8> rhs <"activations", 64, [2, 7, 5], i8> bias_scale <"constants", 0, [5, 4], i32> ofm <"activations", 256, [2, 3, 5], i8>
}
// CHECK: 'npu.matmul': needs lhs BxMxK, rhs BxKxN, ofm BxMxN; got 2x3x8, 2x7x5, 2x3x5

// -----

// matmul_bias_scale
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.matmul lhs <"activations", 0, [2, 3, 8], i8> rhs <"activations", 64, [2, 8, 5], i8> bias_scale <"constants", 0, [3, 4], i32> ofm <"activations", 256, [2, 3, 5], i8>
}
// CHECK: 'npu.matmul': bias_scale must be i32 of shape 5x4 (bias, multiplier, shift, weight zero point per output channel), got i32 3x4

// -----

// matmul_rank
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.matmul lhs <"activations", 0, [3, 8], i8> rhs <"activations", 64, [2, 8, 5], i8> bias_scale <"constants", 0, [5, 4], i32> ofm <"activations", 256, [2, 3, 5], i8>
}
// CHECK: 'npu.matmul': lhs must have rank 3, got 2

// -----

// pool_mode
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.pool ifm <"activations", 0, [1, 4, 4, 4], i8> ofm <"activations", 64, [1, 4, 2, 2], i8> {mode = "min", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>}
}
// CHECK: 'npu.pool': mode must be one of max, avg, sum, got 'min'

// -----

// pool_missing_mode
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.pool ifm <"activations", 0, [1, 4, 4, 4], i8> ofm <"activations", 64, [1, 4, 4, 4], i8>
}
// CHECK: property 'mode' expected in operation 'npu.pool'

// -----

// pool_ofm_shape
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.pool ifm <"activations", 0, [1, 4, 4, 4], i8> ofm <"activations", 64, [1, 4, 3, 2], i8> {mode = "max", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>}
}
// CHECK: 'npu.pool': ofm shape must be 1x4x2x2, got 1x4x3x2

// -----

// pool_avg_dilation
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.pool ifm <"activations", 0, [1, 4, 4, 4], i8> ofm <"activations", 64, [1, 4, 1, 2], i8> {mode = "avg", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 2, 1>}
}
// CHECK: 'npu.pool': avg pooling takes no dilations

// -----

// pool_count_include_pad
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.pool ifm <"activations", 0, [1, 4, 4, 4], i8> ofm <"activations", 64, [1, 4, 2, 2], i8> {mode = "max", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, count_include_pad = true}
}
// CHECK: 'npu.pool': count_include_pad applies to avg pooling only

// -----

// pool_pads
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.pool ifm <"activations", 0, [1, 4, 4, 4], i8> ofm <"activations", 64, [1, 4, 3, 2], i8> {mode = "avg", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 2, 0, 0, 0>}
}
// CHECK: 'npu.pool': pads [2, 0, 0, 0] must be smaller than the window

// -----

// pool_max_types
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.pool ifm <"activations", 0, [1, 4, 4, 4], i8> ofm <"activations", 64, [1, 4, 2, 2], i16> {mode = "max", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>}
}
// CHECK: 'npu.pool': ifm, ofm must have one element type, got i8, i16

// -----

// pool_tflite
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.pool ifm <"activations", 0, [1, 4, 4, 4], i8> ofm <"activations", 64, [1, 4, 2, 2], i8> {mode = "avg", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, rounding = "tflite", multiplier = 1073741824 : i64, shift = 31 : i64}
}
// CHECK: 'npu.pool': tflite avg pooling needs a multiplier of 1 (multiplier = 2^shift)

// -----

// pool_shift
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.pool ifm <"activations", 0, [1, 4, 4, 4], i8> ofm <"activations", 64, [1, 4, 2, 2], i8> {mode = "sum", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, shift = 63 : i64}
}
// CHECK: 'npu.pool': shift 63 is outside [-31, 62]

// -----

// pool_multiplier
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.pool ifm <"activations", 0, [1, 4, 4, 4], i8> ofm <"activations", 64, [1, 4, 2, 2], i8> {mode = "sum", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, multiplier = -1 : i64}
}
// CHECK: 'npu.pool': multiplier -1 is outside [0, 2147483647]

// -----

// eltwise_kind
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.eltwise lhs <"activations", 0, [2, 8], i8> rhs <"activations", 16, [2, 8], i8> ofm <"activations", 32, [2, 8], i8> {kind = "pow"}
}
// CHECK: 'npu.eltwise': kind must be one of add, sub, mul, maximum, minimum, squared_difference, prelu, div, got 'pow'

// -----

// eltwise_shapes
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.eltwise lhs <"activations", 0, [2, 8], i8> rhs <"activations", 16, [8], i8> ofm <"activations", 32, [2, 8], i8> {kind = "add"}
}
// CHECK: 'npu.eltwise': shapes differ: lhs 2x8, rhs 8, ofm 2x8

// -----

// eltwise_max_types
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.eltwise lhs <"activations", 0, [2, 8], i8> rhs <"activations", 16, [2, 8], u8> ofm <"activations", 32, [2, 8], i8> {kind = "maximum"}
}
// CHECK: 'npu.eltwise': lhs, rhs, ofm must have one element type, got i8, u8, i8

// -----

// eltwise_left_shift
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.eltwise lhs <"activations", 0, [2, 8], i8> rhs <"activations", 16, [2, 8], i8> ofm <"activations", 32, [2, 8], i8> {kind = "add", left_shift = 32 : i64}
}
// CHECK: 'npu.eltwise': left_shift 32 is outside [0, 31]

// -----

// eltwise_div_rounding
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.eltwise lhs <"activations", 0, [2, 8], i8> rhs <"activations", 16, [2, 8], i8> ofm <"activations", 32, [2, 8], i8> {kind = "div"}
}
// CHECK: 'npu.eltwise': div needs tflite rounding

// -----

// eltwise_div_bits
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.eltwise lhs <"activations", 0, [2, 8], i32> rhs <"activations", 16, [2, 8], i8> ofm <"activations", 32, [2, 8], i8> {kind = "div", rounding = "tflite"}
}
// CHECK: 'npu.eltwise': div operands must have at most 16 bits

// -----

// eltwise_overshift
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.eltwise lhs <"activations", 0, [2, 8], i8> rhs <"activations", 16, [2, 8], i8> ofm <"activations", 32, [2, 8], i8> {kind = "add", overshift = "x86"}
}
// CHECK: 'npu.eltwise': overshift applies to div only

// -----

// eltwise_prelu_alpha
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.eltwise lhs <"activations", 0, [2, 8], i8> rhs <"activations", 16, [2, 8], i8> ofm <"activations", 32, [2, 8], i8> {kind = "prelu", rhs_multiplier = -5 : i64}
}
// CHECK: 'npu.eltwise': rhs_multiplier -5 is outside [0, 2147483647]

// -----

// lut_table_type
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.lut ifm <"activations", 0, [2, 8], i8> table <"constants", 0, [128], u8> ofm <"activations", 32, [2, 8], i8>
}
// CHECK: 'npu.lut': table element type u8 must be the ofm's i8

// -----

// lut_table_rank
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.lut ifm <"activations", 0, [2, 8], i8> table <"constants", 0, [2, 128], i8> ofm <"activations", 32, [2, 8], i8>
}
// CHECK: 'npu.lut': table must have rank 1 and at most 65536 entries

// -----

// lut_ifm_type
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.lut ifm <"activations", 0, [2, 8], i32> table <"constants", 0, [256], i8> ofm <"activations", 32, [2, 8], i8>
}
// CHECK: 'npu.lut': ifm must hold 8 or 16-bit integers

// -----

// lut_base
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.lut ifm <"activations", 0, [2, 8], i8> table <"constants", 0, [256], i8> ofm <"activations", 32, [2, 8], i8> {table_base = 128 : i64}
}
// CHECK: 'npu.lut': table_base 128 is outside [-128, 127]

// -----

// lut_shapes
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.lut ifm <"activations", 0, [2, 8], i8> table <"constants", 0, [256], i8> ofm <"activations", 32, [16], i8>
}
// CHECK: 'npu.lut': shapes differ: ifm 2x8, ofm 16

// -----

// softmax_type
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.softmax ifm <"activations", 0, [2, 8], i8> ofm <"activations", 32, [2, 8], i16> {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = -496 : i64}
}
// CHECK: 'npu.softmax': softmax reads and writes i8

// -----

// softmax_diff_min
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.softmax ifm <"activations", 0, [2, 8], i8> ofm <"activations", 32, [2, 8], i8> {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = -512 : i64}
}
// CHECK: 'npu.softmax': diff_min must be <= 0 with -diff_min * 2^input_left_shift < 2^31

// -----

// softmax_left_shift
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.softmax ifm <"activations", 0, [2, 8], i8> ofm <"activations", 32, [2, 8], i8> {input_left_shift = 32 : i64}
}
// CHECK: 'npu.softmax': input_left_shift 32 is outside [0, 31]

// -----

// move_perm
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.move ifm <"activations", 0, [2, 3, 4], i8> ofm <"activations", 32, [4, 2, 3], i8> {perm = array<i64: 2, 0, 0>}
}
// CHECK: 'npu.move': perm [2, 0, 0] is not a permutation of the ifm's dimensions

// -----

// move_pad_count
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.move ifm <"activations", 0, [2, 3, 4], i8> ofm <"activations", 32, [4, 2, 3], i8> {pads = array<i64: 1, 1>}
}
// CHECK: 'npu.move': pads needs 6 entries (begins, then ends), got 2

// -----

// move_sizes
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.move ifm <"activations", 0, [2, 3, 4], i8> ofm <"activations", 32, [5, 5], i8>
}
// CHECK: 'npu.move': the unpadded ofm [5, 5] must hold the ifm's 24 elements

// -----

// move_pad_value
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.move ifm <"activations", 0, [2, 3, 4], i8> ofm <"activations", 32, [26], i8> {pads = array<i64: 1, 1>, pad_value = 200 : i64}
}
// CHECK: 'npu.move': pad_value 200 is outside [-128, 127]

// -----

// move_types
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.move ifm <"activations", 0, [2, 3, 4], i8> ofm <"activations", 32, [24], u8>
}
// CHECK: 'npu.move': ifm, ofm must have one element type, got i8, u8

// -----

// host_arguments
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.host ins [#npu.tensor<"activations", 0, [2, 8], i8>] outs [#npu.tensor<"activations", 32, [2, 8], i8>] {
  ^bb0(%a: tensor<2x8x!qnn.uniform<i8:f32, 0.5:1>>, %b: tensor<2x8x!qnn.uniform<i8:f32, 0.5:1>>):
    npu.yield %a : tensor<2x8x!qnn.uniform<i8:f32, 0.5:1>>
  }
}
// CHECK: 'npu.host': 1 tensors need as many body arguments, got 2

// -----

// host_types
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.host ins [#npu.tensor<"activations", 0, [2, 8], u8>] outs [#npu.tensor<"activations", 32, [2, 8], i8>] {
  ^bb0(%a: tensor<2x8x!qnn.uniform<i8:f32, 0.5:1>>):
    npu.yield %a : tensor<2x8x!qnn.uniform<i8:f32, 0.5:1>>
  }
}
// CHECK: 'npu.host': body argument 0 of type tensor<2x8x!qnn.uniform<i8:f32, 0.5:1>> does not match u8 2x8

// -----

// host_results
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.host ins [#npu.tensor<"activations", 0, [2, 8], i8>] outs [#npu.tensor<"activations", 32, [2, 4], i8>] {
  ^bb0(%a: tensor<2x8x!qnn.uniform<i8:f32, 0.5:1>>):
    npu.yield %a : tensor<2x8x!qnn.uniform<i8:f32, 0.5:1>>
  }
}
// CHECK: 'npu.host': body yielded value 0 of type tensor<2x8x!qnn.uniform<i8:f32, 0.5:1>> does not match i8 2x4

// -----

// host_no_output
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.host ins [#npu.tensor<"activations", 0, [2, 8], i8>] outs [] {
  ^bb0(%a: tensor<2x8x!qnn.uniform<i8:f32, 0.5:1>>):
    npu.yield
  }
}
// CHECK: 'npu.host': a host instruction needs at least one output

// -----

// missing_token
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.dma <"constants", 0, [16], i8> -> <"sram", 0, [16], i8>
  %1 = npu.move ifm <"sram", 0, [16], i8> ofm <"activations", 0, [16], i8>
}
// CHECK: 'npu.program': instruction 1 (move) reads bytes written by instruction 0 (dma, dma engine) in region 'sram' (bytes [0, 16)) without waiting for its token

// -----

// write_after_read
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.move ifm <"sram", 0, [16], i8> ofm <"activations", 0, [16], i8>
  %1 = npu.dma <"constants", 0, [16], i8> -> <"sram", 8, [16], i8>
}
// CHECK: 'npu.program': instruction 1 (dma) overwrites bytes read by instruction 0 (move, compute engine) in region 'sram' (bytes [8, 16)) without waiting for its token

// -----

// not_an_instruction
npu.program @p regions [#npu.region<"constants", 256, "flash">, #npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] inputs [] outputs [] layers ["l"] {
  %0 = npu.dma <"activations", 0, [4], i8> -> <"activations", 64, [4], i8>
  %1 = arith.constant 0 : i32
}
// CHECK: 'npu.program': arith.constant is not an npu instruction

// -----

// region_twice
npu.program @p regions [#npu.region<"sram", 16, "sram">, #npu.region<"sram", 8, "flash">] inputs [] outputs [] layers [] {
}
// CHECK: 'npu.program': region 'sram' is declared twice

// -----

// constants_too_large
npu.program @p regions [#npu.region<"constants", 2, "flash">] inputs [] outputs [] layers [] attributes {constants = dense<1> : tensor<4xi8>} {
}
// CHECK: 'npu.program': 4 bytes of constants exceed the constants region (2 bytes)

// -----

// io_in_constants
npu.program @p regions [#npu.region<"constants", 16, "flash">] inputs [#npu.io<"x", #npu.tensor<"constants", 0, [4], i8>, 0.5:0>] outputs [] layers [] {
}
// CHECK: 'npu.program': input 'x': inputs and outputs cannot live in the read-only constants region

// -----

// io_float_quantized
npu.program @p regions [#npu.region<"mutable", 16, "sram">] inputs [] outputs [#npu.io<"y", #npu.tensor<"mutable", 0, [2], f32>, 0.5:0>] layers [] {
}
// CHECK: 'npu.program': output 'y': a float tensor has no quantization (scale 0, zero point 0)

// -----

// io_names
npu.program @p regions [#npu.region<"mutable", 16, "sram">] inputs [#npu.io<"x", #npu.tensor<"mutable", 0, [2], i8>>, #npu.io<"x", #npu.tensor<"mutable", 2, [2], i8>>] outputs [] layers [] {
}
// CHECK: 'npu.program': input names must be unique and non-empty, got 'x'

// -----

// io_outside
npu.program @p regions [#npu.region<"mutable", 16, "sram">] inputs [] outputs [#npu.io<"y", #npu.tensor<"mutable", 8, [4], i32>>] layers [] {
}
// CHECK: 'npu.program': output 'y': bytes [8, 24) lie outside region 'mutable' of 16 bytes

// -----

// region_size
npu.program @p regions [#npu.region<"sram", 8589934592, "sram">] inputs [] outputs [] layers [] {
}
// CHECK: 'npu.program': region 'sram' size 8589934592 is outside [0, 2^32]

// -----

// debug_values
npu.program @p regions [] inputs [] outputs [] layers [] attributes {debug = {n = 1 : i64}} {
}
// CHECK: 'npu.program': debug values must be strings
