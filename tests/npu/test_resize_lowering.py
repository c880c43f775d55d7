"""Resize on the NPU: nearest `qnn.resize` and `qnn.resize_bilinear` lowered to moves and
depthwise convolutions (passes/npu_lowering/resize.py), tiled, planned and lowered for every
target, then run by the runtime bit for bit like the qnn interpreter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from compile_helpers import assert_same, lower_and_run
from npu_programs import fix_crcs
from onnx import helper, numpy_helper
from onnx_models import float_graph, random_init

import npuc
from npuc.backend.npubin import _tensor, encode_program
from npuc.diagnostics import NpucError
from npuc.dialects.npu_isa import Program
from npuc.frontends.onnx import import_onnx
from npuc.passes.lower_to_npu import program_of
from npuc.passes.npu_lowering.resize import Run, axis_runs, repeat_form
from npuc.passes.quantization.datasets import random_dataset
from npuc.passes.quantize import QuantizeConfig
from npuc.quantize_flow import calibrate, quantize
from npuc.registry import DEFAULT_PIPELINE
from npuc.runtime.cycle_model import CycleModel
from npuc.runtime.kernels.resize import axis_taps, integer_bilinear_axis
from npuc.runtime.loader import load
from npuc.target import load_target

REPO = Path(__file__).resolve().parents[2]
TARGETS = sorted(p.stem for p in (REPO / "targets").glob("*.toml"))
NEAREST = "qnn.resize %x {{scales = array<f32: 1.0, 1.0, {f}, {f}>{attrs}}}"
CORPUS = ', coordinate_mode = "asymmetric", nearest_mode = "floor"'  # ddddocr, PP-OCRv4, layout

# (case, op, input shape, output shape, storage type, moves, conv2ds): one move from a repeated
# view where every axis repeats its inputs, else one instruction per phase and run of equal taps
UP2 = (1, 4, 5, 6), (1, 4, 10, 12)
CASES = [
    ("nearest2x", NEAREST.format(f=2.0, attrs=CORPUS), (1, 8, 6, 10), (1, 8, 12, 20), "i8", 1, 0),
    ("nearest2x-i16", NEAREST.format(f=2.0, attrs=CORPUS), *UP2, "i16", 1, 0),
    ("nearest4x", NEAREST.format(f=4.0, attrs=CORPUS), (1, 4, 5, 6), (1, 4, 20, 24), "i8", 1, 0),
    ("nearest8x", NEAREST.format(f=8.0, attrs=CORPUS), (2, 2, 3, 4), (2, 2, 24, 32), "i8", 1, 0),
    ("nearest2x-half-pixel", NEAREST.format(f=2.0, attrs=""), *UP2, "i8", 1, 0),
    ("nearest2x-half-pixel-floor",
     NEAREST.format(f=2.0, attrs=', nearest_mode = "floor"'), *UP2, "i8", 9, 0),
    ("nearest4x-round", NEAREST.format(f=4.0, attrs=', coordinate_mode = "asymmetric"'),
     (1, 2, 3, 5), (1, 2, 12, 20), "i16", 25, 0),
    ("nearest-half", NEAREST.format(f=0.5, attrs=', coordinate_mode = "asymmetric"'),
     (1, 4, 8, 6), (1, 4, 4, 3), "i8", 1, 0),
    ("bilinear2x-half-pixel", "qnn.resize_bilinear %x {half_pixel_centers = true}",
     (1, 8, 6, 10), (1, 8, 12, 20), "i8", 4, 12),
    ("bilinear2x-half-pixel-i16",
     'qnn.resize_bilinear %x {half_pixel_centers = true, rounding = "half_up"}',
     (2, 3, 5, 4), (2, 3, 10, 8), "i16", 4, 12),
    ("bilinear2x", "qnn.resize_bilinear %x", *UP2, "i8", 4, 5),
    ("bilinear4x-half-pixel", "qnn.resize_bilinear %x {half_pixel_centers = true}",
     (1, 2, 3, 4), (1, 2, 12, 16), "i8", 16, 48),
    ("bilinear2x-one-row", "qnn.resize_bilinear %x {half_pixel_centers = true}",
     (1, 3, 1, 6), (1, 3, 2, 12), "i8", 4, 4),
    # align_corners with out - 1 = 2 (in - 1): even outputs copy, odd ones average two
    ("bilinear2x-align-corners", "qnn.resize_bilinear %x {align_corners = true}",
     (1, 4, 5, 6), (1, 4, 9, 11), "i8", 1, 3),
]  # fmt: skip


def qtype(shape, storage: str) -> str:
    zp = -3 if storage == "i8" else 0
    return f"tensor<{'x'.join(map(str, shape))}x!qnn.uniform<{storage}:f32, 0.05:{zp}>>"


def module_text(op: str, x, y, storage: str) -> str:
    tx, ty = qtype(x, storage), qtype(y, storage)
    return (
        f'func.func @main(%x: {tx} {{nn.name = "x"}}) -> ({ty} {{nn.name = "y"}}) {{\n'
        f'  %y = {op} {{name = "resize"}} : ({tx}) -> {ty}\n'
        f"  func.return %y : {ty}\n}}"
    ).replace("} {name", ", name")


def compile_module(module, target: str, host: str = "none") -> tuple[dict, dict, Program]:
    """(interpreter outputs, runtime outputs of the encoded and reloaded program, program)."""
    npuc.apply_pipeline(module, f"tile{{target={target}}},plan-memory{{target={target}}}")
    return lower_and_run(module, host, seed=5)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_resize_runs_bit_exact(parse, case, target):
    _, op, x, y, storage, moves, convs = case
    reference, outputs, program = compile_module(parse(module_text(op, x, y, storage)), target)
    assert_same(reference, outputs)
    assert np.unique(reference["y"]).size > 10
    ops = [inst.op for inst in program.instructions if inst.op != "dma"]  # DMAs: tile loads
    assert (len(ops), ops.count("move"), ops.count("conv2d")) == (moves + convs, moves, convs)


def test_nearest_upscale_is_one_move_from_a_repeated_view(parse):
    text = module_text(NEAREST.format(f=2.0, attrs=CORPUS), (1, 8, 6, 10), (1, 8, 12, 20), "i8")
    module = parse(text)
    npuc.apply_pipeline(module, "plan-memory{target=mcu-64},lower-to-npu{host=none}")
    (move,) = program_of(module).instructions
    ifm, ofm = move.operands
    assert ifm.shape == (1, 8, 6, 2, 10, 2) and ifm.strides == (480, 60, 10, 0, 1, 0)
    assert ofm.shape == (1, 8, 12, 20)
    # The cycle model reads the input's distinct bytes once and writes the output's.
    reads, writes, _ = CycleModel(program_of(module), load_target("mcu-64")).traffic(move)
    assert sum(reads.values()) == 480 and sum(writes.values()) == 1920


def test_nearest_beyond_eight_dimensions_moves_each_phase(parse):
    # Repeating all five axes would need a rank-10 view: one move per phase instead.
    op = 'qnn.resize %x {scales = array<f32: 2.0, 2.0, 2.0, 2.0, 2.0>, nearest_mode = "floor",'
    op += ' coordinate_mode = "asymmetric"}'
    text = module_text(op, (2, 1, 2, 3, 2), (4, 2, 4, 6, 4), "i8")
    reference, outputs, program = compile_module(parse(text), "mcu-64")
    assert_same(reference, outputs)
    assert [inst.op for inst in program.instructions] == ["move"] * 32


def test_axis_descriptions_follow_the_interpreter():
    idx, _ = axis_taps(4, 8, 2.0, "nearest", "asymmetric", "floor")
    assert repeat_form([{int(i): 1} for i in idx[:, 0]]) == (0, 2, 1)
    idx, _ = axis_taps(8, 4, 0.5, "nearest", "asymmetric", "floor")
    assert repeat_form([{int(i): 1} for i in idx[:, 0]]) == (0, 1, 2)
    idx, _ = axis_taps(4, 8, 2.0, "nearest", "half_pixel", "floor")  # 0 0 0 1 1 2 2 3
    assert repeat_form([{int(i): 1} for i in idx[:, 0]]) is None
    lo, hi, wlo, whi = integer_bilinear_axis(4, 8, False, True)
    taps = []
    for a, b, wa, wb in zip(lo, hi, wlo, whi, strict=True):
        t = {int(a): int(wa)}
        t[int(b)] = t.get(int(b), 0) + int(wb)
        taps.append({k: v for k, v in t.items() if v})
    assert axis_runs(taps, 4) == [
        Run(0, 2, 1, 0, (1024,)),
        Run(2, 2, 3, 0, (256, 768)),
        Run(1, 2, 3, 0, (768, 256)),
        Run(7, 2, 1, 3, (1024,)),
    ]


def test_other_ratios_run_on_the_host(parse):
    text = module_text(NEAREST.format(f=1.4, attrs=""), (1, 2, 5, 5), (1, 2, 7, 7), "i8")
    reference, outputs, program = compile_module(parse(text), "mcu-64", host="all")
    assert_same(reference, outputs)
    assert [inst.op for inst in program.instructions] == ["host"]
    text = module_text(
        "qnn.resize_bilinear %x {align_corners = true}", (1, 2, 5, 5), (1, 2, 10, 10), "i8"
    )
    module = parse(text)
    npuc.apply_pipeline(module, "plan-memory{target=mcu-64}")
    with pytest.raises(NpucError, match=r"'qnn\.resize_bilinear' .*no NPU instruction"):
        npuc.apply_pipeline(module, "lower-to-npu{host=none}")


def _patched(program: Program, index: int, role: str, shape: tuple[int, ...]) -> bytes:
    """The encoded program with one operand's dimensions replaced (CRCs fixed)."""
    inst = program.instructions[index]
    ref = inst.operand(role)
    data = bytearray(encode_program(program))
    old = _tensor(ref)
    assert data.count(old) == 1
    at = data.find(old)
    data[at : at + len(old)] = _tensor(
        type(ref)(ref.region, ref.offset, shape, ref.strides, ref.dtype)
    )
    fix_crcs(data)
    return bytes(data)


def test_loader_refuses_malformed_resizes(parse):
    text = module_text(NEAREST.format(f=2.0, attrs=CORPUS), (1, 8, 6, 10), (1, 8, 12, 20), "i8")
    module = parse(text)
    npuc.apply_pipeline(module, "plan-memory{target=mcu-64},lower-to-npu{host=none}")
    program = program_of(module)
    bad = _patched(program, 0, "ifm", (1, 8, 6, 3, 10, 2))  # a factor of 3 in a 2x output
    with pytest.raises(NpucError, match=r"instruction 0 \(move\): .*must hold the ifm's 2880"):
        load(bad)
    text = module_text(CASES[8][1], (1, 8, 6, 10), (1, 8, 12, 20), "i8")
    module = parse(text)
    npuc.apply_pipeline(module, "plan-memory{target=mcu-64},lower-to-npu{host=none}")
    program = program_of(module)
    index = next(i for i, inst in enumerate(program.instructions) if inst.op == "conv2d")
    ofm = program.instructions[index].operand("ofm")
    bad = _patched(program, index, "ofm", (*ofm.shape[:3], ofm.shape[3] + 1))
    with pytest.raises(NpucError, match=rf"instruction {index} \(conv2d\): .*ofm shape must be"):
        load(bad)


def fpn() -> onnx.ModelProto:
    """An FPN-style neck: a coarse branch upsampled 2x (Resize as the corpus has it) and added
    to the fine branch, then a 3x3 conv."""
    rng = np.random.default_rng(1)
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], name="fine", pads=[1, 1, 1, 1]),
        n("Relu", ["c1"], ["r1"], name="relu1"),
        n("MaxPool", ["r1"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        n("Conv", ["p", "w2", "b2"], ["c2"], name="coarse"),
        n("Resize", ["c2", "", "scales"], ["u"], name="upsample", mode="nearest",
          coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        n("Add", ["r1", "u"], ["a"], name="add"),
        n("Conv", ["a", "w3", "b3"], ["y"], name="head", pads=[1, 1, 1, 1]),
    ]  # fmt: skip
    inits = [
        random_init(rng, "w1", [16, 3, 3, 3]), random_init(rng, "b1", [16], 0.1),
        random_init(rng, "w2", [16, 16, 1, 1]), random_init(rng, "b2", [16], 0.1),
        random_init(rng, "w3", [8, 16, 3, 3], 0.1), random_init(rng, "b3", [8], 0.1),
        numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
    ]  # fmt: skip
    return float_graph(nodes, inits, [1, 3, 48, 48], [1, 8, 48, 48])


@pytest.fixture(scope="module")
def fpn_int8():
    module = import_onnx(fpn())
    npuc.apply_pipeline(module, DEFAULT_PIPELINE)
    statistics = calibrate(module, random_dataset(module, 2, seed=0), progress=False)
    quantized, _ = quantize(module, statistics, QuantizeConfig(scheme="int8", io="quantized"))
    assert any(op.name == "qnn.resize" for op in quantized.walk())
    return quantized


@pytest.mark.parametrize("target", TARGETS)
def test_tiled_fpn_neck_runs_bit_exact(fpn_int8, target):
    reference, outputs, program = compile_module(fpn_int8.clone(), target)
    assert_same(reference, outputs)
    assert "upsample" in program.layers
    upsample = program.layers.index("upsample")
    moves = [i for i in program.instructions if i.layer == upsample]
    assert moves and all(i.op == "move" for i in moves)
    assert any(0 in i.operand("ifm").strides for i in moves)
