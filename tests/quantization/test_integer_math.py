"""Requantization, rounding, saturation and LUT indexing against exact rational arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from exact_rounding import round_fraction
from hypothesis import example, given, settings
from hypothesis import strategies as st

from npuc.integer import (
    dequantize,
    lut_lookup,
    quantize,
    quantize_multiplier,
    requantize,
    rounding_shift,
)

INT32 = st.integers(-(2**31) + 1, 2**31 - 1)
MULTIPLIERS = st.floats(min_value=1e-9, max_value=1e3, allow_nan=False, allow_infinity=False)


@given(MULTIPLIERS)
def test_quantize_multiplier_is_normalised_and_close(real):
    m0, shift = quantize_multiplier(real)
    assert 2**30 <= m0 < 2**31
    approx = Fraction(m0, 1) / Fraction(2) ** shift if shift >= 0 else Fraction(m0 * 2**-shift)
    # m0 is rounded to 31 bits: relative error at most 2^-31 (half an ulp of a 31-bit mantissa)
    assert abs(approx - Fraction(real)) <= Fraction(real) * Fraction(1, 2**31)


@pytest.mark.parametrize("k", [-20, -1, 0, 5])
@pytest.mark.parametrize("below", [2**-33, 2**-32])
def test_a_multiplier_whose_mantissa_rounds_up_to_two_to_the_31_is_renormalised(k, below):
    """2^k (1 - e) with e at most half a 31-bit ulp rounds to 2^31 * 2^-(31 - k): m0 would
    overflow its 31 bits, so it is halved and the shift lowered, as TFLite's
    QuantizeMultiplier does (q_fixed == 1 << 31). The result is 2^k exactly."""
    real = math.ldexp(1 - below, k)
    assert quantize_multiplier(real) == (2**30, 30 - k)


@given(st.integers(0, 62), st.integers(-(2**62), 2**62))
def test_rounding_shift_matches_exact_division(shift, x):
    for mode in ("half_away_from_zero", "half_to_even"):
        got = int(rounding_shift(np.array([x], np.int64), shift, mode)[0])
        assert got == round_fraction(Fraction(x, 2**shift), mode), mode


def test_rounding_shift_by_zero_and_per_element_shifts():
    """Shift 0 leaves x as it is; per-element shifts (per-channel requantization) mix it with
    others."""
    rng = np.random.default_rng(0)
    x = rng.integers(-(2**40), 2**40, 64)
    shifts = rng.integers(0, 4, 64)
    for mode in ("half_away_from_zero", "half_to_even"):
        assert np.array_equal(rounding_shift(x, 0, mode), x)
        got = rounding_shift(x, shifts, mode)
        pairs = zip(x.tolist(), shifts.tolist(), strict=True)
        want = [round_fraction(Fraction(v, 2**s), mode) for v, s in pairs]
        assert got.tolist() == want, mode


@pytest.mark.parametrize("mode", ["half_away_from_zero", "half_to_even", "tflite"])
def test_a_zero_multiplier_is_zero_and_requantizes_everything_to_zero(mode):
    # TFLite's QuantizeMultiplier: a multiplier of 0 gives quantized_multiplier 0, shift 0.
    assert quantize_multiplier(0.0) == (0, 0)
    accs = np.array([-(2**31) + 1, -5, 0, 7, 2**31 - 1])
    assert requantize(accs, *quantize_multiplier(0.0), mode).tolist() == [0] * accs.size


@settings(max_examples=300)
@given(INT32, MULTIPLIERS, st.sampled_from(["half_away_from_zero", "half_to_even"]))
def test_requantize_is_exact_single_rounding(acc, real, mode):
    m0, shift = quantize_multiplier(real)
    exact = (
        Fraction(acc) * m0 / Fraction(2) ** shift if shift >= 0 else Fraction(acc * m0 * 2**-shift)
    )
    got = int(requantize(np.array([acc]), m0, shift, mode)[0])
    assert got == round_fraction(exact, mode)


def tflite_reference(x: int, qm: int, tfl_shift: int) -> int:
    """TFLite's MultiplyByQuantizedMultiplier written from its C++ source, in plain Python ints."""
    left, right = max(tfl_shift, 0), max(-tfl_shift, 0)
    a = max(min(x * (1 << left), 2**31 - 1), -(2**31))
    if a == qm == -(2**31):
        high = 2**31 - 1
    else:
        ab = a * qm
        nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
        total = ab + nudge
        high = (
            int(total / (1 << 31))
            if abs(total) < 2**52
            else (abs(total) >> 31) * (1 if total >= 0 else -1)
        )
    mask = (1 << right) - 1
    remainder = high & mask
    threshold = (mask >> 1) + (1 if high < 0 else 0)
    return (high >> right) + (1 if remainder > threshold else 0)


@settings(max_examples=300)
@given(st.integers(-(2**24), 2**24), st.floats(1e-6, 0.999))
def test_tflite_rounding_matches_tflites_algorithm(acc, real):
    m0, shift = quantize_multiplier(real)
    got = int(requantize(np.array([acc]), m0, shift, "tflite")[0])
    assert got == tflite_reference(acc, m0, 31 - shift)


@settings(max_examples=300)
@given(st.integers(-(2**31), 2**31 - 1), st.floats(1.0, 255.0))
@example(-(2**29) - 12345, 1.5)  # shifted left once: in int32, below -2^30
@example(2**29 + 12345, 1.5)
def test_tflite_rounding_of_multipliers_above_one_saturates_only_outside_int32(acc, real):
    """A real multiplier >= 1 shifts the accumulator left first; TFLite's product saturates
    to int32 there, and only there."""
    m0, shift = quantize_multiplier(real)
    assert shift < 31
    got = int(requantize(np.array([acc]), m0, shift, "tflite")[0])
    assert got == tflite_reference(acc, m0, 31 - shift)


def test_tflite_double_rounding_differs_from_single_rounding_somewhere():
    acc = np.arange(-5000, 5000)
    m0, shift = quantize_multiplier(0.3333)
    single = requantize(acc, m0, shift, "half_away_from_zero")
    double = requantize(acc, m0, shift, "tflite")
    assert np.max(np.abs(single - double)) <= 1
    assert np.any(single != double)


@given(
    st.lists(st.floats(-1e4, 1e4, allow_nan=False), min_size=1, max_size=50),
    st.floats(1e-3, 10),
    st.integers(-128, 127),
)
def test_quantize_saturates_and_rounds(values, scale, zp):
    x = np.array(values)
    for mode in ("half_away_from_zero", "half_to_even", "half_up"):
        q = quantize(x, scale, zp, -128, 127, mode)
        assert q.min() >= -128 and q.max() <= 127
        for value, got in zip(values, q, strict=True):
            # The spec divides in float64, then rounds that quotient exactly.
            exact = round_fraction(Fraction(value / scale), mode) + zp
            assert got == min(max(exact, -128), 127), mode


def test_quantize_rounds_ties_by_its_mode():
    ties = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])
    want = {
        "half_away_from_zero": [-3, -2, -1, 1, 2, 3],
        "half_to_even": [-2, -2, 0, 0, 2, 2],
        "half_up": [-2, -1, 0, 1, 2, 3],
    }
    for mode, expected in want.items():
        assert quantize(ties, 1.0, 0, -128, 127, mode).tolist() == expected, mode


def test_per_channel_parameters_broadcast():
    q = np.array([[[-3, 0, 5]], [[10, 20, 30]]], np.int64)  # shape (2, 1, 3), axis 0 is the channel
    scale = np.array([0.5, 0.25]).reshape(2, 1, 1)
    zp = np.array([1, -2]).reshape(2, 1, 1)
    real = dequantize(q, scale, zp)
    expected = np.array([[[-2.0, -0.5, 2.0]], [[3.0, 5.5, 8.0]]], np.float32)
    np.testing.assert_array_equal(real, expected)
    np.testing.assert_array_equal(quantize(real, scale, zp, -128, 127), q)


@given(st.sampled_from([(-128, 127), (0, 255), (-8, 7)]))
def test_lut_indexing_covers_the_storage_range(bounds):
    lo, hi = bounds
    table = np.arange(hi - lo + 1) * 3 - 7
    q = np.arange(lo, hi + 1)
    np.testing.assert_array_equal(lut_lookup(q, table, lo), table)
    assert lut_lookup(np.array([lo]), table, lo)[0] == table[0]
    assert lut_lookup(np.array([hi]), table, lo)[0] == table[-1]


def test_quantize_saturates_infinities_and_huge_values_and_maps_nan_to_the_zero_point():
    x = np.array([np.inf, -np.inf, 1e300, -1e300, np.nan, 2.0**70])
    q = quantize(x, 0.5, 3, -128, 127)
    np.testing.assert_array_equal(q, [127, -128, 127, -128, 3, 127])


def test_quantize_divides_in_float64_as_documented():
    # 1.5 / 0.2 is 7.4999999999999996 exactly but 7.5 in float64: the documented rule gives 8.
    assert quantize(np.array([1.5]), 0.2, 0, -128, 127)[0] == 8


@pytest.mark.parametrize("real", [0.25, 0.5, 0.75, 1 / 3, 0.0009765625, 0.6180339887, 2**-20])
def test_tflite_rounding_vector_paths_match_the_algorithm_on_ties(real):
    """Small accumulators take the float64 fast path, a large one forces the int64 path."""
    m0, shift = quantize_multiplier(real)
    acc = np.arange(-5000, 5000, dtype=np.int64)
    expected = [tflite_reference(int(a), m0, 31 - shift) for a in acc]
    assert requantize(acc, m0, shift, "tflite").tolist() == expected
    wide = np.append(acc, 2**31 - 1)
    assert requantize(wide, m0, shift, "tflite")[:-1].tolist() == expected


def test_tflite_int32_min_times_int32_min_saturates_element_by_element():
    """SaturatingRoundingDoublingHighMul's one overflow, per element: only where both the
    value and its multiplier are INT32_MIN (the multipliers npuc makes are never negative, but
    requantize takes any int32)."""
    low = -(2**31)
    x = np.array([low, low, 5, low, -7, low])
    multiplier = np.array([low, 2**30 + 1, low, low, low, 2**31 - 1])
    for shift in (31, 33):
        got = requantize(x, multiplier, shift, "tflite").tolist()
        expected = [
            tflite_reference(int(a), int(m), 31 - shift) for a, m in zip(x, multiplier, strict=True)
        ]
        assert got == expected
    assert requantize(x, multiplier, 31, "tflite")[0] == 2**31 - 1


@pytest.mark.parametrize("multiplier", [2**30 + 1, 1518500249, 2**31 - 1])
def test_tflite_high_multiply_truncates_negative_totals_on_a_multiple_of_two_to_the_31(
    multiplier,
):
    """Accumulators whose nudged product x * m + 1 - 2^30 is a negative multiple of 2^31 (and
    its neighbours): the C division truncates toward zero, exactly at the multiple too.
    INT32_MIN among them keeps requantize off its float shortcut (exact below 2^52)."""
    residue = (2**30 - 1) * pow(multiplier, -1, 2**31) % 2**31
    exact = residue - 2**31  # negative, in int32 range
    x = np.array([exact - 1, exact, exact + 1, -(2**31)])
    assert ((int(x[1]) * multiplier + 1 - 2**30) % 2**31) == 0
    for shift in (31, 32, 35):
        got = requantize(x, multiplier, shift, "tflite").tolist()
        assert got == [tflite_reference(int(a), multiplier, 31 - shift) for a in x]
