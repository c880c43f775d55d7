"""Quantization schemes: how a real range [lo, hi] becomes a `!qnn.uniform` type.

Formulas (docs/quantization.md, "Schemes"):

- asymmetric: lo <- min(lo, 0), hi <- max(hi, 0) so that real 0 is representable;
  scale = (hi - lo) / (qmax - qmin), zero_point = clamp(round(qmin - lo / scale)).
- symmetric: zero_point = 0, scale = max(|lo|, |hi|) / qmax (absmax / 127 for i8,
  absmax / 32767 for i16, as TFLite); full-range symmetric weights ([-128, 127])
  use absmax / ((qmax - qmin) / 2) = absmax / 127.5, onnxruntime's formula.
- power of two: the symmetric scale rounded up to 2^-fl, fl the fractional length.

A span too small for a positive scale (hi == lo after including 0, or a scale
that underflows to 0) gets scale 1. Rounding is half away from zero throughout.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from npuc.diagnostics import NpucError
from npuc.dialects.quant_types import STORAGE_TYPES, UniformQuantizedType, storage_range
from npuc.integer import quantize


def round_half_away(x: np.ndarray | float) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


@dataclass(frozen=True)
class TensorScheme:
    """How one tensor is quantized: storage, symmetry, narrow range, power-of-two scales."""

    storage: str
    symmetric: bool
    narrow: bool = False
    pow2: bool = False
    half_step: bool = False  # symmetric scale over (qmax - qmin) / 2 instead of qmax

    def __post_init__(self) -> None:
        if self.storage not in STORAGE_TYPES:
            raise NpucError(f"unsupported storage type {self.storage}")

    @property
    def bits(self) -> int:
        return STORAGE_TYPES[self.storage][0]

    def bounds(self) -> tuple[int, int]:
        """Storage range [qmin, qmax] (narrow: the symmetric range without the most negative)."""
        bits, signed = STORAGE_TYPES[self.storage]
        lo, hi = storage_range(bits, signed)
        return (-hi, hi) if self.narrow and signed else (lo, hi)

    def params(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Scales (float64) and integral zero points (int64) for ranges [lo, hi] (elementwise)."""
        lo = np.minimum(np.asarray(lo, np.float64), 0.0)
        hi = np.maximum(np.asarray(hi, np.float64), 0.0)
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            raise NpucError("cannot quantize a tensor with an infinite or NaN range")
        qmin, qmax = self.bounds()
        if self.symmetric:
            span = np.maximum(-lo, hi)
            scale = span / ((qmax - qmin) / 2 if self.half_step else qmax)
        else:
            scale = (hi - lo) / (qmax - qmin)
        scale = np.where(scale > 0, scale, 1.0)
        if self.pow2:
            scale = np.exp2(np.ceil(np.log2(scale)))
        if self.symmetric:
            zero_point = np.zeros(scale.shape, np.int64)
        else:
            zero_point = np.clip(round_half_away(qmin - lo / scale), qmin, qmax).astype(np.int64)
        return scale, zero_point

    def qtype(
        self, lo: float | np.ndarray, hi: float | np.ndarray, axis: int | None = None
    ) -> UniformQuantizedType:
        """The type for one range (per tensor) or one range per index of `axis`."""
        scale, zp = self.params(np.asarray(lo), np.asarray(hi))
        qmin, qmax = self.bounds()
        if axis is None:
            scales: float | Sequence[float] = float(scale)
            zps: int | Sequence[int] = int(zp)
        else:
            scales, zps = [float(s) for s in np.ravel(scale)], [int(z) for z in np.ravel(zp)]
        return UniformQuantizedType(
            self.storage, scales, zps, axis=axis, storage_min=qmin, storage_max=qmax
        )


@dataclass(frozen=True)
class Scheme:
    """A named scheme: activation formats at 8 and 16 bits and the weight format."""

    name: str
    act8: TensorScheme
    default_bits: int
    weight_signed: bool
    per_channel: bool
    pow2: bool = False

    def activation(self, bits: int) -> TensorScheme:
        if bits == 8:
            return self.act8
        if bits == 16:
            # TFLite's 16x8: symmetric i16 activations (zero point 0).
            return TensorScheme("i16", symmetric=True, pow2=self.pow2)
        raise NpucError(f"activation bits must be 8 or 16, got {bits}")

    def weight(self, bits: int, full_range: bool) -> TensorScheme:
        if bits not in (4, 8, 16):
            raise NpucError(f"weight bits must be 4, 8 or 16, got {bits}")
        if not self.weight_signed:
            if bits == 4:
                raise NpucError(f"scheme {self.name} has no 4-bit unsigned weights")
            return TensorScheme(f"u{bits}", symmetric=False)
        return TensorScheme(
            f"i{bits}", symmetric=True, narrow=not full_range, pow2=self.pow2, half_step=full_range
        )


SCHEMES: dict[str, Scheme] = {
    "int8": Scheme("int8", TensorScheme("i8", False), 8, True, per_channel=False),
    "int8-per-channel": Scheme(
        "int8-per-channel", TensorScheme("i8", False), 8, True, per_channel=True
    ),
    "uint8": Scheme("uint8", TensorScheme("u8", False), 8, False, per_channel=False),
    "int16": Scheme("int16", TensorScheme("i8", False), 16, True, per_channel=True),
    "pow2": Scheme(
        "pow2", TensorScheme("i8", True, pow2=True), 8, True, per_channel=False, pow2=True
    ),
}


def scheme_named(name: str) -> Scheme:
    try:
        return SCHEMES[name]
    except KeyError:
        raise NpucError(
            f"unknown quantization scheme '{name}' (expected one of {', '.join(SCHEMES)})"
        ) from None


def fractional_length(scale: float) -> int | None:
    """-log2(scale) when scale is an exact power of two, else None."""
    mantissa, exponent = math.frexp(scale)
    return 1 - exponent if mantissa == 0.5 else None


def quantize_array(array: np.ndarray, q: UniformQuantizedType, axis: int | None) -> np.ndarray:
    """Storage integers of `array` in type `q` (per-axis params broadcast along `axis`)."""
    scales = np.array(q.scale_values(), np.float64)
    zps = np.array(q.zero_point_values(), np.int64)
    if axis is not None:
        shape = [1] * array.ndim
        shape[axis] = -1
        scales, zps = scales.reshape(shape), zps.reshape(shape)
    else:
        scales, zps = scales.reshape(()), zps.reshape(())
    values = quantize(array, scales, zps, q.qmin, q.qmax, "half_away_from_zero")
    return values.astype(q.storage_dtype())
