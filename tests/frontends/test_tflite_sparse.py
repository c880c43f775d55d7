"""Sparse TFLite constants expanded at decode: traversal orders, CSR levels and block maps.

The cases are the DENSIFY examples of Android's NNAPI test specs (densify_4, _5, _7) and a
2x2-blocked matrix; models with DENSIFY against LiteRT are in test_tflite_dequantize_constants.
"""

from __future__ import annotations

from collections.abc import Sequence

import flatbuffers
import numpy as np
import pytest
import tflite

from npuc.diagnostics import NpucError
from npuc.frontends.tflite_sparse import densify

Level = tuple[int] | tuple[Sequence[int], Sequence[int]]  # (dense size,) or (segments, indices)


def sparsity(order: Sequence[int], block_map: Sequence[int], levels: Sequence[Level]):
    b = flatbuffers.Builder(256)
    metas = []
    for level in levels:
        vectors = []
        if len(level) == 2:
            for values in level:
                vec = b.CreateNumpyVector(np.asarray(values, np.int32))
                tflite.Int32VectorStart(b)
                tflite.Int32VectorAddValues(b, vec)
                vectors.append(tflite.Int32VectorEnd(b))
        tflite.DimensionMetadataStart(b)
        if vectors:
            int32 = tflite.SparseIndexVector.Int32Vector
            tflite.DimensionMetadataAddFormat(b, tflite.DimensionType.SPARSE_CSR)
            tflite.DimensionMetadataAddArraySegmentsType(b, int32)
            tflite.DimensionMetadataAddArraySegments(b, vectors[0])
            tflite.DimensionMetadataAddArrayIndicesType(b, int32)
            tflite.DimensionMetadataAddArrayIndices(b, vectors[1])
        else:
            tflite.DimensionMetadataAddFormat(b, tflite.DimensionType.DENSE)
            tflite.DimensionMetadataAddDenseSize(b, level[0])
        metas.append(tflite.DimensionMetadataEnd(b))
    order_vec = b.CreateNumpyVector(np.asarray(order, np.int32))
    block_vec = b.CreateNumpyVector(np.asarray(block_map, np.int32)) if block_map else None
    tflite.SparsityParametersStartDimMetadataVector(b, len(metas))
    for off in reversed(metas):
        b.PrependUOffsetTRelative(off)
    meta_vec = b.EndVector()
    tflite.SparsityParametersStart(b)
    tflite.SparsityParametersAddTraversalOrder(b, order_vec)
    if block_vec is not None:
        tflite.SparsityParametersAddBlockMap(b, block_vec)
    tflite.SparsityParametersAddDimMetadata(b, meta_vec)
    b.Finish(tflite.SparsityParametersEnd(b))
    return tflite.SparsityParameters.GetRootAs(b.Output(), 0)


def test_csr_outer_and_inner_levels() -> None:  # densify_4
    s = sparsity([0, 1, 2], [], [([0, 2], [0, 2]), (2,), ([0, 1, 3, 4, 5], [0, 0, 1, 0, 1])])
    got = densify(s, np.array([6, 9, 8, 5, 7], np.float32), (3, 2, 2), "t")
    want = [6, 0, 9, 8, 0, 0, 0, 0, 5, 0, 0, 7]
    np.testing.assert_array_equal(got.ravel(), want)


def test_traversal_order_other_than_the_dimension_order() -> None:  # densify_5
    levels = [
        ([0, 2], [0, 2]),
        ([0, 2, 5], [0, 2, 0, 2, 3]),
        ([0, 2, 3, 4, 6, 8], [0, 1, 1, 1, 0, 1, 0, 1]),
    ]
    s = sparsity([0, 2, 1], [], levels)
    got = densify(s, np.array([1, 7, 5, 2, 4, 8, 3, 9], np.float32), (3, 2, 4), "t")
    want = [1, 0, 0, 0, 7, 0, 5, 0] + [0] * 10 + [4, 3, 2, 0, 8, 9]
    np.testing.assert_array_equal(got.ravel(), want)


def test_dense_blocks() -> None:  # densify_7: a 10x21 matrix as 2x3 blocks of 5x7
    s = sparsity([0, 1, 2, 3], [0, 1], [(2,), (3,), (5,), (7,)])
    values = np.zeros(210, np.float32)
    values[0:22:7] = [11, 13, 17, 19]
    want = np.zeros(210, np.float32)
    want[0:64:21] = [11, 13, 17, 19]
    np.testing.assert_array_equal(densify(s, values, (10, 21), "t").ravel(), want)


def test_csr_blocks_of_a_matrix() -> None:
    dense = np.zeros((4, 6), np.int8)
    dense[0:2, 2:4] = [[1, 2], [3, 4]]
    dense[2:4, 0:2] = [[5, 6], [7, 8]]
    dense[2:4, 4:6] = [[9, 10], [11, 12]]
    # rows of blocks dense, block columns CSR, 2x2 blocks dense inside
    s = sparsity([0, 1, 2, 3], [0, 1], [(2,), ([0, 1, 3], [1, 0, 2]), (2,), (2,)])
    values = np.arange(1, 13, dtype=np.int8)
    np.testing.assert_array_equal(densify(s, values, (4, 6), "t"), dense)


def test_inconsistent_sparsity_is_a_diagnostic() -> None:
    s = sparsity([0, 1], [], [(2,), ([0, 1, 3], [0, 5, 1])])
    with pytest.raises(NpucError, match="index beyond its shape"):
        densify(s, np.ones(3, np.float32), (2, 3), "t")
    with pytest.raises(NpucError, match="stores 2 values"):
        densify(s, np.ones(2, np.float32), (2, 3), "t")
