"""fold-batchnorm computes what the unfolded graph computes."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, f32, i64
from xdsl.ir import SSAValue

from npuc.dialects import nn
from npuc.passes.fold_batchnorm import FoldBatchNormPass

RNG = np.random.default_rng(1234)


def window(**extra):
    return {
        "strides": nn.ints([1, 2]),
        "pads": nn.ints([1, 0, 1, 1]),
        "dilations": nn.ints([1, 1]),
        **extra,
    }


def bn_params(graph, channels: int):
    scale = graph.const(RNG.standard_normal(channels))
    bias = graph.const(RNG.standard_normal(channels))
    mean = graph.const(RNG.standard_normal(channels))
    var = graph.const(RNG.uniform(0.1, 2.0, channels))
    return [scale, bias, mean, var]


def batch_norm(graph, x, name: str | None = "bn"):
    channels = nn.shape_of(SSAValue.get(x))[1]
    eps = {"epsilon": FloatAttr(1e-3, f32)}
    return graph.op(nn.BatchNormOp, [x, *bn_params(graph, channels)], eps, name=name)


@pytest.mark.parametrize("groups", [1, 2, 6])
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv2d(graph, check, ops, groups, with_bias):
    g = graph((2, 6, 7, 8))
    w = g.const(RNG.standard_normal((12, 6 // groups, 3, 3)), name="conv.weight")
    b = g.const(RNG.standard_normal(12), name="conv.bias") if with_bias else None
    props = window(groups=IntegerAttr(groups, i64))
    conv = g.op(nn.Conv2dOp, [g.inputs[0], w, b], props, name="conv")
    module = check(g.module(batch_norm(g, conv)), FoldBatchNormPass(), rtol=1e-4, atol=1e-4)
    assert not ops(module, nn.BatchNormOp)
    (folded,) = ops(module, nn.Conv2dOp)
    assert folded.layer_name.data == "conv" and folded.bias is not None
    assert folded.weight.owner.layer_name.data == "conv.weight"
    assert folded.bias.owner.layer_name.data == "conv.bias"


@pytest.mark.parametrize("groups", [1, 2, 4])
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv_transpose2d(graph, check, ops, groups, with_bias):
    g = graph((1, 4, 5, 5))
    per_group = 3
    w = g.const(RNG.standard_normal((4, per_group, 3, 2)))
    b = g.const(RNG.standard_normal(per_group * groups)) if with_bias else None
    props = window(output_padding=nn.ints([0, 1]), groups=IntegerAttr(groups, i64))
    conv = g.op(nn.ConvTranspose2dOp, [g.inputs[0], w, b], props, name="up")
    module = check(g.module(batch_norm(g, conv)), FoldBatchNormPass(), rtol=1e-4, atol=1e-4)
    assert not ops(module, nn.BatchNormOp)
    (folded,) = ops(module, nn.ConvTranspose2dOp)
    assert folded.layer_name.data == "up" and folded.bias is not None


@pytest.mark.parametrize("with_bias", [True, False])
def test_fully_connected(graph, check, ops, with_bias):
    g = graph((3, 10))
    w = g.const(RNG.standard_normal((5, 10)))
    b = g.const(RNG.standard_normal(5)) if with_bias else None
    fc = g.op(nn.FullyConnectedOp, [g.inputs[0], w, b], name="fc")
    module = check(g.module(batch_norm(g, fc)), FoldBatchNormPass(), rtol=1e-4, atol=1e-4)
    assert not ops(module, nn.BatchNormOp)
    assert [op.layer_name.data for op in ops(module, nn.FullyConnectedOp)] == ["fc"]


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (4, 3), (2, 3, 7)])
def test_standalone_becomes_mul_add(graph, check, ops, shape):
    g = graph(shape)
    module = check(g.module(batch_norm(g, g.inputs[0], "bn")), FoldBatchNormPass())
    assert not ops(module, nn.BatchNormOp)
    (mul,) = ops(module, nn.MulOp)
    (add,) = ops(module, nn.AddOp)
    assert add.lhs.owner is mul and add.layer_name.data == "bn"


def test_standalone_option_off_keeps_batch_norm(graph, check, ops):
    g = graph((2, 3, 4, 4))
    module = check(g.module(batch_norm(g, g.inputs[0])), FoldBatchNormPass(standalone=False))
    assert len(ops(module, nn.BatchNormOp)) == 1


def test_shared_weight_and_shared_output(graph, check, ops):
    """A weight used by two convs stays intact; a conv with a second user is not rewritten."""
    g = graph((1, 2, 5, 5))
    w = g.const(RNG.standard_normal((4, 2, 3, 3)))
    props = window(groups=IntegerAttr(1, i64))
    a = g.op(nn.Conv2dOp, [g.inputs[0], w], props, name="a")
    b = g.op(nn.Conv2dOp, [g.inputs[0], w], props, name="b")
    c = g.op(nn.Conv2dOp, [g.inputs[0], w], props, name="c")
    module = g.module(batch_norm(g, a), b, batch_norm(g, c), c)
    check(module, FoldBatchNormPass(standalone=False), rtol=1e-4, atol=1e-4)
    bns = ops(module, nn.BatchNormOp)
    assert [bn.input.owner.layer_name.data for bn in bns] == ["c"]
    convs = {op.layer_name.data: op for op in ops(module, nn.Conv2dOp)}
    assert convs["b"].weight is w and convs["c"].weight is w and convs["a"].weight is not w


def test_activated_layer_is_not_folded(graph, check, ops):
    g = graph((2, 4))
    w = g.const(RNG.standard_normal((3, 4)))
    relu = {"activation": StringAttr("clip"), "activation_min": FloatAttr(0.0, f32)}
    fc = g.op(nn.FullyConnectedOp, [g.inputs[0], w], relu)
    module = check(g.module(batch_norm(g, fc)), FoldBatchNormPass(standalone=False))
    assert len(ops(module, nn.BatchNormOp)) == 1
    assert ops(module, nn.FullyConnectedOp)[0].bias is None
