"""Elementwise, activation and softmax kernels on float32 numpy arrays."""

from __future__ import annotations

import math

import numpy as np

F32 = np.float32

# Maclaurin coefficients of erf(x) / x in powers of x^2; 14 terms reach ~1e-12 for |x| < 1.
_ERF_SERIES = [
    F32(2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1))) for n in range(14)
]
# Numerical Recipes' erfc Chebyshev fit (fractional error < 1.2e-7), highest degree first.
_ERFC_POLY = [
    F32(c)
    for c in (
        0.17087277,
        -0.82215223,
        1.48851587,
        -1.13520398,
        0.27886807,
        -0.18628806,
        0.09678418,
        0.37409196,
        1.00002368,
        -1.26551223,
    )
]


def _erf_small(a: np.ndarray) -> np.ndarray:
    """erf for |a| <= 1 by its Maclaurin series."""
    a2 = a * a
    acc = np.full_like(a, _ERF_SERIES[-1])
    for c in reversed(_ERF_SERIES[:-1]):
        acc *= a2
        acc += c
    return a * acc


def _erfc_large(a: np.ndarray) -> np.ndarray:
    """erfc for a >= 0 (accurate relative to erfc itself, used where a >= 1)."""
    a = np.minimum(a, F32(10))  # erfc(10) underflows float32; also keeps inf finite
    t = F32(1) / (F32(1) + F32(0.5) * a)
    p = np.full_like(a, _ERFC_POLY[0])
    for c in _ERFC_POLY[1:]:
        p *= t
        p += c
    # exp(-a^2) with a split into a 12-bit head so the head's square is exact.
    head = (a.view(np.int32) & np.int32(-4096)).view(F32)
    tail_term = (head - a) * (head + a)
    return t * np.exp(-head * head) * np.exp(tail_term + p)


def erf(x: np.ndarray) -> np.ndarray:
    """Gauss error function, float32, within ~3 ulp."""
    x = np.asarray(x, dtype=F32)
    a = np.abs(x)
    small = a < 1
    out = _erf_small(np.where(small, a, F32(0)))
    large = F32(1) - _erfc_large(np.where(small, F32(1), a))
    return np.copysign(np.where(small, out, large), x)


def erfc(x: np.ndarray) -> np.ndarray:
    """Complementary error function 1 - erf(x), keeping relative accuracy in the tail."""
    x = np.asarray(x, dtype=F32)
    a = np.abs(x)
    small = a < 1
    tail = np.where(small, F32(1) - _erf_small(np.where(small, x, F32(0))), _erfc_large(a))
    return np.where(small | (x >= 0), tail, F32(2) - tail)


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, F32(0))


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)), computed from exp(-|x|) so it never overflows."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, F32(1), e) / (F32(1) + e)


def softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(F32(0), x)


def hard_swish(x: np.ndarray) -> np.ndarray:
    """x * clip(x + 3, 0, 6) / 6, in place on one new array (the same arithmetic as the
    plain expression, in about two thirds of the time)."""
    y = np.asarray(x + F32(3))
    np.clip(y, F32(0), F32(6), out=y)
    np.multiply(x, y, out=y)
    y /= F32(6)
    return y


def hard_sigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    return np.clip(F32(alpha) * x + F32(beta), F32(0), F32(1))


def gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    """x * Phi(x), exactly via erfc or with the tanh approximation."""
    if approximate == "tanh":
        inner = F32(math.sqrt(2 / math.pi)) * (x + F32(0.044715) * x * x * x)
        return F32(0.5) * x * (F32(1) + np.tanh(inner))
    return F32(0.5) * x * erfc(x * F32(-1 / math.sqrt(2)))


def leaky_relu(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x >= 0, x, x * F32(alpha))


def elu(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x > 0, x, F32(alpha) * np.expm1(np.minimum(x, F32(0))))


def clip(x: np.ndarray, lo: float | None = None, hi: float | None = None) -> np.ndarray:
    """Clamp to [lo, hi]; a missing bound is unbounded (NaN passes through)."""
    out = np.array(x, dtype=F32, copy=True)
    return apply_activation(out, "clip", lo, hi)


def prelu(x: np.ndarray, slope: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, x, x * slope)


def reciprocal(x: np.ndarray) -> np.ndarray:
    return F32(1) / x


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    e /= e.sum(axis=axis, keepdims=True)
    return e


def log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


UNARY = {
    "relu": relu,
    "sigmoid": sigmoid,
    "tanh": np.tanh,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "erf": erf,
    "abs": np.abs,
    "neg": np.negative,
    "reciprocal": reciprocal,
    "floor": np.floor,
    "ceil": np.ceil,
    "softplus": softplus,
    "hard_swish": hard_swish,
}

BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


def apply_activation(
    y: np.ndarray,
    kind: str | None,
    lo: float | None = None,
    hi: float | None = None,
    alpha: float | None = None,
) -> np.ndarray:
    """Apply a fused activation in place to a freshly computed (writeable) result."""
    if kind is None:
        return y
    if kind == "clip":
        # np.maximum/np.minimum with out= propagate NaN, as an unfused nn.clip does.
        if lo is not None:
            np.maximum(y, F32(lo), out=y)
        if hi is not None:
            np.minimum(y, F32(hi), out=y)
        return y
    if kind == "leaky_relu":
        if alpha is None:
            raise ValueError("leaky_relu activation needs an alpha")
        np.multiply(y, F32(alpha), out=y, where=y < 0)
        return y
    raise ValueError(f"unknown fused activation {kind!r}")
