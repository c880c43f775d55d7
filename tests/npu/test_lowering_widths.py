"""Every lowering rule at every element width: int8, uint8 and int16 (16x8) tensors lowered
with host=none run bit for bit like the qnn interpreter, and float32 ops run on the host.

Most modules are one ONNX operator quantized by npuc's own quantizer with the int8, uint8
or int16 scheme, so their parameters are the ones real models get; the ops the quantizer
never makes from ONNX (maximum, minimum, div, squared difference, a bare requantize, a
16-bit table) are written in qnn form with parameters computed here. `COVERED` ties the
cases to passes/npu_lowering's rule table: a rule without a case fails
`test_every_rule_has_a_width_case`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import pytest
from compile_helpers import assert_not_degenerate, assert_same, lower_and_run
from onnx import TensorProto, helper, numpy_helper
from onnx_models import random_init
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import VerifyException

import npuc
from npuc.backend.npubin import encode_program
from npuc.diagnostics import NpucError
from npuc.dialects.npu_isa import Program
from npuc.frontends.onnx import import_onnx
from npuc.integer import quantize_multiplier
from npuc.passes.npu_lowering.rules import RULES
from npuc.passes.quantization.datasets import random_dataset
from npuc.passes.quantize import QuantizeConfig
from npuc.quantize_flow import calibrate, quantize
from npuc.registry import DEFAULT_PIPELINE
from npuc.runtime.loader import load

SCHEMES = {"i8": "int8-per-channel", "u8": "uint8", "i16": "int16"}
WIDTHS = sorted(SCHEMES)
PLAN = "plan-memory{target=mcu-64}"
X = [1, 4, 6, 8]
node = helper.make_node


def graph(nodes, inits, y, inputs=(("x", X),)) -> onnx.ModelProto:
    model = helper.make_model(
        helper.make_graph(
            nodes, "g",
            [helper.make_tensor_value_info(k, TensorProto.FLOAT, s) for k, s in inputs],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)], inits,
        ),
        opset_imports=[helper.make_opsetid("", 13)], ir_version=8,
    )  # fmt: skip
    onnx.checker.check_model(model)
    return model


def const(name: str, values, dtype=np.int64) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype), name)


def weights(name: str, shape: list[int]) -> onnx.TensorProto:
    return random_init(np.random.default_rng(len(shape) * 7 + shape[0]), name, shape)


XZ = (("x", X), ("z", X))
SCALES = const("sc", [1, 1, 2, 2], np.float32)

# case -> (qnn rules the quantized module must hold, float model, NPU instructions wanted)
ONNX_CASES: dict[str, tuple[set[str], Callable[[], onnx.ModelProto], set[str]]] = {
    "conv": ({"qnn.conv2d"}, lambda: graph(
        [node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])],
        [weights("w", [6, 4, 3, 3]), weights("b", [6])], [1, 6, 6, 8]), {"conv2d"}),
    "depthwise": ({"qnn.conv2d"}, lambda: graph(
        [node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], group=4)],
        [weights("w", [4, 1, 3, 3]), weights("b", [4])], X), {"conv2d"}),
    "gemm": ({"qnn.fully_connected", "qnn.reshape"}, lambda: graph(
        [node("Flatten", ["x"], ["f"]), node("Gemm", ["f", "w", "b"], ["y"], transB=1)],
        [weights("w", [5, 192]), weights("b", [5])], [1, 5]), {"matmul"}),
    "matmul": ({"qnn.matmul"}, lambda: graph(
        [node("MatMul", ["x", "z"], ["y"])], [], [1, 4, 6, 6],
        (("x", X), ("z", [1, 4, 8, 6]))), {"matmul"}),
    "add": ({"qnn.add"}, lambda: graph([node("Add", ["x", "z"], ["y"])], [], X, XZ),
            {"eltwise"}),
    "sub": ({"qnn.sub"}, lambda: graph([node("Sub", ["x", "z"], ["y"])], [], X, XZ),
            {"eltwise"}),
    "mul": ({"qnn.mul"}, lambda: graph([node("Mul", ["x", "z"], ["y"])], [], X, XZ),
            {"eltwise"}),
    "prelu": ({"qnn.prelu"}, lambda: graph(
        [node("PRelu", ["x", "s"], ["y"])],
        [const("s", [[[0.1]], [[-0.2]], [[0.3]], [[0.25]]], np.float32)], X), {"eltwise"}),
    "reduce_sum": ({"qnn.reduce_sum"}, lambda: graph(
        [node("ReduceSum", ["x", "a"], ["y"], keepdims=0)], [const("a", [1, 3])], [1, 6]),
        {"pool"}),
    "reduce_max": ({"qnn.reduce_max"}, lambda: graph(
        [node("ReduceMax", ["x"], ["y"], axes=[1, 3], keepdims=0)], [], [1, 6]), {"pool"}),
    "max_pool": ({"qnn.max_pool2d"}, lambda: graph(
        [node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
        [], [1, 4, 3, 4]), {"pool"}),
    "avg_pool": ({"qnn.avg_pool2d"}, lambda: graph(
        [node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])], [],
        [1, 4, 3, 4]), {"pool"}),
    "global_avg_pool": ({"qnn.global_avg_pool"}, lambda: graph(
        [node("GlobalAveragePool", ["x"], ["y"])], [], [1, 4, 1, 1]), {"pool"}),
    "global_max_pool": ({"qnn.global_max_pool"}, lambda: graph(
        [node("GlobalMaxPool", ["x"], ["y"])], [], [1, 4, 1, 1]), {"pool"}),
    "pad": ({"qnn.pad"}, lambda: graph(
        [node("Pad", ["x", "p"], ["y"])], [const("p", [0, 0, 1, 2, 0, 0, 1, 0])],
        [1, 4, 8, 10]), {"move"}),
    # Movement results feed an add, so they are read as views (a view that is an output is
    # DMAed to the output's bytes).
    "reshape": ({"qnn.reshape"}, lambda: graph(
        [node("Reshape", ["x", "s"], ["r"]), node("Add", ["r", "r"], ["y"])],
        [const("s", [1, 4, 48])], [1, 4, 48]), {"eltwise"}),
    "transpose": ({"qnn.transpose"}, lambda: graph(
        [node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]), node("Add", ["t", "t"], ["y"])],
        [], [1, 6, 8, 4]), {"eltwise"}),
    "slice": ({"qnn.slice"}, lambda: graph(
        [node("Slice", ["x", "st", "en", "ax", "sp"], ["s"]), node("Add", ["s", "s"], ["y"])],
        [const("st", [1, 2]), const("en", [6, 8]), const("ax", [2, 3]), const("sp", [2, 2])],
        [1, 4, 3, 3]), {"eltwise"}),
    "split": ({"qnn.split"}, lambda: graph(
        [node("Split", ["x", "sz"], ["a", "b"], axis=1), node("Add", ["a", "b"], ["y"])],
        [const("sz", [2, 2])], [1, 2, 6, 8]), {"eltwise"}),
    "concat": ({"qnn.concat"}, lambda: graph(
        [node("Concat", ["x", "z"], ["y"], axis=1)], [], [1, 8, 6, 8], XZ), {"move"}),
    "depth_to_space": ({"qnn.depth_to_space"}, lambda: graph(
        [node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], [], [1, 1, 12, 16]),
        {"move"}),
    # Two output channels: the channel stride of the input's blocks counts (one does not).
    **{
        f"depth_to_space_{m.lower()}_two_channels": ({"qnn.depth_to_space"}, lambda m=m: graph(
            [node("DepthToSpace", ["x"], ["y"], blocksize=2, mode=m)], [], [1, 2, 12, 16],
            (("x", [1, 8, 6, 8]),)), {"move"})
        for m in ("CRD", "DCR")
    },
    "space_to_depth": ({"qnn.space_to_depth"}, lambda: graph(
        [node("SpaceToDepth", ["x"], ["y"], blocksize=2)], [], [1, 16, 3, 4]), {"move"}),
    "resize_nearest": ({"qnn.resize"}, lambda: graph(
        [node("Resize", ["x", "", "sc"], ["y"], mode="nearest", nearest_mode="floor",
              coordinate_transformation_mode="asymmetric")], [SCALES], [1, 4, 12, 16]),
        {"move"}),
    "resize_bilinear": ({"qnn.resize_bilinear"}, lambda: graph(
        [node("Resize", ["x", "", "sc"], ["y"], mode="linear",
              coordinate_transformation_mode="half_pixel")], [SCALES], [1, 4, 12, 16]),
        {"conv2d", "move"}),
    "conv_transpose": ({"qnn.conv_transpose2d"}, lambda: graph(
        [node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2])],
        [weights("w", [4, 3, 3, 3]), weights("b", [3])], [1, 3, 13, 17]), {"conv2d"}),
}  # fmt: skip

# Two convolutions tiled for mid-256: the arena is its SRAM, so tiles are loaded from and
# stored to DRAM (tile.load, tile.store) and assembled in SRAM (tile.empty, tile.insert).
TILED = [1, 8, 16, 16]
TILED_RULES = frozenset({"tile.empty", "tile.load", "tile.insert", "tile.slice", "tile.store"})


def tiled_model() -> onnx.ModelProto:
    return graph(
        [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), node("Relu", ["c"], ["r"]),
         node("Conv", ["r", "w2", "b2"], ["y"], pads=[1, 1, 1, 1])],
        [weights("w", [8, 8, 3, 3]), weights("b", [8]), weights("w2", [8, 8, 3, 3]),
         weights("b2", [8])], TILED, (("x", TILED),),
    )  # fmt: skip


def quantized(model: onnx.ModelProto, width: str) -> ModuleOp:
    module = import_onnx(model)
    npuc.apply_pipeline(module, DEFAULT_PIPELINE)
    statistics = calibrate(module, random_dataset(module, 4, seed=0), progress=False)
    config = QuantizeConfig(scheme=SCHEMES[width], io="quantized")
    return quantize(module, statistics, config)[0]


def op_names(module: ModuleOp) -> set[str]:
    return {op.name for op in module.walk()}


def run_bit_exact(module: ModuleOp, pipeline: str = PLAN, host: str = "none",
                  rules: frozenset[str] = frozenset()) -> Program:  # fmt: skip
    """The program of `module` after `pipeline`, which holds `rules`, lowered and checked."""
    npuc.apply_pipeline(module, pipeline)
    assert rules <= op_names(module)
    reference, outputs, program = lower_and_run(module, host)
    assert_same(reference, outputs)
    assert_not_degenerate(reference)
    # the binary holds the same program: every field of every instruction encodes
    assert load(encode_program(program)).instructions == program.instructions
    return program


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", sorted(ONNX_CASES))
def test_quantized_rule_runs_bit_exact(case: str, width: str):
    rules, model, instructions = ONNX_CASES[case]
    module = quantized(model(), width)
    assert rules <= op_names(module)
    storage = {str(op.results[0].type) for op in module.walk() if op.name in rules}
    assert all(f"<{width}:" in t for t in storage), storage
    program = run_bit_exact(module)
    assert {inst.op for inst in program.instructions} - {"dma"} == instructions


@pytest.mark.parametrize("width", WIDTHS)
def test_tiled_rules_run_bit_exact(width: str):
    module = quantized(tiled_model(), width)
    pipeline = "tile{target=mid-256},plan-memory{target=mid-256}"
    program = run_bit_exact(module, pipeline, rules=TILED_RULES)
    assert {inst.op for inst in program.instructions} == {"conv2d", "dma", "move"}


# --------------------------------------------------------------------------- qnn-form cases

# width -> (storage, scale of x and z, zero point)
ACTIVATIONS = {"i8": ("i8", 0.05, -3), "u8": ("u8", 0.05, 125), "i16": ("i16", 0.0002, 0)}


def qtype(width: str, scale: float | None = None, zp: int | None = None) -> str:
    storage, x_scale, x_zp = ACTIVATIONS[width]
    scale = x_scale if scale is None else scale
    zp = x_zp if zp is None else zp
    return f"tensor<1x4x6x8x!qnn.uniform<{storage}:f32, {scale}:{zp}>>"


def requant(real: float) -> str:
    m, s = quantize_multiplier(real)
    return f"multiplier = array<i64: {m}>, shift = array<i64: {s}>"


def qnn_module(width: str, outputs: list[tuple[str, str]], body: str) -> str:
    x = qtype(width)
    results = ", ".join(f'{t} {{nn.name = "{name}"}}' for name, t in outputs)
    returned = ", ".join(f"%{name}" for name, _ in outputs)
    types = ", ".join(t for _, t in outputs)
    return (
        f'func.func @main(%x: {x} {{nn.name = "x"}}, %z: {x} {{nn.name = "z"}}) -> '
        f"({results}) {{\n{body}\n  func.return {returned} : {types}\n}}"
    )


def extrema_text(width: str) -> str:
    x = qtype(width)
    return qnn_module(width, [("mx", x), ("mn", x)], (
        f"  %mx = qnn.maximum %x, %z : ({x}, {x}) -> {x}\n"
        f"  %mn = qnn.minimum %x, %z : ({x}, {x}) -> {x}"
    ))  # fmt: skip


def div_text(width: str) -> str:
    # TFLite's multiplier s_x / (s_z s_y), with s_y = 4 s_x: quotients beyond 4 * 127 (or
    # 4 * 32767) steps saturate, the others spread over y's range.
    storage, s, _ = ACTIVATIONS[width]
    x, y = qtype(width), qtype(width, s * 4, 128 if storage == "u8" else 0)
    return qnn_module(width, [("q", y)], (
        f"  %q = qnn.div %x, %z {{{requant(1 / 4 / s)}, rounding = \"tflite\"}}"
        f" : ({x}, {x}) -> {y}"
    ))  # fmt: skip


def squared_difference_text(width: str) -> str:
    # LiteRT's SQUARED_DIFFERENCE: operands aligned at twice the larger scale, shifted left
    # by 7, then (2 s)^2 / (2^14 s_y); y spans a quarter of the largest square, (2^bits s)^2.
    storage, s, _ = ACTIVATIONS[width]
    bits = 16 if storage == "i16" else 8
    steps = 32767 if storage == "i16" else 255  # non-negative squares: i8 from zero point -128
    s_y = (2**bits * s) ** 2 / steps / 4
    x, y = qtype(width), qtype(width, s_y, -128 if storage == "i8" else 0)
    lhs, _ = quantize_multiplier(0.5)
    props = (f"left_shift = 7 : i64, lhs_multiplier = {lhs} : i64, lhs_shift = 31 : i64, "
             f"rhs_multiplier = {lhs} : i64, rhs_shift = 31 : i64, "
             f"{requant((2 * s) ** 2 / 2**14 / s_y)}")  # fmt: skip
    return qnn_module(width, [("d", y)], (
        f"  %d = qnn.squared_difference %x, %z {{{props}}} : ({x}, {x}) -> {y}"
    ))  # fmt: skip


def requantize_text(width: str) -> str:
    storage, s, zp = ACTIVATIONS[width]
    x, y = qtype(width), qtype(width, s * 1.3, zp + (0 if storage == "i16" else 4))
    return qnn_module(width, [("r", y)], (
        f"  %r = qnn.requantize %x {{{requant(1 / 1.3)}}} : ({x}) -> {y}"
    ))  # fmt: skip


def lut_text(width: str) -> str:
    storage = ACTIVATIONS[width][0]
    bits = 16 if storage == "i16" else 8
    lo = -(1 << (bits - 1)) if storage != "u8" else 0
    table = ((np.arange(1 << bits) * 37) % (1 << bits) + lo).astype(f"<{storage[0]}{bits // 8}")
    x = qtype(width)
    element = f"{'ui' if storage == 'u8' else 'i'}{bits}"
    return qnn_module(width, [("t", x)], (
        f'  %t = qnn.lut %x {{table = dense<"0x{table.tobytes().hex().upper()}"> : '
        f"tensor<{1 << bits}x{element}>}} : ({x}) -> {x}"
    ))  # fmt: skip


# case -> (qnn rules, module text for a width, NPU instructions wanted)
TEXT_CASES: dict[str, tuple[set[str], Callable[[str], str], set[str]]] = {
    "maximum_minimum": ({"qnn.maximum", "qnn.minimum"}, extrema_text, {"eltwise"}),
    "div": ({"qnn.div"}, div_text, {"eltwise"}),
    "squared_difference": ({"qnn.squared_difference"}, squared_difference_text, {"eltwise"}),
    "requantize": ({"qnn.requantize"}, requantize_text, {"pool"}),
    "lut": ({"qnn.lut"}, lut_text, {"lut"}),
}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", sorted(TEXT_CASES))
def test_qnn_form_rule_runs_bit_exact(parse, case: str, width: str):
    rules, text, instructions = TEXT_CASES[case]
    module = parse(text(width))
    assert rules <= op_names(module)
    program = run_bit_exact(module)
    assert {inst.op for inst in program.instructions} == instructions


# --------------------------------------------------------------------------- refusals


SOFTMAX = """
func.func @main(%x: {X} {{nn.name = "x"}}) -> ({Y} {{nn.name = "y"}}) {{
  %y = qnn.softmax %x {{input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64,
    diff_min = -496 : i64}} : ({X}) -> {Y}
  func.return %y : {Y}
}}
"""


@pytest.mark.parametrize("width", ["u8", "i16"])
def test_softmax_is_int8_only(parse, width: str):
    # The softmax instruction reads and writes i8 (npu_rules); the qnn op already refuses
    # other widths, so its rule never meets them.
    text = SOFTMAX.format(X=qtype(width), Y=qtype(width, 1 / 256, 0))
    with pytest.raises(VerifyException, match=r"'qnn\.softmax': the input must be i8"):
        parse(text).verify()


def test_uint8_softmax_is_requantized_to_int8_for_the_npu():
    model = graph([node("Softmax", ["x"], ["y"], axis=-1)], [], X)
    module = quantized(model, "u8")
    assert {"qnn.requantize", "qnn.softmax"} <= op_names(module)
    program = run_bit_exact(module)
    assert [inst.op for inst in program.instructions] == ["pool", "softmax"]


@pytest.mark.parametrize("op", ["Softmax", "Sigmoid"])
def test_int16_table_activations_run_on_the_host(op: str):
    # The int16 scheme keeps softmax and sigmoid in float (the quantizer's choice): host=none
    # refuses them by name, host=float runs them on the host between quantize/dequantize.
    attrs = {"axis": -1} if op == "Softmax" else {}
    model = graph([node(op, ["x"], ["y"], **attrs)], [], X)
    module = quantized(model, "i16")
    name = f"nn.{op.lower()}"
    assert name in op_names(module)
    refused = module.clone()
    npuc.apply_pipeline(refused, PLAN)
    with pytest.raises(NpucError, match=rf"'{name}' \(layer '{op}_0'\): float ops run on"):
        npuc.apply_pipeline(refused, "lower-to-npu{host=none}")
    program = run_bit_exact(module, host="float")
    assert [inst.op for inst in program.instructions] == ["host"] * 3


# --------------------------------------------------------------------------- float32


@pytest.mark.parametrize("case", sorted(ONNX_CASES))
def test_float32_ops_run_on_the_host(case: str):
    _, model, _ = ONNX_CASES[case]
    module = import_onnx(model())
    npuc.apply_pipeline(module, DEFAULT_PIPELINE)
    program = run_bit_exact(module, host="float")
    assert {inst.op for inst in program.instructions} <= {"host", "dma"}
    assert all(t.tensor.dtype == "f32" for t in (*program.inputs, *program.outputs))


# --------------------------------------------------------------------------- coverage

# nn.concat, nn.reshape and nn.split have rules, but lower-to-npu sends every nn op (float)
# to the host: test_float32_ops_run_on_the_host runs them there.
FLOAT_ONLY = {"nn.concat", "nn.reshape", "nn.split"}
COVERED = (
    set().union(*(rules for rules, _, _ in ONNX_CASES.values()))
    | set().union(*(rules for rules, _, _ in TEXT_CASES.values()))
    | TILED_RULES
    | {"qnn.softmax"}
)


def test_every_rule_has_a_width_case():
    assert set(RULES) - FLOAT_ONLY == COVERED
