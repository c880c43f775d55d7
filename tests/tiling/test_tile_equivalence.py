"""Tiling is numerically invisible: random chains of layers, random tilings and cascades.

The reference is the untiled program run by the same interpreters. Quantized programs
must match bit for bit. Float programs must match exactly too, except where a tile's
convolution goes through BLAS: np.matmul may sum a dot product in a different order
for a different matrix width, so a conv tile may differ from the whole conv by float32
rounding (relative error around K * 2^-24 for K products); those chains are compared
with rtol 1e-5, and chains without such convolutions exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import (
    BoolAttr,
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
from xdsl.ir import Block, Region, SSAValue

from npuc.api import make_context
from npuc.dialects import nn
from npuc.dialects.tile import LAYER_ATTR
from npuc.graph_io import entry_function
from npuc.passes.quantize import QuantizePass
from npuc.passes.tile import TilePass
from npuc.passes.tiling.layers import chain_link, find_layers
from npuc.runtime import nn_interpreter
from npuc.runtime.qnn_interpreter import run_module
from npuc.tensors import to_dense

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _window_pads(draw, kernel: int, size: int) -> tuple[int, int] | None:
    """Begin/end pads smaller than the kernel (so every window touches the input)."""
    pads = (draw(st.integers(0, kernel - 1)), draw(st.integers(0, kernel - 1)))
    return pads if size + sum(pads) >= kernel else None


@st.composite
def chains(draw) -> tuple[ModuleOp, bool]:
    """A random float chain of convolutions, depthwise convolutions, pools, adds and relus.

    Returns the module and whether a tile of it may run a BLAS convolution (see above).
    """
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 4))
    h, w = draw(st.integers(3, 14)), draw(st.integers(3, 14))
    block = Block(arg_types=[TensorType(f32, [n, c, h, w])])
    values: list[SSAValue] = [block.args[0]]
    blas = False

    def add(op):
        block.add_op(op)
        values.append(op.results[0])
        return op.results[0]

    def constant(shape):
        return add(nn.ConstantOp(to_dense(rng.standard_normal(shape).astype(np.float32))))

    x = values[0]
    for i in range(draw(st.integers(1, 4))):
        _, c, h, w = nn.shape_of(x)
        kind = draw(st.sampled_from(["conv", "dwconv", "maxpool", "avgpool", "add", "relu"]))
        if kind in ("conv", "dwconv", "maxpool", "avgpool"):
            k = draw(st.sampled_from([1, 3, 5] if "conv" in kind else [2, 3]))
            s = draw(st.sampled_from([1, 2]))
            ph, pw = _window_pads(draw, k, h), _window_pads(draw, k, w)
            if ph is None or pw is None:
                continue
            props = {
                "strides": nn.ints([s, s]),
                "pads": nn.ints([ph[0], pw[0], ph[1], pw[1]]),
                "dilations": nn.ints([1, 1]),
            }
            if "conv" in kind:
                depthwise = kind == "dwconv"
                out = c * draw(st.integers(1, 2)) if depthwise else draw(st.integers(1, 5))
                groups = c if depthwise else 1
                weight = constant((out, c // groups, k, k))
                operands = [x, weight]
                if draw(st.booleans()):
                    operands.append(constant((out,)))
                props["groups"] = IntegerAttr(groups, i64)
                if draw(st.booleans()):
                    props["activation"] = StringAttr("clip")
                    props["activation_min"] = FloatAttr(0.0, f32)
                blas = blas or groups == 1  # a 1-channel depthwise conv is a regular one
                x = add(nn.build(nn.Conv2dOp, operands, props, name=f"l{i}"))
            else:
                props["kernel"] = nn.ints([k, k])
                op_type = nn.MaxPool2dOp if kind == "maxpool" else nn.AvgPool2dOp
                if kind == "avgpool":
                    del props["dilations"]
                    props["count_include_pad"] = BoolAttr.from_bool(draw(st.booleans()))
                x = add(nn.build(op_type, [x], props, name=f"l{i}"))
        elif kind == "add":
            same = [v for v in values if nn.shape_of(v) == nn.shape_of(x)]
            other = draw(st.sampled_from(same))
            x = add(nn.build(nn.AddOp, [x, other], name=f"l{i}"))
        else:
            x = add(nn.build(nn.ReluOp, [x], name=f"l{i}"))
    block.add_op(ReturnOp(x))
    signature = FunctionType.from_lists([block.args[0].type], [x.type])
    module = ModuleOp([FuncOp("main", signature, Region(block))])
    module.verify()
    return module, blas


@st.composite
def manual_tilings(draw, module: ModuleOp) -> str:
    """Random `manual` entries: cascades along chains, any H and W parts that exist."""
    layers = find_layers(entry_function(module))
    entries, k = [], 0
    while k < len(layers):
        last = k
        while (
            last + 1 < len(layers)
            and chain_link(layers[last], layers[last + 1]) is None
            and draw(st.booleans())
        ):
            last += 1
        out = layers[last].out_shape
        if layers[last].spatial:
            h, w = draw(st.integers(1, out[2])), draw(st.integers(1, out[3]))
        else:
            h = w = 1
        entries.append(f"({k},{last},{h},{w})")
        k = last + 1
    return ";".join(entries)


def _inputs(module: ModuleOp, seed: int) -> dict[str, np.ndarray]:
    from npuc.api import random_inputs

    return random_inputs(module, seed=seed)


def _tiled(module: ModuleOp, **options) -> ModuleOp:
    tiled = module.clone()
    TilePass(**options).apply(make_context(), tiled)
    tiled.verify()
    return tiled


def _quantized(module: ModuleOp) -> ModuleOp:
    q = module.clone()
    QuantizePass(samples=2, io="quantized").apply(make_context(), q)
    return q


def _assert_same(module: ModuleOp, tiled: ModuleOp, exact: bool, run=run_module) -> None:
    feeds = _inputs(module, seed=3)
    want, got = run(module, feeds), run(tiled, feeds)
    for name in want:
        assert got[name].dtype == want[name].dtype and got[name].shape == want[name].shape
        if exact:
            np.testing.assert_array_equal(got[name], want[name])
        else:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5)


def _assert_tagged(module: ModuleOp, tiled: ModuleOp) -> None:
    """Every layer is represented by at least one op of its number, one per tile."""
    layers = find_layers(entry_function(module))
    tagged = [op for op in tiled.walk() if op.name.split(".")[0] in ("nn", "qnn")]
    numbers = {op.attributes[LAYER_ATTR].value.data for op in tagged if LAYER_ATTR in op.attributes}
    assert numbers == set(range(len(layers)))


@SETTINGS
@given(st.data())
def test_manual_tilings_of_quantized_chains_are_bit_exact(data):
    module, _ = data.draw(chains())
    q = _quantized(module)
    manual = data.draw(manual_tilings(q))
    target = data.draw(st.sampled_from(["mcu-64", "mid-256"]))
    cascade = data.draw(st.sampled_from(["rolling", "recompute"]))
    tiled = _tiled(q, target=target, manual=manual, cascade=cascade)
    _assert_tagged(q, tiled)
    _assert_same(q, tiled, exact=True)


@SETTINGS
@given(st.data())
def test_manual_tilings_of_float_chains_match(data):
    module, blas = data.draw(chains())
    manual = data.draw(manual_tilings(module))
    tiled = _tiled(module, target="mcu-64", manual=manual)
    _assert_same(module, tiled, exact=not blas, run=nn_interpreter.run_module)  # float runner


@SETTINGS
@given(st.data())
def test_automatic_tilings_under_small_limits_are_bit_exact(data):
    """Tight SRAM limits force H, W and output-channel splits and cascades."""
    module, _ = data.draw(chains())
    q = _quantized(module)
    tiled = _tiled(
        q,
        target=data.draw(st.sampled_from(["mcu-64", "mid-256", "ethos-u55-256-hee"])),
        optimise=data.draw(st.sampled_from(["performance", "size"])),
        sram_limit=data.draw(st.integers(200, 4000)),
        overlap_limit=data.draw(st.sampled_from([0.0, 0.5, 2.0])),
        cascade=data.draw(st.sampled_from(["rolling", "recompute", "auto"])),
    )
    _assert_same(q, tiled, exact=True)


@pytest.mark.parametrize(("outputs", "inputs", "limit"), [(40, 96, 3000), (2, 1536, 2000)])
def test_tiled_fully_connected_streams_weights_bit_exactly(outputs, inputs, limit):
    """A dense layer whose weights exceed the limit runs in output-feature slices, each
    with its own features' multipliers and shifts (per-channel weights: two features of
    different scales take one each)."""
    rng = np.random.default_rng(0)
    block = Block(arg_types=[TensorType(f32, [2, inputs])])
    scales = np.geomspace(0.05, 4.0, outputs).astype(np.float32)[:, None]
    weights = rng.standard_normal((outputs, inputs)).astype(np.float32) * scales
    weight = nn.ConstantOp(to_dense(weights))
    bias = nn.ConstantOp(to_dense(rng.standard_normal(outputs).astype(np.float32)))
    fc = nn.build(nn.FullyConnectedOp, [block.args[0], weight, bias], name="fc")
    for op in (weight, bias, fc):
        block.add_op(op)
    block.add_op(ReturnOp(fc.results[0]))
    signature = FunctionType.from_lists([block.args[0].type], [fc.results[0].type])
    module = _quantized(ModuleOp([FuncOp("main", signature, Region(block))]))
    tiled = _tiled(module, target="mcu-64", sram_limit=limit)
    dense = [op for op in tiled.walk() if op.name == "qnn.fully_connected"]
    assert len(dense) > 1
    assert sum(nn.shape_of(op.results[0])[1] for op in dense) == outputs
    _assert_same(module, tiled, exact=True)
