"""Sparse TFLite constants (SparsityParameters) expanded to dense arrays at decode time.

TFLite's format (tensorflow/lite/schema, FormatConverter): the `n` original dimensions,
optionally split into blocks (`block_map[j]` is the dimension block `j` splits, giving
`n + k` expanded dimensions), are traversed in `traversal_order`; each level is DENSE
(`dense_size` positions) or SPARSE_CSR (`array_segments[p] .. array_segments[p + 1]` of
`array_indices` below the parent position `p`). The leaves, in order, are the stored
values; every other element is zero. A DENSIFY of such a constant then is the identity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from npuc.diagnostics import NpucError

from .tflite_schema import tflite

DENSE, SPARSE_CSR = 0, 1
_INDEX_VECTORS = {
    tflite.SparseIndexVector.Int32Vector: tflite.Int32Vector,
    tflite.SparseIndexVector.Uint16Vector: tflite.Uint16Vector,
    tflite.SparseIndexVector.Uint8Vector: tflite.Uint8Vector,
}


def _vector(kind: int, table: Any, what: str) -> np.ndarray:
    cls = _INDEX_VECTORS.get(kind)
    if cls is None or table is None:
        raise NpucError(f"invalid TFLite model: sparse {what} of vector type {kind}")
    vec = cls()
    vec.Init(table.Bytes, table.Pos)
    values = vec.ValuesAsNumpy()
    return np.zeros(0, np.int64) if isinstance(values, int) else values.astype(np.int64)


def densify(sparsity: Any, values: np.ndarray, shape: tuple[int, ...], name: str) -> np.ndarray:
    """The dense array of shape `shape` whose non-zero entries `values` (1-D) encode."""
    n = len(shape)
    order = [int(d) for d in np.ravel(sparsity.TraversalOrderAsNumpy())]
    block_map = sparsity.BlockMapAsNumpy()
    block_map = [] if isinstance(block_map, int) else [int(d) for d in block_map]
    levels = sparsity.DimMetadataLength()
    if sorted(order) != list(range(n + len(block_map))) or levels != len(order):
        raise NpucError(
            f"invalid TFLite model: sparse tensor '{name}' has an inconsistent traversal order"
        )
    pos = np.zeros(1, np.int64)  # position of every partial path within its level
    coords: list[np.ndarray] = [np.zeros(0, np.int64)] * len(order)
    sizes = [0] * len(order)
    for level in range(levels):
        meta = sparsity.DimMetadata(level)
        if meta.Format() == DENSE:
            size = int(meta.DenseSize())
            index = np.tile(np.arange(size, dtype=np.int64), len(pos))
            parents = np.repeat(np.arange(len(pos)), size)
            pos = np.repeat(pos, size) * size + index
        elif meta.Format() == SPARSE_CSR:
            segments = _vector(meta.ArraySegmentsType(), meta.ArraySegments(), "segments")
            indices = _vector(meta.ArrayIndicesType(), meta.ArrayIndices(), "indices")
            if len(pos) and (pos.max() + 1 >= len(segments)):
                raise NpucError(f"invalid TFLite model: sparse tensor '{name}' is truncated")
            counts = segments[pos + 1] - segments[pos]
            parents = np.repeat(np.arange(len(pos)), counts)
            starts = np.repeat(segments[pos] - np.cumsum(counts) + counts, counts)
            pos = starts + np.arange(len(parents))
            index = indices[pos]
            size = int(index.max()) + 1 if len(index) else 0
        else:
            raise NpucError(
                f"invalid TFLite model: sparse tensor '{name}' has dimension format {meta.Format()}"
            )
        coords = [c[parents] for c in coords[:level]] + [index] + coords[level + 1 :]
        sizes[level] = size
    if len(pos) != values.size:
        raise NpucError(
            f"invalid TFLite model: sparse tensor '{name}' stores {values.size} "
            f"values, its indices address {len(pos)}"
        )
    expanded = {order[level]: coords[level] for level in range(levels)}
    full = [expanded[d] for d in range(n)]
    for j, d in enumerate(block_map):
        block = sizes[order.index(n + j)]
        full[d] = full[d] * block + expanded[n + j]
    out = np.zeros(shape, values.dtype)
    try:
        out[tuple(full)] = values
    except IndexError:
        raise NpucError(
            f"invalid TFLite model: sparse tensor '{name}' has an index beyond "
            f"its shape {list(shape)}"
        ) from None
    return out
