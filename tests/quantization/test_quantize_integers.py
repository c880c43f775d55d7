"""Quantization leaves integer and bool tensors alone: they are never observed or quantized,
their ops stay `nn` ops (run on the host), and the float parts around them quantize normally."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from npuc.api import apply_pipeline
from npuc.frontends.onnx import import_onnx
from npuc.graph_io import entry_function
from npuc.passes.quantization.datasets import random_dataset
from npuc.passes.quantization.statistics import collect_statistics
from npuc.passes.quantize import QuantizeConfig, quantize_module, ranges_from_statistics
from npuc.registry import DEFAULT_PIPELINE
from npuc.runtime.nn_interpreter import run_module as run_float
from npuc.runtime.qnn_interpreter import run_module as run_quantized

T = onnx.TensorProto
R = np.random.default_rng(11)
CODES = 32


def byte_model() -> onnx.ModelProto:
    """bytes (int32) -> one-hot (Equal, Cast) -> MatMul -> Relu -> 'y';
    per-code counts (Cast to int32, ReduceSum) -> 'counts'; ArgMax of y -> 'best'."""
    nodes = [
        helper.make_node("Reshape", ["bytes", "column"], ["b3"], name="reshape"),
        helper.make_node("Equal", ["b3", "codes"], ["hot"], name="eq"),
        helper.make_node("Cast", ["hot"], ["hotf"], name="hot_float", to=T.FLOAT),
        helper.make_node("MatMul", ["hotf", "w"], ["m"], name="dense"),
        helper.make_node("Relu", ["m"], ["y"], name="relu"),
        helper.make_node("Cast", ["hot"], ["hoti"], name="hot_int", to=T.INT32),
        helper.make_node("ReduceSum", ["hoti", "axis1"], ["counts"], name="count", keepdims=0),
        helper.make_node("ArgMax", ["y"], ["best"], name="best", axis=2, keepdims=0),
    ]
    inits = {
        "column": np.array([1, 64, 1], np.int64),
        "codes": (np.arange(CODES, dtype=np.int32) * 8).reshape(1, 1, CODES),
        "w": R.standard_normal((CODES, 6)).astype(np.float32),
        "axis1": np.array([1], np.int64),
    }
    graph = helper.make_graph(
        nodes,
        "bytes",
        [helper.make_tensor_value_info("bytes", T.INT32, [1, 64])],
        [
            helper.make_tensor_value_info("y", T.FLOAT, None),
            helper.make_tensor_value_info("counts", T.INT32, None),
            helper.make_tensor_value_info("best", T.INT64, None),
        ],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)


def test_random_calibration_data_for_integer_inputs_is_byte_like():
    module = import_onnx(byte_model())
    (batch,) = list(random_dataset(module, 1))
    data = batch["bytes"]
    assert data.dtype == np.int32 and data.min() >= 0 and data.max() <= 255
    assert len(np.unique(data)) > 20


def test_integer_paths_stay_nn_and_the_float_parts_quantize():
    module = import_onnx(byte_model())
    apply_pipeline(module, DEFAULT_PIPELINE)
    stats = collect_statistics(module, random_dataset(module, 8), progress=False)
    assert "bytes" not in stats and "counts" not in stats and "best" not in stats
    assert not {"eq", "hot_int", "count", "reshape"} & set(stats)
    assert {"hot_float", "dense", "y"} <= set(stats)

    feeds = {"bytes": R.integers(0, 256, (1, 64)).astype(np.int32)}
    expected = run_float(module, feeds)
    report = quantize_module(module, ranges_from_statistics(stats), QuantizeConfig(scheme="int8"))

    ops = {op.name: op for op in entry_function(module).body.block.ops}
    for name in ("nn.reshape", "nn.equal", "nn.cast", "nn.reduce_sum", "nn.argmax"):
        assert name in ops, name
    assert "qnn.matmul" in ops
    assert str(ops["nn.equal"].operands[0].type.element_type) == "i32"
    assert report.layers["eq"].lowering == "float"
    assert "integer or bool" in (report.layers["eq"].reason or "")

    got = run_quantized(module, feeds)
    np.testing.assert_array_equal(got["counts"], expected["counts"])
    assert got["counts"].dtype == np.int32 and got["best"].dtype == np.int64
    y, want = got["y"].ravel(), expected["y"].ravel()
    assert np.dot(y, want) / (np.linalg.norm(y) * np.linalg.norm(want)) > 0.99
