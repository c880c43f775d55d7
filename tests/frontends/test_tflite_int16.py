"""int16x8 TFLite models: npuc's qnn import and interpreter equal LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tflite_builder import TFLiteModel, check_exact, run_litert
from tflite_int16_cases import CASES, RNG, SAME, Q, conv_case, fc_case, single

from npuc.dialects import qnn
from npuc.frontends.tflite import import_tflite
from npuc.frontends.tflite_quant import tflite64_multiplier
from npuc.integer import requantize, rounding_divide
from npuc.runtime.qnn_interpreter import run_module


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_bit_exact(case: str) -> None:
    data, feeds = CASES[case]()
    check_exact(data, feeds)


def test_quantize_and_dequantize_match_litert() -> None:
    m = TFLiteModel()
    x = m.tensor("x", [4, 64])
    q = m.tensor("q", [4, 64], np.int16, scale=0.00037, zero_point=0)
    y = m.tensor("y", [4, 64])
    m.op("QUANTIZE", [x], [q])
    m.op("DEQUANTIZE", [q], [y])
    data = m.build([x], [y])
    xi = (RNG.standard_normal((4, 64)) * 5).astype(np.float32)
    got = run_module(import_tflite(data), {"x": xi})["y"]
    np.testing.assert_array_equal(got, run_litert(data, [xi])[0])


def test_int64_bias_conv_uses_tflite64_rescaling() -> None:
    data, _ = conv_case([3, 3], 8, 3, 2, SAME, 3, [5, 5])
    conv = next(op for op in import_tflite(data).walk() if isinstance(op, qnn.Conv2dOp))
    assert conv.rounding.data == "half_up"
    assert all(m < 2**15 for m in conv.multiplier.get_values())


def test_fully_connected_rounds_once_on_the_q31_multiplier() -> None:
    data, _ = fc_case(True)
    fc = next(op for op in import_tflite(data).walk() if isinstance(op, qnn.FullyConnectedOp))
    assert fc.rounding.data == "half_up"
    assert all(2**30 <= m < 2**31 for m in fc.multiplier.get_values())


def test_pot_add_is_a_shift_and_saturating_add() -> None:
    data, _ = CASES["add_pot_default_option"]()
    add = next(op for op in import_tflite(data).walk() if isinstance(op, qnn.AddOp))
    assert add.left_shift.value.data == 1
    assert (add.lhs_shift.value.data, add.rhs_shift.value.data) == (33, 31)


@pytest.mark.parametrize("layer", ["conv_int32_bias", "conv_no_bias", "fc_int32_bias"])
def test_unverified_bias_forms_are_refused(layer: str) -> None:
    data, _ = {
        "conv_int32_bias": lambda: conv_case([1, 1], 2, 2, 1, SAME, 0, [9, 9], np.int32),
        "conv_no_bias": lambda: conv_case([1, 1], 2, 2, 1, SAME, 0, [9, 9], None),
        "fc_int32_bias": lambda: fc_case(True, bias_dtype=np.int32),
    }[layer]()
    with pytest.raises(Exception, match="bias"):
        import_tflite(data)


def test_int64_bias_beyond_int32_is_refused() -> None:
    data, _ = conv_case([1, 1], 2, 2, 1, SAME, 0, [9, 9], bias_range=2**33)
    with pytest.raises(Exception, match="beyond int32"):
        import_tflite(data)


def test_int16_zero_point_is_refused() -> None:
    data, _ = single("MUL", [Q([2, 4], 0.001, 3), Q([2, 4], 0.001)], Q([2, 4], 0.001), "MulOptions")
    with pytest.raises(Exception, match="zero point"):
        import_tflite(data)


# --------------------------------------------------------------------------- rounding


def reference_mbqm64(x: int, quantized_multiplier: int, shift: int) -> int:
    """TFLite's MultiplyByQuantizedMultiplier(int64_t x, int32_t, int shift), transcribed."""
    reduced = (
        (quantized_multiplier + (1 << 15)) >> 16 if quantized_multiplier < 0x7FFF0000 else 0x7FFF
    )
    total_shift = 15 - shift
    rounding = 1 << (total_shift - 1)
    return (x * reduced + rounding) >> total_shift  # Python's >> floors, as C++20 >> on int64


@settings(max_examples=400, deadline=None)
@given(
    x=st.integers(-(2**47), 2**47 - 1),
    m0=st.integers(2**30, 2**31 - 1),
    tfl_shift=st.integers(-31, 7),
)
def test_half_up_with_reduced_multiplier_is_tflite_64bit_multiply(
    x: int, m0: int, tfl_shift: int
) -> None:
    m, s = tflite64_multiplier((m0, 31 - tfl_shift))
    got = int(requantize(np.array([x]), m, s, "half_up")[0])
    assert got == reference_mbqm64(x, m0, tfl_shift)


def reference_mbqm64_single(x: int, quantized_multiplier: int, shift: int) -> int:
    """The single-rounding form LiteRT's 16x8 FULLY_CONNECTED matches: Q31 multiplier."""
    total_shift = 31 - shift
    return (x * quantized_multiplier + (1 << (total_shift - 1))) >> total_shift


@settings(max_examples=400, deadline=None)
@given(
    x=st.integers(-(2**31), 2**31 - 1),
    m0=st.integers(2**30, 2**31 - 1),
    tfl_shift=st.integers(-31, 7),
)
def test_half_up_is_single_rounding_multiply(x: int, m0: int, tfl_shift: int) -> None:
    got = int(requantize(np.array([x]), m0, 31 - tfl_shift, "half_up")[0])
    assert got == reference_mbqm64_single(x, m0, tfl_shift)


@given(x=st.integers(-(2**40), 2**40), shift=st.integers(0, 20), d=st.integers(1, 1000))
def test_half_up_rounds_ties_toward_plus_infinity(x: int, shift: int, d: int) -> None:
    got = int(requantize(np.array([x]), 1, shift, "half_up")[0])
    assert got == (2 * x + (1 << shift)) // (2 << shift)  # floor(x / 2^shift + 1/2)
    assert int(rounding_divide(np.array([x]), d, "half_up")[0]) == (2 * x + d) // (2 * d)
