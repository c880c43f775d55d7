"""The bytes of whole tensors the tile search counts in SRAM while a run of layers
executes (`Residency`): each tensor from its producer to its last reader, the model's
outputs to the end, the links inside a cascade not at all."""

from __future__ import annotations

import random

import numpy as np
import pytest
from compile_helpers import quantized_onnx
from onnx import helper
from onnx_models import conv3x3, float_graph, skip_chain
from shared_models import MBV2

import npuc
from npuc.graph_io import entry_function
from npuc.passes.tiling.layers import find_layers
from npuc.passes.tiling.search import Planner
from npuc.registry import DEFAULT_PIPELINE
from npuc.target import load_target

MAP = 8 * 24 * 24  # one int8 map of the skip block, a multiple of the 64-byte alignment


def _planner(module, target: str = "mcu-64") -> Planner:
    func = entry_function(module)
    return Planner(func, find_layers(func), load_target(target), 256 * 1024, 0.5)


@pytest.fixture(scope="module")
def skip(tmp_path_factory: pytest.TempPathFactory) -> Planner:
    """x -> four int8 3x3 convolutions of 8 channels on 24 x 24 -> + x."""
    return _planner(quantized_onnx(skip_chain(), tmp_path_factory.mktemp("skip")))


def test_a_layer_alone_holds_its_inputs_its_result_and_what_is_read_later(skip: Planner):
    # weights are in flash (mcu-64): only maps count; x stays for the final add
    assert skip.residency.static == 0
    assert [skip.resident(k, k) for k in range(5)] == [2 * MAP, 3 * MAP, 3 * MAP, 3 * MAP, 3 * MAP]


def test_a_cascade_holds_no_links(skip: Planner):
    # conv1 .. conv3 as one cascade: t1 and t2 exist only as tiles
    assert skip.linked(2, 1) == (0,) and skip.linked(3, 1) == (0,)
    assert skip.resident(1, 3) == 3 * MAP  # x, t0, t3
    assert skip.resident(0, 4) == 2 * MAP  # x and y


def test_prefix_sums_equal_the_live_tensors_on_mobilenet_v2():
    module = npuc.load_model(MBV2)
    npuc.apply_pipeline(module, DEFAULT_PIPELINE)
    planner = _planner(module, "ethos-u55-256-hee")
    residency, ops = planner.residency, [layer.op for layer in planner.layers]
    produced = [r for op in ops for r in op.results]
    rng = random.Random(0)
    checked = 0
    for last in range(len(ops)):
        for first in range(max(0, last - 4), last + 1):
            inside = [r for op in ops[first:last] for r in op.results]
            links = set(rng.sample(inside, rng.randint(0, len(inside))))
            links.add(rng.choice(produced))  # and now and then one from outside the run
            whole = residency.live(ops[first], ops[last], links)
            expected = residency.static + sum(size for _, size in whole)
            assert residency.resident(ops[first], ops[last], links) == expected, (first, last)
            checked += 1
    assert checked > 200


@pytest.fixture(scope="module")
def residual(tmp_path_factory: pytest.TempPathFactory) -> Planner:
    """x -> conv0 -> conv1 -> conv2, + conv0's result: int8, 8 channels on 24 x 24."""
    rng = np.random.default_rng(6)
    nodes, inits = [], []
    for k, source in enumerate(["x", "t0", "t1"]):
        node, weights = conv3x3(rng, k, source, f"t{k}", 8, 8)
        nodes.append(node)
        inits += weights
    nodes.append(helper.make_node("Add", ["t0", "t2"], ["y"]))
    model = float_graph(nodes, inits, [1, 8, 24, 24], [1, 8, 24, 24])
    return _planner(quantized_onnx(model, tmp_path_factory.mktemp("residual")))


def test_tiles_read_later_stay_live_across_the_layers_between(residual: Planner):
    assert [layer.op.name for layer in residual.layers] == ["qnn.conv2d"] * 3 + ["qnn.add"]
    # in the sub-graph 0..3, conv0's tile waits for the add while conv2 runs (conv1 reads it)
    assert all(residual.joins(k, 3) for k in range(3))
    assert residual.crossing(0, 3) == [(), (), (0,), ()]
    assert residual.crossing(1, 3) is None  # a chain (conv0's result is whole): none wait
