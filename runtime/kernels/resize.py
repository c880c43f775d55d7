"""ONNX Resize (nearest, n-linear, n-cubic), applied one axis at a time, and the Q10
interpolation values of TFLite's integer bilinear resize (qnn.resize_bilinear).

Interpolation is separable, so each resized axis becomes a gather of at most
four neighbours and a weighted sum computed in float32. The NPU lowering
(passes/npu_lowering/resize.py) reads its index maps and weights from here too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

F32 = np.float32


def source_coordinates(mode: str, out_len: int, in_len: int, scale: float) -> np.ndarray:
    """x_original for every output index along one axis (ONNX coordinate_transformation_mode).

    Follows the ONNX spec and onnxruntime where onnx.reference differs (it uses
    the fractional scale * in_len as the resized length for align_corners and
    -0.5 for pytorch_half_pixel at length 1). Computed in float32 in
    onnxruntime's order of operations, so ties in nearest rounding break alike.
    """
    x = np.arange(out_len, dtype=F32)
    s = F32(scale)
    half = F32(0.5)
    if mode == "half_pixel" or (mode == "pytorch_half_pixel" and out_len > 1):
        return (x + half) / s - half
    if mode == "half_pixel_symmetric":
        adjustment = F32(out_len) / (s * F32(in_len))
        offset = F32(in_len) / F32(2) * (F32(1) - adjustment)
        # onnxruntime finishes this one in double precision.
        x64 = x.astype(np.float64)
        return (float(offset) + (x64 + 0.5) / float(s) - 0.5).astype(F32)
    if mode in ("pytorch_half_pixel", "align_corners") and out_len == 1:
        return np.zeros_like(x)
    if mode == "align_corners":
        return x * F32(in_len - 1) / F32(out_len - 1)
    if mode == "asymmetric":
        return x / s
    if mode == "tf_half_pixel_for_nn":
        return (x + half) / s
    raise ValueError(f"unknown coordinate_transformation_mode {mode!r}")


def _nearest(coord: np.ndarray, nearest_mode: str) -> np.ndarray:
    base = np.floor(coord)
    frac = coord - base
    if nearest_mode == "round_prefer_floor":
        up = frac > 0.5
    elif nearest_mode == "round_prefer_ceil":
        up = frac >= 0.5
    elif nearest_mode == "floor":
        up = np.zeros_like(frac, dtype=bool)
    elif nearest_mode == "ceil":
        up = frac > 0
    else:
        raise ValueError(f"unknown nearest_mode {nearest_mode!r}")
    return (base + up).astype(np.int64)[:, None]


def _cubic_weights(t: np.ndarray, a: float) -> np.ndarray:
    """Keys cubic weights for neighbours at offsets -1, 0, 1, 2 from floor(x); t = x - floor(x)."""
    d = np.stack([t + 1, t, 1 - t, 2 - t], axis=1)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, far)


def axis_taps(
    in_len: int,
    out_len: int,
    scale: float,
    mode: str,
    coordinate_mode: str,
    nearest_mode: str = "round_prefer_floor",
    cubic_coeff_a: float = -0.75,
    exclude_outside: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Input indices [out_len, taps] (clamped to the edge) and their weights."""
    coord = source_coordinates(coordinate_mode, out_len, in_len, scale).astype(np.float64)
    if mode == "nearest":
        idx = _nearest(coord, nearest_mode)
        weights = np.ones(idx.shape)
    else:
        base = np.floor(coord)
        t = coord - base
        if mode == "linear":
            offsets = np.arange(2)
            weights = np.stack([1 - t, t], axis=1)
        elif mode == "cubic":
            offsets = np.arange(-1, 3)
            weights = _cubic_weights(t, cubic_coeff_a)
        else:
            raise ValueError(f"unknown resize mode {mode!r}")
        idx = base.astype(np.int64)[:, None] + offsets
        if exclude_outside:
            weights = np.where((idx < 0) | (idx >= in_len), 0.0, weights)
            total = weights.sum(axis=1, keepdims=True)
            weights = weights / np.where(total == 0, 1.0, total)
    return np.clip(idx, 0, in_len - 1), weights


def resize(
    x: np.ndarray,
    out_shape: Sequence[int],
    scales: Sequence[float],
    mode: str,
    coordinate_mode: str = "half_pixel",
    nearest_mode: str = "round_prefer_floor",
    cubic_coeff_a: float = -0.75,
    exclude_outside: bool = False,
) -> np.ndarray:
    """Resample `x` to `out_shape`; `scales` drive the coordinate transform as in ONNX.

    An axis with scale 1 and unchanged length is left alone, as onnxruntime and
    the ONNX reference do (even where the coordinate transform would shift it,
    e.g. tf_half_pixel_for_nn with ceil rounding).
    """
    y = x
    for axis, (in_len, out_len, scale) in enumerate(zip(x.shape, out_shape, scales, strict=True)):
        if in_len == out_len and float(scale) == 1.0:
            continue
        idx, weights = axis_taps(
            in_len,
            out_len,
            float(scale),
            mode,
            coordinate_mode,
            nearest_mode,
            cubic_coeff_a,
            exclude_outside,
        )
        y = _apply_axis(y, axis, idx, weights.astype(F32))
    return y if y is not x else x.copy()


def _apply_axis(x: np.ndarray, axis: int, idx: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """sum_k x[..., idx[:, k], ...] * weights[:, k] along `axis`."""
    shape = [1] * x.ndim
    shape[axis] = idx.shape[0]
    out: np.ndarray | None = None
    for k in range(idx.shape[1]):
        term = np.take(x, idx[:, k], axis=axis)
        if weights.shape[1] > 1 or not np.all(weights[:, k] == 1):
            term *= weights[:, k].reshape(shape)
        if out is None:
            out = term
        else:
            out += term
    assert out is not None
    return out


def integer_bilinear_axis(
    size_in: int, size_out: int, align_corners: bool, half_pixel: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, w_lo, w_hi) per output index: ComputeInterpolationValuesInteger, Q10 weights."""
    scale = ((1 << 10) * size_in + size_out // 2) // size_out
    if align_corners and size_out > 1:
        scale = ((1 << 10) * (size_in - 1) + (size_out - 1) // 2) // (size_out - 1)
    v = np.arange(size_out, dtype=np.int64) * scale
    if half_pixel:
        v = v + scale // 2 - (1 << 9)

    def c_div(a: np.ndarray) -> np.ndarray:  # C division by 1024, truncating toward zero
        return np.where(a >= 0, a >> 10, -((-a) >> 10))

    lo = np.maximum(c_div(v), 0)
    hi = np.minimum(c_div(v + (1 << 10) - 1), size_in - 1)
    frac = v - (lo << 10)
    return lo, hi, (1 << 10) - frac, frac
