"""int8 elementwise TFLite operators (RELU family, MAXIMUM/MINIMUM, SQUARED_DIFFERENCE, PRELU,
DIV): npuc's qnn import and interpreter equal LiteRT's reference kernels bit for bit."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from tflite_builder import Q, check_exact, run_litert, single_op
from xdsl.dialects.builtin import StringAttr

from npuc.diagnostics import NpucError
from npuc.dialects import qnn
from npuc.frontends.tflite import import_tflite
from npuc.graph_io import entry_function, input_names
from npuc.runtime.qnn_interpreter import run_module

RNG = np.random.default_rng(2024)


def model(op: str, inputs: Sequence, out, options: str | None = None, **fields):
    return single_op(op, inputs, out, options, rng=RNG, **fields)


ALL_INT8 = [np.arange(-128, 128, dtype=np.int8).reshape(2, 128)]


def relu(op: str, s_in: float, zp_in: int, s_out: float, zp_out: int):
    """Every int8 input value through a standalone RELU-family op."""
    return model(op, [Q([2, 128], s_in, zp_in)], Q([2, 128], s_out, zp_out), feeds=ALL_INT8)


def alpha(shape, scale: float, zp: int) -> Q:
    return Q(shape, scale, zp, RNG.integers(-128, 128, shape).astype(np.int8))


def div_case(shape_a, shape_b, s_a: float, s_b: float, s_out: float, act: int):
    zp_b = 4
    inputs = [Q(shape_a, s_a, -5), Q(shape_b, s_b, zp_b)]
    data, feeds = model(
        "DIV", inputs, Q(shape_a, s_out, 3), "DivOptions", FusedActivationFunction=act
    )
    feeds[1] = np.where(feeds[1] == zp_b, np.int8(zp_b + 1), feeds[1])  # no division by zero
    # Numerators at and next to the zero point: TFLite's rounding shift reaches 32 or more.
    feeds[0].flat[:6] = [-5, -5, -4, -6, -3, -7]
    return data, feeds


CASES = {
    # RELU family: same params, rescaled, zero points that leave the bounds outside int8.
    "relu_same": lambda: relu("RELU", 0.05, -7, 0.05, -7),
    "relu_rescaled": lambda: relu("RELU", 0.05, -7, 0.03, -128),
    "relu_upscaled": lambda: relu("RELU", 0.011, 40, 0.07, -20),
    "relu_zp_high": lambda: relu("RELU", 0.02, 100, 0.02, 120),
    # s_in / s_out rounds differently in float32 and double: input 4 gives -35, not -36.
    "relu_float32_quotient": lambda: relu("RELU", 0.0555, 0, 0.0024, -128),
    "relu6_same": lambda: relu("RELU6", 0.04, 3, 0.04, 3),
    "relu6_rescaled": lambda: relu("RELU6", 0.1, 0, 6 / 255, -128),
    "relu6_tight": lambda: relu("RELU6", 0.013, -50, 0.031, -100),
    "relu_n1_to_1_same": lambda: relu("RELU_N1_TO_1", 0.01, 5, 0.01, 5),
    "relu_n1_to_1_rescaled": lambda: relu("RELU_N1_TO_1", 0.02, -3, 2 / 255, 0),
    "relu_n1_to_1_wide": lambda: relu("RELU_N1_TO_1", 0.003, 17, 0.0021, -9),
    # MAXIMUM/MINIMUM: one quantization, numpy broadcasting.
    "maximum": lambda: model(
        "MAXIMUM", [Q([2, 3, 8], 0.05, -3), Q([2, 3, 8], 0.05, -3)], Q([2, 3, 8], 0.05, -3)
    ),
    "maximum_broadcast": lambda: model(
        "MAXIMUM", [Q([1, 4, 4, 8], 0.1, 7), Q([1, 1, 1, 8], 0.1, 7)], Q([1, 4, 4, 8], 0.1, 7)
    ),
    "maximum_const": lambda: model(
        "MAXIMUM",
        [Q([3, 5], 0.02, 10), Q([1], 0.02, 10, np.array([10], np.int8))],
        Q([3, 5], 0.02, 10),
    ),
    "minimum": lambda: model(
        "MINIMUM", [Q([4, 6], 0.07, 0), Q([4, 6], 0.07, 0)], Q([4, 6], 0.07, 0)
    ),
    "minimum_broadcast": lambda: model(
        "MINIMUM", [Q([2, 1, 5], 0.03, -20), Q([3, 1], 0.03, -20)], Q([2, 3, 5], 0.03, -20)
    ),
    "squared_difference": lambda: model(
        "SQUARED_DIFFERENCE",
        [Q([2, 4, 8], 0.05, -3), Q([2, 4, 8], 0.11, 12)],
        Q([2, 4, 8], 0.4, -128),
    ),
    "squared_difference_broadcast": lambda: model(
        "SQUARED_DIFFERENCE",
        [Q([1, 4, 4, 8], 0.02, 5), Q([1, 1, 1, 8], 0.03, -2)],
        Q([1, 4, 4, 8], 0.05, -100),
    ),
    "squared_difference_equal_scales": lambda: model(
        "SQUARED_DIFFERENCE", [Q([3, 16], 0.1, 0), Q([3, 16], 0.1, 0)], Q([3, 16], 1.0, -128)
    ),
    "prelu_per_channel_alpha": lambda: model(
        "PRELU",
        [Q([1, 4, 4, 8], 0.05, -10), alpha([1, 1, 8], 0.004, 3)],
        Q([1, 4, 4, 8], 0.04, -20),
    ),
    "prelu_full_alpha": lambda: model(
        "PRELU", [Q([2, 3, 5], 0.1, 7), alpha([2, 3, 5], 0.01, -50)], Q([2, 3, 5], 0.08, 0)
    ),
    "prelu_scalar_like_alpha": lambda: model(
        "PRELU", [Q([4, 16], 0.03, 0), alpha([1], 0.002, 0)], Q([4, 16], 0.02, 5)
    ),
    "div": lambda: div_case([2, 16], [2, 16], 0.05, 0.02, 0.1, 0),
    "div_broadcast_relu": lambda: div_case([1, 4, 4, 8], [1, 1, 1, 8], 0.1, 0.03, 0.2, 1),
    "div_small_output_scale": lambda: div_case([3, 10], [3, 10], 0.01, 0.5, 0.0005, 0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_bit_exact(case: str) -> None:
    data, feeds = CASES[case]()
    check_exact(data, feeds)


def test_ops_are_the_qnn_ones() -> None:
    kinds = {
        "relu6_rescaled": qnn.RequantizeOp,
        "maximum": qnn.MaximumOp,
        "minimum": qnn.MinimumOp,
        "squared_difference": qnn.SquaredDifferenceOp,
        "prelu_full_alpha": qnn.PReluOp,
        "div": qnn.DivOp,
    }
    for case, kind in kinds.items():
        ops = [op for op in import_tflite(CASES[case]()[0]).walk() if isinstance(op, kind)]
        assert len(ops) == 1, case
    relu6 = next(
        op
        for op in import_tflite(CASES["relu6_rescaled"]()[0]).walk()
        if isinstance(op, qnn.RequantizeOp)
    )
    assert relu6.rounding.data == "tflite"
    # 6 / (6/255) = 255 steps above the zero point -128: the clamp is the full int8 range.
    assert relu6.clamp_bounds() == (-128, 127)


def refused(data: bytes) -> str:
    with pytest.raises(NpucError) as info:
        import_tflite(data)
    return str(info.value)


def test_maximum_with_different_params_is_refused() -> None:
    data, _ = model("MAXIMUM", [Q([2, 3], 0.05, 0), Q([2, 3], 0.07, 0)], Q([2, 3], 0.05, 0))
    assert "quantization differ" in refused(data)


def test_div_overshift_modes() -> None:
    # 0 / b at multiplier 0.25: TFLite's rounding shift is 33 + k >= 32; LiteRT (x86-64)
    # adds 1 to the exact 0.
    data, feeds = div_case([1, 8], [1, 8], 0.05, 0.02, 10.0, 0)
    feeds[0][:] = -5  # the zero point: every numerator is 0
    feeds[1][:] = np.arange(6, 14, dtype=np.int8)
    module = import_tflite(data)
    (div,) = [op for op in module.walk() if isinstance(op, qnn.DivOp)]
    assert div.overshift.data == "x86"
    names = input_names(entry_function(module))
    (x86,) = run_module(module, dict(zip(names, feeds, strict=True))).values()
    np.testing.assert_array_equal(x86, run_litert(data, feeds)[0])
    assert (x86 == 4).all()  # zp_out 3 + 1
    div.overshift = StringAttr("exact")
    (exact,) = run_module(module, dict(zip(names, feeds, strict=True))).values()
    assert (exact == 3).all()
