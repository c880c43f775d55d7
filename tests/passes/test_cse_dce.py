"""cse merges equal ops regardless of `name`; dce removes what no result needs."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from npuc.dialects import nn
from npuc.passes.cse import CSEPass
from npuc.passes.dce import DCEPass

W = np.arange(6, dtype=np.float32).reshape(2, 3)


def two_layers(graph, names=("w1", "w2")):
    g = graph((4, 3))
    fc1 = g.op(nn.FullyConnectedOp, [g.inputs[0], g.const(W, names[0])], name="fc1")
    fc2 = g.op(nn.FullyConnectedOp, [g.inputs[0], g.const(W, names[1])], name="fc2")
    return g, g.op(nn.AddOp, [fc1, fc2])


def test_cse_merges_constants_and_layers_across_names(graph, check, ops):
    g, out = two_layers(graph)
    module = check(g.module(out), CSEPass(), rtol=0, atol=0)
    assert [c.layer_name.data for c in ops(module, nn.ConstantOp)] == ["w1"]
    assert [f.layer_name.data for f in ops(module, nn.FullyConnectedOp)] == ["fc1"]


def test_xdsl_cse_alone_only_merges_equal_names(graph, ops):
    """Why CSEPass ignores names: xDSL's CSE compares every property, `name` included."""
    g, out = two_layers(graph, names=("w", "w"))
    module = g.module(out)
    CommonSubexpressionElimination().apply(None, module)
    assert len(ops(module, nn.ConstantOp)) == 1
    assert len(ops(module, nn.FullyConnectedOp)) == 2  # fc1 / fc2 differ in name

    g, out = two_layers(graph)
    module = g.module(out)
    CommonSubexpressionElimination().apply(None, module)
    assert len(ops(module, nn.ConstantOp)) == 2


def test_cse_keeps_different_ops_apart(graph, check, ops):
    g = graph((4, 3))
    a = g.op(nn.SoftmaxOp, [g.inputs[0]], {"axis": IntegerAttr(0, i64)})
    b = g.op(nn.SoftmaxOp, [g.inputs[0]], {"axis": IntegerAttr(1, i64)})
    c = g.const(W)
    d = g.const(W.T.copy())
    module = check(g.module(a, b, c, d), CSEPass(), rtol=0, atol=0)
    assert len(ops(module, nn.SoftmaxOp)) == 2 and len(ops(module, nn.ConstantOp)) == 2


def test_dce(graph, check, ops):
    g = graph((4, 3))
    live = g.op(nn.ReluOp, [g.inputs[0]], name="live")
    dead = g.op(nn.FullyConnectedOp, [g.inputs[0], g.const(W)])
    g.op(nn.SigmoidOp, [dead])
    module = check(g.module(live), DCEPass(), rtol=0, atol=0)
    assert [op.layer_name.data for op in ops(module)] == ["live"]


PER_CHANNEL = """
func.func @main() -> ({0}, {0}, {1}) {{
  %a = qnn.constant {{value = dense<[1, 2]> : tensor<2xi8>}} : {0}
  %b = qnn.constant {{value = dense<[1, 2]> : tensor<2xi8>}} : {0}
  %c = qnn.constant {{value = dense<[1, 2]> : tensor<2xi8>}} : {1}
  func.return %a, %b, %c : {0}, {0}, {1}
}}
"""


def test_cse_merges_per_channel_constants_only_of_equal_scales():
    """Ops hash by their result shapes and element type kinds, not by every per-channel
    scale; equality still compares the whole types: constants that differ only in one
    channel's scale stay apart."""
    from npuc.pipeline import parse_mlir

    same = "tensor<2x!qnn.uniform<i8:f32:0, {0.5, 0.25}>>"
    other = "tensor<2x!qnn.uniform<i8:f32:0, {0.5, 0.125}>>"
    module = parse_mlir(PER_CHANNEL.format(same, other).encode(), "per_channel.mlir")
    CSEPass().apply(None, module)  # type: ignore[arg-type]
    constants = [op for op in module.walk() if op.name == "qnn.constant"]
    assert [str(op.results[0].type) for op in constants] == [same, other]
    (ret,) = [op for op in module.walk() if op.name == "func.return"]
    assert ret.operands[0] is ret.operands[1] is constants[0].results[0]
