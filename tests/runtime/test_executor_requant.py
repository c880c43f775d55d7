"""The NPU executor's output stage (runtime/npu_requant.py) on its own: its one-floor
float64 form and its int64 form against TFLite's two-rounding definition in Python
integers, and against exact rational rounding half away from zero (the rounding of the
models npuc quantizes), up to the limits that admit the float64 form. Every test runs on
both kernel paths, the compiled and the numpy one (`kernel_path`,
tests/runtime/conftest.py).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from exact_rounding import round_fraction
from npu_programs import spread

from npuc.integer import requantize
from npuc.runtime import npu_requant as nr

pytestmark = pytest.mark.usefixtures("kernel_path")

# --------------------------------------------------------------------------- fused requantization


def _tflite_reference(x: int, m: int, shift: int) -> int:
    """TFLite's MultiplyByQuantizedMultiplier for a right shift, in Python integers (gemmlowp)."""
    ab = x * m
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    high = abs(ab + nudge) >> 31
    high = high if ab + nudge >= 0 else -high  # C division truncates toward zero
    exponent = shift - 31
    mask = (1 << exponent) - 1
    remainder = high & mask
    threshold = (mask >> 1) + (1 if high < 0 else 0)
    return (high >> exponent) + (1 if remainder > threshold else 0)


def test_fused_tflite_requantization_is_exact() -> None:
    """The executor's one-floor float64 and int64 forms equal TFLite's two roundings."""
    rng = np.random.default_rng(21)
    channels = 6
    m = rng.integers(1 << 30, 1 << 31, channels)
    m[0] = 1 << 30
    shift = np.array([31, 32, 33, 38, 44, 52])
    # values on and next to the ties of every channel, and random ones
    ties = [
        (k * (1 << int(s - 31)) + (1 << int(s - 32))) if s > 31 else k
        for s in shift
        for k in (-3, -1, 0, 2)
    ]
    near = [
        round(t * (1 << 31) / int(mm)) + d
        for t, mm in zip(ties, np.repeat(m, 4), strict=True)
        for d in (-1, 0, 1)
    ]
    acc = np.array(near + list(rng.integers(-(1 << 20), 1 << 20, 600)), np.int64)
    acc = acc[: acc.size // channels * channels].reshape(-1, channels)
    want = np.array(
        [
            [_tflite_reference(int(v), int(m[c]), int(shift[c])) for c, v in enumerate(row)]
            for row in acc
        ]
    )
    np.testing.assert_array_equal(nr.tflite_multiply(acc, m, shift), want)
    np.testing.assert_array_equal(requantize(acc, m, shift, "tflite"), want)
    rows = np.stack([np.zeros(channels), m, shift, np.zeros(channels)], axis=1)
    table = nr.Table.decode(rows, (-128, 127), "tflite")
    bias = rng.integers(-5000, 5000, channels)  # the bias folded into the float64 steps
    check_float_forms(table, acc, want, bias)


# a signed clamp needs the ties' signs, a clamp at the zero point (a fused ReLU) does not;
# lifted by 2^16 the int16 outputs come from a wrapping conversion, else from a floor;
# without and with a bias; channels last and first
FORM_CASES = list(
    itertools.product(
        ((-32768, 32767), (-3, 32767), (-3, 20)), (0, 1 << 16), (False, True), (False, True)
    )
)


def check_float_forms(
    table: nr.Table, acc: np.ndarray, want: np.ndarray, bias: np.ndarray, admitted: str = ""
) -> None:
    """float_requantize of acc [rows, channels] with zero point -3 gives clamp(want - 3) in
    every FORM_CASES case; with `admitted` (a rounding), each case is also one that the
    stage's limit admits the float64 form for."""
    peak = int(np.abs(acc).max()) + int(np.abs(bias).max())
    for clamp, lift, biased, channels_first in FORM_CASES:
        b = bias if biased else np.zeros_like(bias)
        if admitted:
            stage = nr.OutputStage(table, b, admitted, -3, clamp)
            dtype = np.dtype(np.int16 if lift else np.int32)  # 16-bit outputs: lifted by 2^16
            assert stage.float_limit(dtype) >= peak
        form = nr.FloatForm.of(table, b, -3, clamp, channels_first, 2, lift)
        x = (acc - b).astype(np.float64)
        out = np.empty(acc.shape, np.int16)
        if channels_first:
            nr.float_requantize(np.ascontiguousarray(x.T), form, clamp, out.T, nr.Scratch())
        else:
            nr.float_requantize(x, form, clamp, out, nr.Scratch())
        np.testing.assert_array_equal(out, np.clip(want - 3, *clamp))


def _rational_reference(x: int, m: int, shift: int, rounding: str) -> int:
    """x m / 2^shift rounded by `rounding`, in exact rationals."""
    return round_fraction(Fraction(x * m, 1 << shift), rounding)


def _half_away_reference(x: int, m: int, shift: int) -> int:
    return _rational_reference(x, m, shift, "half_away_from_zero")


def _half_up_reference(x: int, m: int, shift: int) -> int:
    return _rational_reference(x, m, shift, "half_up")


SINGLE_ROUNDINGS = ("half_away_from_zero", "half_up")


@pytest.mark.parametrize("rounding", SINGLE_ROUNDINGS)
def test_fused_single_rounding_requantization_is_exact(rounding: str) -> None:
    """The models npuc quantizes round half away from zero, TFLite's 16x8 ones half up:
    the one-floor float64 form (a tie of half a unit of 2^-shift, or none) equals exact
    rational rounding, on the ties of every channel and one step of acc either side, with
    and without the sign test, the lift and a bias, channels first and last, wherever the
    stage admits the form (half away from zero's tie is fine: lifted by 2^16 with a shift
    of 40 it would be lost in rounding, and the limit keeps such stages on the int64
    path)."""
    rng = np.random.default_rng(22)
    channels = 5
    m = (rng.integers(1 << 10, 1 << 11, channels) | 1) << 20  # ties within reach of small accs
    shift = np.array([31, 32, 33, 34, 35])
    ties = []
    for mm, s in zip(m, shift, strict=True):
        zeros = (int(mm) & -int(mm)).bit_length() - 1
        modulus = 1 << (int(s) - zeros)
        residue = (modulus // 2) * pow(int(mm) >> zeros, -1, modulus) % modulus
        ties += [residue + k * modulus + d for k in (0, 1, 3) for d in (-1, 0, 1)]
    ties += [-t for t in ties]
    acc = np.array(ties + list(rng.integers(-(1 << 20), 1 << 20, 400)), np.int64)
    acc = acc[: acc.size // channels * channels].reshape(-1, channels)
    rows = np.stack([np.zeros(channels), m, shift, np.zeros(channels)], axis=1)
    table = nr.Table.decode(rows, (-128, 127), rounding)
    assert table.scale is not None
    bias = rng.integers(-5000, 5000, channels)
    want = np.array(
        [
            [
                _rational_reference(int(v), int(m[c]), int(shift[c]), rounding)
                for c, v in enumerate(r)
            ]
            for r in acc
        ]
    )
    check_float_forms(table, acc, want, bias, admitted=rounding)


@pytest.mark.parametrize("rounding", SINGLE_ROUNDINGS)
@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_single_rounding_below_shift_31_clamps_before_it_converts(dtype, rounding) -> None:
    """Shifts from 1 to 30 (multipliers of 1 and more: a layer whose output is finer than
    its input and weights) take the float64 form too, unlifted: |p| may pass the int32
    range, so the stage clamps it first. Planned by the stage itself (`actions`), on ties
    of every channel and accumulators that overflow the output by far, into 8- and
    16-bit outputs, with a signed clamp and one at the zero point."""
    rng = np.random.default_rng(23)
    m = (rng.integers(1 << 10, 1 << 11, 5) | 1) << 20
    shift = np.array([1, 2, 9, 22, 30])
    ties = []
    for mm, s in zip(m, shift, strict=True):
        zeros = (int(mm) & -int(mm)).bit_length() - 1
        modulus = 1 << max(int(s) - zeros, 1)
        residue = (modulus // 2) * pow(int(mm) >> zeros, -1, modulus) % modulus
        ties += [residue + d for d in (-1, 0, 1)] if s > zeros else [0, 1, -1]
    near = rng.integers(-300, 300, 200)  # inside the clamp on the shifts of 22 and 30
    far = rng.integers(-(1 << 20), 1 << 20, 200)  # beyond it by far on the small shifts
    acc = np.concatenate([ties, [-t for t in ties], near, far])
    acc = acc[: acc.size // 5 * 5].reshape(-1, 5)
    rows = np.stack([np.zeros(5), m, shift, np.zeros(5)], axis=1)
    table = nr.Table.decode(rows, (-128, 127), rounding)
    assert table.scale is not None
    info = np.iinfo(dtype)
    for clamp in ((int(info.min), int(info.max)), (-3, int(info.max))):
        bias = rng.integers(-50, 50, 5)
        stage = nr.OutputStage(table, bias, rounding, -3, clamp)
        limit = stage.float_limit(np.dtype(dtype))
        assert limit >= int(np.abs(acc).max())  # the float64 form, planned
        want = np.array(
            [
                [
                    _rational_reference(int(v + bias[c]), int(m[c]), int(shift[c]), rounding)
                    for c, v in enumerate(r)
                ]
                for r in acc
            ]
        )
        out = np.empty(acc.shape, dtype)
        for action in stage.actions(acc.astype(np.float64), limit, out, nr.Scratch()):
            action()
        np.testing.assert_array_equal(out, np.clip(want - 3, *clamp))
        assert (out == clamp[1]).any() and ((out > clamp[0]) & (out < clamp[1])).any()


# rounding: (biases, the unit of the form's terms in bits below 2^-shift, the reference)
LIMIT_CASES = {
    "tflite": ([-2_000_000, 2_000_000, -1_999_000, -2_000_000], 0, _tflite_reference),
    "half_away_from_zero": ([-1_000_000, 1_000_000, -999_000, -1_000_000], 1, _half_away_reference),
    "half_up": ([-2_000_000, 2_000_000, -1_999_000, -2_000_000], 0, _half_up_reference),
}


@pytest.mark.parametrize("rounding", sorted(LIMIT_CASES))
def test_float_stage_is_exact_up_to_its_limit(rounding: str) -> None:
    """The float64 stage is planned for accumulators up to its limit, where |acc| m plus
    |bias| m and the offsets come within a hair of 2^53 units of its terms: 2^-shift for
    TFLite's rounding, 2^-(shift+1) for half away from zero (its tie is half a unit), so
    that limit is half as far. Biases bring the sums back into the output range, so that
    windows of 4096 accumulators ending at the limit, each side, cross ties."""
    biases, finer, reference = LIMIT_CASES[rounding]
    m = np.array([(1 << 31) - 1, 1518500250, (1 << 31) - 12345, 1 << 30])
    shift = np.array([40, 40, 40, 39])
    bias = np.array(biases)
    rows = np.stack([bias, m, shift, np.zeros(4, np.int64)], axis=1)
    table = nr.Table.decode(rows, (-128, 127), rounding)
    stage = nr.OutputStage(table, bias, rounding, -3, (-128, 127))
    limit = stage.float_limit(np.dtype(np.int8))
    reach = (1 << (53 - finer)) // int(m.max())  # |acc| m below 2^53 units of the terms
    assert reach // 2 - int(np.abs(bias).max()) < limit < reach
    window = np.arange(limit - 4095, limit + 1)
    acc = np.concatenate([window, -window])[:, None].repeat(4, axis=1)
    want = np.array(
        [
            [reference(int(v + bias[c]), int(m[c]), int(shift[c])) for c, v in enumerate(row)]
            for row in acc
        ]
    )
    out = np.empty(acc.shape, np.int8)
    for action in stage.actions(acc.astype(np.float64), limit, out, nr.Scratch()):
        action()
    np.testing.assert_array_equal(out, np.clip(want - 3, -128, 127))
    spread(out, -128, 127)


@pytest.mark.parametrize("loose", [False, True])
def test_a_bias_per_batch_is_added_before_the_stage(loose) -> None:
    """A matmul of two activations folds the rhs zero point into a bias per batch and
    channel, not one per channel: the stage adds it to the accumulators first, in the
    float64 form (when the bound allows it) and in the int64 one (a bound above the
    float64 form's limit, larger accumulators measured)."""
    rng = np.random.default_rng(5)
    batches, rows_, channels = 3, 40, 4
    m = rng.integers(1 << 30, 1 << 31, channels)
    shift = np.array([36, 37, 38, 40])
    rows = np.stack([np.zeros(channels), m, shift, np.zeros(channels)], axis=1)
    table = nr.Table.decode(rows, (-128, 127), "tflite")
    bias = rng.integers(-(1 << 12), 1 << 12, (batches, 1, channels))
    stage = nr.OutputStage(table, bias, "tflite", 5, (-128, 127))
    assert not stage.per_channel
    acc = rng.integers(-(1 << 14), 1 << 14, (batches, rows_, channels))
    limit = stage.float_limit(np.dtype(np.int8))
    assert limit > 1 << 14
    if loose:
        acc[0, 0, 0] = limit + 1  # beyond the float64 form: the int64 one
    want = np.array(
        [
            _tflite_reference(int(v + bias[b, 0, c]), int(m[c]), int(shift[c]))
            for (b, _, c), v in np.ndenumerate(acc)
        ]
    ).reshape(acc.shape)
    out = np.empty(acc.shape, np.int8)
    bound = limit + 1 if loose else limit
    for action in stage.actions(acc.copy(), bound, out, nr.Scratch()):
        action()
    np.testing.assert_array_equal(out, np.clip(want + 5, -128, 127))
    spread(out, -128, 127)
