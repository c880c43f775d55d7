"""A small float network, quantized by hand, run at the qnn level: it must track the float result.

conv3x3 + relu -> conv3x3 -> add (residual) -> avg_pool 2x2 -> global_avg_pool -> fc.
Activations are asymmetric int8 from calibrated min/max, weights per-channel
symmetric int8 (narrow range), biases int32 at scale_x * scale_w; all
multipliers come from the real scales. A hybrid variant keeps the residual add
in float between qnn.dequantize and qnn.quantize.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from xdsl.dialects.builtin import (
    FunctionType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    i32,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from npuc import graph_io
from npuc.api import parse_mlir
from npuc.dialects import nn, qnn
from npuc.dialects.arrays import ints
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.integer import quantize_multiplier, quantize_multipliers
from npuc.printing import print_module
from npuc.runtime.nn_interpreter import run_module as run_float
from npuc.runtime.qnn_interpreter import run_module
from npuc.tensors import to_dense

CONV = {"strides": ints([1, 1]), "pads": ints([1, 1, 1, 1]), "dilations": ints([1, 1])}
CONV = CONV | {"groups": IntegerAttr(1, i64)}
POOL = {"kernel": ints([2, 2]), "strides": ints([2, 2]), "pads": ints([0, 0, 0, 0])}


class Graph:
    """Appends ops to one block and wraps it as `@main`."""

    def __init__(self, arg_type: Attribute):
        self.block = Block(arg_types=[arg_type])
        self.x = self.block.args[0]

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def op(self, op_type, operands, result: Attribute, props=None, name=None) -> SSAValue:
        props = dict(props or {})
        if name:
            props["name"] = StringAttr(name)
        return self.add(
            op_type.create(operands=list(operands), properties=props, result_types=[result])
        )

    def module(self, result: SSAValue) -> ModuleOp:
        self.block.add_op(ReturnOp(result))
        func = FuncOp(
            "main", FunctionType.from_lists([self.x.type], [result.type]), Region(self.block)
        )
        func.arg_attrs = graph_io.name_attrs(["x"])
        func.res_attrs = graph_io.name_attrs(["y"])
        module = ModuleOp([func])
        module.verify()
        return parse_mlir(print_module(module, elide_above=None))  # through printer and parser


@dataclass
class Weights:
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray
    wf: np.ndarray
    bf: np.ndarray


def make_weights(rng: np.random.Generator) -> Weights:
    def normal(*shape, std=1.0):
        return rng.normal(0, std, shape).astype(np.float32)

    return Weights(
        normal(8, 3, 3, 3, std=0.3),
        normal(8, std=0.1),
        normal(8, 8, 3, 3, std=0.15),
        normal(8, std=0.1),
        normal(10, 8, std=0.5),
        normal(10, std=0.1),
    )


def tensor(shape, element=f32) -> TensorType:
    return TensorType(element, shape)


def float_model(w: Weights) -> ModuleOp:
    g = Graph(tensor((1, 3, 16, 16)))

    def const(array):
        return g.add(nn.ConstantOp(to_dense(array)))

    c1 = g.op(nn.Conv2dOp, [g.x, const(w.w1), const(w.b1)], tensor((1, 8, 16, 16)), CONV, "conv1")
    r1 = g.op(nn.ReluOp, [c1], tensor((1, 8, 16, 16)), name="relu1")
    c2 = g.op(nn.Conv2dOp, [r1, const(w.w2), const(w.b2)], tensor((1, 8, 16, 16)), CONV, "conv2")
    s = g.op(nn.AddOp, [r1, c2], tensor((1, 8, 16, 16)), name="add")
    p = g.op(nn.AvgPool2dOp, [s], tensor((1, 8, 8, 8)), POOL, "pool")
    gp = g.op(nn.GlobalAvgPoolOp, [p], tensor((1, 8, 1, 1)), name="gap")
    flat = g.op(nn.ReshapeOp, [gp], tensor((1, 8)), name="flat")
    return g.module(
        g.op(nn.FullyConnectedOp, [flat, const(w.wf), const(w.bf)], tensor((1, 10)), name="fc")
    )


def activation_type(lo: float, hi: float) -> UniformQuantizedType:
    """Asymmetric int8 covering [min(lo, 0), max(hi, 0)]."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255
    return UniformQuantizedType("i8", scale, int(np.clip(round(-128 - lo / scale), -128, 127)))


def weight_type(w: np.ndarray) -> UniformQuantizedType:
    scales = np.abs(w.reshape(w.shape[0], -1)).max(axis=1) / 127
    return UniformQuantizedType("i8", scales.tolist(), 0, axis=0, storage_min=-127)


def quantized_constant(g: Graph, w: np.ndarray, q: UniformQuantizedType) -> SSAValue:
    scales = np.array(q.scale_values()).reshape(-1, *[1] * (w.ndim - 1))
    stored = np.clip(np.round(w / scales), -127, 127).astype(np.int8)
    return g.op(qnn.ConstantOp, [], tensor(w.shape, q), {"value": to_dense(stored, IntegerType(8))})


def bias_constant(g: Graph, b: np.ndarray, sx: float, w_type: UniformQuantizedType) -> SSAValue:
    stored = np.round(b / (sx * np.array(w_type.scale_values()))).astype(np.int32)
    return g.op(qnn.ConstantOp, [], tensor(b.shape, i32), {"value": to_dense(stored, i32)})


def requant(real, clamp_min: int | None = None) -> dict[str, Attribute]:
    m, s = quantize_multipliers(np.atleast_1d(np.asarray(real, np.float64)))
    props: dict[str, Attribute] = {"multiplier": ints(m.tolist()), "shift": ints(s.tolist())}
    if clamp_min is not None:
        props["clamp_min"] = IntegerAttr(clamp_min, i64)
    return props


def quantized_model(
    w: Weights, ranges: dict[str, tuple[float, float]], hybrid_add: bool
) -> ModuleOp:
    q = {name: activation_type(*r) for name, r in ranges.items()}
    g = Graph(tensor((1, 3, 16, 16)))
    x = g.op(qnn.QuantizeOp, [g.x], tensor((1, 3, 16, 16), q["x"]))

    def conv(inp, in_type, weights, bias, out_name, relu):
        wt = weight_type(weights)
        real = in_type.scale * np.array(wt.scale_values()) / q[out_name].scale
        props = CONV | requant(real, q[out_name].zero_point if relu else None)
        operands = [
            inp,
            quantized_constant(g, weights, wt),
            bias_constant(g, bias, in_type.scale, wt),
        ]
        return g.op(qnn.Conv2dOp, operands, tensor((1, 8, 16, 16), q[out_name]), props, out_name)

    r1 = conv(x, q["x"], w.w1, w.b1, "relu1", relu=True)
    c2 = conv(r1, q["relu1"], w.w2, w.b2, "conv2", relu=False)
    shape = (1, 8, 16, 16)
    if hybrid_add:
        a = g.op(qnn.DequantizeOp, [r1], tensor(shape))
        b = g.op(qnn.DequantizeOp, [c2], tensor(shape))
        s_float = g.op(nn.AddOp, [a, b], tensor(shape), name="add")
        s = g.op(qnn.QuantizeOp, [s_float], tensor(shape, q["add"]))
    else:
        sa, sb, so = q["relu1"].scale, q["conv2"].scale, q["add"].scale
        twice_max = 2 * max(sa, sb)
        lm, ls = quantize_multiplier(sa / twice_max)
        rm, rs = quantize_multiplier(sb / twice_max)
        props = requant(twice_max / (2**20 * so)) | {
            "left_shift": IntegerAttr(20, i64),
            "lhs_multiplier": IntegerAttr(lm, i64),
            "lhs_shift": IntegerAttr(ls, i64),
            "rhs_multiplier": IntegerAttr(rm, i64),
            "rhs_shift": IntegerAttr(rs, i64),
        }
        s = g.op(qnn.AddOp, [r1, c2], tensor(shape, q["add"]), props, "add")
    p = g.op(
        qnn.AvgPool2dOp,
        [s],
        tensor((1, 8, 8, 8), q["pool"]),
        POOL | requant(q["add"].scale / q["pool"].scale),
    )
    gp = g.op(
        qnn.GlobalAvgPoolOp,
        [p],
        tensor((1, 8, 1, 1), q["gap"]),
        requant(q["pool"].scale / q["gap"].scale),
    )
    flat = g.op(qnn.ReshapeOp, [gp], tensor((1, 8), q["gap"]))
    wt = weight_type(w.wf)
    real = q["gap"].scale * np.array(wt.scale_values()) / q["fc"].scale
    fc = g.op(
        qnn.FullyConnectedOp,
        [flat, quantized_constant(g, w.wf, wt), bias_constant(g, w.bf, q["gap"].scale, wt)],
        tensor((1, 10), q["fc"]),
        requant(real),
        "fc",
    )
    return g.module(g.op(qnn.DequantizeOp, [fc], tensor((1, 10))))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("hybrid_add", [False, True])
def test_quantized_network_tracks_the_float_network(hybrid_add):
    rng = np.random.default_rng(11)
    w = make_weights(rng)
    fmodel = float_model(w)
    names = ["relu1", "conv2", "add", "pool", "gap", "fc"]
    ranges: dict[str, tuple[float, float]] = {}
    for _ in range(8):  # calibration
        x = rng.normal(0, 1, (1, 3, 16, 16)).astype(np.float32)
        _, kept = run_float(fmodel, {"x": x}, keep=names)
        for name, value in [("x", x), *kept.items()]:
            lo, hi = ranges.get(name, (np.inf, -np.inf))
            ranges[name] = (min(lo, float(value.min())), max(hi, float(value.max())))
    qmodel = quantized_model(w, ranges, hybrid_add)
    assert any(op.name == "nn.add" for op in qmodel.walk()) == hybrid_add
    for trial in range(5):
        x = rng.normal(0, 1, (1, 3, 16, 16)).astype(np.float32)
        want, kept_float = run_float(fmodel, {"x": x}, keep=names)
        got, kept_q = run_module(qmodel, {"x": x}, keep=["relu1", "conv2", "fc"])
        assert got["y"].dtype == np.float32
        assert cosine(got["y"], want["y"]) > 0.99, trial
        # the integer intermediates dequantize close to the float ones as well
        q = activation_type(*ranges["relu1"])
        relu1 = q.scale * (kept_q["relu1"].astype(np.float64) - q.zero_point)
        assert cosine(relu1, kept_float["relu1"]) > 0.999
