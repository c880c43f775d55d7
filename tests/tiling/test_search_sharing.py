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
from compile_helpers import quantize_float, quantized_onnx
from onnx import helper
from onnx_models import conv3x3, float_graph, random_init, skip_chain
from xdsl.dialects.builtin import ModuleOp

import npuc
from npuc.graph_io import entry_function
from npuc.passes.tiling.layers import find_layers
from npuc.passes.tiling.search import CHANNEL_PARTS, Planner
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
    return quantized_onnx(skip_chain(), tmp_path_factory.mktemp("skip"))


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


def test_a_channel_part_model_is_its_own_whatever_was_computed_before(chain: ModuleOp):
    # Parts share a model by their channel counts: (0, 3) of 3 parts and (1, 2) of 8 parts
    # must not meet under one key because their bounds add up alike.
    shared = planner(chain)
    k, parts = 0, [c for c in CHANNEL_PARTS if c <= shared.layers[0].channel_units]
    assert parts == [1, 2, 3, 4, 6, 8]
    linked = shared.linked(k, k)
    keys = [(c, p) for c in parts for p in range(c)]
    seen = {key: shared.model(k, linked, *key) for key in keys}
    for key in reversed(keys):
        assert seen[key] == planner(chain).model(k, linked, *key), key


@pytest.fixture(scope="module")
def widening(tmp_path_factory: pytest.TempPathFactory) -> ModuleOp:
    """int8 3x3 convolutions 8 -> 8 -> 16 channels on 24 x 24: the second one's halves
    have the tile model of the whole first one."""
    rng = np.random.default_rng(7)
    first, inits = conv3x3(rng, 0, "x", "t", 8, 8)
    second, more = conv3x3(rng, 1, "t", "y", 8, 16)
    model = float_graph([first, second], inits + more, [1, 8, 24, 24], [1, 16, 24, 24])
    return quantized_onnx(model, tmp_path_factory.mktemp("widening"))


def test_a_whole_layer_and_a_channel_part_of_one_model_keep_their_own_tiles(
    widening: ModuleOp,
):
    # One model, but a tile of a channel part holds its input for the other parts too.
    shared = planner(widening)
    first = shared.options(0, 0)
    assert shared.part_models(1, (), 2)[0] == shared.part_models(0, (), 1)[0]
    assert first == planner(widening).options(0, 0)
    assert shared.options(1, 1) == planner(widening).options(1, 1)
