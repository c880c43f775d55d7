"""Rank-0 values (a scalar initializer, as PP-OCR's classifier has) through tiling, lowering
and the runtime: a rank-0 tensor is one element, shape [1], in views and host bodies alike."""

from __future__ import annotations

import numpy as np
from compile_helpers import assert_same, compile_and_run, quantize_float
from onnx import helper, numpy_helper
from onnx_models import float_graph, random_init

import npuc
from npuc.backend.npubin import encode_program
from npuc.frontends.onnx import import_onnx
from npuc.passes.lower_to_npu import program_of
from npuc.runtime.executor import Executor
from npuc.runtime.loader import load
from npuc.runtime.qnn_interpreter import random_inputs, run_module


def scalar_model():
    rng = np.random.default_rng(4)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Mul", ["c", "s"], ["m"], name="scale"),
        helper.make_node("Add", ["m", "b"], ["y"], name="shift"),
    ]
    inits = [
        random_init(rng, "w", [4, 3, 3, 3]),
        numpy_helper.from_array(np.array(0.75, np.float32), "s"),
        numpy_helper.from_array(np.array(-0.5, np.float32), "b"),
    ]
    return float_graph(nodes, inits, [1, 3, 8, 8], [1, 4, 8, 8])


def test_scalar_constants_compile_and_run_bit_exact():
    quantized = quantize_float(import_onnx(scalar_model()))
    inputs = random_inputs(quantized, seed=2)
    reference = run_module(quantized, inputs)
    for target in ("mcu-64", "ethos-u55-256-hee"):
        outputs, _ = compile_and_run(quantized, target, "performance", inputs, host="all")
        assert_same(reference, outputs)


FLOAT_SCALAR = """
func.func @main(%x: tensor<1x4xf32> {nn.name = "x"}) -> (tensor<1x4xf32> {nn.name = "y"}) {
  %c = nn.constant dense<2.5> : tensor<f32>
  %y = nn.mul %x, %c {name = "scale"} : (tensor<1x4xf32>, tensor<f32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}
"""


def test_a_host_op_takes_a_rank0_operand():
    module = npuc.parse_mlir(FLOAT_SCALAR)
    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    npuc.apply_pipeline(module, "tile{target=mcu-64},plan-memory{target=mcu-64},lower-to-npu")
    module.verify()  # npu.host: a tensor<f32> body argument is the [1] tensor it is given
    program = load(encode_program(program_of(module)))
    np.testing.assert_array_equal(Executor(program).run({"x": x})["y"], x * np.float32(2.5))
