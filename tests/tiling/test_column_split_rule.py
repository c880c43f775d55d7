"""The tile search offers a cascade with window layers column parts only once its stripes
are thin: with ceil(rows / h) above `MAX_STRIPE_FOR_COLUMNS` rows, more stripes save as
much SRAM with less halo, so a thick stripe is tried in one column part only."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx_models import float_graph, random_init
from xdsl.dialects.builtin import ModuleOp

import npuc
from npuc.frontends.onnx import import_onnx
from npuc.graph_io import entry_function
from npuc.passes.tiling.layers import Kind, find_layers
from npuc.passes.tiling.search import MAX_STRIPE_FOR_COLUMNS, Estimate, Planner
from npuc.registry import DEFAULT_PIPELINE
from npuc.target import load_target

# 21 rows: 2 stripes are 11 rows thick (10.5 on average), 3 stripes 7 rows thin
ROWS, COLS = 21, 16


@pytest.fixture(scope="module")
def chain() -> ModuleOp:
    """Three float 3x3 convolutions of 8 channels on 21 x 16, one feeding the next."""
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for k in range(3):
        inits += [random_init(rng, f"w{k}", [8, 8, 3, 3]), random_init(rng, f"b{k}", [8])]
        y = "y" if k == 2 else f"t{k}"
        nodes.append(
            helper.make_node("Conv", [x, f"w{k}", f"b{k}"], [y], name=f"c{k}", pads=[1] * 4)
        )
        x = y
    shape = [1, 8, ROWS, COLS]
    module = import_onnx(float_graph(nodes, inits, shape, shape))
    npuc.apply_pipeline(module, DEFAULT_PIPELINE)
    return module


def cascade_options(module: ModuleOp) -> list[tuple[int, Estimate]]:
    """(rows of the last layer, option) of every cascade of two or more layers."""
    func = entry_function(module)
    planner = Planner(func, find_layers(func), load_target("mcu-64"), 16 * 1024, 0.5)
    assert [layer.kind for layer in planner.layers] == [Kind.WINDOW] * 3
    found = []
    for last in range(1, len(planner.layers)):
        for first in range(last):
            if all(planner.joins(k, last) for k in range(first, last)):
                rows = planner.layers[last].extent(0)
                found += [(rows, e) for e in planner.options(first, last)]
    return found


def test_thick_stripes_get_one_column_part(chain: ModuleOp) -> None:
    options = cascade_options(chain)
    assert {rows for rows, _ in options} == {ROWS}

    def thickness(e: Estimate) -> int:
        return -(-ROWS // e.parts[0])

    columns = [e for _, e in options if e.parts[1] > 1]
    thick = [e for _, e in options if thickness(e) > MAX_STRIPE_FOR_COLUMNS]
    assert [e.parts for e in columns if thickness(e) > MAX_STRIPE_FOR_COLUMNS] == []
    # the rule has both sides here: thin stripes in columns, thick ones (1, 2 stripes) whole
    assert {e.parts[1] for e in columns} >= {2, 4}
    assert {e.parts[0] for e in thick} == {1, 2}
