"""Integer kernels of TFLite's 16-bit table activations (dialects/qnn_int16.py).

The functions are exact integer transcriptions of the semantics documented on the ops
and in docs/quantization.md ("16-bit LOGISTIC, TANH and SOFTMAX"); runtime/qnn_kernels.py
applies them to the ops.
"""

from __future__ import annotations

import numpy as np

from npuc.diagnostics import KernelError
from npuc.integer import requantize

from .qnn_arith import bit_length

I64 = np.int64

# Sigmoid table interpolation per function: fractional bits of |v|, the saturated
# interpolant, the output shift and the offsets for v >= 0 (s + pos) and v < 0 (neg - s).
_SIGMOID_SCHEMES = {
    "logistic": (9, 0x7FFF << 10, 10, 1 << 9, (1 << 25) + (1 << 9) - 1),
    "tanh": (8, 0xFFFF << 8, 8, (1 << 7) - (1 << 23), (1 << 23) + (1 << 7) - 1),
}


def _wrap16(x: np.ndarray) -> np.ndarray:
    """static_cast<int16_t>: two's complement wrap-around."""
    return ((np.asarray(x, I64) + (1 << 15)) & 0xFFFF) - (1 << 15)


def sigmoid_lut(
    q: np.ndarray, function: str, multiplier: int, shift: int, table: np.ndarray
) -> np.ndarray:
    """qnn.sigmoid_lut on stored int16 values: Q0.15 logistic or tanh (int64 result)."""
    frac_bits, saturated, out_shift, pos, neg = _SIGMOID_SCHEMES[function]
    t = np.asarray(table, I64)
    v = (np.asarray(q, I64) * multiplier + ((1 << shift) >> 1)) >> shift
    a = np.abs(v)
    h = a >> frac_bits
    inside = h < t.size - 1
    hi = np.where(inside, h, 0)
    s = (t[hi] << frac_bits) + (a & ((1 << frac_bits) - 1)) * (t[hi + 1] - t[hi])
    s = np.where(inside, s, saturated)
    return np.where(v >= 0, s + pos, neg - s) >> out_shift


def lut_lookup_513(value: np.ndarray, table: np.ndarray) -> np.ndarray:
    """TFLite's int16 LUTLookup: 513 entries, 9 index bits, 7 interpolated bits, int16 wraps."""
    x = np.asarray(value, I64)
    t = np.asarray(table, I64)
    index = 256 + (x >> 7)
    base = t[index]
    slope = _wrap16(t[index + 1] - base)
    return _wrap16(base + ((slope * (x & 0x7F) + 64) >> 7))


def softmax_lut(
    q: np.ndarray, multiplier: int, shift: int, exp_table: np.ndarray, recip_table: np.ndarray
) -> np.ndarray:
    """qnn.softmax_lut over the last axis of stored int16 values (int64 result in [0, 32767])."""
    x = np.asarray(q, I64)
    if x.shape[-1] == 0:
        return x.copy()
    diff = x - x.max(axis=-1, keepdims=True)
    scaled = requantize(diff, multiplier, shift, "tflite")
    exps = lut_lookup_513(np.clip(scaled + 32767, -32768, 32767), exp_table)
    total = exps.sum(axis=-1, keepdims=True)
    if np.any(total < 2) or np.any(total >= 1 << 31):  # TFLite's shifts need 2 <= sum < 2^31
        raise KernelError("softmax_lut: a row's sum of exponentials is outside [2, 2^31)")
    headroom = 32 - bit_length(total)  # count of leading zeros of the uint32 sum
    normalised = ((total << (headroom - 1)) + (1 << 13)) >> 14
    reciprocal = lut_lookup_513(np.clip(normalised - (3 << 15), -32768, 32767), recip_table)
    right = 31 - headroom
    y = (exps * reciprocal + (I64(1) << (right - 1))) >> right
    return np.clip(y, 0, 32767)
