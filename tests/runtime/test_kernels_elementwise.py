"""Elementwise kernels against onnxruntime, erf against math.erf, fused activations."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from npuc.runtime.kernels import elementwise as ew


def _inputs(rng: np.random.Generator) -> np.ndarray:
    x = rng.standard_normal((3, 4, 5), dtype=np.float32) * 4
    x.flat[:8] = [0.0, -0.0, 3.0, -3.0, 0.5, -0.5, 1e-3, 30.0]
    return x


UNARY = [
    ("relu", "Relu", 14),
    ("sigmoid", "Sigmoid", 13),
    ("tanh", "Tanh", 13),
    ("exp", "Exp", 13),
    ("log", "Log", 13),
    ("sqrt", "Sqrt", 13),
    ("erf", "Erf", 13),
    ("abs", "Abs", 13),
    ("neg", "Neg", 13),
    ("reciprocal", "Reciprocal", 13),
    ("floor", "Floor", 13),
    ("ceil", "Ceil", 13),
    ("softplus", "Softplus", 18),
    ("hard_swish", "HardSwish", 14),
]


@pytest.mark.parametrize(("name", "onnx_op", "opset"), UNARY)
def test_unary_matches_onnxruntime(rng, onnx_ort, close, name, onnx_op, opset):
    x = _inputs(rng)
    if name in ("log", "sqrt", "reciprocal"):
        x = np.abs(x) + np.float32(0.1)
    (expected,) = onnx_ort(onnx_op, [x], opset=opset)
    close(ew.UNARY[name](x), expected)


BINARY = [
    ("add", "Add"),
    ("sub", "Sub"),
    ("mul", "Mul"),
    ("div", "Div"),
    ("pow", "Pow"),
    ("maximum", "Max"),
    ("minimum", "Min"),
]


@pytest.mark.parametrize(("name", "onnx_op"), BINARY)
@pytest.mark.parametrize(("a_shape", "b_shape"), [((2, 3, 4), (2, 3, 4)), ((2, 1, 4), (3, 1))])
def test_binary_broadcasts_like_onnxruntime(rng, onnx_ort, close, name, onnx_op, a_shape, b_shape):
    a = rng.standard_normal(a_shape, dtype=np.float32)
    b = rng.standard_normal(b_shape, dtype=np.float32)
    if name == "pow":
        a = np.abs(a) + np.float32(0.5)
    (expected,) = onnx_ort(onnx_op, [a, b], feeds=2)
    close(ew.BINARY[name](a, b), expected)


def test_pow_negative_base_integer_exponent(onnx_ort):
    a = np.array([-2.0, -3.0, 2.0, -0.5], dtype=np.float32)
    b = np.array([2.0, 3.0, -1.0, 0.5], dtype=np.float32)
    (expected,) = onnx_ort("Pow", [a, b], feeds=2)
    with np.errstate(invalid="ignore"):
        got = ew.BINARY["pow"](a, b)
    np.testing.assert_array_equal(got, expected)  # incl. NaN for (-0.5)**0.5


def test_maximum_minimum_propagate_nan():
    a = np.array([np.nan, 1.0], dtype=np.float32)
    b = np.array([0.0, np.nan], dtype=np.float32)
    assert np.isnan(ew.BINARY["maximum"](a, b)).all()
    assert np.isnan(ew.BINARY["minimum"](a, b)).all()


@pytest.mark.parametrize("slope_shape", [(1,), (3, 1, 1), (3, 4, 5)])
def test_prelu_matches_onnxruntime(rng, onnx_ort, close, slope_shape):
    x = _inputs(rng)
    slope = rng.standard_normal(slope_shape, dtype=np.float32)
    (expected,) = onnx_ort("PRelu", [x, slope], opset=16)
    close(ew.prelu(x, slope), expected)


@pytest.mark.parametrize(
    ("fn", "onnx_op", "attrs"),
    [
        (lambda x: ew.leaky_relu(x, 0.1), "LeakyRelu", {"alpha": 0.1}),
        (lambda x: ew.elu(x, 0.7), "Elu", {"alpha": 0.7}),
        (lambda x: ew.hard_sigmoid(x, 0.3, 0.4), "HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
    ],
)
def test_parametrised_activations_match_onnxruntime(rng, onnx_ort, close, fn, onnx_op, attrs):
    x = _inputs(rng)
    (expected,) = onnx_ort(onnx_op, [x], attrs)
    close(fn(x), expected)


@pytest.mark.parametrize(("lo", "hi"), [(-1.0, 2.5), (None, 0.5), (0.0, None), (None, None)])
def test_clip_matches_onnxruntime(rng, onnx_ort, close, lo, hi):
    x = _inputs(rng)
    bounds = [None if v is None else np.array(v, np.float32) for v in (lo, hi)]
    (expected,) = onnx_ort("Clip", [x, *bounds], opset=13)
    got = ew.clip(x, lo, hi)
    close(got, expected, rtol=0, atol=0)
    assert not np.shares_memory(got, x)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_onnxruntime(rng, onnx_ort, close, approximate):
    x = _inputs(rng)
    (expected,) = onnx_ort("Gelu", [x], {"approximate": approximate}, opset=20)
    close(ew.gelu(x, approximate), expected)


def test_gelu_keeps_relative_accuracy_in_the_negative_tail():
    x = np.array([-6.0, -8.0, -10.0], dtype=np.float32)
    want = [0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)]
    np.testing.assert_allclose(ew.gelu(x), want, rtol=2e-5)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_and_log_softmax_match_onnxruntime(rng, onnx_ort, close, axis):
    x = _inputs(rng)
    (sm,) = onnx_ort("Softmax", [x], {"axis": axis}, opset=13)
    (lsm,) = onnx_ort("LogSoftmax", [x], {"axis": axis}, opset=13)
    close(ew.softmax(x, axis), sm)
    close(ew.log_softmax(x, axis), lsm)


def test_erf_is_accurate_to_a_few_ulp():
    x = np.concatenate(
        [
            np.linspace(-7, 7, 40001, dtype=np.float32),
            np.geomspace(1e-30, 1.0, 2000, dtype=np.float32),
            -np.geomspace(1e-30, 1.0, 2000, dtype=np.float32),
        ]
    )
    want = np.array([math.erf(v) for v in x.astype(np.float64)])
    got = ew.erf(x)
    assert got.dtype == np.float32
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - want) / ulp) <= 4


def test_erfc_keeps_relative_accuracy_in_the_tail():
    x = np.linspace(-3, 9, 5001, dtype=np.float32)
    want = np.array([math.erfc(v) for v in x.astype(np.float64)])
    np.testing.assert_allclose(ew.erfc(x), want, rtol=2e-6)


def test_erf_special_values():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0], dtype=np.float32)
    got = ew.erf(x)
    np.testing.assert_array_equal(got[:2], [1.0, -1.0])
    assert np.isnan(got[2])
    assert got[3] == 0 and not np.signbit(got[3])
    assert np.signbit(got[4])


def test_sigmoid_and_softplus_are_stable_at_extremes():
    x = np.array([-1000.0, -80.0, 0.0, 80.0, 1000.0], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = ew.sigmoid(x)
        sp = ew.softplus(x)
    np.testing.assert_allclose(s, [0.0, math.exp(-80), 0.5, 1.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(sp, [0.0, math.exp(-80), math.log(2), 80.0, 1000.0], rtol=1e-6)


def test_kernels_return_float32(rng):
    x = _inputs(rng)
    for fn in ew.UNARY.values():
        assert fn(np.abs(x) + np.float32(0.1)).dtype == np.float32
    for fn in (ew.gelu, lambda v: ew.elu(v, 1.0), lambda v: ew.hard_sigmoid(v, 0.2, 0.5)):
        assert fn(x).dtype == np.float32


def test_apply_activation_clip_and_leaky_relu_in_place():
    y = np.array([-2.0, -0.5, 0.5, 8.0, np.nan], dtype=np.float32)
    out = ew.apply_activation(y.copy(), "clip", 0.0, 6.0)
    np.testing.assert_array_equal(out, [0.0, 0.0, 0.5, 6.0, np.nan])
    out = ew.apply_activation(y.copy(), "clip", None, 1.0)
    np.testing.assert_array_equal(out, [-2.0, -0.5, 0.5, 1.0, np.nan])
    buf = y.copy()
    out = ew.apply_activation(buf, "leaky_relu", alpha=0.25)
    assert out is buf
    np.testing.assert_array_equal(out, [-0.5, -0.125, 0.5, 8.0, np.nan])
    assert ew.apply_activation(y, None) is y
    with pytest.raises(ValueError, match="unknown fused activation"):
        ew.apply_activation(y.copy(), "swish")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (7,), (2, 3, 5)])
def test_hard_swish_is_the_spec_expression_bit_for_bit_and_leaves_its_input(rng, dtype, shape):
    """ONNX HardSwish: x * max(0, min(1, x / 6 + 1 / 2)), which the interpreter computes as
    x * clip(x + 3, 0, 6) / 6 (the form nn_patterns.py folds); computed in place, it must
    keep that arithmetic exactly, for every dtype and shape, specials included."""
    x = (rng.standard_normal(shape) * 6).astype(dtype)
    if x.size >= 7:
        x.flat[:7] = [np.nan, np.inf, -np.inf, -0.0, -3.0, 3.0, 1e30]
    before = x.copy()
    with np.errstate(invalid="ignore", over="ignore"):
        got = ew.hard_swish(x)
        want = x * np.clip(x + np.float32(3), 0, 6).astype(dtype) / np.float32(6)
    assert isinstance(got, np.ndarray) and got.dtype == dtype and got.shape == shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(x, before)
