"""The float64 form of the single-rounding requantizations (runtime/kernels/requant_float.py)
against exact rational arithmetic: where `fits` admits a call, the integers must be those of
round(acc * m / 2^s) computed with Fractions, ties included, up to the largest products it
admits; qnn_arith's output stage and wide_requantize take that form there."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from exact_rounding import round_fraction
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from npuc.blockwise import BLOCK
from npuc.runtime.kernels import qnn_arith
from npuc.runtime.kernels import requant_float as rf

F64_EXACT = 2**53


def exact(acc: int, m: int, s: int, mode: str) -> int:
    return round_fraction(Fraction(acc * m) / Fraction(2) ** s, mode)


def expected_stage(acc, m, s, mode, zp, clamp, dtype) -> np.ndarray:
    """The output stage element by element in Python integers (params broadcast to acc)."""
    acc, m, s = np.broadcast_arrays(acc, m, s)
    values = [
        min(max(zp + exact(int(a), int(mm), int(ss), mode), clamp[0]), clamp[1])
        for a, mm, ss in zip(acc.ravel(), m.ravel(), s.ravel(), strict=True)
    ]
    return np.array(values, dtype).reshape(acc.shape)


def near_ties(rng: np.random.Generator, m: int, s: int, count: int, peak: int) -> np.ndarray:
    """Accumulators within `peak` whose product with m is a tie (an odd multiple of
    2^(s-1)), or one unit of acc beside one; random ones where no tie is that small."""
    zeros = (m & -m).bit_length() - 1 if m else s
    if s - zeros < 1:
        return rng.integers(-peak, peak + 1, count)
    modulus = 1 << (s - zeros)
    residue = (modulus // 2) * pow(m >> zeros, -1, modulus) % modulus
    values = []
    for _ in range(count):
        if residue + 1 > peak:
            acc = int(rng.integers(0, peak + 1))
        else:
            steps = (peak - 1 - residue) // modulus
            acc = residue + int(rng.integers(0, steps + 1)) * modulus + int(rng.integers(-1, 2))
        values.append(-acc if rng.random() < 0.5 else acc)
    return np.array(values, np.int64)


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    log_m=st.integers(0, 31),
    shift=st.integers(-8, 62),
    log_peak=st.integers(0, 52),
    mode=st.sampled_from(rf.ROUNDINGS),
)
def test_admitted_calls_round_exactly_at_and_beside_ties(seed, log_m, shift, log_peak, mode):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1 << log_m, 1 << (log_m + 1)))
    peak = (1 << log_peak) - 1
    acc = near_ties(rng, m, shift, 40, peak)
    acc[0] = peak  # the largest magnitude fits decides on
    m_arr, s_arr = np.array(m, np.int64), np.array(shift, np.int64)
    assume(rf.fits(acc, m_arr, s_arr, mode))
    got = rf.requantize(acc, m_arr, s_arr, mode)
    assert got.tolist() == [exact(int(a), m, shift, mode) for a in acc]


@pytest.mark.parametrize("mode", rf.ROUNDINGS)
@pytest.mark.parametrize("shift", [1, 2, 20, 40])
def test_the_largest_admitted_products_round_exactly(mode, shift):
    """acc * m + 2^(s-1) just below 2^53 is admitted and exact; one more is refused."""
    m = (1 << 31) - 1
    limit = (F64_EXACT - (1 << (shift - 1))) // m  # largest |acc| with the sum below 2^53
    while limit * m + (1 << (shift - 1)) >= F64_EXACT:
        limit -= 1
    accs = np.array([limit, -limit, limit - 1, -(limit - 1), limit - 3], np.int64)
    m_arr, s_arr = np.array(m, np.int64), np.array(shift, np.int64)
    assert rf.fits(accs, m_arr, s_arr, mode)
    assert rf.requantize(accs, m_arr, s_arr, mode).tolist() == [
        exact(int(a), m, shift, mode) for a in accs
    ]
    assert not rf.fits(np.array([limit + 1]), m_arr, s_arr, mode)


def test_non_positive_shifts_are_admitted_only_while_the_integer_result_is_below_2_52():
    m, shift = 3, -4
    below = np.array([(2**52 // (m << 4)) - 1], np.int64)
    above = np.array([(2**52 // (m << 4)) + 1], np.int64)
    m_arr, s_arr = np.array(m, np.int64), np.array(shift, np.int64)
    for mode in rf.ROUNDINGS:
        assert rf.fits(below, m_arr, s_arr, mode)
        assert rf.requantize(below, m_arr, s_arr, mode).tolist() == [int(below[0]) * m * 16]
        assert not rf.fits(above, m_arr, s_arr, mode)


@pytest.mark.parametrize(
    ("shape", "axis"),
    [
        ((1, 6, 90, 70), 1),  # channels second: many blocks of whole rows
        ((2, 5, 3, BLOCK + 7), 1),  # rows longer than a block
        ((3, 11, 4097), 2),  # channels last, several rows a block
        ((1, 2, BLOCK + 5), 2),  # channels last, more columns than a block
        ((BLOCK * 2 + 3,), None),  # one value for all
        ((4, 3, 5), 0),
    ],
)
@pytest.mark.parametrize("mode", rf.ROUNDINGS)
def test_output_stage_of_per_channel_parameters_over_many_blocks(shape, axis, mode):
    rng = np.random.default_rng(len(shape) * 7 + (axis or 0))
    pshape = [1] * len(shape)
    if axis is not None:
        pshape[axis] = shape[axis]
    # results of about +-64 (so few are clamped), and ties within reach of accs below 2^20
    m = (rng.integers(16, 32, pshape) | 1) << 26
    s = rng.integers(44, 47, pshape)
    acc = rng.integers(-(1 << 20), 1 << 20, shape)
    full_m, full_s = (np.broadcast_to(p, shape).reshape(-1) for p in (m, s))
    flat = acc.reshape(-1)
    sample = rng.choice(acc.size, min(acc.size, 3000), replace=False)
    for i in sample[:200]:  # ties, and one unit beside them, so the rounding rule shows
        flat[i] = near_ties(rng, int(full_m[i]), int(full_s[i]), 1, 1 << 20)[0]
    assert rf.fits(acc, m, s, mode)
    got = qnn_arith.output_stage(acc, m, s, mode, -5, (-128, 127), np.dtype(np.int8))
    want = [
        min(max(-5 + exact(int(flat[i]), int(full_m[i]), int(full_s[i]), mode), -128), 127)
        for i in sample
    ]
    assert got.dtype == np.int8 and got.shape == acc.shape
    assert got.reshape(-1)[sample].tolist() == want


def test_parameters_the_float_form_cannot_lay_out_take_the_int64_path():
    """Multipliers varying along two axes, a zero point per channel, tflite rounding and
    products beyond 2^53: refused by `fits` or by the output stage, and still exact."""
    rng = np.random.default_rng(3)
    acc = rng.integers(-5000, 5000, (2, 3, 4))
    m = rng.integers(1 << 30, 1 << 31, (2, 3, 1))
    s = np.full((1, 1, 1), 36)
    assert not rf.fits(acc, m, s, "half_away_from_zero")
    got = qnn_arith.output_stage(acc, m, s, "half_away_from_zero", 3, (-128, 127), np.int8)
    want = expected_stage(acc, m, s, "half_away_from_zero", 3, (-128, 127), np.int8)
    assert (got == want).all()
    assert not rf.fits(acc, np.array(1 << 30), np.array(36), "tflite")
    zp = np.array([1, -2, 3]).reshape(1, 3, 1)
    m1, s1 = np.array(1 << 30), np.array(36)
    got = qnn_arith.output_stage(acc, m1, s1, "half_to_even", zp, (-128, 127), np.int8)
    want = np.stack(
        [
            expected_stage(acc[:, c], m1, s1, "half_to_even", int(z), (-128, 127), np.int8)
            for c, z in enumerate(zp.ravel())
        ],
        axis=1,
    )
    assert (got == want).all()
    big = np.array([1 << 40, -(1 << 40) - 3], np.int64)
    assert not rf.fits(big, np.array((1 << 31) - 1), np.array(60), "half_up")
    got = qnn_arith.wide_requantize(big, (1 << 31) - 1, 60, "half_up")
    assert got.tolist() == [exact(int(a), (1 << 31) - 1, 60, "half_up") for a in big]


def test_a_zero_multiplier_of_a_huge_accumulator_is_still_refused():
    """The int64 path refuses accumulators of 2^62 and more; the float form must not
    admit them because their product with a zero multiplier is small."""
    huge = np.array([2**62 + 1], np.int64)
    assert not rf.fits(huge, np.array(0), np.array(0), "half_away_from_zero")
    with pytest.raises(qnn_arith.KernelError, match="2\\^62"):
        qnn_arith.wide_requantize(huge, 0, 0, "half_away_from_zero")
