"""Models whose feature maps are larger than a (small, custom) SRAM fit once tiled, bit-exactly.

Each case reproduces one reason why corpus models (docs/models.md) overflowed the SRAM of
`ethos-u55-256-hee`: elementwise ops with a scalar operand that stayed whole (PicoDet's
hard-swish `x + 3`, `/ 6`), sub-graphs that are not chains (`x * sigmoid(x)`: x has two
readers), float ops between quantized layers (PP-OCR's softmax, Magika's one-hot) on 3-D
tensors, and slices of resident tensors that the memory planner copied although the
tiler counted them as views. Each is compiled for a copy of the U55 target with a smaller
SRAM, planned with inputs and outputs in the arena, lowered, encoded, run, and compared
with the qnn interpreter; the planned activations must fit the SRAM.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from compile_helpers import assert_not_degenerate, assert_same, quantize_float
from onnx import helper, numpy_helper
from onnx_models import float_graph, random_init
from xdsl.dialects.builtin import Float32Type

import npuc
from npuc.backend.npubin import encode_program
from npuc.dialects.tile import LAYER_ATTR
from npuc.graph_io import entry_function
from npuc.passes.lower_to_npu import program_of
from npuc.passes.memory.ir import read_plan
from npuc.passes.tile import TilePass, plan_tiling
from npuc.passes.tiling.layers import find_layers
from npuc.passes.tiling.search import Planner
from npuc.runtime.executor import Executor
from npuc.runtime.loader import load
from npuc.runtime.qnn_interpreter import random_inputs, run_module
from npuc.target import load_target

TARGETS = Path(__file__).resolve().parents[2] / "targets"


def small_target(tmp_path: Path, size: str) -> str:
    """The U55 target with `size` of SRAM (a path, quoted for pipeline strings)."""
    text = (TARGETS / "ethos-u55-256-hee.toml").read_text()
    assert 'size = "2 MiB"' in text
    path = tmp_path / "small.toml"
    path.write_text(text.replace('size = "2 MiB"', f'size = "{size}"', 1))
    return str(path)


def sram_bytes(size: str) -> int:
    number, unit = size.split()
    return int(number) * {"KiB": 1024, "MiB": 1 << 20}[unit]


def onnx_module(model: onnx.ModelProto, tmp_path: Path):
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return npuc.load_model(path)


def compile_fits(quantized, target: str, sram: int, optimise: str = "performance"):
    """Tile, plan (I/O in the arena), lower and run a copy of `quantized`: returns the
    tiled module and checks that its activations fit `sram` and that the binary's outputs
    are the qnn interpreter's."""
    module = quantized.clone()
    spec = json.dumps(target)
    npuc.apply_pipeline(
        module, f"tile{{target={spec} optimise={optimise}}},plan-memory{{target={spec} io=arena}}"
    )
    func = entry_function(module)
    assert func.attributes["tile.peak_sram"].value.data <= sram  # the tiler's estimate
    assert read_plan(module).regions["activations"].size <= sram  # the memory planner's
    inputs = random_inputs(quantized, seed=3)
    reference = run_module(quantized, inputs)
    assert_not_degenerate(reference)
    tiled = module.clone()
    npuc.apply_pipeline(module, "lower-to-npu{host=all}")
    module.verify()
    program = program_of(module)
    loaded = load(encode_program(program))
    assert_same(reference, Executor(loaded).run(inputs))
    return tiled


def groups(module) -> list[tuple[int, int, list[int]]]:
    """(first, last, parts) of each group the tile pass chose."""
    found = []
    for g in entry_function(module).attributes["tile.groups"].data:
        first, last = (int(v) for v in g.data["layers"].get_values())
        found.append((first, last, [int(v) for v in g.data["parts"].get_values()]))
    return found


# --------------------------------------------------------------------------- models


def scalar_chain() -> onnx.ModelProto:
    """conv 3x3 -> + 3 -> relu -> * 0.5 -> conv 3x3 stride 2: a chain whose middle ops read a
    scalar constant (quantized: a 1-element operand broadcast over the map)."""
    rng = np.random.default_rng(1)
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
        n("Add", ["c", "three"], ["a"], name="add3"),
        n("Relu", ["a"], ["r"], name="relu"),
        n("Mul", ["r", "half"], ["m"], name="half"),
        n("Conv", ["m", "w2", "b2"], ["y"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
    ]
    inits = [
        random_init(rng, "w1", [16, 4, 3, 3]), random_init(rng, "b1", [16], 0.1),
        random_init(rng, "w2", [8, 16, 3, 3], 0.1), random_init(rng, "b2", [8], 0.1),
        numpy_helper.from_array(np.array([3.0], np.float32), "three"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
    ]  # fmt: skip
    return float_graph(nodes, inits, [1, 4, 64, 64], [1, 8, 32, 32])


def silu_block() -> onnx.ModelProto:
    """conv 3x3 -> x * sigmoid(x) -> conv 3x3 stride 2: the conv's result has two readers
    (a sub-graph, not a chain), as hard-swish and SiLU activations have."""
    rng = np.random.default_rng(2)
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
        n("Sigmoid", ["c"], ["s"], name="sigmoid"),
        n("Mul", ["c", "s"], ["m"], name="silu"),
        n("Conv", ["m", "w2", "b2"], ["y"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
    ]
    inits = [
        random_init(rng, "w1", [16, 4, 3, 3]), random_init(rng, "b1", [16], 0.1),
        random_init(rng, "w2", [8, 16, 3, 3], 0.1), random_init(rng, "b2", [8], 0.1),
    ]  # fmt: skip
    return float_graph(nodes, inits, [1, 4, 64, 64], [1, 8, 32, 32])


def skip_block() -> onnx.ModelProto:
    """conv1 -> conv2 -> conv3 -> add(conv1, conv3): conv1's map stays whole for the add."""
    rng = np.random.default_rng(3)
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        n("Conv", ["c1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        n("Conv", ["c2", "w3", "b3"], ["c3"], name="conv3", pads=[1, 1, 1, 1]),
        n("Add", ["c1", "c3"], ["y"], name="add"),
    ]
    inits = [
        random_init(rng, "w1", [16, 4, 3, 3]), random_init(rng, "b1", [16], 0.1),
        random_init(rng, "w2", [16, 16, 3, 3], 0.1), random_init(rng, "b2", [16], 0.1),
        random_init(rng, "w3", [16, 16, 3, 3], 0.1), random_init(rng, "b3", [16], 0.1),
    ]  # fmt: skip
    return float_graph(nodes, inits, [1, 4, 64, 64], [1, 16, 64, 64])


# qnn.dequantize -> nn.softmax (last axis) -> qnn.quantize on a 3-D tensor: the float
# tensors (128 KiB each) run on the host; a tile of rows needs only a few KiB of them.
I8 = "!qnn.uniform<i8:f32, 0.0625:3>"
P8 = "!qnn.uniform<i8:f32, 0.00390625:-128>"
FLOAT_SOFTMAX = f"""
func.func @main(%x: tensor<1x64x512x{I8}>) -> tensor<1x64x512x{P8}> {{
  %f = qnn.dequantize %x : (tensor<1x64x512x{I8}>) -> tensor<1x64x512xf32>
  %s = nn.softmax %f {{axis = 2 : i64, name = "softmax"}}
    : (tensor<1x64x512xf32>) -> tensor<1x64x512xf32>
  %q = qnn.quantize %s : (tensor<1x64x512xf32>) -> tensor<1x64x512x{P8}>
  func.return %q : tensor<1x64x512x{P8}>
}}
"""

# Magika's one-hot: int32 bytes == [0..256] (i1), cast to float, quantized. The float map
# is 514 KiB; the int8 result 128.5 KiB.
H8 = "!qnn.uniform<i8:f32, 0.00392156862745098:-128>"
IOTA = ", ".join(map(str, range(257)))
ONE_HOT = f"""
func.func @main(%x: tensor<1x512xi32>) -> tensor<1x512x257x{H8}> {{
  %r = nn.reshape %x : (tensor<1x512xi32>) -> tensor<1x512x1xi32>
  %k = nn.constant dense<[[[{IOTA}]]]> : tensor<1x1x257xi32>
  %e = nn.equal %r, %k {{name = "equal"}}
    : (tensor<1x512x1xi32>, tensor<1x1x257xi32>) -> tensor<1x512x257xi1>
  %c = nn.cast %e {{name = "cast"}} : (tensor<1x512x257xi1>) -> tensor<1x512x257xf32>
  %q = qnn.quantize %c : (tensor<1x512x257xf32>) -> tensor<1x512x257x{H8}>
  func.return %q : tensor<1x512x257x{H8}>
}}
"""


# --------------------------------------------------------------------------- cases


def test_elementwise_ops_with_a_scalar_operand_are_tiled(tmp_path: Path):
    """A per-tensor scalar operand (the `+ 3` of hard-swish) once made its op whole: the map
    before and after it existed at once (2 x 64 KiB > 96 KiB)."""
    quantized = quantize_float(onnx_module(scalar_chain(), tmp_path))
    scalar_ops = [
        op
        for op in entry_function(quantized).body.block.ops
        if op.name in ("qnn.add", "qnn.mul")
        and any(len(v.type.get_shape()) < 4 for v in op.operands)
    ]
    assert scalar_ops, "the quantizer keeps the scalar operands"
    target = small_target(tmp_path, "96 KiB")
    tiled = compile_fits(quantized, target, sram_bytes("96 KiB"))
    assert any(first < last for first, last, _ in groups(tiled))  # a cascade through them


def test_a_sub_graph_runs_as_one_cascade(tmp_path: Path):
    """x * sigmoid(x): the conv's map has two readers, so no chain reaches past it and the
    64 KiB map exists whole (over 48 KiB); the sub-graph conv1 .. conv2 runs stripe by
    stripe instead, only the input (16 KiB) and the output (8 KiB) whole."""
    quantized = quantize_float(onnx_module(silu_block(), tmp_path))
    target = small_target(tmp_path, "48 KiB")
    for optimise in ("performance", "size"):
        tiled = compile_fits(quantized, target, sram_bytes("48 KiB"), optimise)
        ((first, last, parts),) = groups(tiled)
        assert (first, last) == (0, 3) and parts[0] > 1
        # conv1's, the sigmoid's and the product's maps exist only as tiles
        for op in entry_function(tiled).body.block.ops:
            layer = op.attributes.get(LAYER_ATTR)
            shape = op.results[0].type.get_shape() if op.results else ()
            if layer is not None and layer.value.data in (0, 1, 2) and len(shape) == 4:
                assert shape[2] < 64, op


@pytest.mark.parametrize("text", [FLOAT_SOFTMAX, ONE_HOT], ids=["softmax", "one-hot"])
def test_float_ops_between_quantized_layers_are_tiled(tmp_path: Path, text: str):
    """3-D float tensors (host ops) split by rows; the run starts and ends at int8 tensors
    so that no float tile is sliced or assembled (that would be a host copy)."""
    quantized = npuc.parse_mlir(text)
    target = small_target(tmp_path, "192 KiB")
    tiled = compile_fits(quantized, target, sram_bytes("192 KiB"))
    ((first, last, parts),) = groups(tiled)
    assert (first, last) == (0, 2) and parts[0] > 1
    for op in entry_function(tiled).body.block.ops:
        if op.name.startswith("tile."):
            assert not isinstance(op.results[0].type.element_type, Float32Type), op


def test_only_runs_with_int8_bounds_get_tiles():
    """`Planner.host_copies`: a run that would slice a float tensor made outside it, or
    assemble a float result, keeps one tile (each float slice or insert is a host copy of
    the whole tensor)."""
    func = entry_function(npuc.parse_mlir(FLOAT_SOFTMAX))
    planner = Planner(func, find_layers(func), load_target("mcu-64"), 64 * 1024, 0.5)
    assert planner.float_islands
    tiled = {
        (first, last): max(e.tiles for e in planner.options(first, last))
        for last in range(3)
        for first in range(last + 1)
    }
    # dequantize .. quantize starts and ends at int8 tensors; every other run reads the
    # float map from outside (1..2, 2..2) or leaves one as its result (0..0, 0..1, 1..1)
    assert tiled.pop((0, 2)) > 1
    assert tiled == dict.fromkeys(tiled, 1)


def test_slices_of_resident_tensors_are_read_in_place(tmp_path: Path):
    """The tiles of a layer read stripes of tensors that stay whole anyway (a skip
    connection): such a stripe is a strided view, not a copy, so the memory plan matches
    the tiler's estimate."""
    quantized = quantize_float(onnx_module(skip_block(), tmp_path))
    target = small_target(tmp_path, "256 KiB")
    tiled = compile_fits(quantized, target, sram_bytes("256 KiB"), optimise="size")
    func = entry_function(tiled)
    planned = read_plan(tiled).regions["activations"].size
    assert planned <= func.attributes["tile.peak_sram"].value.data
    where = {}
    for op in func.body.block.ops:
        if "mem.buffer" in op.attributes and len(op.results) == 1:
            b = op.attributes["mem.buffer"]
            where[op.results[0]] = (b.region.data, b.offset.data, b.size.data)
    for arg, entry in zip(func.body.block.args, func.arg_attrs.data, strict=True):
        b = entry.data["mem.buffer"]
        where[arg] = (b.region.data, b.offset.data, b.size.data)
    strided = 0
    for op in func.body.block.ops:
        if op.name == "tile.slice" and op.operands[0] in where:
            (region, lo, size), (r2, o2, s2) = where[op.operands[0]], where[op.results[0]]
            strided += region == r2 and lo <= o2 and o2 + s2 <= lo + size
    assert strided  # some slices share their source's bytes
    # and some of them are stripes across channels (a nonzero H offset of a tensor with more
    # than one channel: not a contiguous byte range), read as strided views recorded at
    # their root's first byte rather than copied
    across = 0
    for op in func.body.block.ops:
        if op.name == "tile.slice" and op.operands[0] in where:
            offsets, shape = op.offsets.get_values(), op.operands[0].type.get_shape()
            if len(shape) == 4 and shape[1] > 1 and offsets[2] > 0:
                (region, lo, _), (r2, o2, _) = where[op.operands[0]], where[op.results[0]]
                across += region == r2 and o2 == lo
    assert across


def test_a_model_that_cannot_fit_says_which_tensors(tmp_path: Path):
    """The input (16 KiB) and the output (64 KiB) are whole tensors in the arena while the
    model runs: over 64 KiB whatever the tiling. The warning names them with their bytes."""
    quantized = quantize_float(onnx_module(skip_block(), tmp_path))
    target = small_target(tmp_path, "64 KiB")
    plan = plan_tiling(quantized, TilePass(target=target))
    assert plan.peak > sram_bytes("64 KiB")
    (warning,) = [w for w in plan.warnings if w.startswith("peak SRAM")]
    assert (
        "whole tensors are live: 'add' 1x16x64x64 (65536 bytes), 'x' 1x4x64x64 (16384 bytes)"
        in warning
    )
    assert "together more than the SRAM" in warning
