"""Normalisation kernels: batch, instance, layer norm and local response norm, float32."""

from __future__ import annotations

import math

import numpy as np

F32 = np.float32


def _channel(v: np.ndarray, rank: int) -> np.ndarray:
    """A per-channel vector shaped to broadcast over axis 1 of a rank-`rank` tensor."""
    return v.reshape(-1, *([1] * (rank - 2)))


def batch_norm(
    x: np.ndarray,
    scale: np.ndarray,
    bias: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    epsilon: float,
) -> np.ndarray:
    """scale * (x - mean) / sqrt(var + epsilon) + bias, per channel (axis 1)."""
    # Fold into one multiply-add; the per-channel factors are computed in float64 then rounded.
    a = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + epsilon)
    b = bias - mean.astype(np.float64) * a
    return x * _channel(a.astype(F32), x.ndim) + _channel(b.astype(F32), x.ndim)


def instance_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, epsilon: float) -> np.ndarray:
    """Normalise each (n, c) plane over its spatial positions, then scale and shift per channel."""
    axes = tuple(range(2, x.ndim))
    mean = x.mean(axis=axes, keepdims=True, dtype=F32)
    centered = x - mean
    var = np.mean(np.square(centered), axis=axes, keepdims=True, dtype=F32)
    centered *= _channel(scale, x.ndim) / np.sqrt(var + F32(epsilon))
    centered += _channel(bias, x.ndim)
    return centered


def layer_norm(
    x: np.ndarray, scale: np.ndarray, bias: np.ndarray | None, axis: int, epsilon: float
) -> np.ndarray:
    """Normalise over dims [axis, rank), then multiply by scale and add bias (right-aligned)."""
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True, dtype=F32)
    centered = x - mean
    var = np.mean(np.square(centered), axis=axes, keepdims=True, dtype=F32)
    centered /= np.sqrt(var + F32(epsilon))
    centered *= scale
    if bias is not None:
        centered += bias
    return centered


def lrn(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    """ONNX LRN: x / (bias + alpha / size * sum of x^2 over nearby channels) ** beta.

    Channel c sums channels c - floor((size-1)/2) .. c + ceil((size-1)/2), clipped.
    """
    before, after = (size - 1) // 2, math.ceil((size - 1) / 2)
    sq = np.square(x)
    padded = np.zeros((x.shape[0], x.shape[1] + before + after, *x.shape[2:]), dtype=F32)
    padded[:, before : before + x.shape[1]] = sq
    total = np.zeros_like(sq)
    for k in range(size):
        total += padded[:, k : k + x.shape[1]]
    total *= F32(alpha / size)
    total += F32(bias)
    return x / np.power(total, F32(beta))
