"""Rolling-buffer cascades: bit-exact with the untiled program, and no row computed twice.

Random chains of window layers (convolutions 1x1/3x3/5x5, strides 1 and 2, dilation 1
and 2, depthwise, max and average pools) and elementwise layers run as one cascade in
random stripe counts. The reference is the untiled program on the same interpreters
(float: exact unless a tile's convolution goes through BLAS, see test_tile_equivalence).
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiling.test_tile_equivalence import _assert_same, _quantized, _tiled
from xdsl.dialects.builtin import (
    BoolAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

from npuc.dialects import nn
from npuc.dialects.tile import LAYER_ATTR, PART_ATTR
from npuc.graph_io import entry_function
from npuc.passes.tiling.layers import chain_link, find_layers
from npuc.passes.tiling.rolling import rolling_spans
from npuc.runtime import nn_interpreter
from npuc.tensors import to_dense

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def window_chains(draw) -> tuple[ModuleOp, bool]:
    """A float chain in which every layer feeds only the next (one cascade), and whether a
    tile may run a BLAS convolution."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    c, h, w = draw(st.integers(1, 3)), draw(st.integers(8, 20)), draw(st.integers(3, 8))
    block = Block(arg_types=[TensorType(f32, [1, c, h, w])])
    x, blas, count = block.args[0], False, 0

    def add(op):
        block.add_op(op)
        return op.results[0]

    for i in range(draw(st.integers(2, 5))):
        _, c, h, w = nn.shape_of(x)
        kind = draw(st.sampled_from(["conv", "conv", "dwconv", "maxpool", "avgpool", "relu"]))
        if kind == "relu":
            x = add(nn.build(nn.ReluOp, [x], name=f"l{i}"))  # may fuse into a conv
            continue
        k = draw(st.sampled_from([1, 3, 5] if "conv" in kind else [2, 3]))
        s = draw(st.sampled_from([1, 2]))
        d = draw(st.sampled_from([1, 2])) if kind != "avgpool" and k > 1 else 1
        e = d * (k - 1) + 1
        pads = [draw(st.integers(0, e - 1)) for _ in range(4)]  # t, l, b, r
        if h + pads[0] + pads[2] < e or w + pads[1] + pads[3] < e:
            continue
        props = {
            "strides": nn.ints([s, s]),
            "pads": nn.ints(pads),
            "dilations": nn.ints([d, d]),
        }
        if "conv" in kind:
            depthwise = kind == "dwconv"
            out = c if depthwise else draw(st.integers(1, 4))
            groups = c if depthwise else 1
            weight = nn.ConstantOp(
                to_dense(rng.standard_normal((out, c // groups, k, k)).astype(np.float32))
            )
            bias = nn.ConstantOp(to_dense(rng.standard_normal(out).astype(np.float32)))
            block.add_op(weight)
            block.add_op(bias)
            props["groups"] = IntegerAttr(groups, i64)
            blas = blas or groups == 1  # a 1-channel depthwise conv is a regular one
            op = nn.build(nn.Conv2dOp, [x, weight.results[0], bias.results[0]], props, name=f"l{i}")
        else:
            props["kernel"] = nn.ints([k, k])
            if kind == "avgpool":
                del props["dilations"]
                props["count_include_pad"] = BoolAttr.from_bool(draw(st.booleans()))
            op_type = nn.MaxPool2dOp if kind == "maxpool" else nn.AvgPool2dOp
            op = nn.build(op_type, [x], props, name=f"l{i}")
        x = add(op)
        count += 1
    for i in range(count, 2):
        props = {
            "kernel": nn.ints([3, 3]),
            "strides": nn.ints([1, 1]),
            "pads": nn.ints([1, 1, 1, 1]),
            "dilations": nn.ints([1, 1]),
        }
        x = add(nn.build(nn.MaxPool2dOp, [x], props, name=f"pool{i}"))
    block.add_op(ReturnOp(x))
    signature = FunctionType.from_lists([block.args[0].type], [x.type])
    module = ModuleOp([FuncOp("main", signature, Region(block))])
    module.verify()
    return module, blas


def _cascade(draw, module: ModuleOp, max_w: int) -> str:
    """One manual cascade over the whole chain: random H stripes (at least 2), W parts."""
    layers = find_layers(entry_function(module))
    assert all(chain_link(a, b) is None for a, b in itertools.pairwise(layers))
    _, _, rows, cols = layers[-1].out_shape
    h = draw(st.integers(min(2, rows), rows))
    w = draw(st.integers(1, min(max_w, cols)))
    return f"(0,{len(layers) - 1},{h},{w})"


def _computed_rows(tiled: ModuleOp) -> dict[tuple[int, int], int]:
    """Rows computed per (layer, column part), summed over the layer's compute ops."""
    rows: Counter[tuple[int, int]] = Counter()
    for op in entry_function(tiled).body.block.ops:
        dialect = op.name.split(".")[0]
        if LAYER_ATTR in op.attributes and dialect in ("nn", "qnn"):
            part = op.attributes.get(PART_ATTR)
            j = part.get_values()[1] if part is not None else 0  # type: ignore[attr-defined]
            rows[op.attributes[LAYER_ATTR].value.data, j] += nn.shape_of(op.results[0])[2]  # type: ignore[attr-defined]
    return rows


def _needed_rows(module: ModuleOp, h: int) -> list[int]:
    """Per layer: the rows of its output that the cascade needs (the union over stripes)."""
    layers = find_layers(entry_function(module))
    result = []
    for rolls in rolling_spans(layers, 0, h):
        covered: set[int] = set()
        for r in rolls:
            if r.need is not None:
                covered.update(range(*r.need))
        result.append(len(covered))
    return result


@SETTINGS
@given(st.data())
def test_rolling_cascades_of_quantized_chains_are_bit_exact_and_compute_each_row_once(data):
    module, _ = data.draw(window_chains())
    q = _quantized(module)
    manual = _cascade(data.draw, q, max_w=3)
    tiled = _tiled(q, target=data.draw(st.sampled_from(["mcu-64", "mid-256"])), manual=manual)
    _assert_same(q, tiled, exact=True)
    h, w = (int(v) for v in manual.strip("()").split(",")[2:])
    group = entry_function(tiled).attributes["tile.groups"].data[0]  # type: ignore[attr-defined]
    assert h == 1 or group.data["cascade"] == StringAttr("rolling")
    layers = find_layers(entry_function(q))
    needed = _needed_rows(q, h)
    computed = _computed_rows(tiled)
    for k, layer in enumerate(layers):
        rows = layer.out_shape[2]
        for j in range(w):
            # Every needed row exactly once (the last layer: all of its rows).
            want = rows if k == len(layers) - 1 else needed[k]
            assert computed[k, j] == want <= rows, (k, j, computed[k, j], want)


@SETTINGS
@given(st.data())
def test_rolling_cascades_of_float_chains_match(data):
    module, blas = data.draw(window_chains())
    manual = _cascade(data.draw, module, max_w=2)
    tiled = _tiled(module, target="mcu-64", manual=manual, cascade="rolling")
    _assert_same(module, tiled, exact=not blas, run=nn_interpreter.run_module)


def test_recompute_computes_halo_rows_twice_and_rolling_does_not():
    """conv 3x3 -> conv 3x3 in 3 stripes: recompute computes the first conv's halo rows
    again in every later stripe; rolling computes each of its rows once."""
    rng = np.random.default_rng(1)
    block = Block(arg_types=[TensorType(f32, [1, 2, 9, 4])])
    x = block.args[0]
    for i in range(2):
        weight = nn.ConstantOp(to_dense(rng.standard_normal((2, 2, 3, 3)).astype(np.float32)))
        block.add_op(weight)
        props = {
            "strides": nn.ints([1, 1]),
            "pads": nn.ints([1, 1, 1, 1]),
            "dilations": nn.ints([1, 1]),
            "groups": IntegerAttr(1, i64),
        }
        conv = nn.build(nn.Conv2dOp, [x, weight.results[0]], props, name=f"c{i}")
        block.add_op(conv)
        x = conv.results[0]
    block.add_op(ReturnOp(x))
    signature = FunctionType.from_lists([block.args[0].type], [x.type])
    module = ModuleOp([FuncOp("main", signature, Region(block))])
    rows = {}
    for cascade in ("recompute", "rolling"):
        tiled = _tiled(module, target="mcu-64", manual="(0,1,3)", cascade=cascade)
        _assert_same(module, tiled, exact=False, run=nn_interpreter.run_module)
        rows[cascade] = _computed_rows(tiled)
    assert rows["recompute"][0, 0] == 9 + 2 * 2  # rows 0..3, 2..6, 5..8
    assert rows["rolling"][0, 0] == 9
    assert rows["recompute"][1, 0] == rows["rolling"][1, 0] == 9


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_rolling_spans_continue_a_known_suffix_exactly(data):
    """The planner extends a cascade one layer at a time and passes the rolls it has for the
    shorter chain: continuing them gives what computing the whole chain gives."""
    module, _ = data.draw(window_chains())
    layers = find_layers(entry_function(module))
    h = data.draw(st.integers(1, 6))
    whole = rolling_spans(layers, 0, h)
    for start in range(len(layers) - 1, 0, -1):
        known = rolling_spans(layers[start:], 0, h)
        assert known == whole[start:]
        assert rolling_spans(layers, 0, h, known) == whole
