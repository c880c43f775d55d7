"""Sliding-window helpers shared by convolution and pooling (NCHW, zero-copy views)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from npuc.limits import check_tensor


def window_extent(kernel: int, dilation: int) -> int:
    return dilation * (kernel - 1) + 1


def pad_hw(
    x: np.ndarray, pads: Sequence[int], value: float = 0.0, extra: Sequence[int] = (0, 0)
) -> np.ndarray:
    """x padded by pads = [top, left, bottom, right] plus `extra` rows/cols at the end."""
    top, left, bottom, right = pads
    bottom += extra[0]
    right += extra[1]
    if not (top or left or bottom or right):
        return x
    padded = (*x.shape[:2], x.shape[2] + top + bottom, x.shape[3] + left + right)
    check_tensor(padded, x.dtype.itemsize, "the padded input")
    out = np.full(
        (*x.shape[:2], x.shape[2] + top + bottom, x.shape[3] + left + right), value, dtype=x.dtype
    )
    out[:, :, top : top + x.shape[2], left : left + x.shape[3]] = x
    return out


def tap(
    xp: np.ndarray,
    i: int,
    j: int,
    out_hw: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int] = (1, 1),
) -> np.ndarray:
    """View of the input pixels that kernel tap (i, j) sees, one per output position."""
    (oh, ow), (sh, sw), (dh, dw) = out_hw, strides, dilations
    r0, c0 = i * dh, j * dw
    return xp[:, :, r0 : r0 + sh * (oh - 1) + 1 : sh, c0 : c0 + sw * (ow - 1) + 1 : sw]


#: What one numpy call costs besides its elements, in elements (about 1.5 us at 1 ns each).
_CALL = 1500


def window_reduce(
    xp: np.ndarray,
    kernel: Sequence[int],
    out_hw: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    combine: np.ufunc,
    dtype: np.dtype | type,
) -> np.ndarray:
    """`combine` (np.add or np.maximum) over the taps of every window, as `dtype`.

    A large window is reduced over its rows first and then over its columns: kh + kw
    passes instead of kh * kw (a 64x64 average pool is 128 array operations instead of
    4096). That is chosen when it costs less, counting each call as `_CALL` elements;
    small strided windows, whose row pass reads many columns for few outputs, go tap by
    tap. Integer sums and maxima are the same either way; a float sum adds in another
    order.
    """
    (kh, kw), (oh, ow), (sh, sw), (dh, dw) = kernel, out_hw, strides, dilations
    cols = sw * (ow - 1) + window_extent(kw, dw)  # the input columns some window reads
    planes = xp.shape[0] * xp.shape[1] * oh
    tap_by_tap = kh * kw * (_CALL + planes * ow)
    if tap_by_tap <= kh * (_CALL + planes * cols) + kw * (_CALL + planes * ow):
        y = np.array(tap(xp, 0, 0, out_hw, strides, dilations), dtype=dtype)
        for i in range(kh):
            for j in range(kw):
                if i or j:
                    combine(y, tap(xp, i, j, out_hw, strides, dilations), out=y)
        return y
    rows = np.array(xp[:, :, : sh * (oh - 1) + 1 : sh, :cols], dtype=dtype)
    for i in range(1, kh):
        combine(rows, xp[:, :, i * dh : i * dh + sh * (oh - 1) + 1 : sh, :cols], out=rows)
    y = np.array(rows[..., : sw * (ow - 1) + 1 : sw])
    for j in range(1, kw):
        combine(y, rows[..., j * dw : j * dw + sw * (ow - 1) + 1 : sw], out=y)
    return y


def windows(
    xp: np.ndarray,
    kernel: Sequence[int],
    out_hw: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int] = (1, 1),
) -> np.ndarray:
    """Zero-copy view [N, C, kH, kW, OH, OW] of every window of a padded NCHW input."""
    (kh, kw), (oh, ow), (sh, sw), (dh, dw) = kernel, out_hw, strides, dilations
    span = (window_extent(kh, dh), window_extent(kw, dw))
    view = np.lib.stride_tricks.sliding_window_view(xp, span, axis=(2, 3))
    view = view[:, :, : sh * (oh - 1) + 1 : sh, : sw * (ow - 1) + 1 : sw, ::dh, ::dw]
    return view.transpose(0, 1, 4, 5, 2, 3)
