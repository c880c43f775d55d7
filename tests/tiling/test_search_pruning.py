"""The tile search skips a cascade whose lower bound of the peak (`least_peak`: resident
bytes and whole weights) exceeds the threshold the plan could allow. The bound must hold
for every option, and skipping must not change the plan."""

from __future__ import annotations

import pytest
from shared_models import MBV2
from xdsl.dialects.builtin import ModuleOp

import npuc
from npuc.graph_io import entry_function
from npuc.passes.tile import TilePass, plan_tiling
from npuc.passes.tiling.layers import find_layers
from npuc.passes.tiling.search import Planner
from npuc.registry import DEFAULT_PIPELINE
from npuc.target import load_target

TARGET = "ethos-u55-256-hee"  # weights in flash: the bound counts them


@pytest.fixture(scope="module")
def mbv2() -> ModuleOp:
    module = npuc.load_model(MBV2)
    npuc.apply_pipeline(module, DEFAULT_PIPELINE)
    return module


def test_least_peak_bounds_every_option(mbv2: ModuleOp):
    func = entry_function(mbv2)
    target = load_target(TARGET)
    planner = Planner(func, find_layers(func), target, target.sram.size, 0.5)
    n = len(planner.layers)
    runs = [(a, b) for b in range(n) for a in range(max(0, b - 5), b) if planner.joins(a, b)]
    runs = [(a, b) for a, b in runs if all(planner.joins(k, b) for k in range(a, b))]
    assert len(runs) > 50
    weighed = 0
    for a, b in runs:
        least = planner.least_peak(a, b)
        weighed += least > planner.resident(a, b)
        options = planner.options(a, b)
        assert all(least <= e.peak for e in options), (a, b)
    assert weighed > len(runs) / 2  # the weights part of the bound is exercised


@pytest.mark.parametrize("optimise", ["size", "performance"])
def test_skipping_runs_keeps_the_plan(
    mbv2: ModuleOp, optimise: str, monkeypatch: pytest.MonkeyPatch
):
    options = TilePass(target=TARGET, optimise=optimise)
    evaluated: list[tuple[int, int]] = []
    feasible = Planner._feasible

    def counted(self: Planner, first: int, last: int) -> list:
        evaluated.append((first, last))
        return feasible(self, first, last)

    monkeypatch.setattr(Planner, "_feasible", counted)
    pruned = plan_tiling(mbv2, options)
    with_pruning = len(evaluated)
    evaluated.clear()
    monkeypatch.setattr(Planner, "least_peak", lambda self, first, last: 0)  # skips nothing
    full = plan_tiling(mbv2, options)
    assert [(g.first, g.last, g.estimate) for g in pruned.groups] == [
        (g.first, g.last, g.estimate) for g in full.groups
    ]
    assert pruned.lowest_peak == full.lowest_peak
    if optimise == "size":  # P* is low: many cascades cannot reach it
        assert with_pruning < 0.75 * len(evaluated)
