"""Normalisation kernels against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from npuc.runtime.kernels import norm


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (4, 3), (2, 3, 7)])
def test_batch_norm_matches_onnxruntime(rng, onnx_ort, close, shape):
    x = rng.standard_normal(shape, dtype=np.float32)
    c = shape[1]
    scale, bias, mean = (rng.standard_normal(c, dtype=np.float32) for _ in range(3))
    var = rng.uniform(0.1, 2.0, c).astype(np.float32)
    (expected,) = onnx_ort(
        "BatchNormalization", [x, scale, bias, mean, var], {"epsilon": 1e-3}, opset=15
    )
    close(norm.batch_norm(x, scale, bias, mean, var, 1e-3), expected)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 9), (1, 2, 2, 3, 4)])
def test_instance_norm_matches_onnxruntime(rng, onnx_ort, close, shape):
    x = rng.standard_normal(shape, dtype=np.float32) * 3 + 1
    scale, bias = (rng.standard_normal(shape[1], dtype=np.float32) for _ in range(2))
    (expected,) = onnx_ort("InstanceNormalization", [x, scale, bias], {"epsilon": 1e-5})
    close(norm.instance_norm(x, scale, bias, 1e-5), expected)


@pytest.mark.parametrize(
    ("axis", "param_shape", "with_bias"),
    [(-1, (6,), True), (1, (4, 5, 6), True), (2, (1, 6), False), (-2, (5, 6), False)],
)
def test_layer_norm_matches_onnxruntime(rng, onnx_ort, close, axis, param_shape, with_bias):
    x = rng.standard_normal((2, 4, 5, 6), dtype=np.float32) * 2 - 1
    scale = rng.standard_normal(param_shape, dtype=np.float32)
    bias = rng.standard_normal(param_shape, dtype=np.float32) if with_bias else None
    attrs = {"axis": axis, "epsilon": 1e-5}
    (expected,) = onnx_ort("LayerNormalization", [x, scale, bias], attrs, opset=17)
    close(norm.layer_norm(x, scale, bias, axis, 1e-5), expected)


@pytest.mark.parametrize("size", [1, 3, 5])
def test_lrn_matches_onnxruntime(rng, onnx_ort, close, size):
    x = rng.standard_normal((2, 6, 4, 3), dtype=np.float32)
    attrs = {"size": size, "alpha": 0.2, "beta": 0.75, "bias": 1.5}
    (expected,) = onnx_ort("LRN", [x], attrs, opset=13)
    close(norm.lrn(x, size, 0.2, 0.75, 1.5), expected)


@pytest.mark.parametrize("size", [2, 4, 7])
def test_lrn_follows_the_onnx_formula(rng, close, size):
    # onnxruntime rejects even sizes and onnx.reference's LRN mixes up axes: spell out the spec.
    x = rng.standard_normal((2, 6, 3, 2), dtype=np.float32)
    lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
    expected = np.empty_like(x)
    for c in range(6):
        window = x[:, max(0, c - lo) : min(6, c + hi + 1)].astype(np.float64)
        square_sum = (window**2).sum(axis=1)
        expected[:, c] = x[:, c] / (1.5 + 0.2 / size * square_sum) ** 0.75
    close(norm.lrn(x, size, 0.2, 0.75, 1.5), expected)


def test_lrn_window_is_asymmetric_for_even_sizes():
    x = np.array([1.0, 1.0, 2.0, 1.0], dtype=np.float32).reshape(1, 4, 1, 1)
    # size 2 sums squares of channels c and c + 1: 2, 5, 5, 1.
    y = norm.lrn(x, 2, 2.0, 1.0, 1.0)
    np.testing.assert_allclose(y.ravel(), [1 / 3, 1 / 6, 2 / 6, 1 / 2], rtol=1e-6)
