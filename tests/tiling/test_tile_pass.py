"""The tile pass on the shared int8 MobileNetV2, for an MCU-class NPU and Ethos-U55-256.

Checked from the tiled IR itself, independently of the planner's estimates: every
compute op's operands and result fit the SRAM limit, the live bytes in SRAM never
exceed the planner's peak estimate, the big early feature maps never exist whole,
and the tiled program computes the same integers as the untiled one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from compile_helpers import aligned_bytes
from shared_models import MBV2
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import ReturnOp
from xdsl.ir import BlockArgument, Operation, SSAValue

from npuc.api import load_model, make_context
from npuc.dialects.tile import LAYER_ATTR
from npuc.graph_io import entry_function
from npuc.passes.tile import TilePass, TilingPlan, tile_module
from npuc.passes.tiling.layers import Graph, find_layers
from npuc.pipeline import parse_mlir
from npuc.runtime.qnn_interpreter import random_inputs, run_module
from npuc.target import load_target

VELA_SIZE_PEAK = int(353.50 * 1024)  # Vela 5.2 --optimise Size on ethos-u55-256 (README)


@pytest.fixture(scope="module")
def mbv2() -> ModuleOp:
    return load_model(MBV2)


@pytest.fixture(scope="module")
def tiled(mbv2: ModuleOp):
    """(plan, tiled module) per (target, optimise), computed once."""
    cache: dict[tuple[str, str], tuple[TilingPlan, ModuleOp]] = {}

    def get(target: str, optimise: str) -> tuple[TilingPlan, ModuleOp]:
        if (target, optimise) not in cache:
            module = mbv2.clone()
            plan = tile_module(module, TilePass(target=target, optimise=optimise))
            module.verify()
            cache[target, optimise] = plan, module
        return cache[target, optimise]

    return get


def _compute_ops(module: ModuleOp) -> list[Operation]:
    func = entry_function(module)
    return [
        op
        for op in func.body.block.ops
        if LAYER_ATTR in op.attributes and not op.name.startswith("tile.")
    ]


def _arena_values(module: ModuleOp, io_in_arena: bool):
    """Values with their own bytes in the arena, and what each view or update aliases."""
    func = entry_function(module)
    alias: dict[SSAValue, SSAValue] = {}
    owned: list[SSAValue] = [a for a in func.body.block.args if io_in_arena]
    for op in func.body.block.ops:
        if not op.results or op.name in ("qnn.constant", "nn.constant"):
            continue
        r = op.results[0]
        if op.name == "tile.slice" and _copied_tail(op):
            owned.append(r)
        elif op.name in ("tile.slice", "qnn.reshape"):
            alias[r] = op.operands[0]
        elif op.name in ("tile.insert", "tile.store"):
            alias[r] = op.operands[1]
        elif op.name == "tile.empty" and "to" in op.properties:
            continue  # a buffer in another memory
        else:
            owned.append(r)
    return owned, alias


def _copied_tail(op: Operation) -> bool:
    """A rolling buffer's tail (a slice of a buffer its own layer made) across channels:
    the memory planner copies a non-contiguous region, as the estimate assumes."""
    source = op.operands[0].owner
    layer = op.attributes.get(LAYER_ATTR)
    mine = isinstance(source, Operation) and source.attributes.get(LAYER_ATTR) == layer
    n, c = op.results[0].type.get_shape()[:2]  # type: ignore[attr-defined]
    return mine and n * c > 1


def live_peak(module: ModuleOp, alignment: int, io_in_arena: bool) -> int:
    """The most bytes of arena buffers live at once in the tiled function's op order."""
    func = entry_function(module)
    ops = list(func.body.block.ops)
    pos = {op: i for i, op in enumerate(ops)}
    owned, alias = _arena_values(module, io_in_arena)

    def root(v: SSAValue) -> SSAValue:
        while v in alias:
            v = alias[v]
        return v

    end: dict[SSAValue, int] = {}
    for op in ops:
        for v in op.operands:
            r = root(v)
            end[r] = len(ops) if isinstance(op, ReturnOp) else max(end.get(r, 0), pos[op])
    delta = [0] * (len(ops) + 3)
    for v in owned:
        start = -1 if isinstance(v, BlockArgument) else pos[v.owner]  # type: ignore[index]
        size = aligned_bytes(v, alignment)
        delta[start + 1] += size
        delta[end.get(v, start) + 2] -= size
    live, peak = 0, 0
    for d in delta:
        live += d
        peak = max(peak, live)
    return peak


@pytest.mark.parametrize("target", ["mcu-64", "ethos-u55-256-hee"])
def test_every_tile_fits_the_sram(tiled, target: str):
    """Each compute op's operands, result and accumulators (counting every DMA'd operand
    twice, for double buffering) fit the SRAM; so does the planner's own figure."""
    t = load_target(target)
    for optimise in ("performance", "size"):
        plan, module = tiled(target, optimise)
        assert all(g.estimate.working_set <= t.sram.size for g in plan.groups)
        for op in _compute_ops(module):
            twice = [2 if v.owner.name == "tile.load" else 1 for v in op.operands]  # type: ignore[union-attr]
            inputs = sum(
                k * aligned_bytes(v, t.alignment) for k, v in zip(twice, op.operands, strict=True)
            )
            out = op.results[0]
            acc = 0
            if op.name in ("qnn.conv2d", "qnn.fully_connected"):
                acc = -(-math.prod(out.type.get_shape()) * 4 // t.alignment) * t.alignment  # type: ignore[attr-defined]
            assert inputs + aligned_bytes(out, t.alignment) + acc <= t.sram.size, op.name


@pytest.mark.parametrize("target", ["mcu-64", "ethos-u55-256-hee"])
def test_live_bytes_stay_within_the_estimated_peak(tiled, target: str):
    t = load_target(target)
    for optimise in ("performance", "size"):
        plan, module = tiled(target, optimise)
        assert live_peak(module, t.alignment, io_in_arena=True) <= plan.peak


@pytest.mark.parametrize("target", ["mcu-64", "ethos-u55-256-hee"])
def test_size_mode_needs_no_more_sram_than_performance_mode(tiled, target: str):
    size_plan, _ = tiled(target, "size")
    performance_plan, _ = tiled(target, "performance")
    assert size_plan.peak <= performance_plan.peak
    assert size_plan.peak == size_plan.lowest_peak
    assert size_plan.cycles >= performance_plan.cycles


def test_size_mode_on_ethos_u55_beats_vela_and_keeps_only_the_input_whole(tiled):
    plan, module = tiled("ethos-u55-256-hee", "size")
    assert plan.peak < VELA_SIZE_PEAK
    assert live_peak(module, 16, io_in_arena=True) < VELA_SIZE_PEAK
    shapes = {
        tuple(r.type.get_shape())  # type: ignore[attr-defined]
        for op in entry_function(module).body.block.ops
        for r in op.results
    }
    for whole in [(1, 32, 112, 112), (1, 96, 112, 112), (1, 3, 224, 224), (1, 16, 112, 112)]:
        assert whole not in shapes
    # The first cascade takes the NHWC input and produces b1/project's 56x56 output.
    first = plan.groups[0]
    assert (first.first, first.last) == (0, 5)


def test_tiled_mobilenet_is_bit_exact(mbv2: ModuleOp, tiled):
    _, module = tiled("ethos-u55-256-hee", "size")
    feeds = random_inputs(mbv2, seed=7)
    want = run_module(mbv2, feeds)
    got = run_module(module, feeds)
    assert set(got) == set(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


def test_rolling_cascades_on_mobilenet_stay_within_the_estimate_and_are_bit_exact(mbv2):
    """Forced rolling buffers (every chain cascade of the size plan rolls; a residual
    block's sub-graph recomputes): the live bytes stay within the estimated peak, and the
    integers are the untiled program's."""
    module = mbv2.clone()
    plan = tile_module(
        module, TilePass(target="ethos-u55-256-hee", optimise="size", cascade="rolling")
    )
    cascades = [g for g in plan.groups if g.first < g.last]
    graph = Graph.of(find_layers(entry_function(mbv2)))
    chains = [g for g in cascades if graph.is_chain(g.first, g.last)]
    assert chains and all(g.estimate.rolling for g in chains)
    assert not any(g.estimate.rolling for g in cascades if g not in chains)
    assert all(g.estimate.overlap < 0.5 for g in cascades)
    alone = [g for g in plan.groups if g.first == g.last]
    assert alone and all(g.estimate.overlap == 0 for g in alone)  # nothing recomputed
    assert live_peak(module, 16, io_in_arena=True) <= plan.peak < VELA_SIZE_PEAK
    feeds = random_inputs(mbv2, seed=7)
    want, got = run_module(mbv2, feeds), run_module(module, feeds)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


ELEMENTWISE_PAIR = """
func.func @main(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %a = nn.relu %x {name = "a"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %b = nn.sigmoid %a {name = "b"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  func.return %b : tensor<1x4x8x8xf32>
}
"""


@pytest.mark.parametrize("manual", ["(0,1,1,1)", "(0,1,2,1)", "(0,0,1);(1,1,1)"])
def test_every_op_of_a_group_carries_its_layer(manual: str):
    # docs/tiling.md, "Grouping": each op made for layer k carries tile.layer = k, in a
    # cascade of one tile too (nothing else to do there: no DMA, no transpose)
    module = parse_mlir(ELEMENTWISE_PAIR)
    TilePass(target="mcu-64", manual=manual).apply(make_context(), module)
    ops = [op for op in entry_function(module).body.block.ops if op.name.startswith("nn.")]
    assert {op.name for op in ops} == {"nn.relu", "nn.sigmoid"}
    for op in ops:
        assert op.attributes[LAYER_ATTR].value.data == (0 if op.name == "nn.relu" else 1), op
