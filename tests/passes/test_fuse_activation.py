"""fuse-activation: fused activations compute what the separate ops computed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, f32, i64

from npuc.dialects import nn
from npuc.passes.fuse_activation import FuseActivationPass

RNG = np.random.default_rng(3)


def clip(lo: float | None, hi: float | None) -> dict:
    props = {}
    if lo is not None:
        props["min"] = FloatAttr(lo, f32)
    if hi is not None:
        props["max"] = FloatAttr(hi, f32)
    return props


def activations(g, x, chain):
    for kind, *args in chain:
        if kind == "relu":
            x = g.op(nn.ReluOp, [x])
        elif kind == "leaky":
            x = g.op(nn.LeakyReluOp, [x], {"alpha": FloatAttr(args[0], f32)})
        else:
            x = g.op(nn.ClipOp, [x], clip(*args))
    return x


CHAINS = [
    [("relu",)],
    [("clip", 0.0, 6.0)],
    [("clip", None, 0.5)],
    [("leaky", 0.1)],
    [("relu",), ("clip", -3.0, 6.0)],
    [("clip", -1.0, 1.0), ("clip", 0.5, 4.0)],
    [("clip", None, -1.0), ("clip", 0.0, 2.0)],  # disjoint: constant 0
    [("clip", 1.0, None), ("relu",), ("clip", None, 0.5)],  # disjoint: constant 0.5
    [("clip", -0.5, 0.5), ("relu",)],
]


@pytest.mark.parametrize("chain", CHAINS, ids=str)
def test_chain_fuses_into_producer(graph, check, ops, chain):
    g = graph((4, 6), (4, 6))
    add = g.op(nn.AddOp, [g.inputs[0], g.inputs[1]], name="add")
    module = check(g.module(activations(g, add, chain)), FuseActivationPass(), rtol=0, atol=0)
    (fused,) = ops(module)
    assert fused.name == "nn.add" and fused.layer_name.data == "add"
    assert fused.activation is not None


def test_conv_relu6(graph, check, ops):
    g = graph((1, 2, 5, 5))
    w = g.const(RNG.standard_normal((3, 2, 3, 3)))
    window = {
        "strides": nn.ints([1, 1]),
        "pads": nn.ints([1, 1, 1, 1]),
        "dilations": nn.ints([1, 1]),
        "groups": IntegerAttr(1, i64),
    }
    conv = g.op(nn.Conv2dOp, [g.inputs[0], w], window, name="conv")
    module = check(g.module(activations(g, conv, [("clip", 0.0, 6.0)])), FuseActivationPass())
    (conv,) = ops(module, nn.Conv2dOp)
    assert (conv.activation.data, conv.activation_min.value.data) == ("clip", 0.0)
    assert conv.activation_max.value.data == 6.0


def test_unbounded_composition_keeps_bounds_absent(graph, check, ops):
    g = graph((3,), (3,))
    mul = g.op(nn.MulOp, [g.inputs[0], g.inputs[1]])
    module = check(g.module(activations(g, mul, [("clip", None, math.inf)])), FuseActivationPass())
    assert ops(module, nn.ClipOp), "a clip without finite bounds is not an activation"


def test_not_fused(graph, check, ops):
    g = graph((3,), (3,))
    a = g.op(nn.AddOp, [g.inputs[0], g.inputs[1]])
    r = g.op(nn.ReluOp, [a])
    leaky = {"activation": StringAttr("leaky_relu"), "activation_alpha": FloatAttr(0.2, f32)}
    s = g.op(nn.SubOp, [g.inputs[0], g.inputs[1]], leaky)
    c = g.op(nn.ClipOp, [s], clip(0.0, 1.0))
    d = g.op(nn.DivOp, [g.inputs[0], g.inputs[1]])
    e = g.op(nn.ReluOp, [d])
    module = check(g.module(r, a, c, e), FuseActivationPass(), rtol=0, atol=0)
    assert len(ops(module, nn.ReluOp)) == 2 and len(ops(module, nn.ClipOp)) == 1
