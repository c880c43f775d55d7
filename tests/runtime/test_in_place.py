"""Elementwise ops computed into their first operand (runtime/in_place.py): chosen only where
no other value can see the array, and giving onnxruntime's results, intermediates included."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime_reference import reference_session

from npuc.api import load_model
from npuc.graph_io import entry_function
from npuc.runtime.nn_interpreter import FunctionRunner, run_module


def batch_norm_graph(*outputs: str) -> onnx.ModelProto:
    """conv -> mul -> add -> relu (an unfolded batch norm), the conv output also read by a
    second add: only the add after the mul may run in place (unless `outputs` return the
    mul's result)."""
    rng = np.random.default_rng(11)  # the same weights in every variant
    inits = [
        numpy_helper.from_array(rng.standard_normal((8, 4, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.standard_normal((8, 1, 1)).astype(np.float32), "scale"),
        numpy_helper.from_array(rng.standard_normal((8, 1, 1)).astype(np.float32), "shift"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["conv"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Mul", ["conv", "scale"], ["scaled"], name="scaled"),
        helper.make_node("Add", ["scaled", "shift"], ["shifted"], name="shifted"),
        helper.make_node("Relu", ["shifted"], ["y"], name="y"),
        helper.make_node("Add", ["conv", "y"], ["z"], name="z"),
    ]
    shape = [1, 4, 10, 10]
    infos = [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 8, 10, 10]) for name in outputs
    ]
    graph = helper.make_graph(
        nodes, "bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)], infos, inits
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_only_the_op_whose_first_operand_nobody_else_sees_runs_in_place(tmp_path):
    path = tmp_path / "bn.onnx"
    onnx.save(batch_norm_graph("z"), path)
    chosen = FunctionRunner(entry_function(load_model(path))).in_place
    assert [op.name for op in chosen] == ["nn.add"]
    (op,) = chosen
    assert op.operands[0].owner.name == "nn.mul"  # not the add that reads the conv again
    onnx.save(batch_norm_graph("z", "scaled"), path)  # the product returned: none
    assert not FunctionRunner(entry_function(load_model(path))).in_place


def test_in_place_results_and_kept_intermediates_match_onnxruntime(tmp_path):
    path, reference = tmp_path / "bn.onnx", tmp_path / "reference.onnx"
    onnx.save(batch_norm_graph("z"), path)
    onnx.save(batch_norm_graph("z", "scaled"), reference)
    module = load_model(path)
    x = np.random.default_rng(12).standard_normal((1, 4, 10, 10)).astype(np.float32)
    z, scaled = reference_session(reference).run(None, {"x": x})
    np.testing.assert_allclose(run_module(module, {"x": x})["z"], z, rtol=1e-5, atol=1e-5)
    outputs, kept = run_module(module, {"x": x}, keep="all")
    np.testing.assert_allclose(outputs["z"], z, rtol=1e-5, atol=1e-5)
    # the add's input, kept, is the product, not the sum the add would write over it
    np.testing.assert_allclose(kept["scaled"], scaled, rtol=1e-5, atol=1e-5)
    runner = FunctionRunner(entry_function(module))
    first, _ = runner.run([x])
    second, _ = runner.run([x])  # a prepared runner gives the same results every call
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
