"""Split, concat, slice and tile.slice views of 8 and 16-bit tensors at element offsets:
lowered with host=none and run bit for bit like the qnn interpreter.

Every view starts an even number of elements into its tensor (split: 120, concat: 720,
slice: 272, tile.slice: 784), so a view placed at its element offset instead of its byte
offset stays 2-byte aligned for int16: the instruction-set checks accept it and only the
values read show the error.
"""

from __future__ import annotations

import pytest
from compile_helpers import assert_not_degenerate, assert_same, lower_and_run
from npu_programs import tensor

import npuc
from npuc.passes.npu_lowering.views import reshaped

TEXT = """
func.func @main(%x: $X {nn.name = "x"}, %y: $X {nn.name = "y"}) -> ($H, $H, $C, $P, $T, $S) {
  %m = qnn.maximum %x, %y : ($X, $X) -> $X
  %s0, %s1 = qnn.split %m {axis = 2 : i64} : ($X) -> ($H, $H)
  %cc = qnn.concat %x, %m {axis = 1 : i64} : ($X, $X) -> $C
  %sl = qnn.slice %m {starts = array<i64: 0, 1, 1, 2>, ends = array<i64: 1, 3, 8, 30>,
    steps = array<i64: 1, 1, 2, 3>} : ($X) -> $P
  %ts = tile.slice %cc {offsets = array<i64: 0, 3, 2, 4>} : $C -> $T
  %sum = qnn.maximum %s1, %s1 : ($H, $H) -> $H
  %sq = qnn.minimum %sl, %sl : ($P, $P) -> $P
  %st = qnn.maximum %ts, %ts : ($T, $T) -> $T
  %all = qnn.concat %sum, %s0 {axis = 3 : i64} : ($H, $H) -> $S
  func.return %s0, %s1, %cc, %sq, %st, %all : $H, $H, $C, $P, $T, $S
}
"""
SHAPES = {"$X": "1x3x8x30", "$H": "1x3x4x30", "$C": "1x6x8x30", "$P": "1x2x4x10",
          "$T": "1x2x3x7", "$S": "1x3x4x60"}  # fmt: skip
STORAGE = {"i8": ("i8", -3), "u8": ("u8", 128), "i16": ("i16", 0)}


@pytest.mark.parametrize("width", sorted(STORAGE))
def test_views_at_element_offsets_run_bit_exact(parse, width: str):
    storage, zp = STORAGE[width]
    text = TEXT
    for key, shape in SHAPES.items():
        text = text.replace(key, f"tensor<{shape}x!qnn.uniform<{storage}:f32, 0.05:{zp}>>")
    module = parse(text)
    npuc.apply_pipeline(module, "plan-memory{target=mcu-64}")
    reference, outputs, program = lower_and_run(module, host="none")
    assert_same(reference, outputs)
    assert_not_degenerate(reference)
    # The sliced operands are read in place: strided views, not copies.
    assert any(not op.is_contiguous() for inst in program.instructions for op in inst.operands)


@pytest.mark.parametrize(
    ("shape", "strides", "want", "expected"),
    [
        ((4, 6), (12, 1), (2, 2, 6), (24, 12, 1)),  # rows of a wider buffer, split in two
        ((4, 6), (12, 1), (1, 4, 1, 6), (48, 12, 6, 1)),  # unit dims added: row-major ones
        ((4, 6), (12, 1), (24,), None),  # rows 12 apart cannot merge into one run
    ],
)
def test_a_strided_view_is_reshaped_without_a_copy_where_its_strides_allow(
    shape, strides, want, expected
):
    got = reshaped(tensor("sram", 0, shape, strides=strides), want)
    if expected is None:
        assert got is None
    else:
        assert got is not None and got.shape == want
        assert [s for s, d in zip(got.strides, want, strict=True) if d != 1] == [
            s for s, d in zip(expected, want, strict=True) if d != 1
        ]
