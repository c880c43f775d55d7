"""Performance mode when even the lowest peak P* is over the SRAM limit: the threshold is
P* and more, so the search cascades only through the layers at or above P* (those that can
lower it, docs/tiling.md). P* is still the lowest peak over every partition of the layers
into the runs the layers allow, and the layers under it run alone."""

from __future__ import annotations

import numpy as np
import pytest
from compile_helpers import quantized_onnx
from onnx_models import conv3x3, float_graph
from tiling_brute_force import every_run, lowest_peak
from xdsl.dialects.func import FuncOp

from npuc.graph_io import entry_function
from npuc.passes.tiling.layers import find_layers
from npuc.passes.tiling.search import Planner, fastest
from npuc.target import load_target


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> FuncOp:
    """Six 3x3 convolutions on 32 x 32 whose channels grow and shrink (4, 16, 32, 8, 16, 4):
    layers of very different peaks."""
    rng = np.random.default_rng(5)
    channels = [4, 16, 32, 8, 16, 4, 4]
    nodes, inits, x = [], [], "x"
    for k in range(6):
        y = "y" if k == 5 else f"t{k}"
        node, weights = conv3x3(rng, k, x, y, channels[k], channels[k + 1])
        nodes.append(node)
        inits += weights
        x = y
    model = float_graph(nodes, inits, [1, 4, 32, 32], [1, 4, 32, 32])
    return entry_function(quantized_onnx(model, tmp_path_factory.mktemp("grow")))


def _planner(func: FuncOp, limit: int) -> Planner:
    return Planner(func, find_layers(func), load_target("mcu-64"), limit, 0.5)


def test_performance_over_the_limit_keeps_the_lowest_peak(model: FuncOp):
    lowest = _planner(model, 1 << 30).plan("size")[1]
    limit = lowest // 3  # no plan fits
    planner = _planner(model, limit)
    groups, best_peak = planner.plan("performance")
    n = len(planner.layers)
    fresh = _planner(model, limit)
    runs = every_run(fresh)
    worst = lowest_peak(n, runs)
    assert worst is not None
    assert best_peak == max(worst, planner.residency.floor()) > limit
    alone = {k: min(e.peak for e in fresh._feasible(k, k)) for k in range(n)}
    under = [k for k in range(n) if limit < alone[k] < best_peak]
    over = [k for k in range(n) if alone[k] >= best_peak]
    assert under and over  # both kinds of layers over the limit
    threshold = planner._threshold("performance", best_peak)
    slowed = {k for k in under if fastest(fresh._feasible(k, k)).peak > threshold}
    # the runs weighed: each through a layer at or above P*, or one the threshold slows down
    assert planner._added
    for a, b in planner._added:
        through = set(range(a, b + 1))
        assert through & (set(over) | slowed), (a, b)
    assert all(g.estimate.peak <= threshold for g in groups)
