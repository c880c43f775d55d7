"""The NPU executor against the `qnn` reference kernels run on the same integers.

Each test builds a small program by hand (tests/npu_programs.py), runs it, and compares
every output with the result of the corresponding `qnn` op (parsed from text and
evaluated by runtime/qnn_interpreter.py) or with numpy written from docs/binary-format.md.
conv2d and the output stage: test_executor_conv.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from npu_programs import (
    CTX,
    NP,
    TINY,
    Builder,
    arr,
    clamp_attrs,
    inst,
    nhwc,
    qnn,
    qt,
    qt_axis,
    random_table,
    spread,
    tensor,
)
from xdsl.parser import Parser

from npuc.backend.npubin import encode_program, program_op
from npuc.diagnostics import NpucError
from npuc.dialects.npu_isa import (
    IODesc,
)
from npuc.runtime.executor import Executor, run_with_dump
from npuc.runtime.loader import load

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
    p = dict(lhs_zero_point=-9, ofm_zero_point=4, rounding="tflite", clamp_min=-128, clamp_max=127)
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
    body = [
        inst(
            "matmul", (lt, rview, b.const(table, "i32"), yt), lhs_zero_point=128, ofm_zero_point=-1
        )
    ]
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
    avg = dict(
        kernel=(3, 3),
        strides=(2, 2),
        pads=(1, 1, 1, 1),
        ceil_mode=True,
        count_include_pad=True,
        ifm_zero_point=128,
        ofm_zero_point=120,
        multiplier=1518500250,
        shift=31,
    )
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

    max_attrs = (
        f"kernel = {arr((3, 3))}, strides = {arr((2, 2))}, pads = {arr((1,) * 4)}, "
        f"dilations = {arr((2, 2))}"
    )
    want_max = np.clip(ref("qnn.max_pool2d", (1, 3, 3, 3), "u8", 128, max_attrs), 10, 250)
    np.testing.assert_array_equal(got["max"], want_max)
    avg_attrs = (
        f"kernel = {arr((3, 3))}, strides = {arr((2, 2))}, pads = {arr((1,) * 4)}, "
        f"multiplier = {arr([1518500250])}, shift = {arr([31])}, ceil_mode = true, "
        "count_include_pad = true"
    )
    np.testing.assert_array_equal(
        got["avg"], ref("qnn.avg_pool2d", (1, 3, 4, 4), "u8", 120, avg_attrs)
    )
    tfl_attrs = (
        f"kernel = {arr((3, 3))}, strides = {arr((2, 2))}, pads = {arr((0,) * 4)}, "
        f'multiplier = {arr([1 << 30])}, shift = {arr([30])}, rounding = "tflite"'
    )
    np.testing.assert_array_equal(
        got["avg_tfl"], ref("qnn.avg_pool2d", (1, 3, 3, 3), "u8", 128, tfl_attrs)
    )
    gap = ref(
        "qnn.global_avg_pool",
        (1, 3, 1, 1),
        "u8",
        100,
        f"multiplier = {arr([1 << 30])}, shift = {arr([29])}",
    )
    np.testing.assert_array_equal(got["gap"], gap)
    total = ref(
        "qnn.reduce_sum",
        (1, 3, 1, 1),
        "i8",
        -7,
        f'multiplier = {arr([876523970])}, shift = {arr([38])}, rounding = "tflite", '
        f"axes = {arr((2, 3))}",
    )
    np.testing.assert_array_equal(got["sum"], total)


# --------------------------------------------------------------------------- eltwise

SCALE = dict(
    left_shift=20,
    lhs_multiplier=1 << 30,
    lhs_shift=31,
    rhs_multiplier=1500000000,
    rhs_shift=32,
    multiplier=1 << 30,
    shift=50,
)


def _scale_attrs(p: dict) -> str:
    return (
        f"left_shift = {p['left_shift']} : i64, lhs_multiplier = {p['lhs_multiplier']} : i64, "
        f"lhs_shift = {p['lhs_shift']} : i64, rhs_multiplier = {p['rhs_multiplier']} : i64, "
        f"rhs_shift = {p['rhs_shift']} : i64, multiplier = {arr([p['multiplier']])}, "
        f"shift = {arr([p['shift']])}"
    )


@pytest.mark.parametrize(
    "kind", ["add", "sub", "mul", "maximum", "minimum", "squared_difference", "prelu", "div"]
)
def test_eltwise_matches_qnn(kind: str, kernel_path: str) -> None:
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
    p = dict(
        kind=kind,
        lhs_zero_point=azp,
        rhs_zero_point=bzp,
        ofm_zero_point=ozp,
        clamp_min=-100,
        clamp_max=110,
    )
    if kind in ("add", "sub", "squared_difference"):
        p.update(SCALE, rounding="half_to_even")
        if kind == "squared_difference":
            p.update(shift=62, rounding="tflite")
        attrs = _scale_attrs(p) + ", " + clamp_attrs(p)
    elif kind == "mul":
        p.update(multiplier=1234567890, shift=38, rounding="half_up")
        attrs = f"multiplier = {arr([1234567890])}, shift = {arr([38])}, " + clamp_attrs(p)
    elif kind == "prelu":
        p.update(
            multiplier=1 << 30, shift=30, rhs_multiplier=1 << 30, rhs_shift=36, rounding="tflite"
        )
        attrs = (
            f"multiplier = {arr([1 << 30])}, shift = {arr([30])}, alpha_multiplier = "
            f"{1 << 30} : i64, alpha_shift = 36 : i64, " + clamp_attrs(p)
        )
    elif kind == "div":
        p.update(multiplier=1 << 30, shift=24, rounding="tflite", overshift="x86")
        attrs = (
            f'multiplier = {arr([1 << 30])}, shift = {arr([24])}, overshift = "x86", '
            + clamp_attrs(p)
        )
    else:
        p.update(ofm_zero_point=0, lhs_zero_point=0, rhs_zero_point=0)
        azp = bzp = ozp = 0
        attrs = ""
    got = b.run([inst("eltwise", (at, bview, yt), **p)])["y"]
    op = {"prelu": "qnn.prelu"}.get(kind, f"qnn.{kind}")
    want = qnn(
        op,
        [a.astype(NP[dtype]), bv.astype(NP[dtype])],
        [qt((2, 3, 8), dtype, azp), qt((8,), dtype, bzp)],
        qt((2, 3, 8), dtype, ozp),
        attrs,
    )
    if kind in ("maximum", "minimum"):
        want = np.clip(want, -100, 110)
    np.testing.assert_array_equal(got, want)
    spread(got, -100, 110)


# --------------------------------------------------------------------------- lut, softmax, move


@pytest.mark.parametrize(
    ("input_multiplier", "input_left_shift", "diff_min", "width"),
    [
        (1717986944, 23, -248, 1000),  # MobileNetV2's
        (1717986944, 22, -496, 20),
        (1073741824, 25, -31, 64),  # many diffs below diff_min
        (2147483520, 20, -1000, 3),
        (1500000000, 24, -200, 255),
    ],
)
def test_softmax_equals_the_qnn_kernel(
    input_multiplier: int, input_left_shift: int, diff_min: int, width: int
) -> None:
    """The softmax instruction's row reciprocals on Python integers give the bytes of
    `qa.softmax_int8` (the qnn interpreter's, TFLite's reference kernel), on rows from
    near-equal values to the full int8 range."""
    from npuc.runtime.kernels.qnn_arith import softmax_int8
    from npuc.runtime.npu_kernels import Softmax

    rng = np.random.default_rng(width)
    near = 8 if width < 256 else 128  # rows of near-equal values (sums up to the limit)
    rows = [
        rng.integers(-128, 128, width),
        rng.integers(128 - near, 128, width),
        np.full(width, -128) + (np.arange(width) == 0) * 255,
        np.linspace(-128, 127, width).round(),
    ]
    x = np.stack(rows).astype(np.int8).reshape(2, 2, width)
    args = (input_multiplier, input_left_shift, diff_min)
    out = np.empty_like(x)
    want = softmax_int8(x, *args)
    Softmax(*args)(x, out)
    np.testing.assert_array_equal(out, want)
    assert len(np.unique(out)) > 3


def test_softmax_reciprocal_steps_equal_the_vectorized_ones() -> None:
    """The scalar fixed-point steps of a row's reciprocal equal qnn_arith's array
    versions bit for bit over the whole Q0.31 input range (the int8 outputs hide most
    of their low bits)."""
    from npuc.runtime import npu_kernels as nk
    from npuc.runtime.kernels import qnn_arith as qa

    rng = np.random.default_rng(12)
    a = np.concatenate([rng.integers(0, 1 << 31, 2000), [0, 1, (1 << 31) - 1]])
    want = qa.fx_one_over_one_plus_x_for_x_in_0_1(a)
    np.testing.assert_array_equal([nk._one_over_one_plus_x(int(v)) for v in a], want)
    pairs = rng.integers(-(1 << 31), 1 << 31, (2000, 2))
    products = qa.fx_mul(pairs[:, 0], pairs[:, 1])
    np.testing.assert_array_equal([nk._mul(int(u), int(v)) for u, v in pairs], products)
    assert nk._mul(-(1 << 31), -(1 << 31)) == qa.fx_mul(-(1 << 31), -(1 << 31))


def test_softmax_refuses_a_sum_of_512() -> None:
    """1000 equal inputs sum to 1000 exponentials of 0: TFLite's kernel fails, so does
    the instruction (as `qa.softmax_int8`)."""
    from npuc.runtime.kernels.qnn_arith import softmax_int8
    from npuc.runtime.npu_kernels import Softmax

    x = np.zeros((1, 1000), np.int8)
    with pytest.raises(NpucError, match="reaches 512"):
        softmax_int8(x, 1717986944, 23, -248)
    with pytest.raises(NpucError, match="reaches 512"):
        Softmax(1717986944, 23, -248)(x, np.empty_like(x))


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
    want = qnn(
        "qnn.softmax",
        [x.reshape(6, 20).astype(np.int8)],
        [qt((6, 20))],
        qt((6, 20), "i8", -128, 0.00390625),
        "input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = -496 : i64",
    )
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
