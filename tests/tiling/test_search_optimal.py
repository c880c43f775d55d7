"""The tile search's two dynamic programs against brute force over every partition of a
small model into groups: the lowest reachable peak P* (size mode: over every cascade the
layers allow), and the fastest plan within the threshold over the runs the search weighed."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from compile_helpers import quantized_onnx
from onnx import helper
from onnx_models import conv3x3, float_graph
from tiling_brute_force import best_partition, every_run, lowest_peak
from xdsl.dialects.func import FuncOp

from npuc.graph_io import entry_function
from npuc.passes.tiling.layers import find_layers
from npuc.passes.tiling.search import NEVER, TILE_CHARGE, Estimate, Planner, fastest
from npuc.target import load_target


@pytest.fixture(scope="module", params=["alternating", "skip"])
def model(request, tmp_path_factory: pytest.TempPathFactory) -> FuncOp:
    """Eight 3x3 convolutions on 32 x 32 of 4 and 16 channels in turn; or five with the
    input added to the last one's result (a tensor live across every layer)."""
    rng = np.random.default_rng(13)
    nodes, inits, x = [], [], "x"
    count = 8 if request.param == "alternating" else 5
    for k in range(count):
        c_in = 4 if k % 2 == 0 else 16
        c_out = 4 if k % 2 == 1 or k == count - 1 else 16
        y = "y" if k == count - 1 and request.param == "alternating" else f"t{k}"
        node, weights = conv3x3(rng, k, x, y, c_in, c_out)
        nodes.append(node)
        inits += weights
        x = y
    if request.param == "skip":
        nodes.append(helper.make_node("Add", ["x", x], ["y"]))
    model = float_graph(nodes, inits, [1, 4, 32, 32], [1, 4, 32, 32])
    return entry_function(quantized_onnx(model, tmp_path_factory.mktemp(request.param)))


def _planner(func: FuncOp) -> Planner:
    return Planner(func, find_layers(func), load_target("mcu-64"), 12 * 1024, 0.5)


def test_lowest_peak_is_the_best_over_every_partition(model: FuncOp):
    planner = _planner(model)
    n = len(planner.layers)
    runs = every_run(_planner(model))
    assert any(a < b for a, b in runs)
    worst = lowest_peak(n, runs)
    _, best_peak = planner.plan("size")
    assert best_peak == max(worst, planner.residency.floor())


@pytest.mark.parametrize("optimise", ["size", "performance"])
def test_the_plan_is_the_fastest_within_its_threshold(model: FuncOp, optimise: str):
    planner = _planner(model)
    groups, best_peak = planner.plan(optimise)
    threshold = planner._threshold(optimise, best_peak)
    fresh = _planner(model)
    n = len(planner.layers)
    weighed = {(k, k) for k in range(n)} | planner._added
    runs = {}
    for a, b in weighed:
        allowed = [e for e in fresh._feasible(a, b) if e.peak <= threshold]
        runs[(a, b)] = allowed

    def cost(options):
        e = min(options, key=lambda e: (e.cycles + TILE_CHARGE * e.tiles, e.tiles))
        return (e.cycles + TILE_CHARGE * e.tiles, e.tiles)

    def add(x, rest):
        return (x[0] + rest[0], x[1] + rest[1])

    best = best_partition(n, runs, cost, add, (0, 0))
    assert best is not None and best[0] < NEVER
    chosen = (
        sum(g.estimate.cycles + TILE_CHARGE * g.estimate.tiles for g in groups),
        sum(g.estimate.tiles for g in groups),
    )
    assert chosen == best
    assert all(g.estimate.peak <= threshold for g in groups)
    assert [(g.first, g.last) for g in groups] == sorted((g.first, g.last) for g in groups)
    assert groups[0].first == 0 and groups[-1].last == n - 1
    assert all(x.last + 1 == y.first for x, y in itertools.pairwise(groups))


def test_ties_go_to_fewer_tiles_then_h_before_w_before_channels():
    # docs/tiling.md, "Auto mode": equal charged cycles, then the order below
    def option(parts: tuple[int, int, int], cycles: int) -> Estimate:
        return Estimate(parts, peak=0, working_set=0, cycles=cycles, overlap=0.0, resident=0)

    charge = TILE_CHARGE * 4
    same = [option(p, 1000) for p in [(1, 4, 1), (2, 1, 2), (2, 2, 1), (4, 1, 1)]]
    assert fastest(same).parts == (4, 1, 1)
    assert fastest(same[:3]).parts == (2, 2, 1)
    assert fastest([*same, option((1, 1, 1), 1000 + charge - TILE_CHARGE)]).parts == (1, 1, 1)
    assert fastest([*same, option((1, 1, 1), 1000 + charge - TILE_CHARGE + 1)]).parts == (4, 1, 1)


PARTS = [(1, 1, 1), (2, 1, 1), (1, 2, 1), (2, 2, 1), (1, 1, 2), (3, 2, 2)]


def documented_cycles(
    once: float, compute: float, streamed: float, activations: float, first: float, tiles: int
) -> int:
    """docs/tiling.md, "Cost model": DMA done once first; one tile adds DMA and compute;
    more overlap them: once + first tile's DMA + max(compute, rest of the DMA), the first
    tile's activation DMA being its share (1 / tiles) of the whole."""
    if tiles == 1:
        return math.ceil(once + compute + streamed + activations)
    first_tile = first + activations / tiles
    return math.ceil(once + first_tile + max(compute, streamed + activations - first_tile))


@pytest.mark.parametrize("parts", PARTS)
def test_a_layer_estimate_adds_its_cycles_as_documented(model: FuncOp, parts):
    planner = Planner(model, find_layers(model), load_target("mid-256"), 1 << 20, 0.5)
    v = planner.layer_values(0, 0, 0, parts, False)
    compute, activations, streamed, first, once = v[4], v[5], v[6], v[7], v[8]
    assert activations > 0 and once + streamed > 0  # mid-256: input and weights in DRAM
    tiles = parts[0] * parts[1] * parts[2]
    want = documented_cycles(once, compute, streamed, activations, first, tiles)
    assert planner.evaluate(0, 0, parts, False).cycles == want


@pytest.mark.parametrize("stripes", [2, 4])
def test_a_rolling_cascade_charges_its_tail_copies(model: FuncOp, stripes):
    # docs/tiling.md, "Rolling buffers": copying the kept tails into each new buffer costs
    # 2 x bytes / port cycles, on top of the layers' compute
    target = load_target("mid-256")
    planner = Planner(model, find_layers(model), target, 1 << 20, 0.5)
    parts = (stripes, 1, 1)
    assert planner.rolling(0, 1, parts)
    v = [planner.layer_values(k, 0, 1, parts, True) for k in (0, 1)]
    copied = planner.rolling_bytes(0, 1, stripes, 1).copied
    assert copied > 0
    compute = sum(x[4] for x in v) + 2 * copied / target.arena_memory.bytes_per_cycle
    activations, streamed, first, once = (sum(x[k] for x in v) for k in (5, 6, 7, 8))
    want = documented_cycles(once, compute, streamed, activations, first, stripes)
    assert planner.evaluate(0, 1, parts, True).cycles == want
