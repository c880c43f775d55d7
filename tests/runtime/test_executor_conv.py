"""The NPU executor's conv2d, its output stage included, against the `qnn` reference kernels.

Each test builds a small program by hand (tests/npu_programs.py), runs it, and compares
every output with the corresponding `qnn.conv2d` or with numpy written from
docs/binary-format.md; the output stage on its own is tested in
test_executor_requant.py. Every test runs on both kernel paths, the compiled and the
numpy one (`kernel_path`, tests/runtime/conftest.py).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from npu_programs import (
    NP,
    Builder,
    arr,
    inst,
    nhwc,
    qnn,
    qnn_conv,
    qt,
    qt_axis,
    random_table,
    spread,
    tensor,
)

from npuc.diagnostics import NpucError

pytestmark = pytest.mark.usefixtures("kernel_path")

# --------------------------------------------------------------------------- conv2d

CONV_CASES = {
    # name: (x shape NCHW, w shape, strides, pads, dilations, groups, rounding, x dtype,
    #        layout, shifts, clamp_min: 5 is the output zero point, a fused ReLU)
    "3x3_s2_nhwc_tflite": ((1, 6, 9, 8), (5, 6, 3, 3), (2, 2), (1, 1, 1, 0), (1, 1), 1,
                           "tflite", "i8", "nhwc", (38, 42), -100),
    "1x1_nchw_half_even": ((2, 16, 4, 5), (12, 16, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1,
                           "half_to_even", "i8", "nchw", (36, 40), -100),
    "depthwise_mult2_dil": ((1, 4, 10, 10), (8, 1, 3, 3), (1, 2), (2, 2, 2, 2), (2, 2), 4,
                            "half_away_from_zero", "i8", "nhwc", (39, 42), -100),
    "grouped_5x3": ((1, 6, 8, 7), (4, 3, 5, 3), (1, 1), (2, 1, 2, 1), (1, 1), 2,
                    "half_up", "u8", "nhwc", (36, 40), -100),
    "long_k_chunks": ((1, 160, 5, 5), (8, 160, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1,
                      "tflite", "i8", "nhwc", (44, 48), -100),
    "depthwise_s2": ((1, 24, 15, 15), (24, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 24,
                     "tflite", "i8", "nhwc", (39, 42), -100),
    "banded_1x1": ((1, 8, 64, 64), (32, 8, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1,
                   "tflite", "i8", "nhwc", (36, 39), -100),
    "int16_f64_gemm": ((1, 12, 4, 4), (6, 12, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1,
                       "tflite", "i16", "nhwc", (50, 54), -100),
    "depthwise_einsum_relu": ((2, 64, 9, 11), (64, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 64,
                              "tflite", "i8", "nchw", (39, 42), 5),
    "depthwise_taps_relu_s2": ((2, 16, 12, 12), (16, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 16,
                               "tflite", "i8", "nchw", (39, 42), 5),
    "3x3_s2_short_k_relu": ((3, 3, 10, 12), (16, 3, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 1,
                            "tflite", "i8", "nchw", (38, 41), 5),
    "1x1_long_k_relu": ((1, 64, 6, 7), (24, 64, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1,
                        "tflite", "i8", "nchw", (39, 42), 5),
    "depthwise_taps_long_rows": ((1, 40, 30, 30), (40, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1),
                                 40, "tflite", "i8", "nchw", (39, 42), 5),
    "grouped_1x1": ((2, 8, 5, 6), (6, 4, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 2,
                    "tflite", "i8", "nchw", (38, 41), 5),
    "1x1_relu": ((1, 24, 7, 9), (40, 24, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1,
                 "tflite", "i8", "nchw", (38, 41), 5),
    "depthwise_einsum_mult2": ((1, 32, 6, 6), (64, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 32,
                               "tflite", "i8", "nhwc", (39, 42), -100),
}  # fmt: skip


def conv_params(**changes: object) -> dict:
    """conv2d parameters: unit strides and dilations, no padding, one group, the int8
    range as the clamp, TFLite's rounding, with `changes`."""
    p = dict(strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), groups=1, rounding="tflite")
    return p | dict(ifm_zero_point=0, ofm_zero_point=5, clamp_min=-128, clamp_max=127) | changes


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_matches_qnn(case: str) -> None:
    xs, ws, strides, pads, dil, groups, rounding, xd, layout, shifts, lo_clamp = CONV_CASES[case]
    rng = np.random.default_rng(len(case))
    lo, hi = (-(1 << 15), (1 << 15) - 1) if xd == "i16" else (-128, 255)
    x = rng.integers(max(lo, np.iinfo(NP[xd]).min), min(hi, np.iinfo(NP[xd]).max) + 1, xs)
    w = rng.integers(-128, 128, ws)
    co = ws[0]
    wzp = rng.integers(-20, 20, co) if xd != "i16" else np.zeros(co, np.int64)
    table = random_table(rng, co, shifts, wzp)
    xzp = {"i8": -7, "u8": 131, "i16": 0}[xd]
    p = dict(
        strides=strides,
        pads=pads,
        dilations=dil,
        groups=groups,
        ifm_zero_point=xzp,
        ofm_zero_point=5,
        clamp_min=lo_clamp,
        clamp_max=120,
        rounding=rounding,
    )
    got = check_conv(x, xd, w, wzp, table, layout, p)
    spread(got, lo_clamp, 120)


@pytest.mark.parametrize(
    ("kernel", "strides", "dilations", "pads", "depthwise", "xd", "width"),
    [
        ((5, 5), (3, 3), (2, 2), (2, 1, 0, 3), True, "i8", 19),
        ((3, 4), (2, 3), (3, 1), (1, 0, 2, 2), True, "i8", 19),
        ((3, 3), (2, 2), (1, 1), (0, 1, 1, 0), True, "i8", 18),  # columns split from byte pairs
        ((3, 3), (1, 2), (1, 2), (1, 2, 1, 1), True, "u8", 18),
        ((5, 3), (3, 2), (2, 3), (0, 2, 1, 0), False, "u8", 20),
        ((2, 2), (4, 1), (1, 4), (3, 3, 3, 3), False, "i8", 19),
    ],
)
def test_conv2d_strides_dilations_and_pads_match_qnn(
    kernel, strides, dilations, pads, depthwise, xd, width
):
    """Stride phases shared by taps unevenly, wide dilations, pads larger than a stride."""
    rng = np.random.default_rng(sum(kernel) + sum(strides) + width)
    c = 6
    ws = (c, 1, *kernel) if depthwise else (4, c, *kernel)
    info = np.iinfo(NP[xd])
    x = rng.integers(info.min, info.max + 1, (1, c, 17, width))
    w = rng.integers(-128, 128, ws)
    table = random_table(rng, ws[0], (37, 40))
    p = dict(
        strides=strides,
        pads=pads,
        dilations=dilations,
        groups=c if depthwise else 1,
        ifm_zero_point=-3 if xd == "i8" else 131,
        ofm_zero_point=5,
        clamp_min=-128,
        clamp_max=127,
        rounding="tflite",
    )
    got = check_conv(x, xd, w, np.zeros(ws[0], np.int64), table, "nchw", p)
    spread(got, -128, 127)


def test_conv2d_accumulators_too_large_for_the_float64_stage() -> None:
    """Sums of 1440 extreme products pass 2^22, beyond which the float64 output stage is not
    exact: the runtime measures them and takes the int64 path, still equal to qnn."""
    rng = np.random.default_rng(3)
    w = np.where(rng.random((8, 160, 3, 3)) < 0.5, -128, 127)
    x = np.broadcast_to(np.where(w[:1] < 0, -128, 127), (1, 160, 3, 3)).copy()
    table = random_table(rng, 8, (49, 51))
    p = conv_params(pads=(1, 1, 1, 1))
    got = check_conv(x, "i8", w, np.zeros(8, np.int64), table, "nchw", p)
    assert np.abs(got[0, 0, 1, 1].astype(int) - 5) > 20  # the centre saw the whole sum


@pytest.mark.parametrize("rounding", ["tflite", "half_away_from_zero"])
def test_folded_pointwise_rounds_ties_exactly(rounding: str) -> None:
    """A pointwise convolution with few input channels runs as a float64 GEMM of weights
    with the scale and offset folded in: every int8 input, with multipliers of 2^30 and
    small shifts, puts many accumulators on ties of both signs."""
    x = np.arange(-128, 128).reshape(1, 1, 16, 16)
    w = np.array([1, -1, 3, 127]).reshape(4, 1, 1, 1)
    table = np.array(
        [[0, 1 << 30, 32, 0], [7, 1 << 30, 33, 0], [-3, 1 << 30, 35, 0], [11, 1 << 30, 38, 0]],
        np.int32,
    )
    p = conv_params(ifm_zero_point=-1, ofm_zero_point=0, rounding=rounding)
    got = check_conv(x, "i8", w, np.zeros(4, np.int64), table, "nchw", p)
    assert (got < -20).any() and (got > 20).any()


@pytest.mark.parametrize(
    ("kernel", "weight_zero_points", "threshold"),
    [
        ((1, 1), False, None),  # 36 KiB of float32 weights: read as int8
        ((1, 1), True, None),  # centred weights up to 147: read as int16
        ((3, 3), True, 0),  # the im2col GEMM, every size read narrow
    ],
)
def test_gemm_weights_read_as_narrow_integers(
    kernel: tuple[int, int],
    weight_zero_points: bool,
    threshold: int | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Large float32 GEMM weights are kept as 8- or 16-bit integers and converted before
    each GEMM: the results stay those of qnn.conv2d."""
    from npuc.runtime import npu_gemm

    if threshold is not None:
        monkeypatch.setattr(npu_gemm, "COMPACT_WEIGHTS", threshold)
    rng = np.random.default_rng(sum(kernel) + weight_zero_points)
    co = ci = 96
    w = rng.integers(-128 if weight_zero_points else -127, 128, (co, ci, *kernel))
    wzp = rng.integers(-20, 20, co) if weight_zero_points else np.zeros(co, np.int64)
    x = rng.integers(-128, 128, (1, ci, 5, 6))
    p = conv_params(pads=(kernel[0] // 2,) * 4, ifm_zero_point=-7)
    table = random_table(rng, co, (40, 44), wzp)
    got = check_conv(x, "i8", w, wzp, table, "nchw", p)
    spread(got, -128, 127)


def check_conv(
    x: np.ndarray,
    xd: str,
    w: np.ndarray,
    wzp: np.ndarray,
    table: np.ndarray,
    layout: str,
    p: dict,
) -> np.ndarray:
    """The conv2d instruction's int8 output, asserted equal to qnn.conv2d's."""
    xs, ws, co = x.shape, w.shape, w.shape[0]
    (sh, sw), pads, (dh, dw) = p["strides"], p["pads"], p["dilations"]
    oh = (xs[2] + pads[0] + pads[2] - dh * (ws[2] - 1) - 1) // sh + 1
    ow = (xs[3] + pads[1] + pads[3] - dw * (ws[3] - 1) - 1) // sw + 1
    out_shape = (xs[0], co, oh, ow)
    b = Builder()
    xt = b.input("x", x, xd, nhwc(xs) if layout == "nhwc" else None)
    yt = b.output("y", out_shape, "i8", nhwc(out_shape) if layout == "nhwc" else None)
    body = [inst("conv2d", (xt, b.const(w, "i8"), b.const(table, "i32"), yt), **p)]
    got = b.run(body)["y"]
    want = qnn_conv(x, xd, w, wzp, table, p, out_shape)
    np.testing.assert_array_equal(got, want)
    return got


def test_conv2d_from_the_spec() -> None:
    """A tiny convolution computed with Python integers from the binary format's definition."""
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (1, 2, 4, 4))
    w = rng.integers(-128, 128, (3, 2, 2, 2))
    table = random_table(rng, 3, (34, 38), rng.integers(-5, 5, 3))
    b = Builder()
    xt, yt = b.input("x", x, "i8"), b.output("y", (1, 3, 2, 2))
    body = [
        inst(
            "conv2d",
            (xt, b.const(w, "i8"), b.const(table, "i32"), yt),
            strides=(2, 2),
            pads=(1, 0, 0, 1),
            ifm_zero_point=3,
            ofm_zero_point=-2,
        )
    ]
    got = b.run(body)["y"]
    xp = np.full((1, 2, 5, 5), 3, np.int64)  # padding holds the zero point
    xp[:, :, 1:, :4] = x
    for o in range(3):
        bias, m, s, zp = (int(v) for v in table[o])
        for i in range(2):
            for j in range(2):
                window = xp[0, :, 2 * i : 2 * i + 2, 2 * j : 2 * j + 2]
                acc = bias + int(((window - 3) * (w[o] - zp)).sum())
                exact = Fraction(acc * m, 2**s)
                r = int(abs(exact) + Fraction(1, 2)) * (1 if exact >= 0 else -1)
                assert got[0, o, i, j] == max(-128, min(127, r - 2))


def test_weights_copied_by_dma_then_replaced() -> None:
    """Weights DMA'd into SRAM are used, and a later copy over them is used by the next conv."""
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (1, 8, 3, 3))
    w1, w2 = rng.integers(-128, 128, (2, 4, 8, 1, 1))
    table = random_table(rng, 4, (36, 40))
    b = Builder()
    xt = b.input("x", x, "i8")
    wdyn = b.input("w_in", w2, "i8")  # weights from an input: not constants
    y1, y2, y3 = (b.output(n, (1, 4, 3, 3)) for n in ("y1", "y2", "y3"))
    c1, c2, ct = b.const(w1, "i8"), b.const(w2, "i8"), b.const(table, "i32")
    s = tensor("sram", 0, (4, 8, 1, 1))
    body = [
        inst("dma", (c1, s)),
        inst("conv2d", (xt, s, ct, y1), deps=(0,)),
        inst("dma", (c2, s), deps=(1,)),
        inst("conv2d", (xt, s, ct, y2), deps=(2,)),
        inst("dma", (wdyn, s), deps=(3,)),
        inst("move", (xt, tensor("sram", 64, (1, 8, 3, 3))), deps=(4,)),
        inst("conv2d", (xt, s, ct, y3), deps=(5,)),
    ]
    out = b.run(body)
    ref = {}
    for name, w in (("y1", w1), ("y2", w2)):
        ref[name] = qnn(
            "qnn.conv2d",
            [x.astype(np.int8), w.astype(np.int8), table[:, 0].copy()],
            [qt(x.shape), qt_axis(w.shape, [0] * 4), "tensor<4xi32>"],
            qt((1, 4, 3, 3)),
            f"strides = {arr((1, 1))}, pads = {arr((0,) * 4)}, dilations = "
            f"{arr((1, 1))}, groups = 1 : i64, multiplier = {arr(table[:, 1])}, "
            f"shift = {arr(table[:, 2])}",
        )
        np.testing.assert_array_equal(out[name], ref[name])
    np.testing.assert_array_equal(out["y3"], ref["y2"])
    assert not np.array_equal(ref["y1"], ref["y2"])


def test_pointwise_inputs_are_converted_again_after_a_write() -> None:
    """Pointwise convolutions share the float copy of an input they read alike, until any
    instruction writes a byte of it; a later reader then sees the new values."""
    rng = np.random.default_rng(8)
    x = rng.integers(-128, 128, (1, 8, 3, 3))
    patch = rng.integers(-128, 128, (1, 2, 3, 3))
    w = rng.integers(-128, 128, (4, 8, 1, 1))
    table = random_table(rng, 4, (36, 40))
    b = Builder()
    xt = b.input("x", x, "i8")
    ys = [b.output(n, (1, 4, 3, 3)) for n in ("y1", "y2", "y3")]
    wt, ct, pt = b.const(w, "i8"), b.const(table, "i32"), b.const(patch, "i8")
    channels_2_3 = tensor(xt.region, xt.offset + 2 * 9, (1, 2, 3, 3))
    body = [
        inst("conv2d", (xt, wt, ct, ys[0])),
        inst("conv2d", (xt, wt, ct, ys[1]), deps=(0,)),  # reuses the converted input
        inst("dma", (pt, channels_2_3), deps=(1,)),  # overwrites two input channels
        inst("conv2d", (xt, wt, ct, ys[2]), deps=(2,)),
    ]
    out = b.run(body)
    changed = x.copy()
    changed[:, 2:4] = patch
    for name, source in (("y1", x), ("y2", x), ("y3", changed)):
        want = qnn(
            "qnn.conv2d",
            [source.astype(np.int8), w.astype(np.int8), table[:, 0].copy()],
            [qt(x.shape), qt_axis(w.shape, [0] * 4), "tensor<4xi32>"],
            qt((1, 4, 3, 3)),
            f"strides = {arr((1, 1))}, pads = {arr((0,) * 4)}, dilations = "
            f"{arr((1, 1))}, groups = 1 : i64, multiplier = {arr(table[:, 1])}, "
            f"shift = {arr(table[:, 2])}",
        )
        np.testing.assert_array_equal(out[name], want)
    assert not np.array_equal(out["y1"], out["y3"])


def test_pointwise_input_converted_by_a_conv_with_run_time_weights_is_reused() -> None:
    """A pointwise convolution with weights from an input, planned at every run, converts
    the input it shares with a later one planned from constants, which reuses it."""
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (1, 8, 3, 3))
    w = rng.integers(-128, 128, (4, 8, 1, 1))
    table = random_table(rng, 4, (36, 40))
    b = Builder()
    xt, wt = b.input("x", x, "i8"), b.input("w", w, "i8")
    ys = [b.output(n, (1, 4, 3, 3)) for n in ("y1", "y2")]
    ct = b.const(table, "i32")
    body = [
        inst("conv2d", (xt, wt, ct, ys[0])),
        inst("conv2d", (xt, b.const(w, "i8"), ct, ys[1]), deps=(0,)),
    ]
    out = b.run(body)
    p = dict(
        strides=(1, 1),
        pads=(0,) * 4,
        dilations=(1, 1),
        groups=1,
        ifm_zero_point=0,
        ofm_zero_point=0,
        clamp_min=-128,
        clamp_max=127,
        rounding="tflite",
    )
    want = qnn_conv(x, "i8", w, np.zeros(4, np.int64), table, p, (1, 4, 3, 3))
    np.testing.assert_array_equal(out["y1"], want)
    np.testing.assert_array_equal(out["y2"], want)


def test_bias_scale_filled_at_run_time_is_checked() -> None:
    b = Builder()
    xt = b.input("x", np.zeros((1, 1, 2, 2)), "i8")
    bad = np.array([[0, -5, 31, 0]], np.int32)  # a negative multiplier
    tt = b.input("table", bad, "i32")
    yt = b.output("y", (1, 1, 2, 2))
    body = [inst("conv2d", (xt, b.const(np.ones((1, 1, 1, 1)), "i8"), tt, yt))]
    with pytest.raises(NpucError, match=r"instruction 0 \(conv2d\).*multiplier -5"):
        b.run(body)
