"""fold-affine computes what the unfolded graph computes, with fewer ops."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, f32, i64

from npuc.dialects import nn
from npuc.passes.fold_affine import FoldAffinePass

RNG = np.random.default_rng(77)
CONV = {
    "strides": nn.ints([1, 1]),
    "pads": nn.ints([1, 1, 1, 1]),
    "dilations": nn.ints([1, 1]),
    "groups": IntegerAttr(1, i64),
}
RELU = {"activation": StringAttr("clip"), "activation_min": FloatAttr(0.0, f32)}


def channel_constant(g, channels: int, rank: int = 4):
    return g.const(RNG.uniform(0.5, 2.0, (channels,) + (1,) * (rank - 2)))


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("constant_first", [True, False])
def test_scale_and_shift_fold_into_a_conv(graph, check, ops, with_bias, constant_first):
    g = graph((2, 3, 6, 5))
    w = g.const(RNG.standard_normal((4, 3, 3, 3)))
    b = g.const(RNG.standard_normal(4)) if with_bias else None
    conv = g.op(nn.Conv2dOp, [g.inputs[0], w, b], CONV, name="conv")
    s, t = channel_constant(g, 4), channel_constant(g, 4)
    mul = g.op(nn.MulOp, [s, conv] if constant_first else [conv, s])
    add = g.op(nn.AddOp, [mul, t], name="scale")
    module = check(g.module(add), FoldAffinePass(), rtol=1e-5, atol=1e-5)
    assert not ops(module, nn.MulOp) and not ops(module, nn.AddOp)
    (folded,) = ops(module, nn.Conv2dOp)
    assert folded.layer_name.data == "conv" and folded.bias is not None


def test_shift_folds_into_a_fully_connected_layer(graph, check, ops):
    g = graph((3, 10))
    fc = g.op(nn.FullyConnectedOp, [g.inputs[0], g.const(RNG.standard_normal((5, 10)))])
    module = check(
        g.module(g.op(nn.AddOp, [fc, g.const(RNG.standard_normal(5))])), FoldAffinePass()
    )
    assert not ops(module, nn.AddOp) and ops(module, nn.FullyConnectedOp)[0].bias is not None


def test_scale_shift_chains_become_one_mul_and_one_add(graph, check, ops):
    """batch norm (mul, add) then a Caffe-style scale layer (mul, add) on a concat's output."""
    g = graph((1, 4, 3, 3), (1, 2, 3, 3))
    x = g.op(nn.ConcatOp, [g.inputs[0], g.inputs[1]], {"axis": IntegerAttr(1, i64)})
    y = g.op(nn.MulOp, [x, channel_constant(g, 6)])
    y = g.op(nn.AddOp, [y, channel_constant(g, 6)])
    y = g.op(nn.MulOp, [y, channel_constant(g, 6)])
    y = g.op(nn.AddOp, [y, channel_constant(g, 6)], name="scale")
    module = check(g.module(y), FoldAffinePass())
    (mul,) = ops(module, nn.MulOp)
    (add,) = ops(module, nn.AddOp)
    assert add.lhs.owner is mul and add.layer_name.data == "scale"


def test_a_scalar_scale_merges_with_a_per_channel_one(graph, check, ops):
    g = graph((2, 3, 4, 4))
    y = g.op(nn.MulOp, [g.inputs[0], channel_constant(g, 3)])
    y = g.op(nn.MulOp, [y, g.const(np.float32(0.25))])
    module = check(g.module(y), FoldAffinePass())
    assert len(ops(module, nn.MulOp)) == 1


def test_what_must_stay(graph, check, ops):
    """A constant that varies along H, a second user, an activation, and a constant that
    broadcasts its operand to a larger shape keep their ops."""
    g = graph((1, 3, 4, 4))
    w = g.const(RNG.standard_normal((3, 3, 3, 3)))
    spatial = g.op(nn.Conv2dOp, [g.inputs[0], w], CONV, name="a")
    spatial = g.op(nn.MulOp, [spatial, g.const(RNG.standard_normal((1, 1, 4, 1)))])
    shared = g.op(nn.Conv2dOp, [g.inputs[0], w], CONV, name="b")
    shared_scaled = g.op(nn.MulOp, [shared, channel_constant(g, 3)])
    activated = g.op(nn.Conv2dOp, [g.inputs[0], w], {**CONV, **RELU}, name="c")
    activated = g.op(nn.AddOp, [activated, channel_constant(g, 3)])
    widened = g.op(nn.AddOp, [g.inputs[0], g.const(RNG.standard_normal((2, 3, 1, 1)))])
    module = g.module(spatial, shared_scaled, shared, activated, widened)
    check(module, FoldAffinePass(), rtol=1e-5, atol=1e-5)
    assert len(ops(module, nn.MulOp)) == 2 and len(ops(module, nn.AddOp)) == 2
    convs = ops(module, nn.Conv2dOp)
    assert [c.weight is w for c in convs] == [True, True, True]


def test_shift_then_scale_through_a_relu_stays(graph, check, ops):
    """The affine ops do not move across an activation fused into the add."""
    g = graph((1, 2, 3, 3))
    y = g.op(nn.AddOp, [g.inputs[0], channel_constant(g, 2)], RELU)
    y = g.op(nn.MulOp, [y, channel_constant(g, 2)])
    module = check(g.module(y), FoldAffinePass())
    assert len(ops(module, nn.AddOp)) == 1 and len(ops(module, nn.MulOp)) == 1
    assert ops(module, nn.MulOp)[0].lhs.owner is ops(module, nn.AddOp)[0]
