"""The NPU executor against the `qnn` reference kernels run on the same integers.

Each test builds a small program by hand, runs it, and compares every output with
the result of the corresponding `qnn` op (parsed from text and evaluated by
runtime/qnn_kernels.py) or with numpy written from docs/binary-format.md.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.parser import Parser

from npuc.backend.npubin import encode_program, program_op
from npuc.diagnostics import NpucError
from npuc.dialects.npu_isa import (
    Instruction,
    IODesc,
    Program,
    Region,
    TensorRef,
    default_params,
    row_major,
)
from npuc.dialects.npu_rules import check_instruction, check_program
from npuc.registry import DIALECTS
from npuc.runtime import npu_requant as nr
from npuc.runtime.executor import Executor, run_with_dump
from npuc.runtime.kernels.integer import requantize
from npuc.runtime.loader import load
from npuc.runtime.qnn_kernels import evaluate

TINY = Path(__file__).parents[1] / "npu" / "tiny.mlir"
NP = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "i32": np.int32}


def _ctx() -> Context:
    ctx = Context()
    for name, factory in DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx


CTX = _ctx()


# --------------------------------------------------------------------------- building programs


def tensor(region, offset, shape, dtype="i8", strides=None) -> TensorRef:
    shape = tuple(shape)
    return TensorRef(region, offset, shape, tuple(strides or row_major(shape)), dtype)


def nhwc(shape) -> tuple[int, ...]:
    """Element strides of an NCHW view stored as NHWC."""
    _, c, h, w = shape
    return (h * w * c, 1, w * c, c)


def inst(op, operands, deps=(), layer=None, **params) -> Instruction:
    values = default_params(op, operands)
    values.update(params)
    return Instruction(op, tuple(operands), values, tuple(deps), layer)


class Builder:
    """Lays out constants, inputs and outputs and assembles a checked Program."""

    def __init__(self) -> None:
        self.constants = bytearray()
        self.mutable = 0
        self.inputs: list[IODesc] = []
        self.outputs: list[IODesc] = []
        self.feeds: dict[str, np.ndarray] = {}

    def const(self, array: np.ndarray, dtype: str, strides=None, shape=None) -> TensorRef:
        offset = (len(self.constants) + 63) // 64 * 64
        data = np.ascontiguousarray(array, NP[dtype]).tobytes()
        self.constants += bytes(offset - len(self.constants)) + data
        return tensor("constants", offset, shape or array.shape, dtype, strides)

    def _place(self, shape, dtype, strides) -> TensorRef:
        t = tensor("mutable", self.mutable, shape, dtype, strides)
        self.mutable = (t.end + 63) // 64 * 64
        return t

    def input(self, name: str, array: np.ndarray, dtype: str, strides=None) -> TensorRef:
        t = self._place(array.shape, dtype, strides)
        self.inputs.append(IODesc(name, t))
        self.feeds[name] = array.astype(NP[dtype])
        return t

    def output(self, name: str, shape, dtype: str = "i8", strides=None) -> TensorRef:
        t = self._place(shape, dtype, strides)
        self.outputs.append(IODesc(name, t))
        return t

    def program(self, body, sram: int = 1 << 16) -> Program:
        regions = (
            Region("constants", max(len(self.constants), 1), "flash"),
            Region("mutable", max(self.mutable, 1), "sram"),
            Region("sram", sram, "sram"),
        )
        prog = Program("t", regions, tuple(self.inputs), tuple(self.outputs), (), tuple(body),
                       bytes(self.constants))  # fmt: skip
        check_program(prog)
        for i in body:
            check_instruction(i)
        return prog

    def run(self, body, **kw) -> dict[str, np.ndarray]:
        return Executor(self.program(body, **kw)).run(self.feeds)


# --------------------------------------------------------------------------- qnn references


def qt(shape, dtype="i8", zp=0, scale=0.05) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x!qnn.uniform<{dtype}:f32, {scale}:{zp}>>"


def qt_axis(shape, zps, dtype="i8", axis=0) -> str:
    params = ", ".join(f"0.01:{z}" for z in zps)
    return f"tensor<{'x'.join(map(str, shape))}x!qnn.uniform<{dtype}:f32:{axis}, {{{params}}}>>"


def arr(values) -> str:
    return f"array<i64: {', '.join(str(int(v)) for v in values)}>"


def qnn(op: str, args: list[np.ndarray], types: list[str], out_type: str, attrs: str) -> np.ndarray:
    """Evaluate one qnn op (parsed from text) on stored integers with the reference kernels."""
    names = [f"%a{i}" for i in range(len(args))]
    sig = ", ".join(f"{n}: {t}" for n, t in zip(names, types, strict=True))
    text = (
        f"func.func @f({sig}) {{\n  %r = {op} {', '.join(names)} {{{attrs}}} : "
        f"({', '.join(types)}) -> {out_type}\n  func.return\n}}"
    )
    module = Parser(CTX, text).parse_module()
    target = next(o for o in module.walk() if o.name == op)
    return evaluate(target, list(args))[0]


def clamp_attrs(p: dict) -> str:
    return (
        f'rounding = "{p["rounding"]}", clamp_min = {p["clamp_min"]} : i64, '
        f"clamp_max = {p['clamp_max']} : i64"
    )


def random_table(rng, channels: int, shift_range, wzp=None) -> np.ndarray:
    rows = np.stack(
        [
            rng.integers(-5000, 5000, channels),
            rng.integers(1 << 30, 1 << 31, channels),
            rng.integers(*shift_range, channels),
            wzp if wzp is not None else np.zeros(channels, np.int64),
        ],
        axis=1,
    )
    return rows.astype(np.int32)


def spread(y: np.ndarray, lo: int, hi: int) -> None:
    """The comparison means something: not every output sits at a clamp bound."""
    assert np.mean((y > lo) & (y < hi)) > 0.2


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
    "depthwise_einsum_relu": ((1, 64, 9, 11), (64, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 64,
                              "tflite", "i8", "nchw", (39, 42), 5),
    "depthwise_taps_relu_s2": ((1, 16, 12, 12), (16, 1, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 16,
                               "tflite", "i8", "nchw", (39, 42), 5),
    "3x3_s2_short_k_relu": ((1, 3, 10, 12), (16, 3, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 1,
                            "tflite", "i8", "nchw", (38, 41), 5),
    "1x1_long_k_relu": ((1, 64, 6, 7), (24, 64, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1,
                        "tflite", "i8", "nchw", (39, 42), 5),
    "depthwise_taps_long_rows": ((1, 40, 30, 30), (40, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1),
                                 40, "tflite", "i8", "nchw", (39, 42), 5),
    "1x1_relu": ((1, 24, 7, 9), (40, 24, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1,
                 "tflite", "i8", "nchw", (38, 41), 5),
    "depthwise_einsum_mult2": ((1, 32, 6, 6), (64, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 32,
                               "tflite", "i8", "nhwc", (39, 42), -100),
}  # fmt: skip


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
    p = dict(strides=strides, pads=pads, dilations=dil, groups=groups, ifm_zero_point=xzp,
             ofm_zero_point=5, clamp_min=lo_clamp, clamp_max=120, rounding=rounding)  # fmt: skip
    got = check_conv(x, xd, w, wzp, table, layout, p)
    spread(got, lo_clamp, 120)


@pytest.mark.parametrize(
    ("kernel", "strides", "dilations", "pads", "depthwise", "xd", "width"),
    [((5, 5), (3, 3), (2, 2), (2, 1, 0, 3), True, "i8", 19),
     ((3, 4), (2, 3), (3, 1), (1, 0, 2, 2), True, "i8", 19),
     ((3, 3), (2, 2), (1, 1), (0, 1, 1, 0), True, "i8", 18),  # columns split from byte pairs
     ((3, 3), (1, 2), (1, 2), (1, 2, 1, 1), True, "u8", 18),
     ((5, 3), (3, 2), (2, 3), (0, 2, 1, 0), False, "u8", 20),
     ((2, 2), (4, 1), (1, 4), (3, 3, 3, 3), False, "i8", 19)],
)  # fmt: skip
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
    p = dict(strides=strides, pads=pads, dilations=dilations, groups=c if depthwise else 1,
             ifm_zero_point=-3 if xd == "i8" else 131, ofm_zero_point=5, clamp_min=-128,
             clamp_max=127, rounding="tflite")  # fmt: skip
    got = check_conv(x, xd, w, np.zeros(ws[0], np.int64), table, "nchw", p)
    spread(got, -128, 127)


def test_conv2d_accumulators_too_large_for_the_float64_stage() -> None:
    """Sums of 1440 extreme products pass 2^22, beyond which the float64 output stage is not
    exact: the runtime measures them and takes the int64 path, still equal to qnn."""
    rng = np.random.default_rng(3)
    w = np.where(rng.random((8, 160, 3, 3)) < 0.5, -128, 127)
    x = np.broadcast_to(np.where(w[:1] < 0, -128, 127), (1, 160, 3, 3)).copy()
    table = random_table(rng, 8, (49, 51))
    p = dict(strides=(1, 1), pads=(1, 1, 1, 1), dilations=(1, 1), groups=1, ifm_zero_point=0,
             ofm_zero_point=5, clamp_min=-128, clamp_max=127, rounding="tflite")  # fmt: skip
    got = check_conv(x, "i8", w, np.zeros(8, np.int64), table, "nchw", p)
    assert np.abs(got[0, 0, 1, 1].astype(int) - 5) > 20  # the centre saw the whole sum


def check_conv(
    x: np.ndarray, xd: str, w: np.ndarray, wzp: np.ndarray, table: np.ndarray, layout: str,
    p: dict,
) -> np.ndarray:  # fmt: skip
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
    attrs = (
        f"strides = {arr(p['strides'])}, pads = {arr(pads)}, dilations = {arr(p['dilations'])}, "
        f"groups = {p['groups']} : i64, multiplier = {arr(table[:, 1])}, "
        f"shift = {arr(table[:, 2])}, " + clamp_attrs(p)
    )
    want = qnn(
        "qnn.conv2d",
        [x.astype(NP[xd]), w.astype(np.int8), table[:, 0].copy()],
        [qt(xs, xd, p["ifm_zero_point"]), qt_axis(ws, wzp), f"tensor<{co}xi32>"],
        qt(out_shape, "i8", p["ofm_zero_point"]),
        attrs,
    )
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
    body = [inst("conv2d", (xt, b.const(w, "i8"), b.const(table, "i32"), yt), strides=(2, 2),
                 pads=(1, 0, 0, 1), ifm_zero_point=3, ofm_zero_point=-2)]  # fmt: skip
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
        ref[name] = qnn("qnn.conv2d", [x.astype(np.int8), w.astype(np.int8), table[:, 0].copy()],
                        [qt(x.shape), qt_axis(w.shape, [0] * 4), "tensor<4xi32>"],
                        qt((1, 4, 3, 3)),
                        f"strides = {arr((1, 1))}, pads = {arr((0,) * 4)}, dilations = "
                        f"{arr((1, 1))}, groups = 1 : i64, multiplier = {arr(table[:, 1])}, "
                        f"shift = {arr(table[:, 2])}")  # fmt: skip
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
        want = qnn("qnn.conv2d", [source.astype(np.int8), w.astype(np.int8), table[:, 0].copy()],
                   [qt(x.shape), qt_axis(w.shape, [0] * 4), "tensor<4xi32>"], qt((1, 4, 3, 3)),
                   f"strides = {arr((1, 1))}, pads = {arr((0,) * 4)}, dilations = "
                   f"{arr((1, 1))}, groups = 1 : i64, multiplier = {arr(table[:, 1])}, "
                   f"shift = {arr(table[:, 2])}")  # fmt: skip
        np.testing.assert_array_equal(out[name], want)
    assert not np.array_equal(out["y1"], out["y3"])


def test_bias_scale_filled_at_run_time_is_checked() -> None:
    b = Builder()
    xt = b.input("x", np.zeros((1, 1, 2, 2)), "i8")
    bad = np.array([[0, -5, 31, 0]], np.int32)  # a negative multiplier
    tt = b.input("table", bad, "i32")
    yt = b.output("y", (1, 1, 2, 2))
    body = [inst("conv2d", (xt, b.const(np.ones((1, 1, 1, 1)), "i8"), tt, yt))]
    with pytest.raises(NpucError, match=r"instruction 0 \(conv2d\).*multiplier -5"):
        b.run(body)


# --------------------------------------------------------------------------- matmul


def test_fully_connected_with_broadcast_weights() -> None:
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 128, (3, 2, 1300))  # K = 1300: two float32 chunks
    w = rng.integers(-128, 128, (10, 1300))
    wzp = rng.integers(-4, 4, 10)
    table = random_table(rng, 10, (42, 45), wzp)
    b = Builder()
    xt, yt = b.input("x", x, "i8"), b.output("y", (3, 2, 10))
    wt = b.const(w, "i8", strides=(0, 1, 1300), shape=(3, 1300, 10))
    p = dict(lhs_zero_point=-9, ofm_zero_point=4, rounding="tflite", clamp_min=-128,
             clamp_max=127)  # fmt: skip
    got = b.run([inst("matmul", (xt, wt, b.const(table, "i32"), yt), **p)])["y"]
    want = qnn(
        "qnn.fully_connected",
        [x.reshape(6, 1300).astype(np.int8), w.astype(np.int8), table[:, 0].copy()],
        [qt((6, 1300), "i8", -9), qt_axis((10, 1300), wzp), "tensor<10xi32>"],
        qt((6, 10), "i8", 4),
        f"multiplier = {arr(table[:, 1])}, shift = {arr(table[:, 2])}, " + clamp_attrs(p),
    )
    np.testing.assert_array_equal(got, want.reshape(3, 2, 10))
    spread(got, -128, 127)


def test_matmul_of_two_activations() -> None:
    rng = np.random.default_rng(12)
    lhs = rng.integers(0, 256, (2, 5, 16))
    rhs = rng.integers(-128, 128, (16, 4))
    table = np.tile(np.array([[0, 1 << 30, 40, -3]], np.int32), (4, 1))
    b = Builder()
    lt = b.input("lhs", lhs, "u8")
    rt = b.input("rhs", rhs, "i8")
    yt = b.output("y", (2, 5, 4))
    rview = tensor("mutable", rt.offset, (2, 16, 4), "i8", (0, 4, 1))
    body = [inst("matmul", (lt, rview, b.const(table, "i32"), yt), lhs_zero_point=128,
                 ofm_zero_point=-1)]  # fmt: skip
    got = b.run(body)["y"]
    want = qnn(
        "qnn.matmul",
        [lhs.astype(np.uint8), rhs.astype(np.int8)],
        [qt((2, 5, 16), "u8", 128), qt((16, 4), "i8", -3)],
        qt((2, 5, 4), "i8", -1),
        f"multiplier = {arr([1 << 30])}, shift = {arr([40])}",
    )
    np.testing.assert_array_equal(got, want)
    spread(got, -128, 127)


# --------------------------------------------------------------------------- pooling


def test_pool_modes_match_qnn() -> None:
    rng = np.random.default_rng(5)
    x = rng.integers(0, 256, (1, 3, 7, 7))
    b = Builder()
    xt = b.input("x", x, "u8", nhwc(x.shape))
    outs = {
        "max": b.output("max", (1, 3, 3, 3), "u8"),
        "avg": b.output("avg", (1, 3, 4, 4), "u8"),
        "avg_tfl": b.output("avg_tfl", (1, 3, 3, 3), "u8"),
        "gap": b.output("gap", (1, 3, 1, 1), "u8"),
        "sum": b.output("sum", (1, 3, 1, 1), "i8"),
    }
    avg = dict(kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1), ceil_mode=True,
               count_include_pad=True, ifm_zero_point=128, ofm_zero_point=120,
               multiplier=1518500250, shift=31)  # fmt: skip
    body = [
        inst("pool", (xt, outs["max"]), mode="max", kernel=(3, 3), strides=(2, 2),
             dilations=(2, 2), pads=(1, 1, 1, 1), clamp_min=10, clamp_max=250),
        inst("pool", (xt, outs["avg"]), mode="avg", **avg),
        inst("pool", (xt, outs["avg_tfl"]), mode="avg", kernel=(3, 3), strides=(2, 2),
             rounding="tflite", ifm_zero_point=128, ofm_zero_point=128),
        inst("pool", (xt, outs["gap"]), mode="avg", kernel=(7, 7), ifm_zero_point=128,
             ofm_zero_point=100, multiplier=1 << 30, shift=29),
        inst("pool", (xt, outs["sum"]), mode="sum", kernel=(7, 7), ifm_zero_point=128,
             ofm_zero_point=-7, multiplier=876523970, shift=38, rounding="tflite"),
    ]  # fmt: skip
    got = b.run(body)
    xs = x.astype(np.uint8)
    xtype = qt(x.shape, "u8", 128)

    def ref(op, out_shape, out_dtype, zp, attrs):
        return qnn(op, [xs], [xtype], qt(out_shape, out_dtype, zp), attrs)

    max_attrs = (f"kernel = {arr((3, 3))}, strides = {arr((2, 2))}, pads = {arr((1,) * 4)}, "
                 f"dilations = {arr((2, 2))}")  # fmt: skip
    want_max = np.clip(ref("qnn.max_pool2d", (1, 3, 3, 3), "u8", 128, max_attrs), 10, 250)
    np.testing.assert_array_equal(got["max"], want_max)
    avg_attrs = (f"kernel = {arr((3, 3))}, strides = {arr((2, 2))}, pads = {arr((1,) * 4)}, "
                 f"multiplier = {arr([1518500250])}, shift = {arr([31])}, ceil_mode = true, "
                 "count_include_pad = true")  # fmt: skip
    np.testing.assert_array_equal(got["avg"], ref("qnn.avg_pool2d", (1, 3, 4, 4), "u8", 120,
                                                  avg_attrs))  # fmt: skip
    tfl_attrs = (
        f"kernel = {arr((3, 3))}, strides = {arr((2, 2))}, pads = {arr((0,) * 4)}, "
        f'multiplier = {arr([1 << 30])}, shift = {arr([30])}, rounding = "tflite"'
    )
    np.testing.assert_array_equal(got["avg_tfl"], ref("qnn.avg_pool2d", (1, 3, 3, 3), "u8", 128,
                                                      tfl_attrs))  # fmt: skip
    gap = ref("qnn.global_avg_pool", (1, 3, 1, 1), "u8", 100,
              f"multiplier = {arr([1 << 30])}, shift = {arr([29])}")  # fmt: skip
    np.testing.assert_array_equal(got["gap"], gap)
    total = ref("qnn.reduce_sum", (1, 3, 1, 1), "i8", -7,
                f"multiplier = {arr([876523970])}, shift = {arr([38])}, rounding = \"tflite\", "
                f"axes = {arr((2, 3))}")  # fmt: skip
    np.testing.assert_array_equal(got["sum"], total)


# --------------------------------------------------------------------------- eltwise

SCALE = dict(left_shift=20, lhs_multiplier=1 << 30, lhs_shift=31, rhs_multiplier=1500000000,
             rhs_shift=32, multiplier=1 << 30, shift=50)  # fmt: skip


def _scale_attrs(p: dict) -> str:
    return (f"left_shift = {p['left_shift']} : i64, lhs_multiplier = {p['lhs_multiplier']} : i64, "
            f"lhs_shift = {p['lhs_shift']} : i64, rhs_multiplier = {p['rhs_multiplier']} : i64, "
            f"rhs_shift = {p['rhs_shift']} : i64, multiplier = {arr([p['multiplier']])}, "
            f"shift = {arr([p['shift']])}")  # fmt: skip


@pytest.mark.parametrize(
    "kind", ["add", "sub", "mul", "maximum", "minimum", "squared_difference", "prelu", "div"]
)
def test_eltwise_matches_qnn(kind: str) -> None:
    rng = np.random.default_rng(len(kind))
    dtype = "i16" if kind == "div" else "i8"
    info = np.iinfo(NP[dtype])
    a = rng.integers(info.min, info.max + 1, (2, 3, 8))
    bv = rng.integers(info.min, info.max + 1, (8,))
    azp, bzp, ozp = (0, 0, 0) if dtype == "i16" else (-3, 7, 2)
    if kind == "div":
        bv[bv == bzp] = 1
    b = Builder()
    at = b.input("a", a, dtype)
    bt = b.input("b", bv, dtype)
    bview = tensor("mutable", bt.offset, (2, 3, 8), dtype, (0, 0, 1))  # broadcast rhs
    yt = b.output("y", (2, 3, 8), dtype)
    p = dict(kind=kind, lhs_zero_point=azp, rhs_zero_point=bzp, ofm_zero_point=ozp,
             clamp_min=-100, clamp_max=110)  # fmt: skip
    if kind in ("add", "sub", "squared_difference"):
        p.update(SCALE, rounding="half_to_even")
        if kind == "squared_difference":
            p.update(shift=62, rounding="tflite")
        attrs = _scale_attrs(p) + ", " + clamp_attrs(p)
    elif kind == "mul":
        p.update(multiplier=1234567890, shift=38, rounding="half_up")
        attrs = f"multiplier = {arr([1234567890])}, shift = {arr([38])}, " + clamp_attrs(p)
    elif kind == "prelu":
        p.update(multiplier=1 << 30, shift=30, rhs_multiplier=1 << 30, rhs_shift=36,
                 rounding="tflite")  # fmt: skip
        attrs = (f"multiplier = {arr([1 << 30])}, shift = {arr([30])}, alpha_multiplier = "
                 f"{1 << 30} : i64, alpha_shift = 36 : i64, " + clamp_attrs(p))  # fmt: skip
    elif kind == "div":
        p.update(multiplier=1 << 30, shift=24, rounding="tflite", overshift="x86")
        attrs = (f"multiplier = {arr([1 << 30])}, shift = {arr([24])}, overshift = \"x86\", "
                 + clamp_attrs(p))  # fmt: skip
    else:
        p.update(ofm_zero_point=0, lhs_zero_point=0, rhs_zero_point=0)
        azp = bzp = ozp = 0
        attrs = ""
    got = b.run([inst("eltwise", (at, bview, yt), **p)])["y"]
    op = {"prelu": "qnn.prelu"}.get(kind, f"qnn.{kind}")
    want = qnn(op, [a.astype(NP[dtype]), bv.astype(NP[dtype])],
               [qt((2, 3, 8), dtype, azp), qt((8,), dtype, bzp)], qt((2, 3, 8), dtype, ozp),
               attrs)  # fmt: skip
    if kind in ("maximum", "minimum"):
        want = np.clip(want, -100, 110)
    np.testing.assert_array_equal(got, want)
    spread(got, -100, 110)


# --------------------------------------------------------------------------- lut, softmax, move


def test_lut_softmax_move_and_strided_dma() -> None:
    rng = np.random.default_rng(9)
    x = rng.integers(-128, 128, (2, 3, 4, 5))
    table = rng.integers(-128, 128, 256)
    b = Builder()
    xt = b.input("x", x, "i8")
    lut_out = b.output("lut", (2, 3, 4, 5), "i8", nhwc((2, 3, 4, 5)))
    sm_out = b.output("softmax", (6, 20))
    moved = b.output("moved", (4, 3, 7, 3))  # perm (2, 1, 3, 0) then pads
    dma_out = b.output("dma", (2, 2, 5))
    body = [
        inst("lut", (xt, b.const(table, "i8"), lut_out), table_base=-128),
        inst("softmax", (tensor("mutable", xt.offset, (6, 20)), sm_out),
             input_multiplier=1717986944, input_left_shift=22, diff_min=-496),
        inst("move", (xt, moved), perm=(2, 1, 3, 0), pads=(0, 0, 1, 0, 0, 0, 1, 1),
             pad_value=-9),
        inst("dma", (tensor("mutable", xt.offset + 5, (2, 2, 5), "i8", (60, 40, 1)), dma_out)),
    ]  # fmt: skip
    got = b.run(body)
    np.testing.assert_array_equal(got["lut"], table[x + 128])
    want = qnn("qnn.softmax", [x.reshape(6, 20).astype(np.int8)], [qt((6, 20))],
               qt((6, 20), "i8", -128, 0.00390625),
               "input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, "
               "diff_min = -496 : i64")  # fmt: skip
    np.testing.assert_array_equal(got["softmax"], want)
    inner = x.transpose(2, 1, 3, 0).reshape(4, 3, 5, 2)
    expect = np.full((4, 3, 7, 3), -9)
    expect[:, :, 1:6, 0:2] = inner
    np.testing.assert_array_equal(got["moved"], expect)
    index = 5 + np.arange(2)[:, None, None] * 60 + np.arange(2)[:, None] * 40 + np.arange(5)
    np.testing.assert_array_equal(got["dma"], x.reshape(-1)[index])


def test_tiny_program_end_to_end() -> None:
    """tests/npu/tiny.mlir: the host argmax sees the softmax the NPU instructions wrote."""
    prog = program_op(Parser(CTX, TINY.read_text()).parse_module()).program()
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 8, 8, 8)).astype(np.int8)
    ex = Executor(prog)
    out = ex.run({"x": x})
    assert out["y"].shape == (1, 10) and out["y"].dtype == np.int8
    assert out["class"][0] == np.argmax(out["y"][0])
    np.testing.assert_array_equal(ex.run({"x": x})["y"], out["y"])  # runs repeat exactly
    seen = []
    ex.run({"x": x}, observe=lambda i, inst, views: seen.append((i, inst.op, len(views))))
    assert [s[0] for s in seen] == list(range(len(prog.instructions)))
    _, dumped = run_with_dump(ex, {"x": x}, {"softmax", "argmax"})
    assert list(dumped) == ["softmax/10.softmax.ofm", "argmax/13.host.out0"]
    np.testing.assert_array_equal(dumped["softmax/10.softmax.ofm"], out["y"])
    loaded = Executor(load(encode_program(prog))).run({"x": x})  # through the binary
    for name, value in out.items():
        np.testing.assert_array_equal(loaded[name], value)


# --------------------------------------------------------------------------- inputs and errors


def test_float_inputs_are_quantized_and_errors_are_diagnostics() -> None:
    b = Builder()
    xt = b.input("x", np.zeros(4), "i8")
    b.inputs[0] = IODesc("x", xt, 0.5, 3)
    yt = b.output("y", (4,))
    prog = b.program([inst("move", (xt, yt))])
    ex = Executor(prog)
    got = ex.run({"x": np.array([0.0, 0.74, -1.25, 1000.0], np.float32)})["y"]
    np.testing.assert_array_equal(got, [3, 4, 0, 127])  # round(x / 0.5) + 3, ties away
    with pytest.raises(NpucError, match="missing input 'x'"):
        ex.run({})
    with pytest.raises(NpucError, match="shape"):
        ex.run({"x": np.zeros(5, np.int8)})
    with pytest.raises(NpucError, match="dtype int16"):
        ex.run({"x": np.zeros(4, np.int16)})
    with pytest.raises(NpucError, match="unknown input"):
        ex.run({"x": np.zeros(4, np.int8), "z": np.zeros(1)})


def test_lut_input_outside_the_table() -> None:
    b = Builder()
    xt = b.input("x", np.array([0, 1, 5]), "i8")
    yt = b.output("y", (3,))
    body = [inst("lut", (xt, b.const(np.arange(4), "i8"), yt), table_base=0)]
    with pytest.raises(NpucError, match=r"instruction 0 \(lut\).*outside the table"):
        b.run(body)


# --------------------------------------------------------------------------- fused requantization


def _tflite_reference(x: int, m: int, shift: int) -> int:
    """TFLite's MultiplyByQuantizedMultiplier for a right shift, in Python integers (gemmlowp)."""
    ab = x * m
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    high = abs(ab + nudge) >> 31
    high = high if ab + nudge >= 0 else -high  # C division truncates toward zero
    exponent = shift - 31
    mask = (1 << exponent) - 1
    remainder = high & mask
    threshold = (mask >> 1) + (1 if high < 0 else 0)
    return (high >> exponent) + (1 if remainder > threshold else 0)


def test_fused_tflite_requantization_is_exact() -> None:
    """The executor's one-floor float64 and int64 forms equal TFLite's two roundings."""
    rng = np.random.default_rng(21)
    channels = 6
    m = rng.integers(1 << 30, 1 << 31, channels)
    m[0] = 1 << 30
    shift = np.array([31, 32, 33, 38, 44, 52])
    # values on and next to the ties of every channel, and random ones
    ties = [(k * (1 << int(s - 31)) + (1 << int(s - 32))) if s > 31 else k for s in shift
            for k in (-3, -1, 0, 2)]  # fmt: skip
    near = [round(t * (1 << 31) / int(mm)) + d for t, mm in zip(ties, np.repeat(m, 4),
            strict=True) for d in (-1, 0, 1)]  # fmt: skip
    acc = np.array(near + list(rng.integers(-(1 << 20), 1 << 20, 600)), np.int64)
    acc = acc[: acc.size // channels * channels].reshape(-1, channels)
    want = np.array([[_tflite_reference(int(v), int(m[c]), int(shift[c]))
                      for c, v in enumerate(row)] for row in acc])  # fmt: skip
    np.testing.assert_array_equal(nr.tflite_multiply(acc, m, shift), want)
    np.testing.assert_array_equal(requantize(acc, m, shift, "tflite"), want)
    rows = np.stack([np.zeros(channels), m, shift, np.zeros(channels)], axis=1)
    table = nr.Table.decode(rows, (-128, 127), "tflite")
    bias = rng.integers(-5000, 5000, channels)  # the bias folded into the float64 steps
    # a signed clamp needs the ties' signs; a clamp at the zero point (a fused ReLU) does not
    # lifted by 2^16 the int16 outputs come from a wrapping conversion, else from a floor
    cases = itertools.product(((-32768, 32767), (-3, 32767), (-3, 20)), (0, 1 << 16),
                              (np.zeros(channels, np.int64), bias), (False, True))  # fmt: skip
    for clamp, lift, b, channels_first in cases:
        form = nr.FloatForm.of(table, b, -3, clamp, channels_first, 2, lift)
        x = (acc - b).astype(np.float64)
        out = np.empty(acc.shape, np.int16)
        if channels_first:
            nr.tflite_requantize(np.ascontiguousarray(x.T), form, clamp, out.T, nr.Scratch())
        else:
            nr.tflite_requantize(x, form, clamp, out, nr.Scratch())
        np.testing.assert_array_equal(out, np.clip(want - 3, *clamp))
