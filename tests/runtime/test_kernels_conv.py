"""conv2d / conv_transpose2d kernels against onnxruntime's Conv / ConvTranspose."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from npuc.runtime.kernels import conv

CONV_CASES = [
    # (C, O, groups, kernel, strides, dilations, pads)
    (4, 8, 1, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    (4, 8, 1, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0)),
    (4, 8, 1, (1, 1), (2, 2), (1, 1), (0, 0, 0, 0)),
    (3, 5, 1, (2, 3), (2, 1), (1, 2), (1, 0, 2, 1)),
    (4, 6, 2, (3, 3), (1, 2), (2, 1), (0, 1, 1, 0)),
    (8, 4, 4, (3, 2), (2, 2), (1, 1), (2, 1, 0, 1)),
    (6, 6, 6, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),  # depthwise
    (6, 12, 6, (3, 3), (2, 1), (1, 2), (1, 2, 0, 1)),  # depthwise, multiplier 2
    (6, 6, 6, (5, 5), (2, 2), (1, 1), (2, 2, 2, 2)),  # depthwise, stride 2
    (4, 4, 1, (7, 5), (3, 2), (1, 1), (3, 2, 3, 2)),
    # stride 1, at most half as many outputs as inputs: the shifted-GEMM path
    (8, 4, 1, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    (10, 5, 1, (2, 3), (1, 1), (2, 1), (0, 1, 2, 0)),
    (11, 5, 1, (3, 3), (1, 1), (1, 3), (0, 0, 0, 0)),
    (6, 3, 1, (1, 4), (1, 1), (1, 1), (0, 2, 0, 1)),
]


@pytest.mark.parametrize(("c", "o", "groups", "kernel", "strides", "dilations", "pads"), CONV_CASES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv2d_matches_onnxruntime(
    rng, onnx_ort, close, c, o, groups, kernel, strides, dilations, pads, with_bias
):
    x = rng.standard_normal((2, c, 11, 9), dtype=np.float32)
    w = rng.standard_normal((o, c // groups, *kernel), dtype=np.float32)
    b = rng.standard_normal(o, dtype=np.float32) if with_bias else None
    attrs = dict(
        group=groups,
        kernel_shape=list(kernel),
        strides=list(strides),
        dilations=list(dilations),
        pads=list(pads),
    )
    (expected,) = onnx_ort("Conv", [x, w, b], attrs)
    got = conv.conv2d(x, w, b, strides=strides, pads=pads, dilations=dilations, groups=groups)
    close(got, expected)


@pytest.mark.parametrize("groups_per_block", [1, 3])
def test_depthwise_in_channel_blocks_matches_onnxruntime(
    rng, onnx_ort, close, monkeypatch, groups_per_block
):
    """Blocks of a few channels (3 leaves a short last block), per sample of a batch."""
    x = rng.standard_normal((2, 8, 11, 9), dtype=np.float32)
    w = rng.standard_normal((16, 1, 3, 3), dtype=np.float32)  # multiplier 2
    b = rng.standard_normal(16, dtype=np.float32)
    out_bytes = 2 * 11 * 9 * 4  # one group's outputs: two channels of 11x9 float32
    monkeypatch.setattr(conv, "DEPTHWISE_BLOCK_BYTES", groups_per_block * out_bytes)
    attrs = dict(group=8, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    (expected,) = onnx_ort("Conv", [x, w, b], attrs)
    close(conv.conv2d(x, w, b, pads=(1, 1, 1, 1), groups=8), expected)


def test_half_width_stride_one_convolutions_take_the_shifted_gemm(rng, monkeypatch):
    """The CONV_CASES above that exercise _shifted_gemm (and only those) reach it."""
    taken = []
    original = conv._shifted_gemm
    monkeypatch.setattr(conv, "_shifted_gemm", lambda *a: taken.append(1) or original(*a))
    for c, o, groups, kernel, strides, dilations, pads in CONV_CASES:
        x = rng.standard_normal((1, c, 11, 9), dtype=np.float32)
        w = rng.standard_normal((o, c // groups, *kernel), dtype=np.float32)
        conv.conv2d(x, w, strides=strides, pads=pads, dilations=dilations, groups=groups)
    assert len(taken) == 4


def test_conv2d_large_reduction_stays_float32(rng, onnx_ort, close):
    x = rng.standard_normal((1, 64, 14, 14), dtype=np.float32)
    w = rng.standard_normal((32, 64, 3, 3), dtype=np.float32)
    (expected,) = onnx_ort("Conv", [x, w], dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    got = conv.conv2d(x, w, None, pads=(1, 1, 1, 1))
    assert got.dtype == np.float32
    close(got, expected)


@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_in_row_bands_matches_onnxruntime(rng, onnx_ort, close, groups):
    x = rng.standard_normal((2, 4, 13, 9), dtype=np.float32)
    w = rng.standard_normal((6, 4 // groups, 3, 3), dtype=np.float32)
    b = rng.standard_normal(6, dtype=np.float32)
    attrs = dict(group=groups, strides=[2, 1], pads=[1, 1, 2, 0], dilations=[1, 2])
    (expected,) = onnx_ort("Conv", [x, w, b], attrs)
    row_bytes = 2 * 4 * 9 * 6 * 4  # one output row (OW = 6) of the im2col matrix
    for budget in (row_bytes, 3 * row_bytes):
        got = conv.conv2d(
            x,
            w,
            b,
            strides=(2, 1),
            pads=(1, 1, 2, 0),
            dilations=(1, 2),
            groups=groups,
            max_cols_bytes=budget,
        )
        close(got, expected)


def test_conv2d_does_not_write_its_inputs(rng):
    x = rng.standard_normal((1, 2, 5, 5), dtype=np.float32)
    w = rng.standard_normal((2, 1, 3, 3), dtype=np.float32)
    b = rng.standard_normal(2, dtype=np.float32)
    for array in (x, w, b):
        array.flags.writeable = False
    conv.conv2d(x, w, b, pads=(1, 1, 1, 1), groups=2)
    conv.conv2d(x, w.reshape(1, 2, 3, 3), b[:1])


def test_conv2d_rejects_mismatched_groups(rng):
    x = rng.standard_normal((1, 4, 5, 5), dtype=np.float32)
    w = rng.standard_normal((4, 3, 3, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="groups"):
        conv.conv2d(x, w, groups=2)


TRANSPOSE_CASES = [
    # (groups, kernel, strides, dilations, pads, output_padding)
    (groups, kernel, strides, dilations, pads, output_padding)
    for groups, kernel, strides, dilations, pads, output_padding in itertools.product(
        [1, 2],
        [(3, 3), (2, 3)],
        [(1, 1), (2, 3)],
        [(1, 1), (2, 1)],
        [(0, 0, 0, 0), (1, 0, 2, 1)],
        [(0, 0), (1, 2)],
    )
    if all(p < s for p, s in zip(output_padding, strides, strict=True))
]


@pytest.mark.parametrize(
    ("groups", "kernel", "strides", "dilations", "pads", "output_padding"), TRANSPOSE_CASES
)
def test_conv_transpose2d_matches_onnxruntime(
    rng, onnx_ort, close, groups, kernel, strides, dilations, pads, output_padding
):
    x = rng.standard_normal((2, 4, 5, 4), dtype=np.float32)
    w = rng.standard_normal((4, 3, *kernel), dtype=np.float32)
    b = rng.standard_normal(3 * groups, dtype=np.float32)
    attrs = dict(
        group=groups,
        kernel_shape=list(kernel),
        strides=list(strides),
        dilations=list(dilations),
        pads=list(pads),
        output_padding=list(output_padding),
    )
    (expected,) = onnx_ort("ConvTranspose", [x, w, b], attrs)
    got = conv.conv_transpose2d(
        x,
        w,
        b,
        strides=strides,
        pads=pads,
        dilations=dilations,
        output_padding=output_padding,
        groups=groups,
    )
    close(got, expected)


def test_conv_transpose2d_depthwise_without_bias(rng, onnx_ort, close):
    x = rng.standard_normal((1, 6, 4, 5), dtype=np.float32)
    w = rng.standard_normal((6, 1, 4, 4), dtype=np.float32)
    attrs = dict(group=6, kernel_shape=[4, 4], strides=[2, 2], pads=[1, 1, 1, 1])
    (expected,) = onnx_ort("ConvTranspose", [x, w], attrs)
    got = conv.conv_transpose2d(x, w, strides=(2, 2), pads=(1, 1, 1, 1), groups=6)
    close(got, expected)


def test_conv_output_hw_floor_rule():
    assert conv.conv_output_hw((7, 8), (3, 2), (2, 3), (1, 0, 1, 1), (1, 2)) == (4, 3)
