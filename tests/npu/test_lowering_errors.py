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


def test_users_of_a_failed_op_are_skipped(parse):
    module = parse(RANK3_POOL)
    npuc.apply_pipeline(module, "plan-memory{target=mcu-64}")
    with pytest.raises(NpucError) as e:
        npuc.apply_pipeline(module, "lower-to-npu")
    assert e.value.message == (
        "lower-to-npu: 1 op(s) cannot be lowered:\n"
        "  'qnn.global_max_pool' (layer 'pool'): pooling needs NCHW tensors, got rank 3"
    )
