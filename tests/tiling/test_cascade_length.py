"""The tile search considers cascades of up to 12 layers (docs/tiling.md, "Auto mode"): a
longer chain is planned as several cascades."""

from __future__ import annotations

import numpy as np
import pytest
from compile_helpers import quantized_onnx
from onnx_models import conv3x3, float_graph
from xdsl.dialects.func import FuncOp

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
        y = "y" if k == LAYERS - 1 else f"t{k}"
        node, weights = conv3x3(rng, k, x, y, c_in, 4 if k == LAYERS - 1 else c_out)
        nodes.append(node)
        inits += weights
        x = y
    model = float_graph(nodes, inits, [1, 4, 32, 32], [1, 4, 32, 32])
    return entry_function(quantized_onnx(model, tmp_path_factory.mktemp("chain")))


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
