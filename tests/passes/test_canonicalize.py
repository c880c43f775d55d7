"""canonicalize and eliminate-identity keep values; random chains collapse."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, TensorType, f32, i64

from npuc.dialects import nn
from npuc.passes.canonicalize import CanonicalizePass
from npuc.passes.eliminate_identity import EliminateIdentityPass


@pytest.mark.parametrize("seed", range(8))
def test_transpose_chains_compose(graph, check, ops, seed):
    rng = np.random.default_rng(seed)
    g = graph((2, 3, 4, 5))
    x = g.inputs[0]
    for _ in range(rng.integers(2, 5)):
        x = g.op(nn.TransposeOp, [x], {"perm": nn.ints(rng.permutation(4).tolist())}).output
    module = check(g.module(x), CanonicalizePass(), rtol=0, atol=0)
    assert len(ops(module, nn.TransposeOp)) <= 1


PERMS = list(itertools.permutations(range(3)))


@pytest.mark.parametrize(("p", "q"), list(itertools.product(PERMS, repeat=2)))
def test_inverse_transposes(graph, check, ops, p, q):
    g = graph((2, 3, 4))
    t = g.op(nn.TransposeOp, [g.inputs[0]], {"perm": nn.ints(p)})
    u = g.op(nn.TransposeOp, [t], {"perm": nn.ints(q)})
    module = check(g.module(u), EliminateIdentityPass(), rtol=0, atol=0)
    inverse = all(p[q[i]] == i for i in range(3))
    expected = 0 if inverse else (p != (0, 1, 2)) + (q != (0, 1, 2))
    assert len(ops(module, nn.TransposeOp)) == expected


def test_reshape_and_clip_chains(graph, check, ops):
    g = graph((2, 6))
    x = g.inputs[0]
    for shape in [(12,), (3, 4), (2, 2, 3), (4, 3)]:
        x = g.op(nn.ReshapeOp, [x], result_types=[TensorType(f32, shape)]).output
    for lo, hi in [(-1.0, 2.0), (0.0, 5.0), (-4.0, 1.5)]:
        x = g.op(nn.ClipOp, [x], {"min": FloatAttr(lo, f32), "max": FloatAttr(hi, f32)}).output
    module = check(g.module(x), CanonicalizePass(), rtol=0, atol=0)
    assert len(ops(module, nn.ReshapeOp)) == 1 and len(ops(module, nn.ClipOp)) == 1


def test_identities_and_neutral_operands(graph, check, ops):
    g = graph((2, 3, 4))
    x = g.inputs[0]
    zero = g.const(np.zeros((3, 1), np.float32))
    one = g.const(np.ones((4,), np.float32))
    y = g.op(nn.AddOp, [zero, x])
    y = g.op(nn.MulOp, [y, one])
    y = g.op(nn.DivOp, [y, one])
    y = g.op(nn.SubOp, [y, zero])
    y = g.op(nn.PadOp, [y], {"pads": nn.ints([0] * 6)})
    full = {"starts": nn.ints([0, 0, 0]), "ends": nn.ints([2, 3, 4]), "steps": nn.ints([1, 1, 1])}
    y = g.op(nn.SliceOp, [y], full)
    y = g.op(nn.ConcatOp, [y], {"axis": IntegerAttr(1, i64)})
    y = g.op(nn.SplitOp, [y], {"axis": IntegerAttr(2, i64)}, result_types=[y.output.type])
    y = g.op(nn.BroadcastOp, [y], result_types=[y.results[0].type])
    module = check(g.module(y), CanonicalizePass(), rtol=0, atol=0)
    assert not ops(module)


def test_non_identities_keep_values(graph, check, ops):
    g = graph((2, 3))
    x = g.inputs[0]
    reverse = {"starts": nn.ints([1, 2]), "ends": nn.ints([-1, -1]), "steps": nn.ints([-1, -1])}
    a = g.op(nn.SliceOp, [x], reverse)
    b = g.op(nn.SubOp, [g.const(np.zeros((2, 3), np.float32)), x])
    c = g.op(nn.AddOp, [x, g.const(np.array([0.0, 0.0, 1.0], np.float32))])
    module = check(g.module(a, b, c), CanonicalizePass(), rtol=0, atol=0)
    assert len([op for op in ops(module) if not isinstance(op, nn.ConstantOp)]) == 3
