"""Integer and bool tensors through the ONNX importer and the nn interpreter, against onnxruntime.

Models with integer paths: casts, comparisons and Where, Gather with run-time int64 indices,
ArgMax outputs, integer arithmetic, and shape chains that fold to constants.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from xdsl.dialects.builtin import IntegerType

from npuc.api import apply_pipeline
from npuc.diagnostics import NpucError
from npuc.frontends.onnx import import_onnx
from npuc.registry import DEFAULT_PIPELINE
from npuc.runtime.nn_interpreter import run_module

T = onnx.TensorProto
R = np.random.default_rng(3)


def check(ox, model: onnx.ModelProto, feeds: dict[str, np.ndarray], pipeline: bool = True):
    """Import `model`, run it and compare every output with onnxruntime: integers exactly."""
    module = import_onnx(model)
    if pipeline:
        apply_pipeline(module, DEFAULT_PIPELINE)
    got = run_module(module, feeds)
    want = ox.run_onnxruntime(model, feeds)
    assert list(got) == list(want)
    for name, expected in want.items():
        assert got[name].dtype == expected.dtype, name
        if expected.dtype.kind == "f":
            np.testing.assert_allclose(got[name], expected, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(got[name], expected)
    return module


def test_cast_between_float_int_and_bool(ox):
    nodes = [
        ox.node("Cast", ["ids"], ["f"], "to_float", to=T.FLOAT),
        ox.node("Mul", ["f", "scale"], ["g"], "scale"),
        ox.node("Cast", ["g"], ["back"], "to_int", to=T.INT64),
        ox.node("Cast", ["g"], ["flags"], "to_bool", to=T.BOOL),
        ox.node("Cast", ["flags"], ["bytes"], "to_u8", to=T.UINT8),
    ]
    model = ox.make_model(
        nodes,
        [ox.tensor("ids", [2, 5], T.INT32)],
        [ox.tensor("back", None, T.INT64), ox.tensor("bytes", None, T.UINT8)],
        [ox.init("scale", np.float32(-0.7))],
    )
    ids = R.integers(-20, 20, (2, 5)).astype(np.int32)
    module = check(ox, model, {"ids": ids})
    casts = [op for op in ox.nn_ops(module) if op.name == "nn.cast"]
    assert [str(op.results[0].type.element_type) for op in casts] == ["f32", "i64", "i1", "ui8"]


def test_equal_then_where(ox):
    nodes = [
        ox.node("Equal", ["x", "seven"], ["hit"], "eq"),
        ox.node("Where", ["hit", "a", "b"], ["y"], "where"),
        ox.node("Less", ["x", "seven"], ["low"], "lt"),
        ox.node("Not", ["low"], ["high"], "not"),
        ox.node("Or", ["hit", "high"], ["ge"], "or"),
    ]
    model = ox.make_model(
        nodes,
        [ox.tensor("x", [3, 4], T.INT32), ("a", [3, 4])],
        ["y", ox.tensor("ge", None, T.BOOL)],
        [ox.init("seven", np.int32(7)), ox.init("b", np.float32(-1.0))],
    )
    x = R.integers(5, 10, (3, 4)).astype(np.int32)
    module = check(ox, model, {"x": x, "a": R.standard_normal((3, 4)).astype(np.float32)})
    assert {"nn.equal", "nn.where", "nn.less", "nn.not", "nn.or"} <= set(ox.op_names(module))


def test_gather_with_int64_indices_from_an_int_input(ox):
    nodes = [
        ox.node("Cast", ["tokens"], ["idx"], "to_i64", to=T.INT64),
        ox.node("Gather", ["table", "idx"], ["emb"], "embed", axis=0),
        ox.node("Gather", ["tokens", "pick"], ["first"], "first", axis=1),
    ]
    model = ox.make_model(
        nodes,
        [ox.tensor("tokens", [2, 6], T.INT32)],
        ["emb", ox.tensor("first", None, T.INT32)],
        [
            ox.init("table", R.standard_normal((10, 4)).astype(np.float32)),
            ox.init("pick", np.array([0, -1], np.int64)),
        ],
    )
    tokens = R.integers(-10, 10, (2, 6)).astype(np.int32)
    module = check(ox, model, {"tokens": tokens})
    assert ox.op_names(module).count("nn.gather") == 2


def test_argmax_output_and_integer_arithmetic(ox):
    nodes = [
        ox.node("ArgMax", ["x"], ["am"], "am", axis=1, keepdims=0),
        ox.node("Mul", ["am", "two"], ["am2"], "mul"),
        ox.node("Sub", ["am2", "three"], ["d"], "sub"),
        ox.node("Div", ["d", "two"], ["q"], "div"),
        ox.node("ReduceSum", ["q", "axes"], ["s"], "sum", keepdims=1),
        ox.node("Max", ["q", "s"], ["m"], "max"),
    ]
    model = ox.make_model(
        nodes,
        [("x", [4, 7])],
        [ox.tensor("am", None, T.INT64), ox.tensor("m", None, T.INT64)],
        [
            ox.init("two", np.int64(2)),
            ox.init("three", np.int64(3)),
            ox.init("axes", np.array([0], np.int64)),
        ],
    )
    check(ox, model, {"x": R.standard_normal((4, 7)).astype(np.float32)})


def test_shape_gather_concat_reshape_chain_folds(ox):
    nodes = [
        ox.node("Shape", ["x"], ["s"], "shape"),
        ox.node("Gather", ["s", "zero"], ["n"], "batch", axis=0),
        ox.node("Unsqueeze", ["n", "axes"], ["n1"], "n1"),
        ox.node("Concat", ["n1", "minus_one"], ["target"], "target", axis=0),
        ox.node("Reshape", ["x", "target"], ["y"], "flatten"),
        ox.node("Cast", ["target"], ["t32"], "t32", to=T.INT32),
    ]
    model = ox.make_model(
        nodes,
        [("x", [2, 3, 4])],
        ["y", ox.tensor("t32", None, T.INT32)],
        [
            ox.init("zero", np.int64(0)),
            ox.init("axes", np.array([0], np.int64)),
            ox.init("minus_one", np.array([-1], np.int64)),
        ],
    )
    module = check(ox, model, {"x": R.standard_normal((2, 3, 4)).astype(np.float32)})
    assert ox.op_names(module) == ["nn.reshape"]
    assert ox.shape(ox.nn_ops(module)[0].results[0]) == (2, 12)


@pytest.mark.parametrize("batch", [1, 3])
def test_byte_one_hot_like_magika(ox, batch):
    """int32 bytes -> Reshape -> Expand -> Equal -> Cast -> MatMul, with a shape chain."""
    nodes = [
        ox.node("Shape", ["bytes"], ["s"], "shape"),
        ox.node("Slice", ["s", "zero", "one"], ["n"], "n"),
        ox.node("Concat", ["n", "dims"], ["target"], "target", axis=0),
        ox.node("Reshape", ["bytes", "column"], ["b3"], "reshape"),
        ox.node("Expand", ["b3", "target"], ["wide"], "expand"),
        ox.node("Equal", ["wide", "codes"], ["hot"], "eq"),
        ox.node("Cast", ["hot"], ["hotf"], "cast", to=T.FLOAT),
        ox.node("MatMul", ["hotf", "w"], ["y"], "dense"),
    ]
    model = ox.make_model(
        nodes,
        [ox.tensor("bytes", [batch, 16], T.INT32)],
        ["y"],
        [
            ox.init("zero", np.array([0], np.int64)),
            ox.init("one", np.array([1], np.int64)),
            ox.init("dims", np.array([16, 257], np.int64)),
            ox.init("column", np.array([0, 16, 1], np.int64)),
            ox.init("codes", np.arange(257, dtype=np.int32).reshape(1, 1, 257)),
            ox.init("w", R.standard_normal((257, 8)).astype(np.float32)),
        ],
        opset=15,
    )
    data = R.integers(0, 257, (batch, 16)).astype(np.int32)
    module = check(ox, model, {"bytes": data}, pipeline=False)
    func = ox.main_func(module)
    assert func.function_type.inputs.data[0].element_type == IntegerType(32)
    assert "nn.equal" in ox.op_names(module)


def test_integer_concat_slice_transpose_and_pad(ox):
    nodes = [
        ox.node("Concat", ["a", "b"], ["c"], "cat", axis=1),
        ox.node("Transpose", ["c"], ["t"], "t", perm=[1, 0]),
        ox.node("Slice", ["t", "starts", "ends"], ["s"], "slice"),
        ox.node("Pad", ["s", "pads", "fill"], ["y"], "pad"),
    ]
    model = ox.make_model(
        nodes,
        [ox.tensor("a", [2, 3], T.INT64), ox.tensor("b", [2, 2], T.INT64)],
        [ox.tensor("y", None, T.INT64)],
        [
            ox.init("starts", np.array([1, 0], np.int64)),
            ox.init("ends", np.array([4, 2], np.int64)),
            ox.init("pads", np.array([0, 1, 1, 0], np.int64)),
            ox.init("fill", np.int64(-9)),
        ],
    )
    feeds = {n: R.integers(-5, 5, s).astype(np.int64) for n, s in (("a", (2, 3)), ("b", (2, 2)))}
    check(ox, model, feeds)


def test_mixed_element_types_are_reported(ox):
    model = ox.make_model(
        [ox.node("Add", ["a", "b"], ["y"], "add")],
        [ox.tensor("a", [2], T.INT32), ox.tensor("b", [2], T.INT64)],
        [ox.tensor("y", None, T.INT32)],
    )
    with pytest.raises(NpucError, match=r"inputs of different element types \(i32, i64\)"):
        import_onnx(model)


def test_integer_clip_and_max_pool(ox):
    nodes = [
        ox.node("Clip", ["x", "lo", "hi"], ["c"], "clip"),
        ox.node("MaxPool", ["c"], ["y"], "pool", kernel_shape=[2, 2], pads=[1, 1, 0, 0]),
    ]
    model = ox.make_model(
        nodes,
        [ox.tensor("x", [1, 2, 5, 5], T.UINT8)],
        [ox.tensor("y", None, T.UINT8)],
        [ox.init("lo", np.uint8(20)), ox.init("hi", np.uint8(200))],
    )
    module = check(ox, model, {"x": R.integers(0, 256, (1, 2, 5, 5)).astype(np.uint8)})
    assert ox.op_names(module) == ["nn.maximum", "nn.minimum", "nn.max_pool2d"]
