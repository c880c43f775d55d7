"""The onnx.backend adapter: which graph inputs are frozen as compile-time parameters,
and models run through `prepare(model).run(inputs)` against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx

from npuc.frontends.onnx import import_onnx
from npuc.onnx_backend import NpucBackend, parameter_inputs
from npuc.runtime.nn_interpreter import run_module

F = onnx.TensorProto.FLOAT
I64 = onnx.TensorProto.INT64
RNG = np.random.default_rng(7)


def center_crop(ox) -> onnx.ModelProto:
    """CenterCropPad's function body for a crop: `shape` reaches Slice only via arithmetic."""
    nodes = [
        ox.node("Shape", ["x"], ["x_shape"]),
        ox.node("Sub", ["x_shape", "shape"], ["diff"]),
        ox.node("Div", ["diff", "two"], ["starts"]),
        ox.node("Add", ["starts", "shape"], ["ends"]),
        ox.node("Slice", ["x", "starts", "ends"], ["y"]),
    ]
    inputs = [ox.tensor("x", [6, 7, 3]), ox.tensor("shape", [3], I64)]
    return ox.make_model(nodes, inputs, ["y"], [ox.init("two", np.array(2, np.int64))], 18)


def test_parameters_are_inputs_that_only_decide_parameter_slots(ox):
    nodes = [
        ox.node("Reshape", ["x", "target"], ["r"]),
        ox.node("Add", ["r", "bias"], ["y"]),
        ox.node("Mul", ["k", "k"], ["k2"]),
        ox.node("Unsqueeze", ["y", "k2"], ["u"]),
        ox.node("Reshape", ["u", "both"], ["z"]),
        ox.node("Add", ["both", "both"], ["w"]),
    ]
    inputs = [
        ox.tensor("x", [2, 3]),
        ox.tensor("target", [1], I64),
        ox.tensor("bias", [6]),
        ox.tensor("k", [1], I64),
        ox.tensor("both", [2], I64),
    ]
    model = ox.make_model(nodes, inputs, ["z", "w"])
    # `both` also reaches an output through Add, so it is data, like `x` and `bias`.
    assert parameter_inputs(model) == {"target", "k"}
    assert parameter_inputs(center_crop(ox)) == {"shape"}


def test_integer_data_inputs_are_never_frozen(ox):
    nodes = [ox.node("Add", ["a", "b"], ["s"]), ox.node("Reshape", ["s", "b"], ["y"])]
    inputs = [ox.tensor("a", [2], I64), ox.tensor("b", [2], I64)]
    assert parameter_inputs(ox.make_model(nodes, inputs, ["y"])) == set()


def test_shape_computed_from_a_parameter_input_matches_onnxruntime(ox):
    model = center_crop(ox)
    rep = NpucBackend.prepare(model)
    x = RNG.standard_normal((6, 7, 3)).astype(np.float32)
    for shape in ([4, 5, 3], [2, 7, 1]):
        crop = np.array(shape, np.int64)
        expected = ox.run_onnxruntime(model, {"x": x, "shape": crop})["y"]
        (got,) = rep.run([x, crop])
        np.testing.assert_array_equal(got, expected)
    assert len(rep._compiled) == 2  # one compilation per parameter value


def test_freezing_an_input_of_an_ir3_model(ox):
    # IR version 3 requires initializers to be graph inputs too; the opset-6 model
    # is upgraded by onnx.version_converter after `idx` is frozen.
    nodes = [ox.node("Gather", ["table", "idx"], ["y"])]
    table = RNG.standard_normal((4, 3)).astype(np.float32)
    inputs = [ox.tensor("idx", [1, 4], I64), ox.tensor("table", [4, 3])]
    model = ox.make_model(nodes, inputs, ["y"], [ox.init("table", table)], opset=6)
    model.ir_version = 3
    idx = np.array([[0, 3, 0, 1]], np.int64)
    expected = ox.run_onnxruntime(model, {"idx": idx})["y"]
    got = run_module(import_onnx(model, constants={"idx": idx}), {})["y"]
    np.testing.assert_array_equal(got, expected)
    (via_backend,) = NpucBackend.prepare(model).run([idx])
    np.testing.assert_array_equal(via_backend, expected)
