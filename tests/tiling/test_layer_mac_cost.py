"""The tile search's MAC cycles for window and whole layers, against docs/tiling.md's cost
model: a convolution tile takes ceil(oc / out) * ceil(pixels / array pixels) * ceil(ic /
in) * kernel taps (kH x kW, also when the kernel is not square); a layer that is not split
takes ceil(elements / (output_channels x pixels))."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx_models import float_graph, random_init
from xdsl.dialects.builtin import ModuleOp

import npuc
from npuc.frontends.onnx import import_onnx
from npuc.graph_io import entry_function
from npuc.passes.tiling.cost import mac_cycles, mac_factor
from npuc.passes.tiling.layers import Kind, Layer, find_layers
from npuc.passes.tiling.working_set import channel_parts
from npuc.registry import DEFAULT_PIPELINE
from npuc.target import load_target

TARGETS = ["mcu-64", "ethos-u55-256-hee"]
IN_CHANNELS, OUT_CHANNELS, H, W = 16, 24, 12, 10


def ceil(a: int, b: int) -> int:
    return -(-a // b)


def only_layer(model) -> Layer:
    module: ModuleOp = import_onnx(model)
    npuc.apply_pipeline(module, DEFAULT_PIPELINE)
    (layer,) = find_layers(entry_function(module))
    return layer


@pytest.fixture(scope="module", params=[(1, 3), (3, 1), (2, 5), (3, 3)], ids=str)
def conv(request) -> tuple[Layer, tuple[int, int]]:
    kh, kw = request.param
    rng = np.random.default_rng(kh * 10 + kw)
    pads = [(kh - 1) // 2, (kw - 1) // 2, kh // 2, kw // 2]  # same size out
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=pads, name="conv")
    inits = [
        random_init(rng, "w", [OUT_CHANNELS, IN_CHANNELS, kh, kw]),
        random_init(rng, "b", [OUT_CHANNELS]),
    ]
    shape = [1, IN_CHANNELS, H, W]
    model = float_graph([node], inits, shape, [1, OUT_CHANNELS, H, W])
    return only_layer(model), (kh, kw)


@pytest.mark.parametrize("target_name", TARGETS)
def test_a_convolution_tile_counts_every_tap_of_its_kernel(conv, target_name):
    layer, (kh, kw) = conv
    assert layer.kind is Kind.WINDOW
    array = load_target(target_name).mac_array
    target = load_target(target_name)
    for part in channel_parts(layer, 2):
        c0, c1 = part.out
        per_pixel = ceil(c1 - c0, array.output_channels) * ceil(IN_CHANNELS, array.input_channels)
        assert mac_factor(target, layer, part) == (per_pixel * kh * kw, 1)
        box = ((0, 1), (c0, c1), (2, 7), (0, W))  # 5 rows of the output
        want = per_pixel * kh * kw * ceil(5 * W, array.pixels)
        assert mac_cycles(target, layer, box, part) == want


@pytest.mark.parametrize("target_name", TARGETS)
def test_a_layer_that_is_not_split_costs_its_elements_over_the_array(target_name):
    rows, cols = 64, 100  # rank 2: not split, so a whole layer
    layer = only_layer(
        float_graph([helper.make_node("Relu", ["x"], ["y"])], [], [rows, cols], [rows, cols])
    )
    assert layer.kind is Kind.WHOLE
    target = load_target(target_name)
    array = target.mac_array
    want = ceil(rows * cols, array.output_channels * array.pixels)
    (part,) = channel_parts(layer, 1)
    assert mac_factor(target, layer, part) == (want, 0)
    assert mac_cycles(target, layer, ((0, rows), (0, cols)), part) == want


@pytest.mark.parametrize("target_name", TARGETS)
def test_a_tile_of_a_3d_layer_counts_as_one_channel(target_name):
    """A 3-D result is N x H x W without channels (docs/tiling.md, layer kinds): one block
    of output channels per block of pixels, over the N images."""
    n, rows, cols = 2, 24, 40
    layer = only_layer(
        float_graph([helper.make_node("Relu", ["x"], ["y"])], [], [n, rows, cols], [n, rows, cols])
    )
    assert layer.kind is Kind.ELEMENTWISE and layer.spatial and layer.cdim is None
    target = load_target(target_name)
    (part,) = channel_parts(layer, 1)
    assert mac_factor(target, layer, part) == (1, n)
