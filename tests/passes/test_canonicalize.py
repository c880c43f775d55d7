"""canonicalize and eliminate-identity keep values; random chains collapse."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, TensorType, f32, i64

from npuc.api import apply_pipeline
from npuc.dialects import nn
from npuc.graph_io import entry_function
from npuc.passes.canonicalize import CanonicalizePass
from npuc.passes.eliminate_identity import EliminateIdentityPass
from npuc.runtime.nn_interpreter import run_function


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


def hard_swish_chain(graph, form: str):
    """x * clip(x + 3, 0, 6) / 6 as exported models spell it: `div` (/ 6), `sixth` (* (1/6)),
    `fused` (the clip fused into the add)."""
    g = graph((4, 64))
    x = g.inputs[0]
    if form == "fused":
        clip = {"activation": StringAttr("clip")} | {
            k: FloatAttr(v, f32) for k, v in (("activation_min", 0.0), ("activation_max", 6.0))
        }
        gate = g.op(nn.AddOp, [x, g.const(np.float32([3.0]))], clip)
    else:
        added = g.op(nn.AddOp, [g.const(np.float32([3.0])), x])
        bounds = {"min": FloatAttr(0.0, f32), "max": FloatAttr(6.0, f32)}
        gate = g.op(nn.ClipOp, [added], bounds)
    product = g.op(nn.MulOp, [gate, x])
    if form == "sixth":
        out = g.op(nn.MulOp, [product, g.const(np.float32(1 / 6))], name="hs")
    else:
        out = g.op(nn.DivOp, [product, g.const(np.float32(6.0))], name="hs")
    return g.module(out)


@pytest.mark.parametrize("form", ["div", "sixth", "fused"])
def test_hard_swish_chains_become_one_op_with_the_same_values(graph, ops, form):
    """Values from -8 to 8 (the kinks at -3 and 3 and the stretch between included) against
    hard-swish computed in f32 from its definition: exactly for the / 6 forms (the
    interpreter's hard_swish is that arithmetic), within an ulp for * (1/6)."""
    module = hard_swish_chain(graph, form)
    x = np.linspace(-8, 8, 256, dtype=np.float32).reshape(4, 64)
    x[0, :4] = [-3, 3, 0, -0.0]
    before = run_function(entry_function(module), [x])[0]
    apply_pipeline(module, "canonicalize")
    assert [op.name for op in ops(module)] == ["nn.hard_swish"]
    assert ops(module)[0].properties["name"] == StringAttr("hs")
    after = run_function(entry_function(module), [x])[0]
    want = x * np.clip(x + np.float32(3), np.float32(0), np.float32(6)) / np.float32(6)
    if form == "sixth":
        np.testing.assert_allclose(after, before, rtol=2**-23, atol=0)
    else:
        np.testing.assert_array_equal(after, before)
        np.testing.assert_array_equal(after, want)
