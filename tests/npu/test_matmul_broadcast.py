"""qnn.matmul with broadcast batch axes lowers to the NPU (host=none) and runs bit for bit
like the qnn interpreter, also where the broadcast batch axes have no rank-3 view."""

from __future__ import annotations

import pytest
from compile_helpers import assert_not_degenerate, assert_same, lower_and_run

import npuc

TEXT = """
func.func @main(%a: {A} {{nn.name = "a"}}, %b: {B} {{nn.name = "b"}}) -> ({Y} {{nn.name = "y"}}) {{
  %y = qnn.matmul %a, %b {{multiplier = array<i64: 1073741824>, shift = array<i64: {shift}>}}
    : ({A}, {B}) -> {Y}
  func.return %y : {Y}
}}
"""
# (lhs, rhs, result, matmul instructions): [2, 1] against [4] batches is [2, 4] batches
# whose lhs repeats along the inner axis only: no single strided [8, 3, 8] view.
CASES = {
    "lhs_inner_broadcast": ("2x1x3x8", "4x8x5", "2x4x3x5", 2),
    "both_broadcast": ("2x1x3x8", "1x4x8x5", "2x4x3x5", 2),
    "rhs_outer_broadcast": ("2x4x3x8", "8x5", "2x4x3x5", 1),
    "three_batch_axes": ("3x1x2x3x8", "2x1x8x5", "3x2x2x3x5", 6),
}
STORAGE = {"i8": ("i8", -3, 36), "u8": ("u8", 128, 36), "i16": ("i16", 0, 30)}


@pytest.mark.parametrize("width", sorted(STORAGE))
@pytest.mark.parametrize("case", sorted(CASES))
def test_broadcast_batch_matmul_runs_bit_exact(parse, case: str, width: str):
    lhs, rhs, out, matmuls = CASES[case]
    storage, zp, shift = STORAGE[width]

    def qtype(shape: str) -> str:
        return f"tensor<{shape}x!qnn.uniform<{storage}:f32, 0.05:{zp}>>"

    module = parse(TEXT.format(A=qtype(lhs), B=qtype(rhs), Y=qtype(out), shift=shift))
    npuc.apply_pipeline(module, "plan-memory{target=mcu-64}")
    reference, outputs, program = lower_and_run(module, host="none")
    assert_same(reference, outputs)
    assert_not_degenerate(reference)
    assert [inst.op for inst in program.instructions] == ["matmul"] * matmuls
