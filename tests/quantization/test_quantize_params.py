"""Quantization parameters chosen by the quantize pass, against docs/quantization.md.

Expected scales, zero points, stored weights, biases and multipliers are computed
here from the documented formulas (Python floats and exact Fractions), never by
npuc's own helpers.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import (
    FloatAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from npuc import graph_io
from npuc.diagnostics import NpucError
from npuc.dialects import nn, qnn
from npuc.dialects.qnn import UniformQuantizedType
from npuc.passes.quantization.schemes import SCHEMES
from npuc.passes.quantize import QuantizeConfig, quantize_module
from npuc.runtime.kernels import elementwise as ew
from npuc.tensors import from_dense, to_dense

RNG = np.random.default_rng(7)

# --------------------------------------------------------------------------- doc formulas


def round_half_away(x: float | Fraction) -> int:
    f = Fraction(x)
    return math.floor(f + Fraction(1, 2)) if f >= 0 else -math.floor(-f + Fraction(1, 2))


def asymmetric(lo: float, hi: float, qmin: int, qmax: int) -> tuple[float, int]:
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / (qmax - qmin)
    scale = scale if scale > 0 else 1.0  # empty or underflowing span (documented rule)
    return scale, min(max(round_half_away(qmin - lo / scale), qmin), qmax)


def symmetric(absmax: float, qmax: float, pow2: bool = False) -> float:
    scale = absmax / qmax
    scale = scale if scale > 0 else 1.0  # empty or underflowing span (documented rule)
    return 2.0 ** math.ceil(math.log2(scale)) if pow2 else scale


def multiplier(real: float) -> tuple[int, int]:
    """(m0, shift) with m0 in [2^30, 2^31) and m0 * 2^-shift the nearest to `real`."""
    exact = Fraction(real)
    shift = 0
    while exact * 2**shift < 2**30:
        shift += 1
    while exact * 2**shift >= 2**31:
        shift -= 1
    m0 = round_half_away(exact * 2**shift)
    return (m0 // 2, shift - 1) if m0 == 2**31 else (m0, shift)


# --------------------------------------------------------------------------- graphs


def attr(value: Any) -> Attribute:
    if isinstance(value, Attribute):
        return value
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, f32)
    if isinstance(value, str):
        return StringAttr(value)
    return nn.ints(list(value))


class Net:
    def __init__(self, **inputs):
        self.names = list(inputs)
        self.block = Block(arg_types=[TensorType(f32, list(s)) for s in inputs.values()])
        self.inputs = dict(zip(self.names, self.block.args, strict=True))

    def const(self, array, name=None) -> SSAValue:
        op = nn.ConstantOp(to_dense(np.asarray(array, np.float32)), name)
        self.block.add_op(op)
        return op.output

    def __call__(self, op_type, *operands, name=None, **props) -> Operation:
        op = nn.build(op_type, operands, {k: attr(v) for k, v in props.items()}, name=name)
        self.block.add_op(op)
        return op

    def module(self, *outputs) -> ModuleOp:
        values = [SSAValue.get(v) for v in outputs]
        self.block.add_op(ReturnOp(*values))
        sig = FunctionType.from_lists([a.type for a in self.block.args], [v.type for v in values])
        func = FuncOp("main", sig, Region(self.block))
        func.arg_attrs = graph_io.name_attrs(self.names)
        module = ModuleOp([func])
        module.verify()
        return module


CONV = {"strides": [1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1], "groups": 1}


def conv_net(weight, bias, **act) -> ModuleOp:
    net = Net(x=(1, weight.shape[1], 5, 5))
    c = net(
        nn.Conv2dOp,
        net.inputs["x"],
        net.const(weight, "w"),
        net.const(bias, "b"),
        name="conv",
        **CONV,
        **act,
    )
    return net.module(c)


def the(module: ModuleOp, op_type: type[Operation]) -> Operation:
    (op,) = [op for op in module.walk() if isinstance(op, op_type)]
    return op


def qtype_of(value: SSAValue) -> UniformQuantizedType:
    element = value.type.element_type
    assert isinstance(element, UniformQuantizedType)
    return element


def stored(value: SSAValue) -> np.ndarray:
    return np.asarray(from_dense(value.owner.value)).view(qtype_of(value).storage_dtype())


def all_qtypes(module: ModuleOp) -> list[UniformQuantizedType]:
    found = []
    for op in module.walk():
        for v in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
            if isinstance(v.type, TensorType) and isinstance(
                v.type.element_type, UniformQuantizedType
            ):
                found.append(v.type.element_type)
    return found


# --------------------------------------------------------------------------- activations

RANGES = st.tuples(
    st.floats(-100, 100, allow_nan=False), st.floats(-100, 100, allow_nan=False)
).map(sorted)


@settings(max_examples=60, deadline=None)
@given(RANGES, st.sampled_from(sorted(SCHEMES)))
def test_activation_types_follow_the_scheme_formulas(bounds, scheme):
    lo, hi = bounds
    net = Net(x=(1, 4))
    module = net.module(net(nn.ReluOp, net.inputs["x"], name="relu"))
    quantize_module(module, {"x": (lo, hi), "relu": (0.0, max(hi, 0.0))}, QuantizeConfig(scheme))
    q = qtype_of(the(module, qnn.QuantizeOp).output)
    if scheme in ("int8", "int8-per-channel", "uint8"):
        qmin, qmax = (0, 255) if scheme == "uint8" else (-128, 127)
        scale, zp = asymmetric(lo, hi, qmin, qmax)
        assert q.scale == pytest.approx(scale, rel=1e-12) and q.zero_point == zp
        assert (q.qmin, q.qmax) == (qmin, qmax)
    else:  # symmetric i16 (int16) or power-of-two i8 (pow2)
        absmax = max(-lo, hi, 0.0)
        qmax = 32767 if scheme == "int16" else 127
        assert q.scale == pytest.approx(symmetric(absmax, qmax, scheme == "pow2"), rel=1e-12)
        assert q.zero_point == 0
    # Real 0 is exactly representable and the range is covered within half a step.
    assert q.qmin <= q.zero_point <= q.qmax
    assert q.scale * (q.qmin - q.zero_point) <= min(lo, 0.0) + q.scale / 2
    assert q.scale * (q.qmax - q.zero_point) >= max(hi, 0.0) - q.scale / 2


def test_a_range_without_zero_is_widened_to_hold_it():
    net = Net(x=(1, 4))
    module = net.module(net(nn.ReluOp, net.inputs["x"], name="relu"))
    quantize_module(module, {"x": (2.0, 5.1), "relu": (2.0, 5.1)}, QuantizeConfig("uint8"))
    q = qtype_of(the(module, qnn.QuantizeOp).output)
    assert (q.scale, q.zero_point) == (pytest.approx(5.1 / 255), 0)


def test_an_empty_range_gets_scale_one():
    net = Net(x=(1, 4))
    module = net.module(net(nn.ReluOp, net.inputs["x"], name="relu"))
    quantize_module(module, {"x": (0.0, 0.0), "relu": (0.0, 0.0)}, QuantizeConfig("int8"))
    q = qtype_of(the(module, qnn.QuantizeOp).output)
    assert (q.scale, q.zero_point) == (1.0, -128)


def test_uint8_zero_points_lie_in_0_255():
    weight = RNG.standard_normal((6, 3, 3, 3)).astype(np.float32) + 0.3
    module = conv_net(weight, RNG.standard_normal(6))
    quantize_module(module, {"x": (-3.0, 1.0), "conv": (-0.5, 9.0)}, QuantizeConfig("uint8"))
    types = all_qtypes(module)
    assert {q.storage for q in types} == {"u8"}
    assert all(0 <= z <= 255 for q in types for z in q.zero_point_values())
    w = qtype_of(the(module, qnn.Conv2dOp).weight)
    scale, zp = asymmetric(float(weight.min()), float(weight.max()), 0, 255)
    assert (w.scale, w.zero_point) == (pytest.approx(scale), zp)


# --------------------------------------------------------------------------- weights, bias


@pytest.mark.parametrize("scheme", ["int8", "int8-per-channel", "int16", "pow2"])
@pytest.mark.parametrize("full_range", [False, True])
def test_conv_weights_bias_and_multipliers(scheme, full_range):
    weight = RNG.standard_normal((4, 3, 3, 3)) * [[[[1.0]]], [[[0.1]]], [[[3.0]]], [[[0.5]]]]
    weight = weight.astype(np.float32)
    bias = RNG.standard_normal(4).astype(np.float32)
    module = conv_net(weight, bias)
    ranges = {"x": (-2.0, 3.0), "conv": (-6.0, 8.0)}
    quantize_module(module, ranges, QuantizeConfig(scheme, full_range=full_range))
    op = the(module, qnn.Conv2dOp)
    qx, qw, qy = qtype_of(op.input), qtype_of(op.weight), qtype_of(op.output)

    per_channel = scheme in ("int8-per-channel", "int16")
    absmax = np.abs(weight).reshape(4, -1).max(1) if per_channel else [np.abs(weight).max()]
    qmax = 127.5 if full_range else 127
    scales = [symmetric(float(a), qmax, scheme == "pow2") for a in absmax]
    assert qw.scale_values() == pytest.approx(scales, rel=1e-12)
    assert (qw.qmin, qw.qmax) == ((-128, 127) if full_range else (-127, 127))
    assert qw.per_axis == per_channel and set(qw.zero_point_values()) == {0}

    w_scale = np.array(scales).reshape(-1, 1, 1, 1) if per_channel else scales[0]
    expected_w = np.vectorize(round_half_away)(weight.astype(np.float64) / w_scale)
    np.testing.assert_array_equal(stored(op.weight), np.clip(expected_w, qw.qmin, qw.qmax))

    s_w = scales if per_channel else scales * 4
    expected_b = [
        round_half_away(float(b) / (qx.scale * s)) for b, s in zip(bias, s_w, strict=True)
    ]
    np.testing.assert_array_equal(from_dense(op.bias.owner.value), expected_b)

    reals = [qx.scale * s / qy.scale for s in (scales if per_channel else scales[:1])]
    pairs = [multiplier(r) for r in reals]
    assert list(op.multiplier.get_values()) == [m for m, _ in pairs]
    assert list(op.shift.get_values()) == [s for _, s in pairs]


def test_bias_bits_saturate_and_are_counted():
    weight = np.full((3, 2, 3, 3), 0.5, np.float32)
    bias = np.array([0.01, 40.0, -40.0], np.float32)
    module = conv_net(weight, bias)
    report = quantize_module(
        module, {"x": (-1.0, 1.0), "conv": (-50.0, 50.0)}, QuantizeConfig(bias_bits=12)
    )
    op = the(module, qnn.Conv2dOp)
    qx, qw = qtype_of(op.input), qtype_of(op.weight)
    raw = [
        round_half_away(float(b) / (qx.scale * s))
        for b, s in zip(bias, qw.scale_values(), strict=True)
    ]
    assert abs(raw[0]) < 2047 and raw[1] > 2047 and raw[2] < -2048
    np.testing.assert_array_equal(from_dense(op.bias.owner.value), [raw[0], 2047, -2048])
    assert report.bias_saturation == {"conv": 2}
    assert report.layers["conv"].bias_saturated == 2


@pytest.mark.parametrize(
    ("bits", "storage", "bounds"), [(4, "i4", (-7, 7)), (16, "i16", (-32767, 32767))]
)
def test_weight_bits(bits, storage, bounds):
    weight = RNG.standard_normal((2, 3, 3, 3)).astype(np.float32)
    module = conv_net(weight, np.zeros(2, np.float32))
    quantize_module(
        module, {"x": (-1.0, 1.0), "conv": (-5.0, 5.0)}, QuantizeConfig(weight_bits=bits)
    )
    qw = qtype_of(the(module, qnn.Conv2dOp).weight)
    assert (qw.storage, qw.qmin, qw.qmax) == (storage, *bounds)
    absmax = np.abs(weight).reshape(2, -1).max(1)
    assert qw.scale_values() == pytest.approx(absmax / bounds[1], rel=1e-12)


def test_pow2_scales_are_powers_of_two_and_fractional_lengths_are_reported():
    module = conv_net(RNG.standard_normal((4, 3, 3, 3)), RNG.standard_normal(4))
    ranges = {"x": (-2.7, 3.1), "conv": (-7.0, 5.5)}
    report = quantize_module(module, ranges, QuantizeConfig("pow2"))
    for q in all_qtypes(module):
        for s in q.scale_values():
            assert math.frexp(s)[0] == 0.5
    op = the(module, qnn.Conv2dOp)
    assert list(op.multiplier.get_values()) == [2**30]
    # x: absmax 3.1 / 127 -> 2^-5, so fl = 5; conv: 7 / 127 -> 2^-4, fl = 4.
    assert report.fractional_lengths["x"] == 5
    assert report.fractional_lengths["conv"] == 4
    assert report.fractional_lengths["w"] == -math.log2(qtype_of(op.weight).scale)


# --------------------------------------------------------------------------- add, LUT, clamps


@pytest.mark.parametrize(("scheme", "left_shift"), [("int8", 20), ("int16", 15)])
def test_add_uses_tflites_multipliers(scheme, left_shift):
    net = Net(a=(1, 8), b=(1, 8))
    module = net.module(net(nn.AddOp, net.inputs["a"], net.inputs["b"], name="add"))
    ranges = {"a": (-1.3, 2.2), "b": (-7.1, 0.4), "add": (-6.0, 2.5)}
    quantize_module(module, ranges, QuantizeConfig(scheme))
    op = the(module, qnn.AddOp)
    sa, sb, so = (qtype_of(v).scale for v in (op.lhs, op.rhs, op.output))
    twice_max = 2 * max(sa, sb)
    assert op.left_shift.value.data == left_shift
    assert (op.lhs_multiplier.value.data, op.lhs_shift.value.data) == multiplier(sa / twice_max)
    assert (op.rhs_multiplier.value.data, op.rhs_shift.value.data) == multiplier(sb / twice_max)
    out = multiplier(twice_max / (2**left_shift * so))
    assert (op.multiplier.get_values()[0], op.shift.get_values()[0]) == out


@pytest.mark.parametrize("scheme", ["int8", "uint8", "pow2"])
def test_sigmoid_table_entries(scheme):
    net = Net(x=(1, 8))
    module = net.module(net(nn.SigmoidOp, net.inputs["x"], name="sig"))
    quantize_module(module, {"x": (-6.0, 5.0), "sig": (0.0, 1.0)}, QuantizeConfig(scheme))
    op = the(module, qnn.LutOp)
    q_in, q_out = qtype_of(op.input), qtype_of(op.output)
    table = np.asarray(from_dense(op.table)).view(q_out.storage_dtype())
    assert table.shape == (256,)
    for i, entry in enumerate(table):
        code = q_in.qmin + i
        x = np.float32(q_in.scale * (code - q_in.zero_point))
        y = float(ew.sigmoid(np.array([x], np.float32))[0])
        want = min(
            max(
                round_half_away(Fraction(y) / Fraction(q_out.scale)) + q_out.zero_point, q_out.qmin
            ),
            q_out.qmax,
        )
        assert entry == want, f"code {code}"


def test_relu_folds_into_its_producers_clamp():
    module = conv_net(RNG.standard_normal((2, 3, 3, 3)), RNG.standard_normal(2))
    func = graph_io.entry_function(module)
    ret = func.body.block.last_op
    relu = nn.build(
        nn.ClipOp, [ret.operands[0]], {"min": attr(0.0), "max": attr(6.0)}, name="relu6"
    )
    func.body.block.insert_op_before(relu, ret)
    ret.operands = [relu.results[0]]
    ranges = {"x": (-1.0, 1.0), "conv": (-9.0, 9.0), "relu6": (0.0, 6.0)}
    report = quantize_module(module, ranges, QuantizeConfig("int8"))
    op = the(module, qnn.Conv2dOp)
    scale, zp = asymmetric(0.0, 6.0, -128, 127)
    assert (qtype_of(op.output).scale, qtype_of(op.output).zero_point) == (pytest.approx(scale), zp)
    assert op.clamp_min.value.data == zp
    assert op.clamp_max.value.data == min(zp + round_half_away(6.0 / scale), 127)
    assert not [o for o in module.walk() if isinstance(o, qnn.RequantizeOp)]
    assert report.layers["relu6"].lowering == "folded into conv"


def test_relu_after_a_shared_value_is_a_clamping_requantize():
    net = Net(x=(1, 8))
    relu = net(nn.ReluOp, net.inputs["x"], name="relu")
    module = net.module(relu, net.inputs["x"])
    quantize_module(module, {"x": (-2.0, 3.0), "relu": (0.0, 3.0)}, QuantizeConfig("int8"))
    op = the(module, qnn.RequantizeOp)
    q = qtype_of(op.input)
    assert qtype_of(op.output) == q
    assert (list(op.multiplier.get_values()), list(op.shift.get_values())) == ([2**30], [30])
    assert op.clamp_min.value.data == q.zero_point and op.clamp_max is None


def test_missing_ranges_are_listed_together():
    net = Net(x=(1, 8))
    a = net(nn.SigmoidOp, net.inputs["x"], name="a")
    module = net.module(net(nn.TanhOp, a, name="b"))
    with pytest.raises(NpucError, match=r"no quantization range for tensor\(s\) x, a, b"):
        quantize_module(module, {}, QuantizeConfig())


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (QuantizeConfig(scheme="int7"), "unknown quantization scheme 'int7'"),
        (QuantizeConfig(io="both"), "io must be"),
        (QuantizeConfig(bias_bits=40), "bias_bits must be in"),
        (QuantizeConfig(weight_bits=3), "weight_bits must be"),
        (QuantizeConfig(rounding="up"), "rounding must be one of"),
    ],
)
def test_bad_options_are_rejected(config, message):
    net = Net(x=(1, 8))
    module = net.module(net(nn.ReluOp, net.inputs["x"], name="relu"))
    with pytest.raises(NpucError, match=message):
        quantize_module(module, {"x": (-1, 1), "relu": (0, 1)}, config)


@pytest.mark.parametrize(("scheme", "warned"), [("int8", False), ("int16", True)])
def test_worst_case_accumulators_beyond_int32_are_reported(scheme, warned):
    # 64 input channels x 3x3: K = 576 products of at most 32768 * 127 at 16 bits
    # (2.4e9 > 2^31 - 1), and of 128 * 127 at 8 bits.
    weight = np.ones((2, 64, 3, 3), np.float32)
    module = conv_net(weight, np.zeros(2, np.float32))
    report = quantize_module(
        module, {"x": (-1.0, 1.0), "conv": (-600, 600)}, QuantizeConfig(scheme)
    )
    bound = (32768 if scheme == "int16" else 128) * 127 * 576
    assert (bound > 2**31 - 1) == warned
    assert report.warnings == (
        [f"layer 'conv': the worst-case accumulator {bound} exceeds int32"] if warned else []
    )
