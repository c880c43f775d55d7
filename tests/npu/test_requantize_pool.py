"""qnn.requantize lowers to a 1x1 `sum` pool. The runtime runs one without window sums,
and one whose multiplier is exactly 1 (a lone ReLU or clamp, as npuc quantizes them) as
the zero points and the clamp alone: bit for bit like the qnn interpreter, for every
rounding, storage type and clamp below."""

from __future__ import annotations

import numpy as np
import pytest
from compile_helpers import assert_not_degenerate, assert_same, lower_and_run

import npuc

TEXT = """
func.func @main(%x: {X} {{nn.name = "x"}}) -> ({Y} {{nn.name = "y"}}) {{
  %y = qnn.requantize %x {{multiplier = array<i64: {m}>, shift = array<i64: {s}>,
    rounding = "{rounding}"{clamp}}} : ({X}) -> {Y}
  func.return %y : {Y}
}}
"""
# (multiplier, shift): M = 1 three ways (2^30 / 2^30, 1 / 1, 2^12 / 2^12), and M = 0.37
MULTIPLIERS = {"one": (1 << 30, 30), "one_unshifted": (1, 0), "one_small": (1 << 12, 12)}
MULTIPLIERS["rescale"] = (1589137899, 32)
# (input storage and zero point, output storage and zero point, clamp): a ReLU at the output
# zero point, a narrow clamp, the whole range
STORAGES = {
    "i8_relu": ("i8", -5, "i8", 9, (9, 127)),
    "i8_clamp": ("i8", 3, "i8", -20, (-60, 40)),
    "u8_to_i8": ("u8", 128, "i8", 0, None),
    "i16": ("i16", 0, "i16", 0, (0, 32767)),
}


# TFLite's multipliers are Q31: of the M = 1 forms, 2^30 with a shift of 30 is its own
CASES = [
    (multiplier, storage, rounding)
    for multiplier in sorted(MULTIPLIERS)
    for storage in sorted(STORAGES)
    for rounding in ("half_away_from_zero", "tflite", "half_to_even")
    if rounding != "tflite" or multiplier in ("one", "rescale")
]


@pytest.mark.parametrize(("multiplier", "storage", "rounding"), CASES)
def test_requantize_pool_runs_bit_exact(parse, multiplier: str, storage: str, rounding: str):
    m, s = MULTIPLIERS[multiplier]
    x_storage, x_zp, y_storage, y_zp, clamp = STORAGES[storage]
    bounds = (
        "" if clamp is None else f", clamp_min = {clamp[0]} : i64, clamp_max = {clamp[1]} : i64"
    )
    x_type = f"tensor<1x3x9x7x!qnn.uniform<{x_storage}:f32, 0.05:{x_zp}>>"
    y_type = f"tensor<1x3x9x7x!qnn.uniform<{y_storage}:f32, 0.05:{y_zp}>>"
    text = TEXT.format(X=x_type, Y=y_type, m=m, s=s, rounding=rounding, clamp=bounds)
    module = parse(text)
    npuc.apply_pipeline(module, "plan-memory{target=mcu-64}")
    reference, outputs, program = lower_and_run(module, host="none")
    assert_not_degenerate(reference)
    assert_same(reference, outputs)
    assert [inst.op for inst in program.instructions] == ["pool"]
    if clamp is not None:
        y = np.asarray(reference["y"])
        assert y.min() >= clamp[0] and y.max() <= clamp[1]
