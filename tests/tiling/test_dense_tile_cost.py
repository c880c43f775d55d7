"""The tile search prices a dense layer's feature slice by its width alone: a slice of f
output features over n rows and k inputs takes the MAC array's ceil(f / out) * ceil(n /
pixels) * ceil(k / in) cycles (docs/cycle-model.md), wherever the slice starts."""

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
from npuc.passes.tiling.layers import Kind, find_layers
from npuc.passes.tiling.working_set import channel_parts
from npuc.registry import DEFAULT_PIPELINE
from npuc.target import load_target

ROWS, INPUTS, FEATURES = 3, 200, 96


def ceil(a: int, b: int) -> int:
    return -(-a // b)


@pytest.fixture(scope="module")
def dense() -> ModuleOp:
    """One float Gemm of ROWS x INPUTS by INPUTS x FEATURES."""
    rng = np.random.default_rng(0)
    node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1, name="fc")
    inits = [random_init(rng, "w", [FEATURES, INPUTS]), random_init(rng, "b", [FEATURES])]
    module = import_onnx(float_graph([node], inits, [ROWS, INPUTS], [ROWS, FEATURES]))
    npuc.apply_pipeline(module, DEFAULT_PIPELINE)
    return module


@pytest.mark.parametrize("target_name", ["mcu-64", "ethos-u55-256-hee"])
@pytest.mark.parametrize("parts", [1, 2, 3, 5])
def test_a_feature_slice_costs_its_width_wherever_it_starts(
    dense: ModuleOp, target_name: str, parts: int
) -> None:
    (layer,) = find_layers(entry_function(dense))
    assert layer.kind is Kind.DENSE
    target = load_target(target_name)
    array = target.mac_array
    slices = channel_parts(layer, parts)
    assert [s.out for s in slices][-1][1] == FEATURES and len(slices) == parts
    whole = ((0, ROWS), (0, FEATURES))
    for part in slices:
        f0, f1 = part.out
        want = (
            ceil(f1 - f0, array.output_channels)
            * ceil(ROWS, array.pixels)
            * ceil(INPUTS, array.input_channels)
        )
        assert mac_factor(target, layer, part) == (want, 0)
        assert mac_cycles(target, layer, whole, part) == want
