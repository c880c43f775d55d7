"""256-entry int8 tables reproducing TFLite's reference int8 activation kernels.

Each function returns `table[q + 128]` for every stored int8 input q, computed the way
TFLite's kernel computes the output for q:

- LOGISTIC, TANH, ELU, GELU: `LUTPopulate` (lut.h) in float32 --
  `round(transform(s_in * (q - zp_in)) * (1 / s_out)) + zp_out`, clamped;
- HARD_SWISH: `reference_ops::HardSwish`'s int16 fixed-point arithmetic;
- LEAKY_RELU: `reference_ops::QuantizeLeakyRelu`, two MultiplyByQuantizedMultiplier.

Transcendentals are evaluated in float64 and rounded to float32, i.e. correctly rounded,
which is what glibc's float functions return for all but extreme cases; the tests check
every table against LiteRT over all 256 inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from npuc.integer import requantize

F32 = np.float32
Q = np.arange(-128, 128, dtype=np.int64)  # every int8 input, in table order
Transform = Callable[[np.ndarray], np.ndarray]


def _f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float64).astype(F32)


def lut_populate(
    transform: Transform, s_in: float, zp_in: int, s_out: float, zp_out: int
) -> np.ndarray:
    """LUTPopulate<int8_t>: dequantize, transform and requantize in float32."""
    inverse_scale = F32(1) / F32(s_out)
    dequantized = F32(s_in) * (Q - zp_in).astype(F32)
    transformed = transform(dequantized).astype(F32)
    scaled = (transformed * inverse_scale).astype(np.float64)
    rescaled = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)  # TfLiteRound: half away
    quantized = (rescaled.astype(F32) + F32(zp_out)).astype(np.int64)
    return np.clip(quantized, -128, 127)


def logistic(x: np.ndarray) -> np.ndarray:
    """`1.0f / (1.0f + std::exp(-value))` in float32."""
    e = _f32(np.exp(-x.astype(np.float64)))
    return F32(1) / (F32(1) + e)


def tanh(x: np.ndarray) -> np.ndarray:
    return _f32(np.tanh(x.astype(np.float64)))


def elu(x: np.ndarray) -> np.ndarray:
    """`value < 0.0 ? std::expm1(value) : value`."""
    return np.where(x < 0, _f32(np.expm1(np.minimum(x, 0).astype(np.float64))), x)


def gelu(x: np.ndarray) -> np.ndarray:
    """`0.5f * x * (1.0f + std::erf(x * M_SQRT1_2))`: the erf part is in double."""
    from math import erf

    xd = x.astype(np.float64)
    erf_part = np.array([erf(v * math.sqrt(0.5)) for v in xd])
    return _f32((0.5 * xd) * (1.0 + erf_part))


def gelu_approximate(x: np.ndarray) -> np.ndarray:
    """`0.5f * x * (1.0f + std::tanh(kSqrt2dPi * (x + 0.044715f * x * x * x)))` in float32."""
    k = F32(math.sqrt(2 / math.pi))
    inner = k * (x + F32(0.044715) * x * x * x)
    return F32(0.5) * x * (F32(1) + _f32(np.tanh(inner.astype(np.float64))))


# --------------------------------------------------------------------------- fixed point


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: (Q31 multiplier, exponent) with real = m * 2^(exp - 31)."""
    if real == 0:
        return 0, 0
    frac, exponent = math.frexp(real)
    q = math.floor(abs(frac) * 2.0**31 + 0.5)  # std::round, half away from zero
    if q == 1 << 31:
        q //= 2
        exponent += 1
    if exponent < -31:
        return 0, 0
    return int(math.copysign(q, frac)), exponent


def _down_scale_to_int16(m: int) -> int:
    """DownScaleInt32ToInt16Multiplier."""
    if m >= 2**31 - 1 - (1 << 15):
        return 2**15 - 1
    return (m + (1 << 15)) >> 16


def _trunc_div(a: np.ndarray, b: int) -> np.ndarray:
    """C integer division (toward zero)."""
    return np.where(a >= 0, a // b, -((-a) // b))


def _srdhm16(a: np.ndarray, b: int) -> np.ndarray:
    """gemmlowp::SaturatingRoundingDoublingHighMul on int16."""
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    return _high16(a, b, _trunc_div(ab + nudge, 1 << 15))


def _sdhm16(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """TFLite's SaturatingDoublingHighMul on int16 (truncating, no rounding nudge)."""
    return _high16(a, b, _trunc_div(a * b, 1 << 15))


def _high16(a: np.ndarray, b: np.ndarray | int, high: np.ndarray) -> np.ndarray:
    """The int16 result: saturated for min * min, else static_cast<int16_t>."""
    high = np.where((a == -(2**15)) & (b == -(2**15)), 2**15 - 1, high)
    return high.astype(np.int16).astype(np.int64)


def _sat_left_shift16(a: np.ndarray, amount: int) -> np.ndarray:
    return np.clip(a * (1 << amount), -(2**15), 2**15 - 1)


def _rounding_divide_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def hard_swish(s_in: float, zp_in: int, s_out: float, zp_out: int) -> np.ndarray:
    """reference_ops::HardSwish<int8_t> with HardSwishPrepare's float32 multipliers."""
    hires_input_scale = F32(1.0 / 128.0) * F32(s_in)
    reluish_scale = F32(3.0 / 32768.0)
    out_m, out_exp = quantize_multiplier(float(hires_input_scale / F32(s_out)))
    if out_exp > 0:
        raise ValueError("HARD_SWISH: output multiplier must not exceed 1 (TFLite requires it)")
    rel_m, rel_exp = quantize_multiplier(float(hires_input_scale / reluish_scale))
    out_m16, rel_m16 = _down_scale_to_int16(out_m), _down_scale_to_int16(rel_m)

    hires = (Q - zp_in) * (1 << 7)
    preshift_out = _srdhm16(hires, out_m16)
    reluish = hires
    if rel_exp > 0:
        reluish = _sat_left_shift16(reluish, rel_exp - 1)
    reluish = _srdhm16(reluish, rel_m16)
    if rel_exp > 0:
        reluish = _sat_left_shift16(reluish, 1)
    if rel_exp < 0:
        reluish = _rounding_divide_by_pot(reluish, -rel_exp)
    reluish = (reluish + (1 << 15)) >> 1
    value = _rounding_divide_by_pot(_sdhm16(reluish, preshift_out), -out_exp)
    return np.clip(value + zp_out, -128, 127)


def leaky_relu(alpha: float, s_in: float, zp_in: int, s_out: float, zp_out: int) -> np.ndarray:
    """reference_ops::QuantizeLeakyRelu with LeakyReluPrepare's float32 multipliers."""
    x = Q - zp_in
    alpha_real = float(F32(s_in) * F32(alpha) / F32(s_out))
    identity_real = float(F32(s_in) / F32(s_out))
    if alpha_real < 0:
        raise ValueError("LEAKY_RELU: negative alpha is not supported")
    out = np.empty_like(x)
    for real, sel in ((identity_real, x >= 0), (alpha_real, x < 0)):
        m, exponent = quantize_multiplier(real)
        out[sel] = requantize(x[sel], m, 31 - exponent, "tflite")
    return np.clip(out + zp_out, -128, 127)
