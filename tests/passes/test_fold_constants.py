"""fold-constants replaces constant subgraphs by their values, and nothing else."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, TensorType, f32, i64

from npuc.dialects import nn
from npuc.passes.fold_constants import FoldConstantsPass
from npuc.runtime import nn_interpreter
from npuc.tensors import from_dense

RNG = np.random.default_rng(7)


def non_constant_ops(ops, module):
    return [op for op in ops(module) if not isinstance(op, nn.ConstantOp)]


def test_weight_preprocessing_folds(graph, check, ops):
    """Weights computed from constants (transpose, reshape, scale, add) fold; the conv stays."""
    g = graph((1, 3, 6, 6))
    raw = g.const(RNG.standard_normal((3, 3, 3, 4)))
    w = g.op(nn.TransposeOp, [raw], {"perm": nn.ints([3, 2, 0, 1])}, name="w.t")
    w = g.op(nn.MulOp, [w, g.const(np.float32(0.5).reshape(1))])
    b = g.op(nn.AddOp, [g.const(RNG.standard_normal(4)), g.const(RNG.standard_normal(4))])
    window = {
        "strides": nn.ints([1, 1]),
        "pads": nn.ints([0, 0, 0, 0]),
        "dilations": nn.ints([1, 1]),
        "groups": IntegerAttr(1, i64),
    }
    conv = g.op(nn.Conv2dOp, [g.inputs[0], w, b], window, name="conv")
    module = check(g.module(conv), FoldConstantsPass())
    assert [op.name for op in non_constant_ops(ops, module)] == ["nn.conv2d"]
    (conv,) = ops(module, nn.Conv2dOp)
    assert isinstance(conv.weight.owner, nn.ConstantOp)
    assert isinstance(conv.bias.owner, nn.ConstantOp)


CASES = {
    "softmax": lambda g, a: g.op(nn.SoftmaxOp, [a], {"axis": IntegerAttr(1, i64)}),
    "reduce_mean": lambda g, a: g.op(nn.ReduceMeanOp, [a], {"axes": nn.ints([0])}),
    "pad_reflect": lambda g, a: g.op(
        nn.PadOp, [a], {"pads": nn.ints([1, 0, 1, 2]), "mode": StringAttr("reflect")}
    ),
    "slice": lambda g, a: g.op(
        nn.SliceOp,
        [a],
        {"starts": nn.ints([2, 4]), "ends": nn.ints([-1, 0]), "steps": nn.ints([-1, -2])},
    ),
    "matmul_relu": lambda g, a: g.op(
        nn.MatMulOp,
        [a, g.const(RNG.standard_normal((5, 2)))],
        {"activation": StringAttr("clip"), "activation_min": FloatAttr(0.0, f32)},
    ),
    "gather": lambda g, a: g.op(
        nn.GatherOp,
        [a, g.const(np.array([[2, -1], [0, 0]], np.int64))],
        {"axis": IntegerAttr(0, i64)},
    ),
    "argmax": lambda g, a: g.op(
        nn.ArgMaxOp, [a], {"axis": IntegerAttr(1, i64)}, result_types=[TensorType(i64, [3, 1])]
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_folds_to_its_value(graph, check, ops, case):
    g = graph()
    op = CASES[case](g, g.const(RNG.standard_normal((3, 5))))
    op.properties["name"] = StringAttr(case)
    module = check(g.module(op), FoldConstantsPass(), rtol=0, atol=0)
    assert not non_constant_ops(ops, module)
    (folded,) = [c for c in ops(module, nn.ConstantOp) if c.output.uses]
    assert folded.layer_name.data == case
    assert folded.output.type == op.results[0].type


def test_split_folds_every_piece(graph, check, ops):
    g = graph()
    a = g.const(RNG.standard_normal((2, 6)))
    split = g.op(
        nn.SplitOp,
        [a],
        {"axis": IntegerAttr(1, i64)},
        name="s",
        result_types=[TensorType(f32, [2, 1]), TensorType(f32, [2, 5])],
    )
    module = check(g.module(*split.results), FoldConstantsPass(), rtol=0, atol=0)
    assert not non_constant_ops(ops, module)
    names = [c.layer_name.data for c in ops(module, nn.ConstantOp) if c.output.uses]
    assert names == ["s", "s"]


def test_input_dependent_ops_stay(graph, check, ops):
    g = graph((2, 3))
    c = g.const(RNG.standard_normal((2, 3)))
    y = g.op(nn.AddOp, [g.inputs[0], c])
    z = g.op(nn.ReluOp, [y])
    module = check(g.module(z), FoldConstantsPass())
    assert [op.name for op in non_constant_ops(ops, module)] == ["nn.add", "nn.relu"]


@pytest.mark.parametrize(("max_size", "folded"), [(11, False), (12, True)])
def test_max_size(graph, check, ops, max_size, folded):
    g = graph()
    b = g.op(
        nn.BroadcastOp, [g.const(RNG.standard_normal(3))], result_types=[TensorType(f32, [4, 3])]
    )
    module = check(g.module(b), FoldConstantsPass(max_size=max_size), rtol=0, atol=0)
    assert bool(ops(module, nn.BroadcastOp)) != folded


def test_op_without_kernel_stays(graph, check, ops, monkeypatch):
    monkeypatch.delitem(nn_interpreter.KERNELS, nn.ExpOp)
    g = graph()
    e = g.op(nn.ExpOp, [g.const(RNG.standard_normal(4))])
    n = g.op(nn.NegOp, [g.const(RNG.standard_normal(4))])
    module = g.module(e, n)
    FoldConstantsPass().apply(None, module)
    module.verify()
    assert [op.name for op in non_constant_ops(ops, module)] == ["nn.exp"]


def test_folded_values_are_float32_bytes(graph, ops):
    g = graph()
    a = g.const(np.array([1.0, 2.0, 3.0]))
    module = g.module(g.op(nn.DivOp, [a, g.const(np.array([3.0, 0.0, -6.0]))]))
    FoldConstantsPass().apply(None, module)
    (folded,) = [c for c in ops(module, nn.ConstantOp) if c.output.uses]
    value = from_dense(folded.value)
    assert value.dtype == np.float32
    np.testing.assert_array_equal(value, np.array([1 / 3, np.inf, -0.5], np.float32))


def test_options_round_trip():
    from xdsl.utils.arg_spec import parse_spec

    p = FoldConstantsPass(max_size=100)
    assert FoldConstantsPass.from_spec(parse_spec(str(p))) == p
