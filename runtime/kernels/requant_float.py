"""The single-rounding requantizations of npuc/integer.py in float64, a block at a time,
where that gives exactly the same integers.

R(acc) = round(acc * m * 2^-s) for the roundings half_away_from_zero, half_to_even and
half_up. With P = acc * m (an integer), acc * (m * 2^-s) in float64 is P * 2^-s exactly
while |P| < 2^53 (m * 2^-s itself is exact: m has fewer than 53 bits and the scale is a
power of two). For s >= 1, adding 1/2 (with P's sign for half away from zero) gives
(P +- 2^(s-1)) * 2^-s, exact while that numerator stays below 2^53, and trunc, floor and
rint are exact; for s <= 0 the product is an integer, and adding 1/2 is exact below
2^52. The zero point and the clamp add and compare small integers. So `fits` checks
those bounds once per call, from the extrema of acc, and where they hold these
functions give the integers of integer.requantize in about a third of its time (the
int64 output stage makes a dozen passes over whole arrays; this one, two reductions for
the check and seven passes over cache-sized blocks). Callers take the int64 path where
they do not.

The parameters (multiplier, shift, zero point) broadcast against acc: one value, or one
per index of a single axis (the channels).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from npuc.blockwise import BLOCK

I64 = np.int64
F64 = np.float64
ROUNDINGS = ("half_away_from_zero", "half_to_even", "half_up")
F64_EXACT = 1 << 53


def fits(acc: np.ndarray, multiplier: np.ndarray, shift: np.ndarray, rounding: str) -> bool:
    """Whether the float64 form gives integer.requantize's integers for this call."""
    if rounding not in ROUNDINGS or not acc.size or not multiplier.size:
        return False
    if _channel_axis(acc.shape, multiplier, shift) is None:
        return False
    m_min, m_max = int(multiplier.min()), int(multiplier.max())
    if m_min < 0 or m_max >= F64_EXACT:
        return False
    s_min, s_max = int(shift.min()), int(shift.max())
    if s_max > 960:  # scales far below float64's normal range
        return False
    peak = max(int(acc.max()), -int(acc.min()))
    if peak >= F64_EXACT:  # not even acc itself is exact (and the int64 path refuses 2^62)
        return False
    product = peak * m_max
    if product + (1 << max(s_max - 1, 0)) >= F64_EXACT:
        return False
    return s_min > 0 or product << -s_min < F64_EXACT >> 1


def requantize(
    acc: np.ndarray, multiplier: np.ndarray, shift: np.ndarray, rounding: str
) -> np.ndarray:
    """integer.requantize(acc, multiplier, shift, rounding) as int64, where `fits`."""
    out = np.empty(acc.shape, I64)
    for y, target in _rounded_blocks(acc, multiplier, shift, rounding, out):
        np.copyto(target, y, casting="unsafe")
    return out


def output_stage(
    acc: np.ndarray,
    multiplier: np.ndarray,
    shift: np.ndarray,
    rounding: str,
    zero_point: int,
    clamp: tuple[int, int],
    dtype: np.dtype,
) -> np.ndarray:
    """clamp(zero_point + requantize(acc, ...)) in `dtype`, where `fits`."""
    out = np.empty(acc.shape, dtype)
    lo, hi = clamp
    for y, target in _rounded_blocks(acc, multiplier, shift, rounding, out):
        if zero_point:
            y += zero_point
        np.clip(y, lo, hi, out=y)
        np.copyto(target, y, casting="unsafe")
    return out


def _channel_axis(shape: tuple[int, ...], *params: np.ndarray) -> int | None:
    """-1 when every parameter is one value; the axis along which some vary (each of them
    one value or one per index of it, broadcasting against `shape`); None otherwise."""
    axis = -1
    for p in params:
        if p.ndim > len(shape):
            return None
        if p.size == 1:
            continue
        lead = len(shape) - p.ndim
        varying = [i for i, d in enumerate(p.shape) if d != 1]
        if len(varying) != 1 or p.shape[varying[0]] != shape[lead + varying[0]]:
            return None
        if axis not in (-1, lead + varying[0]):
            return None
        axis = lead + varying[0]
    return axis


def _rounded_blocks(
    acc: np.ndarray, multiplier: np.ndarray, shift: np.ndarray, rounding: str, out: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(R of a block of acc as float64 scratch, the block of `out` it goes to), in order."""
    shape = acc.shape
    scale = multiplier.astype(F64) * np.exp2(-shift.astype(F64))
    axis = _channel_axis(shape, multiplier, shift)
    assert axis is not None, "fits() checks the parameters' shapes"
    source = np.ascontiguousarray(acc)
    if axis < 0 or axis == len(shape) - 1:
        # one value, or one per column: rows of the last axis
        cols = shape[-1] if axis >= 0 else source.size
        rows2d = source.reshape(-1, cols)
        out2d = out.reshape(-1, cols)
        scale2d = scale.reshape(1, -1) if axis >= 0 else scale.reshape(1, 1)
        per_row = False
    else:
        # one per row: the channel axis and those before it are rows
        rows = int(np.prod(shape[: axis + 1], dtype=np.int64))
        rows2d = source.reshape(rows, -1)
        out2d = out.reshape(rows, -1)
        channels = scale.reshape(-1)
        scale2d = np.broadcast_to(channels, (rows // channels.size, channels.size)).reshape(-1, 1)
        per_row = True
    n_rows, cols = rows2d.shape
    step_rows = max(1, BLOCK // max(cols, 1))
    step_cols = min(cols, BLOCK)
    buffer = np.empty(min(n_rows, step_rows) * step_cols)
    half = np.empty_like(buffer) if rounding == "half_away_from_zero" else None
    for r0 in range(0, n_rows, step_rows):
        r1 = min(n_rows, r0 + step_rows)
        row_scale = scale2d[r0:r1] if per_row else scale2d
        for c0 in range(0, cols, step_cols):
            c1 = min(cols, c0 + step_cols)
            y = buffer[: (r1 - r0) * (c1 - c0)].reshape(r1 - r0, c1 - c0)
            column_scale = row_scale if per_row or row_scale.shape[1] == 1 else row_scale[:, c0:c1]
            np.multiply(rows2d[r0:r1, c0:c1], column_scale, out=y)
            if half is not None:  # half away from zero: trunc(y + copysign(1/2, y))
                h = half[: y.size].reshape(y.shape)
                np.copysign(0.5, y, out=h)
                y += h
                np.trunc(y, out=y)
            elif rounding == "half_up":
                y += 0.5
                np.floor(y, out=y)
            else:
                np.rint(y, out=y)
            yield y, out2d[r0:r1, c0:c1]
