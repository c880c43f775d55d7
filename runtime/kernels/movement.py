"""Data-movement kernels: reshape, transpose, concat, split, slice, pad, gather, ...

Results may be views of their inputs; no kernel writes into an input.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from npuc.diagnostics import KernelError


def reshape(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    return x.reshape(tuple(shape))


def broadcast(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Numpy broadcasting to `shape` (a read-only view)."""
    return np.broadcast_to(x, tuple(shape))


def transpose(x: np.ndarray, perm: Sequence[int]) -> np.ndarray:
    """Result dim i is input dim perm[i]."""
    return x.transpose(tuple(perm))


def concat(xs: Sequence[np.ndarray], axis: int) -> np.ndarray:
    return np.concatenate(list(xs), axis=axis)


def split(x: np.ndarray, sizes: Sequence[int], axis: int) -> list[np.ndarray]:
    """Consecutive pieces of the given sizes along `axis`."""
    cuts = np.cumsum(sizes)[:-1]
    return np.split(x, cuts, axis=axis)


def slice_(
    x: np.ndarray, starts: Sequence[int], ends: Sequence[int], steps: Sequence[int]
) -> np.ndarray:
    """Strided slice with normalised bounds, like range(start, end, step) on each dim.

    An end of -1 means "before index 0": through index 0 with a negative step,
    an empty range with a positive one (never Python's "last element").
    """
    index = tuple(
        slice(start, (None if step < 0 else 0) if end == -1 else end, step)
        for start, end, step in zip(starts, ends, steps, strict=True)
    )
    return x[index]


def pad(
    x: np.ndarray, pads: Sequence[int], mode: str = "constant", value: float = 0.0
) -> np.ndarray:
    """Pad each dim by pads = begins then ends; negative values crop that side first.

    Modes follow ONNX Pad: constant, reflect (mirror without the edge), edge, wrap.
    The non-constant modes read from the already-cropped tensor.
    """
    rank = x.ndim
    begins, ends = pads[:rank], pads[rank:]
    pairs = list(zip(begins, ends, strict=True))
    crop = [slice(max(0, -b), dim - max(0, -e)) for dim, (b, e) in zip(x.shape, pairs, strict=True)]
    x = x[tuple(crop)]
    widths = [(max(0, b), max(0, e)) for b, e in pairs]
    if not any(b or e for b, e in widths):
        return x
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=np.asarray(value, x.dtype))
    if mode in ("reflect", "edge", "wrap"):
        return np.pad(x, widths, mode=mode)
    raise ValueError(f"unknown pad mode {mode!r}")


def gather(x: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    """Slices of x along `axis` at `indices`; negative indices count from the end."""
    size = x.shape[axis]
    idx = np.asarray(indices, dtype=np.int64)
    if idx.size and (idx.min() < -size or idx.max() >= size):
        raise KernelError(f"gather index out of range [-{size}, {size}) on axis {axis}")
    return np.take(x, np.where(idx < 0, idx + size, idx), axis=axis)


def depth_to_space(x: np.ndarray, block: int, mode: str = "DCR") -> np.ndarray:
    """Channels to block x block tiles; DCR takes depth-major, CRD channel-major order."""
    n, c, h, w = x.shape
    oc = c // (block * block)
    if mode == "DCR":
        tiles = x.reshape(n, block, block, oc, h, w).transpose(0, 3, 4, 1, 5, 2)
    elif mode == "CRD":
        tiles = x.reshape(n, oc, block, block, h, w).transpose(0, 1, 4, 2, 5, 3)
    else:
        raise ValueError(f"unknown depth_to_space mode {mode!r}")
    return tiles.reshape(n, oc, h * block, w * block)


def space_to_depth(x: np.ndarray, block: int) -> np.ndarray:
    """block x block spatial tiles to channels (inverse of DCR depth_to_space)."""
    n, c, h, w = x.shape
    tiles = x.reshape(n, c, h // block, block, w // block, block).transpose(0, 3, 5, 1, 2, 4)
    return tiles.reshape(n, c * block * block, h // block, w // block)
