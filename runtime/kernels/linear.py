"""Matrix products: numpy-style matmul and fully connected layers, float32."""

from __future__ import annotations

import numpy as np


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Numpy matmul semantics: broadcast batch dims, 1-D operands promoted then squeezed."""
    return np.asarray(np.matmul(a, b))  # 1-D x 1-D gives a numpy scalar


def fully_connected(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """y = x @ w^T + bias, with x [N, K], w [O, K], bias [O]."""
    y = x @ w.T
    if bias is not None:
        y += bias
    return y
