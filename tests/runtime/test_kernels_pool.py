"""Pooling kernels against onnxruntime's MaxPool / AveragePool / Global*Pool."""

from __future__ import annotations

import numpy as np
import pytest

from npuc.runtime.kernels import pool, qnn_arith
from npuc.runtime.kernels.window import pad_hw, window_reduce, windows

# (input H, W, kernel, strides, pads [t, l, b, r], dilations) with shapes where ceil mode matters.
WINDOWS = [
    ((7, 8), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1)),
    ((7, 8), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
    ((6, 6), (3, 2), (3, 2), (1, 0, 0, 1), (1, 1)),
    ((7, 7), (3, 3), (2, 3), (0, 1, 2, 0), (1, 1)),
    ((8, 7), (2, 3), (3, 2), (1, 1, 0, 2), (1, 1)),
    ((9, 8), (3, 2), (2, 2), (1, 1, 1, 1), (2, 2)),
    ((9, 9), (2, 2), (3, 1), (0, 0, 1, 1), (3, 2)),
    # large windows, reduced over rows and then columns
    ((12, 10), (12, 10), (1, 1), (0, 0, 0, 0), (1, 1)),
    ((11, 13), (5, 4), (1, 2), (2, 1, 2, 2), (1, 1)),
    ((14, 12), (4, 3), (1, 1), (1, 0, 1, 1), (2, 3)),
]


@pytest.mark.parametrize(("hw", "kernel", "strides", "pads", "dilations"), WINDOWS)
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_max_pool2d_matches_onnxruntime(
    rng, onnx_ort, close, hw, kernel, strides, pads, dilations, ceil_mode
):
    x = rng.standard_normal((2, 3, *hw), dtype=np.float32)
    attrs = dict(
        kernel_shape=list(kernel),
        strides=list(strides),
        pads=list(pads),
        dilations=list(dilations),
        ceil_mode=int(ceil_mode),
    )
    (expected,) = onnx_ort("MaxPool", [x], attrs)
    got = pool.max_pool2d(
        x, kernel, strides=strides, pads=pads, dilations=dilations, ceil_mode=ceil_mode
    )
    close(got, expected, rtol=0, atol=0)


def test_max_pool2d_padding_never_wins(onnx_ort):
    x = -np.ones((1, 1, 3, 3), dtype=np.float32) - np.arange(9, dtype=np.float32).reshape(3, 3)
    got = pool.max_pool2d(x, (3, 3), strides=(1, 1), pads=(1, 1, 1, 1))
    assert got.max() < 0
    (expected,) = onnx_ort("MaxPool", [x], dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    np.testing.assert_array_equal(got, expected)


def test_ceil_mode_adds_a_window_only_when_it_starts_inside():
    x = np.zeros((1, 1, 5, 5), dtype=np.float32)
    assert pool.max_pool2d(x, (2, 2), strides=(2, 2)).shape[2:] == (2, 2)
    # The extra window starts at row 4, inside the input.
    assert pool.max_pool2d(x, (2, 2), strides=(2, 2), ceil_mode=True).shape[2:] == (3, 3)
    # With 6 rows and 1 row of end padding the extra window would start at row 6,
    # in the padding, so ceil mode drops it.
    x6 = np.zeros((1, 1, 6, 6), dtype=np.float32)
    got = pool.max_pool2d(x6, (2, 2), strides=(2, 2), pads=(0, 0, 1, 1), ceil_mode=True)
    assert got.shape[2:] == (3, 3)


@pytest.mark.parametrize(("hw", "kernel", "strides", "pads", "dilations"), WINDOWS)
@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("count_include_pad", [False, True])
def test_avg_pool2d_matches_onnxruntime(
    rng, onnx_ort, close, hw, kernel, strides, pads, dilations, ceil_mode, count_include_pad
):
    x = rng.standard_normal((2, 3, *hw), dtype=np.float32)
    attrs = dict(
        kernel_shape=list(kernel),
        strides=list(strides),
        pads=list(pads),
        dilations=list(dilations),
        ceil_mode=int(ceil_mode),
        count_include_pad=int(count_include_pad),
    )
    # AveragePool takes dilations since opset 19.
    (expected,) = onnx_ort("AveragePool", [x], attrs, opset=19)
    got = pool.avg_pool2d(
        x,
        kernel,
        strides=strides,
        pads=pads,
        dilations=dilations,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
    )
    close(got, expected)


def test_avg_pool2d_divisors_on_ones():
    x = np.ones((1, 1, 3, 3), dtype=np.float32)
    excl = pool.avg_pool2d(x, (2, 2), strides=(2, 2), pads=(1, 1, 1, 1))
    incl = pool.avg_pool2d(x, (2, 2), strides=(2, 2), pads=(1, 1, 1, 1), count_include_pad=True)
    np.testing.assert_array_equal(excl, np.ones((1, 1, 2, 2), np.float32))
    # Corner windows hold 1 input pixel of 4 cells; the rest is explicit padding.
    np.testing.assert_array_equal(incl[0, 0], [[0.25, 0.5], [0.5, 1.0]])


@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (1, 2, 3, 4, 5), (2, 3, 7)])
def test_global_pools_match_onnxruntime(rng, onnx_ort, close, shape):
    x = rng.standard_normal(shape, dtype=np.float32)
    (avg,) = onnx_ort("GlobalAveragePool", [x])
    (mx,) = onnx_ort("GlobalMaxPool", [x])
    close(pool.global_avg_pool(x), avg)
    close(pool.global_max_pool(x), mx, rtol=0, atol=0)


@pytest.mark.parametrize(("hw", "kernel", "strides", "pads", "dilations"), WINDOWS)
@pytest.mark.parametrize("combine", [np.add, np.maximum])
def test_window_reduce_of_integers_is_every_windows_exact_reduction(
    rng, hw, kernel, strides, pads, dilations, combine
):
    x = rng.integers(-128, 128, (2, 3, *hw), dtype=np.int8)
    out_hw, extra = pool.window_geometry(x.shape, kernel, strides, pads, dilations, True)
    xp = pad_hw(x, pads, -128, extra)
    dtype = np.int64 if combine is np.add else np.int8
    expected = combine.reduce(
        windows(xp, kernel, out_hw, strides, dilations).astype(dtype), axis=(2, 3)
    )
    got = window_reduce(xp, kernel, out_hw, strides, dilations, combine, dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected)


def test_quantized_pools_of_a_whole_window():
    x = np.arange(-60, 60, dtype=np.int8).reshape(1, 2, 6, 10)
    whole = dict(strides=(1, 1), pads=(0, 0, 0, 0), ceil_mode=False)
    total, counts = qnn_arith.avg_pool2d_sums(x, (6, 10), count_include_pad=False, **whole)
    np.testing.assert_array_equal(total[:, :, 0, 0], x.astype(np.int64).sum(axis=(2, 3)))
    assert counts.tolist() == [[60]]
    top = qnn_arith.max_pool2d(x, (6, 10), dilations=(1, 1), **whole)
    np.testing.assert_array_equal(top[:, :, 0, 0], x.max(axis=(2, 3)))
