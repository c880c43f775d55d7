"""The tile search shares estimate values between layers of equal content (tile models
and part lengths) and a lone window layer's part lengths between layers of equal
geometry. Sharing must not change an estimate: every run's options from one planner that
saw all layers first (so later layers hit the shared values) equal those of a fresh
planner that sees that run alone (nothing to share)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from compile_helpers import quantize_float
from onnx import helper
from onnx_models import float_graph, random_init
from xdsl.dialects.builtin import ModuleOp

import npuc
from npuc.graph_io import entry_function
from npuc.passes.tiling.layers import find_layers
from npuc.passes.tiling.search import Planner
from npuc.target import load_target

TARGET = "mcu-64"
LIMIT = 24 * 1024  # small enough that the layers need tiles, and cascades get evaluated


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> ModuleOp:
    """Six int8 3x3 convolutions of 8 channels on 24 x 24, equal but for one 5x5
    in the middle (a layer of another geometry between equal ones)."""
    rng = np.random.default_rng(3)
    nodes, inits, x = [], [], "x"
    side = 24
    for k in range(6):
        kernel, stride = (5, 1) if k == 3 else (3, 1)
        pad = kernel // 2
        inits += [random_init(rng, f"w{k}", [8, 8, kernel, kernel]), random_init(rng, f"b{k}", [8])]
        y = "y" if k == 5 else f"t{k}"
        attrs = {"pads": [pad] * 4, "strides": [stride, stride]}
        nodes.append(helper.make_node("Conv", [x, f"w{k}", f"b{k}"], [y], name=f"c{k}", **attrs))
        side = (side + 2 * pad - kernel) // stride + 1
        x = y
    path = Path(tmp_path_factory.mktemp("chain")) / "chain.onnx"
    onnx.save(float_graph(nodes, inits, [1, 8, 24, 24], [1, 8, side, side]), path)
    return quantize_float(npuc.load_model(path))


def planner(module: ModuleOp) -> Planner:
    func = entry_function(module)
    return Planner(func, find_layers(func), load_target(TARGET), LIMIT, 0.5)


def test_shared_values_equal_values_computed_alone(chain: ModuleOp):
    shared = planner(chain)
    n = len(shared.layers)
    assert n == 6
    runs = [(a, b) for b in range(n) for a in range(b, -1, -1) if a == b or shared.joins(a, b)]
    assert any(a < b for a, b in runs)
    first_pass = {run: shared.options(*run) for run in runs}
    for run in runs:
        alone = planner(chain).options(*run)
        assert alone, run
        assert first_pass[run] == alone, run


def test_equal_layers_share_their_values(chain: ModuleOp):
    shared = planner(chain)
    for k in range(len(shared.layers)):
        shared._options(k, k)  # options(k, k) would reuse the first equal layer's list
    # five of the six layers are equal: far fewer distinct values than (layer, parts) keys
    assert len(shared._layers_by_content) < len(shared._layers) / 2


@pytest.fixture(scope="module")
def skip(tmp_path_factory: pytest.TempPathFactory) -> ModuleOp:
    """Four equal int8 3x3 convolutions whose input is added to their result: the input
    stays live across them, so equal layers hold different resident bytes."""
    rng = np.random.default_rng(5)
    nodes, inits, x = [], [], "x"
    for k in range(4):
        inits += [random_init(rng, f"w{k}", [8, 8, 3, 3]), random_init(rng, f"b{k}", [8])]
        attrs = {"pads": [1] * 4, "strides": [1, 1]}
        nodes.append(
            helper.make_node("Conv", [x, f"w{k}", f"b{k}"], [f"t{k}"], name=f"c{k}", **attrs)
        )
        x = f"t{k}"
    nodes.append(helper.make_node("Add", ["x", x], ["y"], name="add"))
    path = Path(tmp_path_factory.mktemp("skip")) / "skip.onnx"
    onnx.save(float_graph(nodes, inits, [1, 8, 24, 24], [1, 8, 24, 24]), path)
    return quantize_float(npuc.load_model(path))


def test_equal_layers_alone_reuse_one_option_list(skip: ModuleOp):
    shared = planner(skip)
    convs = [k for k, layer in enumerate(shared.layers) if layer.is_conv]
    assert len(convs) == 4
    options = {k: shared.options(k, k) for k in convs}
    # the four convolutions' options are one list, reused with their resident bytes
    assert len(shared._alone_options) == 1
    assert len({shared.resident(k, k) for k in convs}) > 1
    for k in convs:
        fresh = planner(skip).options(k, k)
        assert fresh and options[k] == fresh, k
