"""The quantizer's rules for the layers real models stopped on: means and sums, max
reductions, softmax, bilinear resize, transposed convolution, depth/space rearrangements,
division by a tensor.
Each quantizes (no float op left), tracks the float model, and runs bit-exact on every
target's NPU."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from compile_helpers import assert_same, compile_and_run, quantize_float
from onnx import helper, numpy_helper
from onnx_models import float_graph, random_init

from npuc.frontends.onnx import import_onnx
from npuc.runtime.qnn_interpreter import dequantized_outputs, random_inputs, run_module

TARGETS = ("mcu-64", "mid-256", "ethos-u55-256-hee")


def _conv_then(nodes: list, inits: list, y_shape: list[int], x_shape=(1, 3, 8, 8)):
    """x -> 3x3 conv (4 channels, "c") -> `nodes` -> "y"."""
    rng = np.random.default_rng(5)
    head = helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv")
    weights = [random_init(rng, "w", [4, x_shape[1], 3, 3], 0.6)]
    return float_graph([head, *nodes], weights + inits, list(x_shape), y_shape)


def _const(name: str, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype), name)


def mean_spatial() -> onnx.ModelProto:
    node = helper.make_node("ReduceMean", ["c"], ["y"], axes=[2, 3], keepdims=1, name="mean")
    return _conv_then([node], [], [1, 4, 1, 1])


def mean_last_axis() -> onnx.ModelProto:
    """The first half of a layer norm: x - mean(x) over the last axis."""
    n = helper.make_node
    nodes = [
        n("ReduceMean", ["c"], ["m"], axes=[-1], keepdims=1, name="mean"),
        n("Sub", ["c", "m"], ["y"], name="centre"),
    ]
    return _conv_then(nodes, [], [1, 4, 8, 8])


def sum_channels() -> onnx.ModelProto:
    node = helper.make_node("ReduceSum", ["c", "axes"], ["y"], keepdims=0, name="sum")
    return _conv_then([node], [_const("axes", [1])], [1, 8, 8])


def max_spatial() -> onnx.ModelProto:
    node = helper.make_node("ReduceMax", ["c"], ["y"], axes=[2, 3], keepdims=0, name="max")
    return _conv_then([node], [], [1, 4])


def softmax_rows() -> onnx.ModelProto:
    n = helper.make_node
    nodes = [
        n("Reshape", ["c", "shape"], ["r"], name="rows"),
        n("Softmax", ["r"], ["y"], axis=-1, name="softmax"),
    ]
    return _conv_then(nodes, [_const("shape", [1, 4, 64])], [1, 4, 64])


def bilinear(coordinates: str, size: int = 16) -> onnx.ModelProto:
    """A bilinear upsampling of the 8x8 conv output to size x size."""
    n = helper.make_node
    scale = size / 8
    scales = numpy_helper.from_array(np.array([1, 1, scale, scale], np.float32), "scales")
    node = n(
        "Resize",
        ["c", "", "scales"],
        ["y"],
        mode="linear",
        name="up",
        coordinate_transformation_mode=coordinates,
    )
    return _conv_then([node], [scales], [1, 4, size, size])


def conv_transpose(kernel: int, stride: int, pads: list[int], output_padding: int):
    rng = np.random.default_rng(6)
    out = (8 - 1) * stride + kernel - pads[0] - pads[2] + output_padding
    node = helper.make_node(
        "ConvTranspose",
        ["c", "wt", "bt"],
        ["y"],
        strides=[stride, stride],
        pads=pads,
        output_padding=[output_padding] * 2,
        name="deconv",
    )
    inits = [random_init(rng, "wt", [4, 5, kernel, kernel], 0.5), random_init(rng, "bt", [5])]
    return _conv_then([node], inits, [1, 5, out, out])


def depth_to_space(mode: str) -> onnx.ModelProto:
    node = helper.make_node("DepthToSpace", ["c"], ["y"], blocksize=2, mode=mode, name="d2s")
    return _conv_then([node], [], [1, 1, 16, 16])


def space_to_depth() -> onnx.ModelProto:
    node = helper.make_node("SpaceToDepth", ["c"], ["y"], blocksize=2, name="s2d")
    return _conv_then([node], [], [1, 16, 4, 4])


def layer_norm() -> onnx.ModelProto:
    """PP-OCR's layer norm over the last axis, decomposed: (x - mean) / sqrt(var + eps)."""
    n = helper.make_node
    nodes = [
        n("ReduceMean", ["c"], ["m"], axes=[-1], keepdims=1, name="mean"),
        n("Sub", ["c", "m"], ["d"], name="centre"),
        n("Pow", ["d", "two"], ["d2"], name="square"),
        n("ReduceMean", ["d2"], ["v"], axes=[-1], keepdims=1, name="variance"),
        n("Add", ["v", "eps"], ["ve"], name="eps"),
        n("Sqrt", ["ve"], ["s"], name="std"),
        n("Div", ["d", "s"], ["y"], name="normalise"),
    ]
    consts = [
        numpy_helper.from_array(np.array(2.0, np.float32), "two"),
        numpy_helper.from_array(np.array(1e-5, np.float32), "eps"),
    ]
    return _conv_then(nodes, consts, [1, 4, 8, 8])


MODELS = {
    "mean_spatial": (mean_spatial, "nn.reduce_mean", "qnn.reduce_sum"),
    "mean_last_axis": (mean_last_axis, "nn.reduce_mean", "qnn.reduce_sum"),
    "sum_channels": (sum_channels, "nn.reduce_sum", "qnn.reduce_sum"),
    "max_spatial": (max_spatial, "nn.reduce_max", "qnn.reduce_max"),
    "softmax": (softmax_rows, "nn.softmax", "qnn.softmax"),
    "bilinear_half_pixel": (lambda: bilinear("half_pixel"), "nn.resize", "qnn.resize_bilinear"),
    # (8 - 1) * 2 + 1: align_corners samples every half pixel, as Vela's NPU mapping needs.
    "bilinear_align_corners": (
        lambda: bilinear("align_corners", 15), "nn.resize", "qnn.resize_bilinear"
    ),
    "bilinear_asymmetric": (lambda: bilinear("asymmetric"), "nn.resize", "qnn.resize_bilinear"),
    "conv_transpose_k2s2": (
        lambda: conv_transpose(2, 2, [0, 0, 0, 0], 0), "nn.conv_transpose2d",
        "qnn.conv_transpose2d",
    ),
    "conv_transpose_k3s2_padded": (
        lambda: conv_transpose(3, 2, [1, 1, 1, 1], 1), "nn.conv_transpose2d",
        "qnn.conv_transpose2d",
    ),
    "depth_to_space_dcr": (lambda: depth_to_space("DCR"), "nn.depth_to_space",
                           "qnn.depth_to_space"),
    "depth_to_space_crd": (lambda: depth_to_space("CRD"), "nn.depth_to_space",
                           "qnn.depth_to_space"),
    "space_to_depth": (space_to_depth, "nn.space_to_depth", "qnn.space_to_depth"),
    "layer_norm": (layer_norm, "nn.div", "qnn.div"),
}  # fmt: skip


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.mark.parametrize("name", MODELS)
def test_quantizes_and_tracks_float(name):
    build, float_op, qnn_op = MODELS[name]
    float_module = import_onnx(build())
    quantized = quantize_float(float_module.clone())
    names = {op.name for op in quantized.walk()}
    assert float_op not in names and qnn_op in names
    for seed in range(3):
        inputs = random_inputs(float_module, seed=seed)
        want = run_module(float_module, inputs)["y"]
        got = dequantized_outputs(quantized, run_module(quantized, inputs))["y"]
        assert cosine(want, got) > 0.99, seed


@pytest.mark.parametrize("name", MODELS)
def test_runs_bit_exact_on_the_npu(name):
    quantized = quantize_float(import_onnx(MODELS[name][0]()))
    inputs = random_inputs(quantized, seed=4)
    reference = run_module(quantized, inputs)
    for target in TARGETS:
        outputs, program = compile_and_run(quantized, target, "performance", inputs, host="all")
        assert_same(reference, outputs)
        assert "host" not in {inst.op for inst in program.instructions}, target


def test_softmax_rows_too_long_for_qnn_softmax_stay_float():
    n = helper.make_node
    nodes = [n("Reshape", ["c", "shape"], ["r"]), n("Softmax", ["r"], ["y"], axis=-1)]
    model = _conv_then(nodes, [_const("shape", [1, 1, 1024])], [1, 1, 1024], (1, 3, 16, 16))
    quantized = quantize_float(import_onnx(model))
    assert "nn.softmax" in {op.name for op in quantized.walk()}


def test_bilinear_resize_of_a_non_integral_size_stays_float():
    scales = numpy_helper.from_array(np.array([1, 1, 1.5, 1.5], np.float32), "scales")
    node = helper.make_node(
        "Resize",
        ["c", "", "scales"],
        ["y"],
        mode="linear",
        coordinate_transformation_mode="half_pixel",
    )
    model = _conv_then([node], [scales], [1, 4, 10, 10], (1, 3, 7, 7))
    quantized = quantize_float(import_onnx(model))
    assert "nn.resize" in {op.name for op in quantized.walk()}
