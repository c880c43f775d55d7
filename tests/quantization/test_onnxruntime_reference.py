"""onnxruntime is trusted as a reference only in releases checked against the ONNX specification.

The QDQ MatMul here is the pattern onnxruntime 1.32.0 rewrites into an int8-activation kernel by
default (tests/onnxruntime_reference.py); the expected output is the specification written out in
numpy, independent of both onnxruntime and npuc.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime_reference import TRUSTED_VERSIONS, reference_session


def test_installed_onnxruntime_is_a_trusted_reference():
    assert ort.__version__ in TRUSTED_VERSIONS, (
        f"onnxruntime {ort.__version__} has not been checked as a reference: run this file's "
        "tests on it, then add it to TRUSTED_VERSIONS (docs/quantization.md, 'onnxruntime as a "
        "reference')"
    )


def qdq_matmul(x_scale: float, w: np.ndarray, w_scale: float, y_scale: float) -> onnx.ModelProto:
    """y = Q16(DQ16(Q16(x)) @ DQ8(w)), per-tensor scales, zero points 0."""
    n = helper.make_node
    nodes = [
        n("QuantizeLinear", ["x", "xs", "zp16"], ["xq"]),
        n("DequantizeLinear", ["xq", "xs", "zp16"], ["xd"]),
        n("DequantizeLinear", ["w", "ws", "zp8"], ["wd"]),
        n("MatMul", ["xd", "wd"], ["yf"]),
        n("QuantizeLinear", ["yf", "ys", "zp16"], ["y"]),
    ]
    inits = [
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(np.float32(x_scale), "xs"),
        numpy_helper.from_array(np.float32(w_scale), "ws"),
        numpy_helper.from_array(np.float32(y_scale), "ys"),
        numpy_helper.from_array(np.int16(0), "zp16"),
        numpy_helper.from_array(np.int8(0), "zp8"),
    ]
    graph = helper.make_graph(
        nodes,
        "qdq_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, w.shape[0]])],
        [helper.make_tensor_value_info("y", TensorProto.INT16, [4, w.shape[1]])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def spec_qdq_matmul(x, x_scale, w, w_scale, y_scale) -> tuple[np.ndarray, np.ndarray]:
    """The graph by the ONNX operator specification (round half to even, saturate), and where
    float32 arithmetic may round the other way: results within 1 % of a step of a tie."""
    xq = np.clip(np.rint(x / np.float32(x_scale)), -32768, 32767)
    steps = (xq * x_scale).astype(np.float64) @ (w.astype(np.float64) * w_scale) / y_scale
    near_tie = np.abs(steps - np.floor(steps) - 0.5) < 0.01
    return np.clip(np.rint(steps), -32768, 32767).astype(np.int64), near_tie


@pytest.mark.parametrize("seed", range(4))
def test_reference_session_runs_an_int16_qdq_matmul_as_the_specification_says(seed):
    rng = np.random.default_rng(seed)
    k, n = 64, 32
    w = rng.integers(-127, 128, size=(k, n)).astype(np.int8)
    x_scale, w_scale, y_scale = 1.5e-4, 7.3e-3, 1e-3  # |x| < 4.9 and |y| < 32.7 mostly fit
    x = (rng.standard_normal((4, k)) * 1.5).astype(np.float32)
    got = reference_session(qdq_matmul(x_scale, w, w_scale, y_scale)).run(None, {"x": x})[0]
    expected, near_tie = spec_qdq_matmul(x, x_scale, w, w_scale, y_scale)
    diff = np.abs(got.astype(np.int64) - expected)
    assert diff[~near_tie].max() == 0
    assert diff.max() <= 1
    assert np.abs(expected).max() < 32767  # nothing saturated: every value is a real check
