"""The tile search considers cascades of up to 12 layers (docs/tiling.md, "Auto mode"): a
longer chain is planned as several cascades."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from compile_helpers import quantize_float
from onnx import helper
from onnx_models import float_graph, random_init
from xdsl.dialects.func import FuncOp

import npuc
from npuc.graph_io import entry_function
from npuc.passes.tiling.layers import find_layers
from npuc.passes.tiling.search import Planner
from npuc.target import load_target

DOCUMENTED_LIMIT = 12
LAYERS = DOCUMENTED_LIMIT + 3


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> FuncOp:
    """A chain of int8 3x3 convolutions on 32 x 32, each feeding the next, of 4 and 16
    channels in turn: the 16-channel maps are best left inside cascades."""
    rng = np.random.default_rng(11)
    nodes, inits, x = [], [], "x"
    for k in range(LAYERS):
        c_in, c_out = (4, 16) if k % 2 == 0 else (16, 4)
        if k == LAYERS - 1:
            c_out = 4
        inits += [random_init(rng, f"w{k}", [c_out, c_in, 3, 3])]
        inits += [random_init(rng, f"b{k}", [c_out])]
        y = "y" if k == LAYERS - 1 else f"t{k}"
        nodes.append(
            helper.make_node("Conv", [x, f"w{k}", f"b{k}"], [y], name=f"c{k}", pads=[1] * 4)
        )
        x = y
    path = Path(tmp_path_factory.mktemp("chain")) / "chain.onnx"
    onnx.save(float_graph(nodes, inits, [1, 4, 32, 32], [1, 4, 32, 32]), path)
    return entry_function(quantize_float(npuc.load_model(path)))


@pytest.mark.parametrize("optimise", ["size", "performance"])
def test_cascades_are_at_most_max_cascade_layers(chain: FuncOp, optimise: str) -> None:
    planner = Planner(chain, find_layers(chain), load_target("mcu-64"), 6 * 1024, 0.5)
    assert len(planner.layers) == LAYERS
    assert all(planner.joins(k, k + 1) for k in range(LAYERS - 1))
    groups, _ = planner.plan(optimise)
    assert groups[0].first == 0 and groups[-1].last == LAYERS - 1
    longest = max(g.last - g.first + 1 for g in groups)
    assert 1 < longest <= DOCUMENTED_LIMIT
    # every run up to the limit was weighed, and none longer
    weighed = {b - a + 1 for a, b in planner._added}
    assert max(weighed) == DOCUMENTED_LIMIT
