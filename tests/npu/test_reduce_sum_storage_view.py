"""LiteRT's int8 SUM (qnn.reduce_sum reading the int8 bytes as uint8) has no NPU instruction:
it runs on the host like any op without one, and host=none names it among the refused."""

from __future__ import annotations

import pytest
from compile_helpers import assert_not_degenerate, assert_same, lower_and_run

import npuc
from npuc.diagnostics import NpucError

X = "tensor<2x6x!qnn.uniform<i8:f32, 0.1:3>>"
Y = "tensor<2x!qnn.uniform<i8:f32, 0.3:-2>>"
SUM = f"""
func.func @main(%x: {X} {{nn.name = "x"}}) -> ({Y} {{nn.name = "y"}}) {{
  %y = qnn.reduce_sum %x {{axes = array<i64: 1>, keepdims = false, name = "sum",
    multiplier = array<i64: 1431655765>, shift = array<i64: 32>, storage_view = "$VIEW"}}
    : ({X}) -> {Y}
  func.return %y : {Y}
}}
"""


@pytest.mark.parametrize(("view", "instruction"), [("uint8", "host"), ("native", "pool")])
def test_sum_runs_on_the_npu_or_the_host(parse, view: str, instruction: str):
    module = parse(SUM.replace("$VIEW", view))
    npuc.apply_pipeline(module, "plan-memory{target=mcu-64}")
    reference, outputs, program = lower_and_run(module, host="all")
    assert_same(reference, outputs)
    assert_not_degenerate(reference)
    assert [inst.op for inst in program.instructions] == [instruction]


def test_uint8_view_sum_is_refused_without_the_host(parse):
    module = parse(SUM.replace("$VIEW", "uint8"))
    npuc.apply_pipeline(module, "plan-memory{target=mcu-64}")
    refused = r"'qnn\.reduce_sum' \(layer 'sum'\): no NPU instruction \(host=all runs it"
    with pytest.raises(NpucError, match=refused):
        npuc.apply_pipeline(module, "lower-to-npu{host=none}")
