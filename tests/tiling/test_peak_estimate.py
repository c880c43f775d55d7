"""The tiler's peak SRAM estimate against the buffers of the tiled IR, term by term.

On `mid-256` inputs, outputs and weights live in DRAM, so a convolution's group holds no
resident tensor, and every buffer of a tile is an op of the tiled IR: the DMA'd input
slice (`tile.load` of an activation), the weights (`tile.load` of a constant), the conv's
output tile (`tile.store`d to DRAM) and its 32-bit accumulators. docs/tiling.md gives the
peak as weights + the largest tile's (loaded slices + output + accumulators), DMA'd
buffers counted twice when the group has more than one tile (double buffering): the
output tile's stored copy is one of those.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from compile_helpers import aligned_bytes, quantize_float
from onnx import helper
from onnx_models import float_graph, random_init
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

import npuc
from npuc.graph_io import entry_function
from npuc.passes.tile import TilePass, tile_module
from npuc.target import load_target

TARGET = "mid-256"


@pytest.fixture(scope="module")
def conv(tmp_path_factory: pytest.TempPathFactory) -> ModuleOp:
    """One int8 3x3 convolution, 4 -> 16 channels on a 32 x 32 map."""
    rng = np.random.default_rng(1)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1])]
    inits = [random_init(rng, "w", [16, 4, 3, 3]), random_init(rng, "b", [16], 0.1)]
    path = Path(tmp_path_factory.mktemp("conv")) / "conv.onnx"
    onnx.save(float_graph(nodes, inits, [1, 4, 32, 32], [1, 16, 32, 32]), path)
    return quantize_float(npuc.load_model(path))


def elements(value: SSAValue) -> int:
    ty = value.type
    assert isinstance(ty, TensorType)
    return math.prod(ty.get_shape())


def peak_from_ir(module: ModuleOp, alignment: int) -> int:
    """docs/tiling.md's peak of a one-convolution group, from the tiled ops' buffers."""
    ops = list(entry_function(module).body.block.ops)
    constant_loads = [
        op
        for op in ops
        if op.name == "tile.load" and isinstance(op.operands[0].owner, Operation)
        if op.operands[0].owner.name == "qnn.constant"
    ]
    weights = sum(aligned_bytes(op.results[0], alignment) for op in constant_loads)
    convs = [op for op in ops if op.name == "qnn.conv2d"]
    stored = {op.operands[0] for op in ops if op.name == "tile.store"}
    twice = 2 if len(convs) > 1 else 1
    tiles = []
    for op in convs:
        loaded = op.operands[0]
        assert isinstance(loaded.owner, Operation) and loaded.owner.name == "tile.load"
        out = op.results[0]
        acc = -(-elements(out) * 4 // alignment) * alignment
        output = aligned_bytes(out, alignment)
        assert out in stored
        tiles.append(twice * aligned_bytes(loaded, alignment) + output + (twice - 1) * output + acc)
    return weights + max(tiles)


@pytest.mark.parametrize("manual", ["(0,0,1,1)", "(0,0,4,1)", "(0,0,2,2)", "(0,0,3,1)"])
def test_the_peak_estimate_is_the_tiled_buffers_sum(conv: ModuleOp, manual: str):
    module = conv.clone()
    plan = tile_module(module, TilePass(target=TARGET, manual=manual))
    (group,) = plan.groups
    h, w = (int(v) for v in manual.strip("()").split(",")[2:])
    assert group.estimate.parts == (h, w, 1) and group.estimate.resident == 0
    alignment = load_target(TARGET).alignment
    assert group.estimate.peak == peak_from_ir(module, alignment)
    func = entry_function(module)
    assert func.attributes["tile.peak_sram"].value.data == group.estimate.peak  # type: ignore[attr-defined]
