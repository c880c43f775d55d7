"""Reductions over axes and arg-reductions along one axis."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

F32 = np.float32

_REDUCERS = {
    "mean": np.mean,
    "sum": np.sum,
    "max": np.max,
    "min": np.min,
    "prod": np.prod,
}


def reduce(x: np.ndarray, kind: str, axes: Sequence[int] = (), keepdims: bool = True) -> np.ndarray:
    """Reduce `x` with `kind` (mean, sum, max, min, prod) over `axes`; all axes when empty.

    Floats reduce to float32; integers and booleans keep their dtype (sums wrap around).
    """
    axis = tuple(a % x.ndim for a in axes) if axes else None
    out = _REDUCERS[kind](x, axis=axis, keepdims=keepdims)
    return np.asarray(out, dtype=F32 if x.dtype.kind == "f" else x.dtype)


def arg_reduce(
    x: np.ndarray, kind: str, axis: int, keepdims: bool = True, select_last_index: bool = False
) -> np.ndarray:
    """int64 index of the max (kind "max") or min along `axis`; ties pick the first or last."""
    fn = np.argmax if kind == "max" else np.argmin
    axis %= x.ndim
    if select_last_index:
        flipped = np.flip(x, axis=axis)
        idx = x.shape[axis] - 1 - fn(flipped, axis=axis, keepdims=keepdims)
    else:
        idx = fn(x, axis=axis, keepdims=keepdims)
    return np.asarray(idx, dtype=np.int64)
