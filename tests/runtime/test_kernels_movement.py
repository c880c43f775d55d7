"""Data-movement kernels against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from npuc.diagnostics import KernelError
from npuc.dialects.nn_shapes import slice_ as slice_shape
from npuc.runtime.kernels import movement


def _ints(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_reshape_and_broadcast(rng, onnx_ort):
    x = rng.standard_normal((2, 3, 4), dtype=np.float32)
    (expected,) = onnx_ort("Reshape", [x, _ints(4, 6)])
    np.testing.assert_array_equal(movement.reshape(x, (4, 6)), expected)
    y = rng.standard_normal((3, 1), dtype=np.float32)
    (expected,) = onnx_ort("Expand", [y, _ints(2, 3, 5)])
    np.testing.assert_array_equal(movement.broadcast(y, (2, 3, 5)), expected)


@pytest.mark.parametrize("perm", [(0, 2, 3, 1), (3, 2, 1, 0), (1, 0, 2, 3)])
def test_transpose_matches_onnxruntime(rng, onnx_ort, perm):
    x = rng.standard_normal((2, 3, 4, 5), dtype=np.float32)
    (expected,) = onnx_ort("Transpose", [x], {"perm": list(perm)})
    np.testing.assert_array_equal(movement.transpose(x, perm), expected)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_and_split_round_trip(rng, onnx_ort, axis):
    parts = [rng.standard_normal((2, 3, 4), dtype=np.float32) for _ in range(3)]
    parts[1] = np.concatenate([parts[1]] * 2, axis=axis)
    (expected,) = onnx_ort("Concat", parts, {"axis": axis}, feeds=3)
    joined = movement.concat(parts, axis)
    np.testing.assert_array_equal(joined, expected)
    sizes = [p.shape[axis] for p in parts]
    pieces = movement.split(joined, sizes, axis)
    ort_pieces = onnx_ort("Split", [joined, _ints(*sizes)], {"axis": axis}, n_outputs=3)
    for got, want, part in zip(pieces, ort_pieces, parts, strict=True):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, part)


# (starts, ends, steps) already normalised the way nn.slice requires.
SLICES = [
    ((0, 1, 0), (2, 3, 5), (1, 1, 2)),
    ((1, 2, 4), (2, -1, -1), (1, -1, -1)),  # negative steps through index 0
    ((0, 2, 3), (2, 0, 0), (1, -1, -2)),  # negative steps stopping before index 0
    ((0, 0, 4), (1, 3, 1), (1, 2, -3)),
    ((0, 3, 0), (2, 3, 5), (1, 1, 1)),  # empty along dim 1
]


@pytest.mark.parametrize(("starts", "ends", "steps"), SLICES)
def test_slice_matches_onnxruntime(rng, onnx_ort, starts, ends, steps):
    x = rng.standard_normal((2, 3, 5), dtype=np.float32)
    # ONNX clamps ends; -1 would mean "the last element", so pass "far before 0" instead.
    onnx_ends = [
        e if not (e == -1 and s < 0) else -(2**62) for e, s in zip(ends, steps, strict=True)
    ]
    (expected,) = onnx_ort(
        "Slice", [x, _ints(*starts), _ints(*onnx_ends), _ints(0, 1, 2), _ints(*steps)]
    )
    got = movement.slice_(x, starts, ends, steps)
    assert got.shape == slice_shape(x.shape, starts, ends, steps)
    np.testing.assert_array_equal(got, expected)


def test_slice_end_minus_one_is_before_index_zero():
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(movement.slice_(x, (3,), (-1,), (-1,)), [3, 2, 1, 0])
    assert (
        movement.slice_(x, (0,), (-1,), (1,)).shape == (0,) == slice_shape((5,), (0,), (-1,), (1,))
    )


PADS = [
    (1, 2, 0, 2, 1, 3),
    (0, 0, 2, 0, 0, 0),
    (1, -1, 1, 0, 2, -2),  # pad one side, crop the other
    (-1, 1, -2, 1, -1, 2),
    (0, -2, 0, 0, -1, 0),  # crop only
]


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads", PADS)
def test_pad_matches_onnxruntime(rng, onnx_ort, mode, pads):
    x = rng.standard_normal((3, 4, 5), dtype=np.float32)
    value = np.array(1.5, dtype=np.float32)
    (expected,) = onnx_ort("Pad", [x, _ints(*pads), value], {"mode": mode}, opset=19)
    got = movement.pad(x, pads, mode, 1.5)
    np.testing.assert_array_equal(got, expected)


def test_pad_rejects_unknown_mode():
    with pytest.raises(ValueError, match="unknown pad mode"):
        movement.pad(np.zeros((2, 2), np.float32), (1, 1, 1, 1), "symmetric")


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("indices", [[0, -1, 2, -3], [[1, -2], [0, 0]], 1, -1])
def test_gather_matches_onnxruntime(rng, onnx_ort, axis, indices):
    x = rng.standard_normal((4, 3, 5), dtype=np.float32)
    idx = np.array(indices, dtype=np.int64)
    idx = np.where(idx >= x.shape[axis], idx % x.shape[axis], idx)
    (expected,) = onnx_ort("Gather", [x, idx], {"axis": axis})
    np.testing.assert_array_equal(movement.gather(x, idx, axis), expected)


def test_gather_rejects_out_of_range_indices():
    x = np.zeros((3, 2), np.float32)
    with pytest.raises(KernelError, match="out of range"):
        movement.gather(x, np.array([3], np.int64), 0)
    with pytest.raises(KernelError, match="out of range"):
        movement.gather(x, np.array([-4], np.int64), 0)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("block", [2, 3])
def test_depth_to_space_matches_onnxruntime(rng, onnx_ort, mode, block):
    x = rng.standard_normal((2, 2 * block * block, 3, 4), dtype=np.float32)
    (expected,) = onnx_ort("DepthToSpace", [x], {"blocksize": block, "mode": mode})
    np.testing.assert_array_equal(movement.depth_to_space(x, block, mode), expected)


def test_depth_to_space_modes_differ():
    x = np.arange(8, dtype=np.float32).reshape(1, 8, 1, 1)
    dcr = movement.depth_to_space(x, 2, "DCR")
    crd = movement.depth_to_space(x, 2, "CRD")
    np.testing.assert_array_equal(dcr[0, 0], [[0, 2], [4, 6]])
    np.testing.assert_array_equal(crd[0, 0], [[0, 1], [2, 3]])


@pytest.mark.parametrize("block", [2, 3])
def test_space_to_depth_matches_onnxruntime_and_inverts_dcr(rng, onnx_ort, block):
    x = rng.standard_normal((2, 3, 2 * block, 3 * block), dtype=np.float32)
    (expected,) = onnx_ort("SpaceToDepth", [x], {"blocksize": block})
    got = movement.space_to_depth(x, block)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(movement.depth_to_space(got, block, "DCR"), x)
