"""Kernels of the `nn` integer and boolean paths: casts, integer division, comparisons.

Integer arithmetic keeps its operands' dtype and wraps around (two's
complement), as numpy and ONNX runtimes do; the rules that differ from
numpy's defaults are spelled out here once.
"""

from __future__ import annotations

import numpy as np

from npuc.diagnostics import KernelError


def cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """ONNX Cast: float -> integer truncates toward zero and saturates (NaN -> 0);
    integer -> integer wraps; -> bool is x != 0; bool -> number is 0 or 1."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.asarray(x != 0)
    if dtype.kind in "iu" and x.dtype.kind == "f":
        info = np.iinfo(dtype)
        t = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0))
        high, low = t >= float(info.max), t <= float(info.min)
        out = np.where(high | low, 0, t).astype(dtype)
        out[high], out[low] = info.max, info.min
        return out
    with np.errstate(all="ignore"):
        return x.astype(dtype)


def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b; on integers the quotient truncates toward zero (C semantics, as ONNX Div)."""
    if a.dtype.kind == "f":
        return np.divide(a, b)
    if np.any(b == 0):
        raise KernelError("integer division by zero")
    q = np.abs(a) // np.abs(b) if a.dtype.kind == "i" else a // b
    return np.where((a < 0) != (b < 0), -q, q).astype(np.result_type(a, b))


def where(condition: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(condition, x, y)
