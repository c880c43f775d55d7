"""Max, average and global pooling over NCHW inputs, float32."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from npuc.dialects.nn_shapes import pooled_size

from .window import pad_hw, window_extent, window_reduce

F32 = np.float32


def window_geometry(
    shape: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool,
) -> tuple[tuple[int, int], tuple[int, int]]:
    """Output size and the extra end padding ceil mode needs for its last window."""
    out, extra = [], []
    for a in range(2):
        size = pooled_size(
            shape[2 + a], kernel[a], strides[a], pads[a], pads[a + 2], dilations[a], ceil_mode
        )
        padded = shape[2 + a] + pads[a] + pads[a + 2]
        reach = (size - 1) * strides[a] + window_extent(kernel[a], dilations[a])
        out.append(size)
        extra.append(max(0, reach - padded))
    return (out[0], out[1]), (extra[0], extra[1])


def max_pool2d(
    x: np.ndarray,
    kernel: Sequence[int],
    *,
    strides: Sequence[int] = (1, 1),
    pads: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1),
    ceil_mode: bool = False,
) -> np.ndarray:
    """Maximum over each (dilated) window; padding is -inf (integers: the type's minimum)
    so it never wins. Floats give float32, integers keep their dtype."""
    out_hw, extra = window_geometry(x.shape, kernel, strides, pads, dilations, ceil_mode)
    floor = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = pad_hw(x, pads, floor, extra)
    dtype = F32 if x.dtype.kind == "f" else x.dtype
    return window_reduce(xp, kernel, out_hw, strides, dilations, np.maximum, dtype)


def divisor_1d(
    size: int,
    out: int,
    kernel: int,
    stride: int,
    dilation: int,
    begin: int,
    end: int,
    include_pad: bool,
) -> np.ndarray:
    """How many taps of each window fall inside the input (or its explicit padding)."""
    lo, hi = (0, size + begin + end) if include_pad else (begin, begin + size)
    taps = np.arange(out)[:, None] * stride + np.arange(kernel)[None, :] * dilation
    return ((taps >= lo) & (taps < hi)).sum(axis=1)


def avg_pool2d(
    x: np.ndarray,
    kernel: Sequence[int],
    *,
    strides: Sequence[int] = (1, 1),
    pads: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1),
    ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> np.ndarray:
    """Mean over each (dilated) window.

    The divisor counts the taps on input pixels, plus those on explicit
    padding when count_include_pad; taps a ceil-mode window hangs past the
    padding are never counted.
    """
    out_hw, extra = window_geometry(x.shape, kernel, strides, pads, dilations, ceil_mode)
    xp = pad_hw(x, pads, 0.0, extra)
    y = window_reduce(xp, kernel, out_hw, strides, dilations, np.add, F32)
    counts = [
        divisor_1d(
            x.shape[2 + a],
            out_hw[a],
            kernel[a],
            strides[a],
            dilations[a],
            pads[a],
            pads[a + 2],
            count_include_pad,
        )
        for a in range(2)
    ]
    y /= np.outer(counts[0], counts[1]).astype(F32)
    return y


def global_avg_pool(x: np.ndarray) -> np.ndarray:
    """Mean over every axis from 2 on, keeping them as size 1."""
    return x.mean(axis=tuple(range(2, x.ndim)), keepdims=True, dtype=F32)


def global_max_pool(x: np.ndarray) -> np.ndarray:
    """Maximum over every axis from 2 on, keeping them as size 1."""
    return x.max(axis=tuple(range(2, x.ndim)), keepdims=True)
