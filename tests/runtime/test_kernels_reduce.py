"""Reductions, arg-reductions and matrix products against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from npuc.runtime.kernels import linear, reduce

REDUCE_OPS = {
    "mean": "ReduceMean",
    "sum": "ReduceSum",
    "max": "ReduceMax",
    "min": "ReduceMin",
    "prod": "ReduceProd",
}


@pytest.mark.parametrize("kind", sorted(REDUCE_OPS))
@pytest.mark.parametrize("axes", [(), (1,), (0, 2), (-1,), (-3, -1)])
@pytest.mark.parametrize("keepdims", [True, False])
def test_reduce_matches_onnxruntime(rng, onnx_ort, close, kind, axes, keepdims):
    x = rng.uniform(0.5, 1.5, (3, 4, 5)).astype(np.float32)
    axes_input = np.array(axes, dtype=np.int64) if axes else None
    (expected,) = onnx_ort(REDUCE_OPS[kind], [x, axes_input], {"keepdims": int(keepdims)})
    got = reduce.reduce(x, kind, axes, keepdims)
    close(got, expected)


def test_reduce_over_all_axes_gives_an_array():
    got = reduce.reduce(np.ones((2, 3), np.float32), "sum", (), keepdims=False)
    assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == np.float32
    assert got == 6


@pytest.mark.parametrize(("kind", "onnx_op"), [("max", "ArgMax"), ("min", "ArgMin")])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [True, False])
@pytest.mark.parametrize("select_last_index", [False, True])
def test_arg_reduce_matches_onnxruntime(
    rng, onnx_ort, kind, onnx_op, axis, keepdims, select_last_index
):
    # Few distinct values, so ties are common and the tie rule matters.
    x = rng.integers(0, 3, (4, 5, 6)).astype(np.float32)
    attrs = {"axis": axis, "keepdims": int(keepdims), "select_last_index": int(select_last_index)}
    (expected,) = onnx_ort(onnx_op, [x], attrs, opset=13)
    got = reduce.arg_reduce(x, kind, axis, keepdims, select_last_index)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


def test_arg_reduce_tie_rule():
    x = np.array([[1.0, 3.0, 3.0, 0.0, 0.0]], dtype=np.float32)
    assert reduce.arg_reduce(x, "max", 1, False).tolist() == [1]
    assert reduce.arg_reduce(x, "max", 1, False, select_last_index=True).tolist() == [2]
    assert reduce.arg_reduce(x, "min", 1, False, select_last_index=True).tolist() == [4]


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [
        ((3, 4), (4, 5)),
        ((2, 3, 4), (4, 5)),
        ((2, 1, 3, 4), (5, 4, 2)),
        ((4,), (4, 3)),
        ((4,), (4,)),
    ],
)
def test_matmul_matches_onnxruntime(rng, onnx_ort, close, a_shape, b_shape):
    a = rng.standard_normal(a_shape, dtype=np.float32)
    b = rng.standard_normal(b_shape, dtype=np.float32)
    (expected,) = onnx_ort("MatMul", [a, b], feeds=2)
    close(linear.matmul(a, b), expected)


@pytest.mark.parametrize("with_bias", [True, False])
def test_fully_connected_matches_onnxruntime_gemm(rng, onnx_ort, close, with_bias):
    x = rng.standard_normal((3, 16), dtype=np.float32)
    w = rng.standard_normal((7, 16), dtype=np.float32)
    b = rng.standard_normal(7, dtype=np.float32) if with_bias else None
    (expected,) = onnx_ort("Gemm", [x, w, b], {"transB": 1})
    got = linear.fully_connected(x, w, b)
    assert got.dtype == np.float32
    close(got, expected)
