// RUN: npu-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Errors raised while parsing npu attributes and instructions.

// element_type
npu.program @p regions [#npu.region<"sram", 64, "sram">] inputs [] outputs [] layers [] {
  %0 = npu.dma <"sram", 0, [4], i8> -> <"sram", 8, [4], i9>
}
// CHECK: expected an element type (i8, u8, i16, u16, i32, i64, f32, b8)

// -----

// region_not_a_string
npu.program @p regions [#npu.region<"sram", 64, "sram">] inputs [] outputs [] layers [] {
  %0 = npu.dma <sram, 0, [4], i8> -> <"sram", 8, [4], i8>
}
// CHECK: string literal expected for the region name

// -----

// negative_offset
npu.program @p regions [#npu.region<"sram", 64, "sram">] inputs [] outputs [] layers [] {
  %0 = npu.dma <"sram", -8, [4], i8> -> <"sram", 8, [4], i8>
}
// CHECK: Expected integer literal

// -----

// missing_shape
npu.program @p regions [#npu.region<"sram", 64, "sram">] inputs [] outputs [] layers [] {
  %0 = npu.dma <"sram", 0, i8> -> <"sram", 8, [4], i8>
}
// CHECK: '[' expected

// -----

// io_not_a_tensor
npu.program @p regions [] inputs [#npu.io<"x", #npu.region<"sram", 8, "sram">>] outputs [] layers [] {
}
// CHECK: expected an #npu.tensor

// -----

// io_zero_point
npu.program @p regions [] inputs [#npu.io<"x", #npu.tensor<"sram", 0, [4], i8>, 0.5>] outputs [] layers [] {
}
// CHECK: Expected ':'

// -----

// region_size
npu.program @p regions [#npu.region<"sram", -1, "sram">] inputs [] outputs [] layers [] {
}
// CHECK: Expected integer literal

// -----

// missing_operand_keyword
npu.program @p regions [#npu.region<"sram", 64, "sram">] inputs [] outputs [] layers [] {
  %0 = npu.pool <"sram", 0, [1, 1, 4, 4], i8> ofm <"sram", 16, [1, 1, 2, 2], i8> {mode = "max"}
}
// CHECK: Expected 'ifm'
