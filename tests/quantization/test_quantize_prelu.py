"""nn.prelu with a constant slope quantizes to qnn.prelu (TFLite's PRELU arithmetic), which runs
on the NPU: MediaPipe's landmark models are chains of convolutions and PReLUs."""

from __future__ import annotations

import numpy as np
from compile_helpers import assert_same, compile_and_run, quantize_float
from onnx import helper, numpy_helper
from onnx_models import float_graph, random_init

from npuc.dialects import nn, qnn
from npuc.frontends.onnx import import_onnx
from npuc.runtime.qnn_interpreter import dequantized_outputs, random_inputs, run_module


def prelu_model():
    rng = np.random.default_rng(8)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("PRelu", ["c", "slope"], ["p"], name="prelu"),
        helper.make_node("Conv", ["p", "w2"], ["y"], name="conv2"),
    ]
    slope = np.array([0.25, -0.1, 0.6, 0.02], np.float32).reshape(4, 1, 1)
    inits = [
        random_init(rng, "w", [4, 3, 3, 3]),
        numpy_helper.from_array(slope, "slope"),
        random_init(rng, "w2", [2, 4, 1, 1]),
    ]
    return float_graph(nodes, inits, [1, 3, 8, 8], [1, 2, 8, 8])


def test_constant_slope_prelu_quantizes_and_tracks_float():
    float_module = import_onnx(prelu_model())
    quantized = quantize_float(float_module.clone())
    ops = [op.name for op in quantized.walk()]
    assert qnn.PReluOp.name in ops and nn.PReluOp.name not in ops
    for seed in range(3):
        inputs = random_inputs(float_module, seed=seed)
        want = run_module(float_module, inputs)["y"]
        got = dequantized_outputs(quantized, run_module(quantized, inputs))["y"]
        cosine = float(
            np.dot(want.ravel(), got.ravel()) / np.linalg.norm(want) / np.linalg.norm(got)
        )
        assert cosine > 0.995, cosine


def test_quantized_prelu_runs_bit_exact_on_the_npu():
    quantized = quantize_float(import_onnx(prelu_model()))
    inputs = random_inputs(quantized, seed=4)
    reference = run_module(quantized, inputs)
    for target in ("mcu-64", "mid-256", "ethos-u55-256-hee"):
        # host=float: the prelu must have an NPU instruction
        outputs, program = compile_and_run(quantized, target, "performance", inputs)
        assert_same(reference, outputs)
        assert "host" not in {inst.op for inst in program.instructions}
