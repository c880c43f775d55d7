"""qnn kernels against references written from docs/quantization.md in Python integers.

The references below never call npuc's arithmetic: accumulators are summed by
explicit loops over Python ints, requantization is an exact `Fraction` rounded
by the named rule (or TFLite's two-rounding algorithm, transcribed from
TFLite's C++), and results must match exactly.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from exact_rounding import round_fraction
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    FunctionType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f32,
    i32,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Region
from xdsl.utils.exceptions import VerifyException

from npuc.diagnostics import KernelError
from npuc.dialects import nn_shapes, qnn
from npuc.dialects.arrays import ints
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.integer import quantize_multiplier
from npuc.runtime.kernels import conv, qnn_arith
from npuc.runtime.kernels.qnn_arith import pooled_output
from npuc.runtime.qnn_interpreter import run_function
from npuc.tensors import to_dense

ROUNDINGS = ("half_away_from_zero", "half_to_even", "tflite")

# --------------------------------------------------------------------------- building ops


def qt(storage: str, scales: Any, zps: Any = 0, axis: int | None = None, **kw: Any):
    return UniformQuantizedType(storage, scales, zps, axis=axis, **kw)


def tensor(shape: tuple[int, ...], element: Attribute) -> TensorType:
    return TensorType(element, shape)


def requant(multipliers, shifts, rounding: str | None = None, clamp=(None, None)) -> dict:
    props: dict[str, Attribute] = {
        "multiplier": ints([int(m) for m in np.ravel(multipliers)]),
        "shift": ints([int(s) for s in np.ravel(shifts)]),
    }
    if rounding is not None:
        props["rounding"] = StringAttr(rounding)
    if clamp[0] is not None:
        props["clamp_min"] = IntegerAttr(int(clamp[0]), i64)
    if clamp[1] is not None:
        props["clamp_max"] = IntegerAttr(int(clamp[1]), i64)
    return props


def window_props(**values: Any) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {}
    for key, value in values.items():
        if isinstance(value, bool):
            props[key] = BoolAttr.from_bool(value)
        elif isinstance(value, int):
            props[key] = IntegerAttr(value, i64)
        elif isinstance(value, str):
            props[key] = StringAttr(value)
        elif isinstance(value, DenseArrayBase):
            props[key] = value
        else:
            props[key] = ints(value)
    return props


def run_op(op_type, args: list[tuple[np.ndarray, Attribute]], results: list[Attribute], props):
    """Run one op as a function whose arguments are its operands."""
    types = [ty for _, ty in args]
    block = Block(arg_types=types)
    op = op_type.create(operands=list(block.args), properties=props, result_types=results)
    block.add_ops([op, ReturnOp(*op.results)])
    func = FuncOp("main", FunctionType.from_lists(types, results), Region(block))
    func.verify()
    outputs = run_function(func, [a for a, _ in args])
    for array, ty in zip(outputs, results, strict=True):
        element = ty.element_type
        dtype = element.storage_dtype() if isinstance(element, UniformQuantizedType) else None
        assert dtype is None or array.dtype == dtype
    return outputs


def stored(rng: np.random.Generator, shape, q: UniformQuantizedType) -> np.ndarray:
    return rng.integers(q.qmin, q.qmax + 1, shape).astype(q.storage_dtype())


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240611)


# --------------------------------------------------------------------------- references


def tflite_multiply(x: int, m0: int, shift: int) -> int:
    """TFLite's MultiplyByQuantizedMultiplier (reference C++), TFLite's shift = 31 - shift."""
    tfl_shift = 31 - shift
    left, right = max(tfl_shift, 0), max(-tfl_shift, 0)
    x = x * (1 << left)
    ab = x * m0
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    high = int(Fraction(ab + nudge, 1 << 31))  # C division truncates toward zero
    mask = (1 << right) - 1
    remainder = high & mask
    threshold = (mask >> 1) + (1 if high < 0 else 0)
    return (high >> right) + (1 if remainder > threshold else 0)


def ref_requantize(acc: int, m0: int, shift: int, mode: str) -> int:
    if mode == "tflite":
        return tflite_multiply(acc, m0, shift)
    return round_fraction(Fraction(acc * m0) / Fraction(2) ** shift, mode)


def ref_output(acc: int, m0: int, shift: int, mode: str, zp: int, lo: int, hi: int) -> int:
    return min(max(zp + ref_requantize(acc, m0, shift, mode), lo), hi)


def pick_multiplier(rng: np.random.Generator, accs: list[int], reach: int = 60):
    """(m0, shift) scaling the largest |acc| to about `reach`, so outputs are not all clamped."""
    m0 = int(rng.integers(1 << 30, 1 << 31))
    peak = max([abs(a) for a in accs] + [1])
    shift = max(-31, min(62, round(math.log2(m0 * peak / reach))))
    return m0, shift


# --------------------------------------------------------------------------- conv2d


def ref_conv_acc(x, w, bias, zx, zw, strides, pads, dilations, groups):
    """Accumulators [N][O][OH][OW] by explicit loops; zw holds one zero point per channel."""
    n_, _, h_, w_ = x.shape
    o_, cg, kh, kw = w.shape
    oh = (h_ + pads[0] + pads[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (w_ + pads[1] + pads[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    xs, ws = x.tolist(), w.tolist()
    per_group = o_ // groups
    out = [[[[0] * ow for _ in range(oh)] for _ in range(o_)] for _ in range(n_)]
    for n in range(n_):
        for o in range(o_):
            g = o // per_group
            for i in range(oh):
                for j in range(ow):
                    acc = int(bias[o]) if bias is not None else 0
                    for c in range(cg):
                        for ki in range(kh):
                            r = i * strides[0] - pads[0] + ki * dilations[0]
                            if not 0 <= r < h_:
                                continue
                            for kj in range(kw):
                                col = j * strides[1] - pads[1] + kj * dilations[1]
                                if 0 <= col < w_:
                                    xv = xs[n][g * cg + c][r][col] - zx
                                    acc += xv * (ws[o][c][ki][kj] - zw[o])
                    out[n][o][i][j] = acc
    return out


def check_conv(
    rng,
    *,
    n=1,
    c=4,
    o=4,
    hw=(5, 6),
    k=(3, 3),
    strides=(1, 1),
    pads=(0, 0, 0, 0),
    dilations=(1, 1),
    groups=1,
    x_type=None,
    w_type=None,
    out_type=None,
    bias=True,
    per_channel_multipliers=False,
    require_spread=True,
    rounding=None,
    clamp=(None, None),
):
    x_type = x_type or qt("i8", 0.05, -3)
    w_type = w_type or qt("i8", 0.02)
    out_type = out_type or qt("i8", 0.1, 2)
    x = stored(rng, (n, c, *hw), x_type)
    w = stored(rng, (o, c // groups, *k), w_type)
    b = rng.integers(-2000, 2000, o).astype(np.int32) if bias else None
    zw = list(w_type.zero_point_values()) * (o if not w_type.per_axis else 1)
    accs = ref_conv_acc(x, w, b, x_type.zero_point, zw, strides, pads, dilations, groups)
    flat = np.array(accs).reshape(n, o, -1)
    if per_channel_multipliers:
        params = [pick_multiplier(rng, flat[:, ch].ravel().tolist()) for ch in range(o)]
    else:
        params = [pick_multiplier(rng, flat.ravel().tolist())] * o
    mode = rounding or "half_away_from_zero"
    lo = out_type.qmin if clamp[0] is None else clamp[0]
    hi = out_type.qmax if clamp[1] is None else clamp[1]
    want = np.array(
        [
            [
                [
                    [ref_output(a, *params[ch], mode, out_type.zero_point, lo, hi) for a in row]
                    for row in accs[b_][ch]
                ]
                for ch in range(o)
            ]
            for b_ in range(n)
        ]
    )
    ms = [p[0] for p in params] if per_channel_multipliers else [params[0][0]]
    ss = [p[1] for p in params] if per_channel_multipliers else [params[0][1]]
    props = requant(ms, ss, rounding, clamp) | window_props(
        strides=strides, pads=pads, dilations=dilations, groups=groups
    )
    out_shape = (n, o, *want.shape[2:])
    args = [(x, tensor(x.shape, x_type)), (w, tensor(w.shape, w_type))]
    if b is not None:
        args.append((b, tensor(b.shape, i32)))
    (y,) = run_op(qnn.Conv2dOp, args, [tensor(out_shape, out_type)], props)
    np.testing.assert_array_equal(y, want)
    if require_spread and y.size >= 20:
        # Hand-picked cases must exercise real rescaling; random draws are checked above anyway.
        assert len(np.unique(y)) > 3, "degenerate test: outputs nearly constant"


def test_conv_per_tensor_int8(rng):
    check_conv(rng)


def test_conv_uint8_per_channel_strided_dilated_padded_relu(rng):
    w_type = qt("i8", [0.01, 0.02, 0.015, 0.03, 0.05, 0.02], 0, axis=0, storage_min=-127)
    check_conv(
        rng,
        c=3,
        o=6,
        hw=(9, 8),
        strides=(2, 1),
        pads=(1, 2, 0, 1),
        dilations=(2, 1),
        x_type=qt("u8", 0.04, 128),
        w_type=w_type,
        out_type=qt("u8", 0.08, 10),
        per_channel_multipliers=True,
        clamp=(10, None),
    )


@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_conv_grouped_roundings(rng, rounding):
    check_conv(rng, c=4, o=6, groups=2, pads=(1, 1, 1, 1), rounding=rounding)


def test_conv_depthwise_with_multiplier(rng):
    w_type = qt("i8", [0.01 * (i + 1) for i in range(8)], [0] * 8, axis=0)
    check_conv(
        rng,
        c=4,
        o=8,
        groups=4,
        pads=(1, 1, 1, 1),
        strides=(2, 2),
        w_type=w_type,
        bias=True,
        per_channel_multipliers=True,
    )


def test_conv_int16_activations_int8_weights(rng):
    check_conv(
        rng,
        c=3,
        o=2,
        x_type=qt("i16", 0.001, 5),
        out_type=qt("i16", 0.002, -7),
        w_type=qt("i8", 0.02, 3),
        rounding="half_to_even",
    )


def test_conv_int4_weights_without_bias(rng):
    check_conv(rng, c=2, o=3, k=(1, 2), w_type=qt("i4", 0.1, -1), bias=False)


def test_conv_accumulators_beyond_float64_are_exact(rng):
    """Accumulators past 2^53 take the int64 GEMM; a float64 one would round them."""
    x = rng.integers(2**31 - 2**28, 2**31, (1, 2, 3, 3))
    w = rng.integers(2**20 - 2**17, 2**20, (2, 2, 2, 2))
    x[0, :, 2, 2] *= -1
    want = ref_conv_acc(x, w, None, 0, [0, 0], (1, 1), (0, 0, 0, 0), (1, 1), 1)
    assert max(abs(a) for a in np.ravel(want).tolist()) > 2**53
    window = {"strides": (1, 1), "pads": (0, 0, 0, 0), "dilations": (1, 1), "groups": 1}
    rounded = conv.conv2d(x.astype(np.float64), w.astype(np.float64), **window)
    assert rounded.astype(np.int64).tolist() != want  # the test data needs the int64 path
    assert qnn_arith.conv2d_acc(x, w, **window).tolist() == want


def test_exact_matmul_picks_int64_when_float64_would_round():
    a = np.array([[2**40 + 1, 3]], np.int64)
    b = np.array([[2**20 + 1], [5]], np.int64)
    exact = (2**40 + 1) * (2**20 + 1) + 15
    assert int(np.float64(a[0, 0]) * np.float64(b[0, 0]) + 15.0) != exact  # float64 is wrong
    assert int(qnn_arith.exact_matmul(a, b)[0, 0]) == exact
    small = np.array([[3, -4]], np.int64)
    assert qnn_arith.dot_bound(2, small, small.T) == 2 * 4 * 4


def test_accumulators_beyond_int64_are_refused():
    huge = np.array([[2**40, 2**40]], np.int64)
    with pytest.raises(KernelError, match="int64"):
        qnn_arith.exact_matmul(huge, huge.T * 2**10)


def test_requantize_of_huge_accumulators_saturates_instead_of_wrapping():
    x_type, out_type = qt("i32", 1.0), qt("i8", 1.0)
    x = np.array([2**31 - 1, -(2**31), 3], np.int32)
    (y,) = run_op(
        qnn.RequantizeOp,
        [(x, tensor((3,), x_type))],
        [tensor((3,), out_type)],
        requant([2**31 - 1], [-20]),
    )
    assert y.tolist() == [127, -128, 127]


@settings(max_examples=400, deadline=None)
@given(
    acc=st.integers(-(2**62) + 1, 2**62 - 1),
    m0=st.integers(0, 2**31 - 1),
    shift=st.integers(-31, 62),
    rounding=st.sampled_from(["half_away_from_zero", "half_to_even"]),
)
@example(acc=2**40 + 2**9, m0=2**30, shift=40, rounding="half_away_from_zero")  # tie
@example(acc=2**40 + 2**9, m0=2**30, shift=40, rounding="half_to_even")
@example(acc=-(2**61) - 2**9, m0=3, shift=10, rounding="half_to_even")  # tie below 2^31
@example(acc=2**61 + 3 * 2**9, m0=3, shift=11, rounding="half_away_from_zero")
@example(acc=2**62 - 1, m0=2**31 - 1, shift=62, rounding="half_to_even")
def test_requantize_is_exact_for_accumulators_beyond_int32(acc, m0, shift, rounding):
    """Products of up to 93 bits round exactly; results of 2^60 and more saturate."""
    got = int(qnn_arith.wide_requantize(np.array([acc]), m0, shift, rounding)[0])
    exact = ref_requantize(acc, m0, shift, rounding)
    if abs(exact) < 2**60:
        assert got == exact
    else:
        assert got * exact > 0 and abs(got) >= 2**60


@settings(max_examples=400, deadline=None)
@given(
    shift=st.integers(2, 62),
    log_m=st.integers(1, 30),
    data=st.data(),
    delta=st.sampled_from([-1, 0, 1]),
    negative=st.booleans(),
    rounding=st.sampled_from(["half_away_from_zero", "half_to_even"]),
)
def test_requantize_beyond_int32_breaks_ties_exactly(shift, log_m, data, delta, negative, rounding):
    """acc * m a tie (odd multiple of 2^(shift-1)), or one step of m either side of it."""
    assume(shift - 1 >= log_m)
    # acc ~ j * 2^(shift - log_m) in [2^(62 - log_m), 2^62): the product overflows int64
    lo, hi = 2 ** max(0, 62 - shift), 2 ** (62 - shift + log_m) - 2
    assume(lo <= hi)
    j = data.draw(st.integers(lo, hi))
    acc = ((2 * j + 1) << (shift - 1 - log_m)) + delta
    assume(acc < 2**62 and acc << log_m >= 2**62)
    acc = -acc if negative else acc
    got = int(qnn_arith.wide_requantize(np.array([acc]), 1 << log_m, shift, rounding)[0])
    exact = ref_requantize(acc, 1 << log_m, shift, rounding)
    assert got == exact if abs(exact) < 2**60 else abs(got) >= 2**60


@settings(max_examples=300, deadline=None)
@given(
    shift=st.integers(4, 32),
    m0=st.integers(2**29, 2**31 - 1).map(lambda m: m | 1),
    data=st.data(),
    delta=st.sampled_from([-1, 0, 1]),
    negative=st.booleans(),
    rounding=st.sampled_from(["half_away_from_zero", "half_to_even"]),
)
def test_requantize_beyond_int32_sees_the_lowest_bit_of_an_odd_product(
    shift, m0, data, delta, negative, rounding
):
    """acc * m0 (m0 odd, so the product's lowest bit can be set) a tie, or one unit either
    side of it, too big for int64 and its result below 2^60 (which comes back exact): one
    unit above a tie must round up."""
    modulus = 1 << shift
    residue = ((modulus // 2 + delta) * pow(m0, -1, modulus)) % modulus  # acc*m0 = half + delta
    lowest = -(-((2**63 // m0 + 1) - residue) // modulus)
    highest = (min(2**62, 2 ** (60 + shift) // m0) - 1 - residue) // modulus
    acc = residue + data.draw(st.integers(lowest, highest)) * modulus
    assert acc * m0 % modulus == modulus // 2 + delta and acc * m0 >= 2**63
    acc = -acc if negative else acc
    got = int(qnn_arith.wide_requantize(np.array([acc]), m0, shift, rounding)[0])
    assert got == ref_requantize(acc, m0, shift, rounding)


# --------------------------------------------------------------------------- dense layers


def check_fully_connected(
    rng,
    x_type,
    w_type,
    out_type,
    *,
    n=3,
    k=20,
    o=5,
    rounding=None,
    per_channel=False,
    clamp=(None, None),
    bias=True,
):
    x = stored(rng, (n, k), x_type)
    w = stored(rng, (o, k), w_type)
    b = rng.integers(-5000, 5000, o).astype(np.int32) if bias else None
    zw = list(w_type.zero_point_values()) if w_type.per_axis else [w_type.zero_point] * o
    xs, ws = x.tolist(), w.tolist()
    accs = [
        [
            (int(b[j]) if bias else 0)
            + sum((xs[i][t] - x_type.zero_point) * (ws[j][t] - zw[j]) for t in range(k))
            for j in range(o)
        ]
        for i in range(n)
    ]
    if per_channel:
        params = [pick_multiplier(rng, [accs[i][j] for i in range(n)]) for j in range(o)]
    else:
        params = [pick_multiplier(rng, [a for row in accs for a in row])] * o
    mode = rounding or "half_away_from_zero"
    lo = out_type.qmin if clamp[0] is None else clamp[0]
    hi = out_type.qmax if clamp[1] is None else clamp[1]
    want = [
        [ref_output(accs[i][j], *params[j], mode, out_type.zero_point, lo, hi) for j in range(o)]
        for i in range(n)
    ]
    used = params if per_channel else params[:1]
    props = requant([p[0] for p in used], [p[1] for p in used], rounding, clamp)
    args = [(x, tensor(x.shape, x_type)), (w, tensor(w.shape, w_type))]
    if bias:
        args.append((b, tensor((o,), i32)))
    (y,) = run_op(qnn.FullyConnectedOp, args, [tensor((n, o), out_type)], props)
    assert y.tolist() == want


def test_fully_connected_uint8(rng):
    check_fully_connected(rng, qt("u8", 0.05, 130), qt("u8", 0.01, 120), qt("u8", 0.2, 100))


def test_fully_connected_per_channel_relu6(rng):
    w_type = qt("i8", [0.01, 0.02, 0.03, 0.04, 0.05], 0, axis=0, storage_min=-127)
    check_fully_connected(
        rng,
        qt("i8", 0.05, -10),
        w_type,
        qt("i8", 0.1, -20),
        per_channel=True,
        clamp=(-20, -20 + 60),
        rounding="tflite",
    )


def test_matmul_batched_and_vector(rng):
    a_type, b_type, out_type = qt("i8", 0.1, 4), qt("u8", 0.2, 128), qt("i8", 0.5, -1)
    a = stored(rng, (2, 3, 7), a_type)
    b = stored(rng, (7, 4), b_type)
    v = stored(rng, (7,), b_type)
    al, bl, vl = a.tolist(), b.tolist(), v.tolist()
    accs = [
        [
            [sum((al[p][i][t] - 4) * (bl[t][j] - 128) for t in range(7)) for j in range(4)]
            for i in range(3)
        ]
        for p in range(2)
    ]
    m0, shift = pick_multiplier(rng, np.ravel(accs).tolist())
    props = requant([m0], [shift], "half_to_even")
    (y,) = run_op(
        qnn.MatMulOp,
        [(a, tensor(a.shape, a_type)), (b, tensor(b.shape, b_type))],
        [tensor((2, 3, 4), out_type)],
        props,
    )
    want = [
        [[ref_output(x, m0, shift, "half_to_even", -1, -128, 127) for x in r] for r in m]
        for m in accs
    ]
    assert y.tolist() == want
    vaccs = [
        [sum((al[p][i][t] - 4) * (vl[t] - 128) for t in range(7)) for i in range(3)]
        for p in range(2)
    ]
    (yv,) = run_op(
        qnn.MatMulOp,
        [(a, tensor(a.shape, a_type)), (v, tensor(v.shape, b_type))],
        [tensor((2, 3), out_type)],
        props,
    )
    assert yv.tolist() == [
        [ref_output(x, m0, shift, "half_to_even", -1, -128, 127) for x in r] for r in vaccs
    ]


# --------------------------------------------------------------------------- add, sub, mul


def add_params(sa: float, sb: float, so: float, left_shift: int) -> dict:
    """TFLite's parameters for add, from the scales (docs/quantization.md)."""
    twice_max = 2 * max(sa, sb)
    lm, ls = quantize_multiplier(sa / twice_max)
    rm, rs = quantize_multiplier(sb / twice_max)
    m, s = quantize_multiplier(twice_max / ((1 << left_shift) * so))
    return {"left_shift": left_shift, "lhs": (lm, ls), "rhs": (rm, rs), "out": (m, s)}


def check_add(
    rng,
    op_type,
    a_type,
    b_type,
    out_type,
    a_shape,
    b_shape,
    left_shift=20,
    rounding=None,
    clamp=(None, None),
):
    p = add_params(a_type.scale, b_type.scale, out_type.scale, left_shift)
    a, b = stored(rng, a_shape, a_type), stored(rng, b_shape, b_type)
    mode = rounding or "half_away_from_zero"
    shape = nn_shapes.broadcast(a_shape, b_shape)
    ab, bb = np.broadcast_to(a, shape).ravel().tolist(), np.broadcast_to(b, shape).ravel().tolist()
    sign = -1 if op_type is qnn.SubOp else 1
    lo = out_type.qmin if clamp[0] is None else clamp[0]
    hi = out_type.qmax if clamp[1] is None else clamp[1]
    want = []
    for x, y in zip(ab, bb, strict=True):
        xa = ref_requantize((x - a_type.zero_point) << left_shift, *p["lhs"], mode)
        yb = ref_requantize((y - b_type.zero_point) << left_shift, *p["rhs"], mode)
        want.append(ref_output(xa + sign * yb, *p["out"], mode, out_type.zero_point, lo, hi))
    props = requant([p["out"][0]], [p["out"][1]], rounding, clamp) | {
        "left_shift": IntegerAttr(left_shift, i64),
        "lhs_multiplier": IntegerAttr(p["lhs"][0], i64),
        "lhs_shift": IntegerAttr(p["lhs"][1], i64),
        "rhs_multiplier": IntegerAttr(p["rhs"][0], i64),
        "rhs_shift": IntegerAttr(p["rhs"][1], i64),
    }
    (y,) = run_op(
        op_type,
        [(a, tensor(a_shape, a_type)), (b, tensor(b_shape, b_type))],
        [tensor(shape, out_type)],
        props,
    )
    assert y.ravel().tolist() == want


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("op_type", [qnn.AddOp, qnn.SubOp])
def test_add_sub_int8_broadcast(rng, op_type, rounding):
    check_add(
        rng,
        op_type,
        qt("i8", 0.05, -3),
        qt("i8", 0.11, 7),
        qt("i8", 0.13, 1),
        (2, 3, 4),
        (3, 1),
        rounding=rounding,
    )


def test_add_uint8_relu_and_int16(rng):
    check_add(
        rng,
        qnn.AddOp,
        qt("u8", 0.02, 128),
        qt("u8", 0.03, 120),
        qt("u8", 0.04, 5),
        (4, 5),
        (4, 5),
        clamp=(5, None),
    )
    check_add(
        rng,
        qnn.AddOp,
        qt("i16", 0.0005),
        qt("i16", 0.0002),
        qt("i16", 0.001),
        (3, 7),
        (7,),
        left_shift=15,
    )


@pytest.mark.parametrize("rounding", ["half_away_from_zero", "half_to_even"])
def test_add_rescales_its_inputs_with_the_op_rounding(rounding):
    """lhs' = a / 4 and rhs' = b / 4 are exact ties for odd multiples of 2: the rule decides."""
    q = qt("i8", 1.0)
    a = np.array([2, -2, 6, -6, 10, 3], np.int8)
    b = np.array([2, 2, 2, -2, -6, 1], np.int8)
    props = requant([1 << 30], [30], rounding) | {
        "left_shift": IntegerAttr(0, i64),
        "lhs_multiplier": IntegerAttr(1 << 30, i64),
        "lhs_shift": IntegerAttr(32, i64),
        "rhs_multiplier": IntegerAttr(1 << 30, i64),
        "rhs_shift": IntegerAttr(32, i64),
    }
    (y,) = run_op(qnn.AddOp, [(a, tensor((6,), q)), (b, tensor((6,), q))], [tensor((6,), q)], props)
    quarter = [round_fraction(Fraction(int(v), 4), rounding) for v in a.tolist()]
    quarter_b = [round_fraction(Fraction(int(v), 4), rounding) for v in b.tolist()]
    assert y.tolist() == [x + z for x, z in zip(quarter, quarter_b, strict=True)]
    assert quarter[0] == (1 if rounding == "half_away_from_zero" else 0)


def test_mul_broadcast(rng):
    a_type, b_type, out_type = qt("i8", 0.05, -3), qt("u8", 0.02, 128), qt("i8", 0.01, 2)
    a, b = stored(rng, (3, 4), a_type), stored(rng, (4,), b_type)
    accs = [
        (x + 3) * (y - 128) for x, y in zip(a.ravel().tolist(), np.tile(b, 3).tolist(), strict=True)
    ]
    m0, shift = pick_multiplier(rng, accs)
    (y,) = run_op(
        qnn.MulOp,
        [(a, tensor((3, 4), a_type)), (b, tensor((4,), b_type))],
        [tensor((3, 4), out_type)],
        requant([m0], [shift]),
    )
    want = [ref_output(acc, m0, shift, "half_away_from_zero", 2, -128, 127) for acc in accs]
    assert y.ravel().tolist() == want


# --------------------------------------------------------------------------- pooling


def ref_avg_pool(x, zx, kernel, strides, pads, out_hw, include_pad):
    """(window sum, count) per output position, by explicit loops."""
    n_, c_, h_, w_ = x.shape
    xs = x.tolist()
    out = np.zeros((n_, c_, *out_hw), object)
    for n in range(n_):
        for c in range(c_):
            for i in range(out_hw[0]):
                for j in range(out_hw[1]):
                    total = count = 0
                    for ki in range(kernel[0]):
                        for kj in range(kernel[1]):
                            r = i * strides[0] - pads[0] + ki
                            col = j * strides[1] - pads[1] + kj
                            inside = 0 <= r < h_ and 0 <= col < w_
                            in_pad = -pads[0] <= r < h_ + pads[2] and -pads[1] <= col < w_ + pads[3]
                            if inside:
                                total += xs[n][c][r][col] - zx
                            count += inside or (include_pad and in_pad)
                    out[n, c, i, j] = (total, count)
    return out


def ref_pooled(total, count, m0, shift, mode, zp, qmin, qmax, zp_in=0):
    """The documented pooling output, clamped.

    Canonical rules: one rounding, zp + round(total * m0 / (count * 2^shift)).
    `tflite`: TFLite's kernel rounds the mean of the stored values half away from zero.
    """
    if mode == "tflite":
        stored_mean = round_fraction(Fraction(total + count * zp_in, count), "half_away_from_zero")
        return min(max(stored_mean - zp_in + zp, qmin), qmax)
    value = round_fraction(Fraction(total * m0, count) / Fraction(2) ** shift, mode)
    return min(max(zp + value, qmin), qmax)


def check_avg_pool(
    rng, x_type, out_type, shape, kernel, strides, pads, ceil_mode, include_pad, rounding=None
):
    x = stored(rng, shape, x_type)
    out_hw = nn_shapes.pool2d(shape, kernel, strides, pads, (1, 1), ceil_mode)[2:]
    sums = ref_avg_pool(x, x_type.zero_point, kernel, strides, pads, out_hw, include_pad)
    m0, shift = quantize_multiplier(x_type.scale / out_type.scale)
    mode = rounding or "half_away_from_zero"
    want = [
        ref_pooled(
            t,
            c,
            m0,
            shift,
            mode,
            out_type.zero_point,
            out_type.qmin,
            out_type.qmax,
            x_type.zero_point,
        )
        for t, c in sums.ravel()
    ]
    props = requant([m0], [shift], rounding) | window_props(
        kernel=kernel,
        strides=strides,
        pads=pads,
        ceil_mode=ceil_mode,
        count_include_pad=include_pad,
    )
    (y,) = run_op(
        qnn.AvgPool2dOp,
        [(x, tensor(shape, x_type))],
        [tensor((*shape[:2], *out_hw), out_type)],
        props,
    )
    assert y.ravel().tolist() == want


@pytest.mark.parametrize("include_pad", [False, True])
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_avg_pool(rng, ceil_mode, include_pad):
    check_avg_pool(
        rng,
        qt("i8", 0.05, -3),
        qt("u8", 0.03, 100),
        (1, 3, 7, 6),
        (3, 2),
        (2, 2),
        (1, 0, 1, 1),
        ceil_mode,
        include_pad,
    )


def test_global_avg_pool_rounds_half_away(rng):
    x_type, out_type = qt("i8", 0.1, 1), qt("i8", 0.1, 1)
    # Means -1.5 and 2.5 relative to the zero point: ties that must go away from zero.
    x = np.array([[[[0, 0], [0, -2]], [[4, 4], [3, 3]]]], np.int8)
    (y,) = run_op(
        qnn.GlobalAvgPoolOp,
        [(x, tensor(x.shape, x_type))],
        [tensor((1, 2, 1, 1), out_type)],
        requant([1 << 30], [30]),
    )
    assert y.ravel().tolist() == [1 - 2, 1 + 3]
    x = stored(rng, (2, 3, 5, 4), x_type)
    sums = (x.astype(np.int64) - 1).sum(axis=(2, 3)).ravel().tolist()
    (y,) = run_op(
        qnn.GlobalAvgPoolOp,
        [(x, tensor(x.shape, x_type))],
        [tensor((2, 3, 1, 1), out_type)],
        requant([1 << 30], [30]),
    )
    assert y.ravel().tolist() == [
        1 + round_fraction(Fraction(s, 20), "half_away_from_zero") for s in sums
    ]


def test_max_pool_and_global_max_pool(rng):
    x_type = qt("u8", 0.1, 128)
    x = stored(rng, (1, 2, 6, 7), x_type)
    kernel, strides, pads, dil = (2, 3), (2, 2), (1, 1, 1, 0), (2, 1)
    out_hw = nn_shapes.pool2d(x.shape, kernel, strides, pads, dil, True)[2:]
    want = np.zeros((1, 2, *out_hw), np.int64)
    for c in range(2):
        for i in range(out_hw[0]):
            for j in range(out_hw[1]):
                taps = []
                for ki in range(2):
                    for kj in range(3):
                        r, col = i * 2 - 1 + ki * 2, j * 2 - 1 + kj
                        if 0 <= r < 6 and 0 <= col < 7:
                            taps.append(int(x[0, c, r, col]))
                want[0, c, i, j] = max(taps)
    props = window_props(kernel=kernel, strides=strides, pads=pads, dilations=dil, ceil_mode=True)
    (y,) = run_op(
        qnn.MaxPool2dOp, [(x, tensor(x.shape, x_type))], [tensor((1, 2, *out_hw), x_type)], props
    )
    np.testing.assert_array_equal(y, want)
    (g,) = run_op(
        qnn.GlobalMaxPoolOp, [(x, tensor(x.shape, x_type))], [tensor((1, 2, 1, 1), x_type)], {}
    )
    assert g.ravel().tolist() == [int(x[0, c].max()) for c in range(2)]


# --------------------------------------------------------------------------- conversions, LUT


@pytest.mark.parametrize("rounding", ["half_away_from_zero", "half_to_even"])
def test_quantize_ties_and_saturation(rounding):
    q = qt("i8", 0.5, 3)
    x = np.array([1.25, -1.25, 0.75, -0.75, 100.0, -100.0, 0.0, 0.24], np.float32)
    (y,) = run_op(
        qnn.QuantizeOp, [(x, tensor((8,), f32))], [tensor((8,), q)], window_props(rounding=rounding)
    )
    want = [
        min(max(round_fraction(Fraction(float(v)) / Fraction(0.5), rounding) + 3, -128), 127)
        for v in x.tolist()
    ]
    assert y.tolist() == want


def test_quantize_saturates_huge_and_infinite_reals():
    q = qt("i8", 0.05, 3)
    x = np.array([np.inf, -np.inf, np.nan, 1e30, -1e30, 3e38], np.float32)
    (y,) = run_op(qnn.QuantizeOp, [(x, tensor((6,), f32))], [tensor((6,), q)], {})
    assert y.tolist() == [127, -128, 3, 127, -128, 127]  # NaN stands for real 0


def test_quantize_dequantize_per_axis(rng):
    q = qt("u8", [0.1, 0.02, 0.5], [128, 0, 7], axis=1)
    x = rng.normal(0, 2, (2, 3)).astype(np.float32)
    (y,) = run_op(qnn.QuantizeOp, [(x, tensor((2, 3), f32))], [tensor((2, 3), q)], {})
    scales, zps = [0.1, 0.02, 0.5], [128, 0, 7]
    want = [
        [
            min(
                max(
                    round_fraction(Fraction(float(x[i, c]) / scales[c]), "half_away_from_zero")
                    + zps[c],
                    0,
                ),
                255,
            )
            for c in range(3)
        ]
        for i in range(2)
    ]
    assert y.tolist() == want
    (d,) = run_op(qnn.DequantizeOp, [(y, tensor((2, 3), q))], [tensor((2, 3), f32)], {})
    assert d.dtype == np.float32
    assert d.tolist() == [
        [float(np.float32(scales[c] * (want[i][c] - zps[c]))) for c in range(3)] for i in range(2)
    ]


def test_requantize_per_axis_to_per_tensor_with_clamp(rng):
    q_in = qt("i8", [0.1, 0.2, 0.4], [1, -2, 0], axis=1)
    q_out = qt("u8", 0.05, 100)
    x = stored(rng, (4, 3), q_in)
    params = [pick_multiplier(rng, [127 * 4]) for _ in range(3)]
    props = requant([p[0] for p in params], [p[1] for p in params], "half_to_even", (90, 200))
    (y,) = run_op(qnn.RequantizeOp, [(x, tensor((4, 3), q_in))], [tensor((4, 3), q_out)], props)
    zps = [1, -2, 0]
    want = [
        [
            min(
                max(100 + ref_requantize(int(x[i, c]) - zps[c], *params[c], "half_to_even"), 90),
                200,
            )
            for c in range(3)
        ]
        for i in range(4)
    ]
    assert y.tolist() == want


def test_requantize_left_shift_multiplier(rng):
    q_in, q_out = qt("i8", 0.4, 0), qt("i16", 0.01, 0)
    x = stored(rng, (50,), q_in)
    # A negative shift multiplies: M = 5 * 2^3 = 40 = 0.4 / 0.01.
    (y,) = run_op(
        qnn.RequantizeOp, [(x, tensor((50,), q_in))], [tensor((50,), q_out)], requant([5], [-3])
    )
    assert y.tolist() == [v * 40 for v in x.tolist()]


@pytest.mark.parametrize(
    ("q_in", "q_out"),
    [
        (qt("i8", 0.1, 0), qt("i8", 0.05, -5)),
        (qt("u8", 0.1, 128), qt("u8", 0.004, 0)),
        (qt("i8", 0.1, 0, storage_min=-127), qt("i16", 0.001)),
        (qt("i4", 0.5, 0), qt("i8", 0.1)),
    ],
)
def test_lut_is_indexed_from_the_storage_minimum(rng, q_in, q_out):
    """y = table[q - storage_min]: the type's storage_min, so i8<-127:127> starts at -127."""
    table = rng.integers(q_out.qmin, q_out.qmax + 1, 1 << q_in.storage_bits.data)
    props = {"table": to_dense(table.astype(np.int32), IntegerType(32))}
    x = stored(rng, (3, 5), q_in)
    x.flat[:2] = [q_in.qmin, q_in.qmax]
    (y,) = run_op(qnn.LutOp, [(x, tensor((3, 5), q_in))], [tensor((3, 5), q_out)], props)
    assert y.tolist() == [[int(table[v - q_in.qmin]) for v in row] for row in x.tolist()]
    assert y.flat[0] == table[0]


# --------------------------------------------------------------------------- data movement


def test_movement_ops_keep_stored_integers(rng):
    q = qt("i8", 0.1, -4)
    x = stored(rng, (1, 4, 4, 6), q)
    xt = tensor(x.shape, q)

    def one(op_type, shape, **props):
        return run_op(op_type, [(x, xt)], [tensor(shape, q)], window_props(**props))[0]

    assert one(qnn.ReshapeOp, (4, 24)).tolist() == x.reshape(4, 24).tolist()
    assert one(qnn.TransposeOp, (1, 6, 4, 4), perm=(0, 3, 1, 2)).tolist() == [
        [[[x[0, c, h, w] for h in range(4)] for c in range(4)] for w in range(6)]
    ]
    sliced = one(
        qnn.SliceOp, (1, 2, 4, 2), starts=(0, 3, 0, 5), ends=(1, 0, 4, -1), steps=(1, -2, 1, -3)
    )
    assert sliced.tolist() == [
        [[[x[0, c, h, w] for w in (5, 2)] for h in range(4)] for c in (3, 1)]
    ]
    d2s = one(qnn.DepthToSpaceOp, (1, 1, 8, 12), block_size=2, mode="DCR")
    assert all(
        d2s[0, 0, 2 * h + i, 2 * w + j] == x[0, 2 * i + j, h, w]
        for h in range(4)
        for w in range(6)
        for i in range(2)
        for j in range(2)
    )
    s2d = one(qnn.SpaceToDepthOp, (1, 16, 2, 3), block_size=2)
    assert all(
        s2d[0, (2 * i + j) * 4 + c, h, w] == x[0, c, 2 * h + i, 2 * w + j]
        for c in range(4)
        for h in range(2)
        for w in range(3)
        for i in range(2)
        for j in range(2)
    )
    scales = DenseArrayBase.from_list(f32, [1.0, 1.0, 2.0, 0.5])
    up = one(
        qnn.ResizeOp,
        (1, 4, 8, 3),
        scales=scales,
        coordinate_mode="asymmetric",
        nearest_mode="floor",
    )
    assert up.tolist() == [
        [[[x[0, c, h // 2, 2 * w] for w in range(3)] for h in range(8)] for c in range(4)]
    ]
    y = stored(rng, (1, 2, 4, 6), q)
    (cat,) = run_op(
        qnn.ConcatOp,
        [(x, xt), (y, tensor(y.shape, q))],
        [tensor((1, 6, 4, 6), q)],
        window_props(axis=1),
    )
    assert cat.tolist() == [x[0].tolist() + y[0].tolist()]
    parts = run_op(
        qnn.SplitOp,
        [(x, xt)],
        [tensor((1, 4, 4, 2), q), tensor((1, 4, 4, 4), q)],
        window_props(axis=-1),
    )
    assert parts[0].tolist() == x[..., :2].tolist() and parts[1].tolist() == x[..., 2:].tolist()


def test_pad_uses_value_or_zero_point(rng):
    q = qt("u8", 0.1, 77)
    x = stored(rng, (2, 3), q)
    pads = (1, 0, 0, 2)

    def padded(props, qtype=q, data=x):
        return run_op(
            qnn.PadOp,
            [(data, tensor((2, 3), qtype))],
            [tensor((3, 5), qtype)],
            window_props(pads=pads, **props),
        )[0].tolist()

    assert padded({}) == [[77] * 5] + [[*row, 77, 77] for row in x.tolist()]
    assert padded({"value": 5}) == [[5] * 5] + [[*row, 5, 5] for row in x.tolist()]
    assert padded({"mode": "edge"}) == [[*x[0].tolist(), x[0, 2], x[0, 2]]] + [
        [*row, row[2], row[2]] for row in x.tolist()
    ]
    per_axis = qt("u8", [0.1, 0.2, 0.3], [1, 2, 3], axis=1)
    got = run_op(
        qnn.PadOp,
        [(x, tensor((2, 3), per_axis))],
        [tensor((3, 3), per_axis)],
        window_props(pads=(1, 0, 0, 0)),
    )[0]
    assert got.tolist() == [[1, 2, 3], *x.tolist()]


# --------------------------------------------------------------------------- properties


STORAGES = st.sampled_from([("i8", 0, -128, 127), ("u8", 128, 0, 255)])


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    storage=STORAGES,
    c=st.integers(1, 4),
    o_per_group=st.integers(1, 3),
    groups=st.integers(1, 2),
    k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    strides=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    dilations=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    pads=st.tuples(*[st.integers(0, 2)] * 4),
    per_channel=st.booleans(),
    rounding=st.sampled_from(ROUNDINGS),
)
def test_conv_property(
    seed, storage, c, o_per_group, groups, k, strides, dilations, pads, per_channel, rounding
):
    rng = np.random.default_rng(seed)
    name, _, lo, hi = storage
    o = o_per_group * groups
    assume(_conv_fits(hw := (int(rng.integers(4, 8)), int(rng.integers(4, 8))), k, pads, dilations))
    x_type = qt(name, 0.05, int(rng.integers(lo, hi + 1)))
    w_type = (
        qt("i8", [0.01] * o, [0] * o, axis=0, storage_min=-127)
        if per_channel
        else qt("i8", 0.02, int(rng.integers(-5, 6)))
    )
    out_type = qt(name, 0.1, int(rng.integers(lo // 2, hi // 2 + 1)))
    check_conv(
        rng,
        c=c * groups,
        o=o,
        hw=hw,
        k=k,
        strides=strides,
        pads=pads,
        dilations=dilations,
        groups=groups,
        x_type=x_type,
        w_type=w_type,
        out_type=out_type,
        per_channel_multipliers=per_channel,
        rounding=rounding,
        require_spread=False,
        bias=bool(seed % 2),
    )


def _conv_fits(hw, k, pads, dilations) -> bool:
    return all(hw[a] + pads[a] + pads[a + 2] >= dilations[a] * (k[a] - 1) + 1 for a in range(2))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    storage=STORAGES,
    n=st.integers(1, 3),
    k=st.integers(1, 40),
    o=st.integers(1, 6),
    per_channel=st.booleans(),
    rounding=st.sampled_from(ROUNDINGS),
)
def test_fully_connected_property(seed, storage, n, k, o, per_channel, rounding):
    rng = np.random.default_rng(seed)
    name, _, lo, hi = storage
    x_type = qt(name, 0.05, int(rng.integers(lo, hi + 1)))
    w_type = (
        qt("i8", [0.01 + i / 100 for i in range(o)], [0] * o, axis=0)
        if per_channel
        else qt(name, 0.03, int(rng.integers(lo, hi + 1)))
    )
    out_type = qt(name, 0.2, int(rng.integers(lo, hi + 1)))
    check_fully_connected(
        rng,
        x_type,
        w_type,
        out_type,
        n=n,
        k=k,
        o=o,
        rounding=rounding,
        per_channel=per_channel,
        bias=bool(seed % 2),
    )


SCALES = st.floats(1e-3, 1.0, allow_nan=False)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    storage=STORAGES,
    sa=SCALES,
    sb=SCALES,
    so=SCALES,
    shapes=st.sampled_from([((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((5, 1), (1, 6))]),
    subtract=st.booleans(),
    rounding=st.sampled_from(ROUNDINGS),
)
def test_add_property(seed, storage, sa, sb, so, shapes, subtract, rounding):
    rng = np.random.default_rng(seed)
    name, _, lo, hi = storage

    def zp() -> int:
        return int(rng.integers(lo, hi + 1))

    check_add(
        rng,
        qnn.SubOp if subtract else qnn.AddOp,
        qt(name, sa, zp()),
        qt(name, sb, zp()),
        qt(name, so, zp()),
        *shapes,
        rounding=rounding,
    )


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    storage=STORAGES,
    k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    pads=st.tuples(*[st.integers(0, 1)] * 4),
    ceil_mode=st.booleans(),
    include_pad=st.booleans(),
    so=SCALES,
    rounding=st.sampled_from(ROUNDINGS),
)
def test_avg_pool_property(seed, storage, k, strides, pads, ceil_mode, include_pad, so, rounding):
    rng = np.random.default_rng(seed)
    name, _, lo, hi = storage
    pads = tuple(
        min(p, k[a % 2] - 1) for a, p in enumerate(pads)
    )  # padding smaller than the window
    shape = (1, 2, int(rng.integers(3, 7)), int(rng.integers(3, 7)))
    x_type = qt(name, 0.05, int(rng.integers(lo, hi + 1)))
    # TFLite's kernel needs equal input and output types; the other rules rescale freely.
    out_type = x_type if rounding == "tflite" else qt(name, so, int(rng.integers(lo, hi + 1)))
    check_avg_pool(
        rng,
        x_type,
        out_type,
        shape,
        k,
        strides,
        pads,
        ceil_mode,
        include_pad,
        rounding,
    )


# --------------------------------------------------------------------------- type verifier


def test_type_errors_that_the_parser_cannot_produce():
    """Checks of !qnn.uniform reachable only from Python (the parser pairs scales with zps)."""
    with pytest.raises(VerifyException, match="needs one zero point per scale"):
        qt("i8", [0.1, 0.2], [0])
    with pytest.raises(VerifyException, match="a per-tensor type has exactly one scale"):
        qt("i8", [0.1, 0.2], [0, 0])
    good = qt("i8", 0.5)
    bad_bits = [IntAttr(12), *good.parameters[1:]]
    with pytest.raises(VerifyException, match="unsupported storage type i12"):
        UniformQuantizedType.new(bad_bits).verify()
    with pytest.raises(ValueError, match="storage type must be one of"):
        qt("i12", 0.5)


def test_avg_pool_rounds_once_so_a_finer_output_keeps_the_exact_mean():
    # Mean 0.5 (input steps of 1.0) into an output with steps of 0.25: one rounding keeps 0.5;
    # rounding the mean to the input grid first would give 1.0.
    x_type, out_type = qt("i8", 1.0, 0), qt("i8", 0.25, 0)
    x = np.array([[[[0, 1]]]], np.int8)
    m0, shift = quantize_multiplier(x_type.scale / out_type.scale)
    (y,) = run_op(
        qnn.GlobalAvgPoolOp,
        [(x, tensor(x.shape, x_type))],
        [tensor((1, 1, 1, 1), out_type)],
        requant([m0], [shift]),
    )
    assert y.ravel().tolist() == [2]


def test_tflite_pooling_rounds_the_stored_mean_and_needs_equal_types():
    q = qt("i8", 0.1, 17)
    # Centred window sums -1 and -3 over 2 positions: means -0.5 and -1.5 relative to zp 17.
    # TFLite rounds the stored means 16.5 -> 17 and 15.5 -> 16; rounding the centred
    # means away from zero would give 16 and 15.
    x = np.array([[[[17, 16], [17, 14]]]], np.int8)
    props = requant([1 << 30], [30], "tflite") | window_props(
        kernel=(1, 2), strides=(1, 2), pads=(0, 0, 0, 0), ceil_mode=False, count_include_pad=False
    )
    (y,) = run_op(qnn.AvgPool2dOp, [(x, tensor(x.shape, q))], [tensor((1, 1, 2, 1), q)], props)
    assert y.ravel().tolist() == [17, 16]
    other = qt("i8", 0.2, 17)
    props = requant([1 << 30], [31], "tflite") | window_props(
        kernel=(1, 2), strides=(1, 2), pads=(0, 0, 0, 0), ceil_mode=False, count_include_pad=False
    )
    with pytest.raises(VerifyException, match="output type to equal the input type"):
        run_op(qnn.AvgPool2dOp, [(x, tensor(x.shape, q))], [tensor((1, 1, 2, 1), other)], props)
    # The kernel guards its own precondition too, for callers that skip verification.
    with pytest.raises(ValueError, match="equal input and output types"):
        pooled_output(np.zeros((1,), np.int64), 2, 1 << 30, 31, "tflite", 0, (-128, 127), np.int8)
