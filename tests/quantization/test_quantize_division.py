"""A division by a nonzero constant quantizes as a multiplication by its reciprocal, so a
gate like PaddlePaddle's hard-swish export, x * clip(x + 3, 0, 6) / d, runs on the NPU. With
d = 6 it is hard-swish itself, which canonicalize makes one op (a table lookup once
quantized)."""

from __future__ import annotations

import numpy as np
import pytest
from compile_helpers import assert_same, compile_and_run, quantize_float
from onnx import helper, numpy_helper
from onnx_models import float_graph, random_init

from npuc.frontends.onnx import import_onnx
from npuc.runtime.qnn_interpreter import dequantized_outputs, random_inputs, run_module


def hard_swish_model(divisor: np.ndarray | None = None):
    rng = np.random.default_rng(9)
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        n("Add", ["c", "three"], ["a"], name="plus3"),
        n("Clip", ["a", "zero", "six"], ["r"], name="relu6"),
        n("Mul", ["c", "r"], ["m"], name="gate"),
        n("Div", ["m", "divisor"], ["h"], name="div6"),
        n("Conv", ["h", "w2"], ["y"], name="conv2"),
    ]
    scalar = {
        k: numpy_helper.from_array(np.array(v, np.float32), k)
        for k, v in (("three", 3.0), ("zero", 0.0), ("six", 6.0))
    }
    divisor = np.array(5.0, np.float32) if divisor is None else divisor
    inits = [random_init(rng, "w", [4, 3, 3, 3], 0.8), *scalar.values(),
             numpy_helper.from_array(divisor, "divisor"),
             random_init(rng, "w2", [2, 4, 1, 1])]  # fmt: skip
    return float_graph(nodes, inits, [1, 3, 8, 8], [1, 2, 8, 8])


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a.ravel(), b.ravel()) / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.mark.parametrize(
    "divisor",
    [np.array(5.0, np.float32), np.array([6.0, -2.0, 0.5, 3.0], np.float32).reshape(4, 1, 1)],
)
def test_division_by_a_constant_quantizes_and_tracks_float(divisor):
    float_module = import_onnx(hard_swish_model(divisor))
    quantized = quantize_float(float_module.clone())
    names = {op.name for op in quantized.walk()}
    assert "nn.div" not in names and "qnn.mul" in names
    for seed in range(3):
        inputs = random_inputs(float_module, seed=seed)
        want = run_module(float_module, inputs)["y"]
        got = dequantized_outputs(quantized, run_module(quantized, inputs))["y"]
        assert cosine(want, got) > 0.995


def test_hard_swish_divided_by_six_quantizes_as_one_table_lookup():
    float_module = import_onnx(hard_swish_model(np.array(6.0, np.float32)))
    quantized = quantize_float(float_module.clone())
    names = {op.name for op in quantized.walk()}
    assert "qnn.lut" in names and not names & {"nn.div", "qnn.mul", "qnn.add"}
    for seed in range(3):
        inputs = random_inputs(float_module, seed=seed)
        want = run_module(float_module, inputs)["y"]
        got = dequantized_outputs(quantized, run_module(quantized, inputs))["y"]
        assert cosine(want, got) > 0.995


def test_quantized_division_runs_bit_exact_on_the_npu():
    quantized = quantize_float(import_onnx(hard_swish_model()))
    inputs = random_inputs(quantized, seed=4)
    reference = run_module(quantized, inputs)
    for target in ("mcu-64", "mid-256", "ethos-u55-256-hee"):
        outputs, program = compile_and_run(quantized, target, "performance", inputs)  # host=float
        assert_same(reference, outputs)
        assert "host" not in {inst.op for inst in program.instructions}


def test_a_divisor_with_a_zero_stays_float():
    zero = np.array([6.0, 0.0, 1.0, 2.0], np.float32).reshape(4, 1, 1)
    quantized = quantize_float(import_onnx(hard_swish_model(zero)))
    assert "nn.div" in {op.name for op in quantized.walk()}


def test_a_zero_divisor_saturates_toward_the_numerators_sign():
    """TFLite leaves it undefined; qnn.div (and the NPU's eltwise div, which shares the
    kernel) gives the clamp bound in the numerator's direction, zp_out for 0 / 0."""
    from npuc.runtime.kernels.qnn_arith import tflite_divide

    num = np.array([5, -5, 0, 6], np.int64)
    den = np.array([0, 0, 0, 3], np.int64)
    got = tflite_divide(num, den, 1 << 30, 30, "exact")
    assert list(got[:3]) == [2**31 - 1, -(2**31 - 1), 0]
    assert got[3] == 2  # 6 / 3, times a multiplier of 1
