"""lower-to-npu reports an op it cannot lower, not an internal error in the ops that read it."""

from __future__ import annotations

import pytest

import npuc
from npuc.diagnostics import NpucError

Q3 = "tensor<1x4x6x!qnn.uniform<i8:f32, 0.1>>"
POOLED = "tensor<1x4x1x!qnn.uniform<i8:f32, 0.1>>"
OUT = "tensor<1x4x!qnn.uniform<i8:f32, 0.1>>"
RANK3_POOL = f"""
func.func @main(%x: {Q3} {{nn.name = "x"}}) -> ({OUT} {{nn.name = "y"}}) {{
  %p = qnn.global_max_pool %x {{name = "pool"}} : ({Q3}) -> {POOLED}
  %r = qnn.reshape %p {{name = "squeeze"}} : ({POOLED}) -> {OUT}
  func.return %r : {OUT}
}}
"""


def refusal(module) -> str:
    """lower-to-npu's error on `module`, planned for mcu-64."""
    npuc.apply_pipeline(module, "plan-memory{target=mcu-64}")
    with pytest.raises(NpucError) as e:
        npuc.apply_pipeline(module, "lower-to-npu")
    return e.value.message


def test_users_of_a_failed_op_are_skipped(parse):
    assert refusal(parse(RANK3_POOL)) == (
        "lower-to-npu: 1 op(s) cannot be lowered:\n"
        "  'qnn.global_max_pool' (layer 'pool'): pooling needs NCHW tensors, got rank 3"
    )


Q5 = "tensor<2x3x4x5x6x!qnn.uniform<i8:f32, 0.1>>"


def scattered_reduce(axes: str, kept: str) -> str:
    out = f"tensor<{kept}x!qnn.uniform<i8:f32, 0.1>>"
    return f"""
func.func @main(%x: {Q5} {{nn.name = "x"}}) -> ({out} {{nn.name = "y"}}) {{
  %m = qnn.reduce_max %x {{axes = array<i64: {axes}>, name = "max"}} : ({Q5}) -> {out}
  func.return %m : {out}
}}
"""


# Axes 0, 2, 4 of 2x3x4x5x6 (strides 360, 30, 1) merge into no fewer than three
# dimensions, one more than a pooling window's outer (N, C) or inner (H, W) view has.
@pytest.mark.parametrize(
    ("axes", "kept"), [("1, 3", "2x1x4x1x6"), ("0, 2, 4", "1x3x1x5x1")], ids=["outer", "window"]
)
def test_a_reduction_over_scattered_axes_is_refused(parse, axes: str, kept: str):
    assert refusal(parse(scattered_reduce(axes, kept))) == (
        "lower-to-npu: 1 op(s) cannot be lowered:\n"
        "  'qnn.reduce_max' (layer 'max'): these axes have no strided view as a pooling window"
    )
