"""A concat whose operands the memory planner writes straight into their slices of its result
(docs/tiling.md: a concat along the outermost non-unit axis, each operand feeding only the
concat) holds no operand buffers of its own in the tile search; one whose operand has
another reader keeps them."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx_models import float_graph, random_init

import npuc
from npuc.frontends.onnx import import_onnx
from npuc.graph_io import entry_function
from npuc.passes.tiling.layers import find_layers
from npuc.passes.tiling.search import Planner
from npuc.passes.tiling.working_set import ROLES
from npuc.registry import DEFAULT_PIPELINE
from npuc.target import load_target


def planner(shared_operand: bool, axis: int = 1) -> Planner:
    """x -> two 3x3 convolutions of 8 channels -> concat on `axis` -> 1x1 convolution;
    with `shared_operand`, the first convolution's result is also added to the output."""
    rng = np.random.default_rng(1)
    nodes = [
        helper.make_node("Conv", ["x", "wa", "ba"], ["a"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "wb", "bb"], ["b"], pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["a", "b"], ["c"], axis=axis),
        helper.make_node("Conv", ["c", "wc", "bc"], ["d" if shared_operand else "y"]),
    ]
    if shared_operand:
        nodes.append(helper.make_node("Add", ["d", "a"], ["y"]))
    inits = [
        random_init(rng, "wa", [8, 4, 3, 3]),
        random_init(rng, "ba", [8]),
        random_init(rng, "wb", [8, 4, 3, 3]),
        random_init(rng, "bb", [8]),
        random_init(rng, "wc", [8, 16 if axis == 1 else 8, 1, 1]),
        random_init(rng, "bc", [8]),
    ]
    out = [1, 8, 24 if axis == 2 else 12, 12]
    module = import_onnx(float_graph(nodes, inits, [1, 4, 12, 12], out))
    npuc.apply_pipeline(module, DEFAULT_PIPELINE)
    func = entry_function(module)
    return Planner(func, find_layers(func), load_target("mcu-64"), 64 * 1024, 0.5)


@pytest.mark.parametrize("shared_operand", [False, True], ids=["in-place", "shared"])
def test_a_concat_written_in_place_holds_no_operand_buffers(shared_operand):
    p = planner(shared_operand)
    (k,) = [i for i, layer in enumerate(p.layers) if layer.op.name.endswith(".concat")]
    concat = p.layers[k].op
    assert (concat in p.residency.merged) is not shared_operand
    terms, *_ = p.model(k, (), 1, 0)
    views = [t for t in terms if t.role == ROLES["views"]]
    assert bool(views) is shared_operand
    # a layer that is not split holds its whole result: 16 x 12 x 12 float32
    (output,) = [t for t in terms if t.role == ROLES["output"]]
    assert (output.unit, output.h, output.w) == (16 * 12 * 12 * 4, 2, 2)


def test_a_concat_along_an_inner_axis_is_not_written_in_place():
    # along H (N and C before it), each operand's bytes are rows spread over its channels
    p = planner(shared_operand=False, axis=2)
    (k,) = [i for i, layer in enumerate(p.layers) if layer.op.name.endswith(".concat")]
    assert p.layers[k].op not in p.residency.merged
    terms, *_ = p.model(k, (), 1, 0)
    assert [t for t in terms if t.role == ROLES["views"]]


def _concat_planner(inputs: list[str]) -> Planner:
    """x -> a 3x3 convolution `a` and a 1x1 convolution `b` of 8 channels -> concat of
    `inputs` (of x, a, b) on channels -> a 1x1 convolution."""
    rng = np.random.default_rng(2)
    nodes = [
        helper.make_node("Conv", ["x", "wa", "ba"], ["a"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "wb", "bb"], ["b"]),
        helper.make_node("Concat", inputs, ["c"], axis=1),
        helper.make_node("Conv", ["c", "wc", "bc"], ["y"]),
    ]
    channels = sum(4 if name == "x" else 8 for name in inputs)
    inits = [
        random_init(rng, "wa", [8, 4, 3, 3]),
        random_init(rng, "ba", [8]),
        random_init(rng, "wb", [8, 4, 1, 1]),
        random_init(rng, "bb", [8]),
        random_init(rng, "wc", [8, channels, 1, 1]),
        random_init(rng, "bc", [8]),
    ]
    if "b" not in inputs:  # b still feeds the output
        nodes[-1] = helper.make_node("Conv", ["c", "wc", "bc"], ["d"])
        nodes.append(helper.make_node("Add", ["d", "b"], ["y"]))
    module = import_onnx(float_graph(nodes, inits, [1, 4, 12, 12], [1, 8, 12, 12]))
    npuc.apply_pipeline(module, DEFAULT_PIPELINE)
    func = entry_function(module)
    return Planner(func, find_layers(func), load_target("mcu-64"), 64 * 1024, 0.5)


@pytest.mark.parametrize(
    ("inputs", "in_place"),
    [
        (["a", "b"], True),
        (["a", "a"], False),  # one tensor in two slices
        (["x", "a"], False),  # the model's input is not written by a layer of the run
    ],
    ids=["two-layers", "repeated", "model-input"],
)
def test_only_concats_of_distinct_layer_results_are_written_in_place(inputs, in_place):
    p = _concat_planner(inputs)
    (concat,) = [layer.op for layer in p.layers if layer.op.name.endswith(".concat")]
    assert (concat in p.residency.merged) is in_place
