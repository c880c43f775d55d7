"""ONNX importer: IR structure, naming, constant folding, input shapes, cuts and diagnostics."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper
from xdsl.dialects.builtin import Float32Type, IntegerType

from npuc.diagnostics import NpucError
from npuc.frontends.onnx import import_onnx, parse_input_shape
from npuc.tensors import from_dense

F = onnx.TensorProto.FLOAT
I64 = onnx.TensorProto.INT64


def i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def conv_relu(ox, batch="N"):
    w = np.arange(4 * 3 * 3 * 3, dtype=np.float32).reshape(4, 3, 3, 3) / 100
    nodes = [
        ox.node("Conv", ["data", "w", "b"], ["c"], "conv1", pads=[1, 1, 1, 1], strides=[2, 2]),
        ox.node("Relu", ["c"], ["prob"], "relu1"),
    ]
    inits = [ox.init("w", w), ox.init("b", np.ones(4, np.float32))]
    return ox.make_model(nodes, [("data", [batch, 3, 8, 8])], ["prob"], inits)


# ----------------------------------------------------------------------------- structure


def test_conv_relu_module_structure(ox):
    module = import_onnx(conv_relu(ox))
    module.verify()
    assert ox.io_names(module) == (["data"], ["prob"])
    func = ox.main_func(module)
    assert [ox.shape(a) for a in func.args] == [(1, 3, 8, 8)]
    assert [tuple(t.get_shape()) for t in func.function_type.outputs] == [(1, 4, 4, 4)]
    conv, relu = ox.nn_ops(module)
    assert (conv.name, ox.layer(conv)) == ("nn.conv2d", "conv1")
    assert (relu.name, ox.layer(relu)) == ("nn.relu", "relu1")
    assert ox.prop_values(conv, "pads") == [1, 1, 1, 1]
    assert ox.prop_values(conv, "strides") == [2, 2]
    assert ox.prop_values(conv, "dilations") == [1, 1]
    assert conv.properties["groups"].value.data == 1
    constants = [op for op in ox.nn_ops(module, constants=True) if op.name == "nn.constant"]
    assert [ox.layer(c) for c in constants] == ["w", "b"]
    expected = np.arange(108, dtype=np.float32).reshape(4, 3, 3, 3) / 100
    np.testing.assert_array_equal(from_dense(constants[0].value), expected)


def test_model_from_path_bytes_and_proto_agree(ox, tmp_path):
    model = conv_relu(ox)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    texts = {str(import_onnx(src)) for src in (model, model.SerializeToString(), path, str(path))}
    assert len(texts) == 1


def test_unnamed_nodes_are_named_by_op_type_and_index(ox):
    nodes = [
        ox.node("Relu", ["x"], ["a"]),
        ox.node("Sigmoid", ["a"], ["b"], "sig"),
        ox.node("Neg", ["b"], ["y"]),
    ]
    module = import_onnx(ox.make_model(nodes, [("x", [2])], ["y"]))
    assert [ox.layer(op) for op in ox.nn_ops(module)] == ["Relu_0", "sig", "Neg_2"]


def test_every_op_of_an_expanded_node_carries_the_node_name(ox):
    nodes = [
        ox.node("Conv", ["x", "w"], ["c"], "conv1d", pads=[1, 1]),
        ox.node(
            "Gemm", ["a", "bmat", "cmat"], ["g"], "gemm", transA=1, transB=1, alpha=2.0, beta=3.0
        ),
        ox.node("Softmax", ["c"], ["s"], "sm", axis=1),
    ]
    inits = [ox.init("w", np.ones((2, 3, 3), np.float32))]
    inputs = [("x", [1, 3, 5]), ("a", [4, 3]), ("bmat", [5, 4]), ("cmat", [3, 5])]
    module = import_onnx(ox.make_model(nodes, inputs, ["s", "g"], inits, opset=11))
    by_layer = {}
    for op in ox.nn_ops(module):
        by_layer.setdefault(ox.layer(op), []).append(op.name)
    assert by_layer["conv1d"] == ["nn.reshape", "nn.conv2d", "nn.reshape"]
    assert by_layer["gemm"] == [
        "nn.transpose",
        "nn.transpose",
        "nn.matmul",
        "nn.mul",
        "nn.mul",
        "nn.add",
    ]
    assert by_layer["sm"] == ["nn.reshape", "nn.softmax", "nn.reshape"]
    assert set(by_layer) == {"conv1d", "gemm", "sm"}


def test_graph_input_passed_through_and_constant_outputs(ox):
    nodes = [ox.node("Shape", ["x"], ["s"], "shape"), ox.node("Identity", ["x"], ["same"], "id")]
    module = import_onnx(ox.make_model(nodes, [("x", [2, 3])], [ox.tensor("s", None, I64), "same"]))
    func = ox.main_func(module)
    ret = func.body.block.last_op
    assert ret.operands[1] is func.args[0]
    const = ret.operands[0].owner
    assert const.name == "nn.constant" and ox.layer(const) == "shape"
    np.testing.assert_array_equal(from_dense(const.value), [2, 3])
    assert isinstance(const.value.get_element_type(), IntegerType)


# ----------------------------------------------------------------------------- folding


def test_shape_subgraph_is_folded_to_one_reshape(ox):
    nodes = [
        ox.node("Shape", ["x"], ["s"]),
        ox.node("Gather", ["s", "zero"], ["n"], axis=0),
        ox.node("Unsqueeze", ["n", "ax"], ["n1"]),
        ox.node("Slice", ["s", "two", "four"], ["hw"]),
        ox.node("ReduceProd", ["hw"], ["area"], keepdims=1),
        ox.node("Cast", ["area"], ["area_f"], to=F),
        ox.node("Cast", ["area_f"], ["area_i"], to=I64),
        ox.node("Div", ["area_i", "two"], ["half"]),
        ox.node("Mul", ["half", "two"], ["back"]),
        ox.node("Equal", ["back", "area_i"], ["even"]),
        ox.node("Where", ["even", "back", "area_i"], ["hw2"]),
        ox.node("Concat", ["n1", "minus1", "hw2"], ["shp"], axis=0),
        ox.node("Reshape", ["x", "shp"], ["y"], "reshape"),
    ]
    inits = [
        ox.init("zero", np.array(0, np.int64)),
        ox.init("ax", i64(0)),
        ox.init("two", i64(2)),
        ox.init("four", i64(4)),
        ox.init("minus1", i64(-1)),
    ]
    module = import_onnx(ox.make_model(nodes, [("x", [2, 3, 4, 6])], ["y"], inits))
    (reshape,) = ox.nn_ops(module)
    assert reshape.name == "nn.reshape" and ox.layer(reshape) == "reshape"
    assert ox.shape(reshape.results[0]) == (2, 3, 24)
    assert ox.nn_ops(module, constants=True) == [reshape]


def test_range_constant_of_shape_and_expand_fold(ox):
    nodes = [
        ox.node("Range", ["start", "limit", "delta"], ["r"]),
        ox.node("Cast", ["r"], ["rf"], to=F),
        ox.node(
            "ConstantOfShape", ["shape"], ["ones"], value=helper.make_tensor("v", F, [1], [1.0])
        ),
        ox.node("Mul", ["rf", "ones"], ["grid"], "grid"),
        ox.node("Expand", ["grid", "eshape"], ["big"], "expand"),
        ox.node("Add", ["x", "big"], ["y"], "add"),
    ]
    inits = [
        ox.init("start", np.array(1, np.int64)),
        ox.init("limit", np.array(8, np.int64)),
        ox.init("delta", np.array(2, np.int64)),
        ox.init("shape", i64(3, 1)),
        ox.init("eshape", i64(2, 3, 4)),
    ]
    module = import_onnx(ox.make_model(nodes, [("x", [2, 3, 4])], ["y"], inits, opset=11))
    const, add = ox.nn_ops(module, constants=True)
    assert const.name == "nn.constant" and ox.layer(const) == "expand"
    np.testing.assert_array_equal(
        from_dense(const.value), np.broadcast_to([1.0, 3, 5, 7], (2, 3, 4))
    )
    assert add.name == "nn.add"


def test_constant_of_shape_weights_are_splats(ox):
    nodes = [
        ox.node(
            "ConstantOfShape", ["wshape"], ["w"], "w", value=helper.make_tensor("v", F, [1], [0.5])
        ),
        ox.node("Conv", ["x", "w"], ["y"], "conv"),
    ]
    module = import_onnx(
        ox.make_model(
            nodes, [("x", [1, 64, 4, 4])], ["y"], [ox.init("wshape", i64(128, 64, 3, 3))], opset=9
        )
    )
    const = ox.nn_ops(module, constants=True)[0]
    assert len(const.value.data.data) == 4
    assert from_dense(const.value).shape == (128, 64, 3, 3)
    assert float(from_dense(const.value)[5, 6, 1, 2]) == 0.5


def test_old_models_with_initializers_listed_as_inputs(ox):
    nodes = [ox.node("Add", ["x", "bias"], ["y"], "add")]
    model = ox.make_model(
        nodes, [("x", [2]), ("bias", [2])], ["y"], [ox.init("bias", [1.0, 2.0])], opset=7
    )
    module = import_onnx(model)
    assert ox.io_names(module) == (["x"], ["y"])
    assert [op.name for op in ox.nn_ops(module, constants=True)] == ["nn.constant", "nn.add"]


# ----------------------------------------------------------------------------- input shapes


def test_dynamic_batch_dimension_becomes_one(ox):
    module = import_onnx(conv_relu(ox, batch="batch"))
    assert ox.shape(ox.main_func(module).args[0]) == (1, 3, 8, 8)


def test_dynamic_inner_dimension_needs_input_shape(ox):
    model = ox.make_model([ox.node("Relu", ["x"], ["y"])], [("x", ["N", 3, "H", "W"])], ["y"])
    with pytest.raises(NpucError, match=r"input 'x' has dynamic dimensions .*--input-shape x:"):
        import_onnx(model)
    module = import_onnx(model, input_shapes={"x": [2, 3, 10, 12]})
    assert ox.shape(ox.main_func(module).args[0]) == (2, 3, 10, 12)
    assert ox.shape(ox.nn_ops(module)[0].results[0]) == (2, 3, 10, 12)


def test_input_shapes_fix_dynamic_dimensions_and_propagate(ox):
    module = import_onnx(conv_relu(ox), input_shapes={"data": (3, 3, 8, 8)})
    assert [ox.shape(op.results[0]) for op in ox.nn_ops(module)] == [(3, 4, 4, 4)] * 2


def test_input_shapes_may_not_contradict_a_static_dimension(ox):
    """As onnxruntime refuses an input of another shape than a static one the model declares."""
    with pytest.raises(
        NpucError,
        match=r"--input-shape data:3,3,16,10 contradicts the model's shape 1x3x8x8 for input "
        r"'data' \(only its dynamic dimensions",
    ):
        import_onnx(conv_relu(ox, batch=1), input_shapes={"data": (3, 3, 16, 10)})
    with pytest.raises(NpucError, match=r"contradicts the model's shape \?x3x8x8"):
        import_onnx(conv_relu(ox), input_shapes={"data": (2, 3, 8, 9)})


def test_input_shapes_errors(ox):
    model = conv_relu(ox)
    with pytest.raises(NpucError, match=r"unknown input 'image'; inputs are: data"):
        import_onnx(model, input_shapes={"image": [1, 3, 8, 8]})
    with pytest.raises(NpucError, match=r"has rank 3, but the model declares rank 4 \(\?x3x8x8\)"):
        import_onnx(model, input_shapes={"data": [3, 8, 8]})
    with pytest.raises(NpucError, match="positive dimensions"):
        import_onnx(model, input_shapes={"data": [1, 3, 0, 8]})


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("data:1,3,224,224", ("data", [1, 3, 224, 224])),
        ("gpu_0/data_0:1,3,8,8", ("gpu_0/data_0", [1, 3, 8, 8])),
        ("input:0:4,5", ("input:0", [4, 5])),
        ("x:1x3x8", ("x", [1, 3, 8])),
        ("x: 2 , 3", ("x", [2, 3])),
    ],
)
def test_parse_input_shape(spec, expected):
    assert parse_input_shape(spec) == expected


@pytest.mark.parametrize(
    "spec", ["data", "data:", ":1,2", "data:1,,2", "data:1,a", "data:0,3", "data:-1,3", "data:1.5"]
)
def test_parse_input_shape_rejects_malformed_specs(spec):
    with pytest.raises(NpucError, match="expected NAME:D1,D2"):
        parse_input_shape(spec)


def test_integer_and_bool_io_are_typed_and_float16_is_rejected(ox):
    ids = ox.make_model(
        [ox.node("Identity", ["ids"], ["y"])],
        [ox.tensor("ids", [4], I64)],
        [ox.tensor("y", None, I64)],
    )
    func = ox.main_func(import_onnx(ids))
    assert func.function_type.inputs.data == func.function_type.outputs.data
    assert func.function_type.inputs.data[0].element_type == IntegerType(64)
    halves = ox.make_model(
        [ox.node("Relu", ["x"], ["y"])], [ox.tensor("x", [4], onnx.TensorProto.FLOAT16)], ["y"]
    )
    with pytest.raises(
        NpucError, match="input 'x' has element type float16; npuc's nn dialect takes float32, "
    ):
        import_onnx(halves)
    flags = ox.make_model(
        [ox.node("Shape", ["x"], ["s"]), ox.node("Equal", ["s", "s"], ["y"])],
        [("x", [2])],
        [ox.tensor("y", None, onnx.TensorProto.BOOL)],
    )
    (out,) = ox.main_func(import_onnx(flags)).function_type.outputs
    assert out.element_type == IntegerType(1)


def test_argmax_output_is_int64(ox):
    model = ox.make_model(
        [ox.node("ArgMax", ["x"], ["y"], "am", axis=1, keepdims=0)],
        [("x", [2, 5])],
        [ox.tensor("y", None, I64)],
    )
    module = import_onnx(model)
    (out,) = ox.main_func(module).function_type.outputs
    assert isinstance(out.element_type, IntegerType) and tuple(out.get_shape()) == (2,)


# ----------------------------------------------------------------------------- cutting


def chain(ox):
    nodes = [
        ox.node("TopK", ["x", "k"], ["vals", "idx"], "topk"),
        ox.node("Relu", ["vals"], ["a"], "relu"),
        ox.node("Sigmoid", ["a"], ["b"], "sig"),
        ox.node("Tanh", ["b"], ["c"], "tanh"),
        ox.node("Neg", ["a"], ["side"], "neg"),
    ]
    return ox.make_model(nodes, [("x", [2, 8])], ["c", "side"], [ox.init("k", i64(4))])


def test_cut_inputs_and_outputs_drop_unneeded_nodes(ox):
    model = chain(ox)
    module = import_onnx(model, inputs=["a"], outputs=["b"])
    assert ox.io_names(module) == (["a"], ["b"])
    assert [ox.shape(arg) for arg in ox.main_func(module).args] == [(2, 4)]
    assert [ox.layer(op) for op in ox.nn_ops(module)] == ["sig"]
    module = import_onnx(model, inputs=["vals"])
    assert ox.io_names(module) == (["vals"], ["c", "side"])
    assert [ox.layer(op) for op in ox.nn_ops(module)] == ["relu", "sig", "tanh", "neg"]


def test_cut_outputs_only_keeps_graph_inputs(ox):
    model = ox.make_model(
        [ox.node("Relu", ["x"], ["a"], "relu"), ox.node("Neg", ["a"], ["y"], "neg")],
        [("x", [3])],
        ["y"],
    )
    module = import_onnx(model, outputs=["a"])
    assert ox.io_names(module) == (["x"], ["a"])
    assert [ox.layer(op) for op in ox.nn_ops(module)] == ["relu"]


def test_cut_input_shape_found_by_importing_the_prefix(ox):
    nodes = [
        ox.node("ConstantOfShape", ["one"], ["six"], value=helper.make_tensor("v", I64, [1], [6])),
        ox.node("Concat", ["six", "minus1"], ["shp"], axis=0),
        ox.node("Reshape", ["x", "shp"], ["cut"], "reshape"),
        ox.node("Sigmoid", ["cut"], ["y"], "sig"),
    ]
    inits = [ox.init("one", i64(1)), ox.init("minus1", i64(-1))]
    model = ox.make_model(nodes, [("x", [2, 3, 4])], ["y"], inits)
    module = import_onnx(model, inputs=["cut"])
    assert ox.shape(ox.main_func(module).args[0]) == (6, 4)
    module = import_onnx(model, inputs=["cut"], input_shapes={"cut": [3, 8]})
    assert ox.shape(ox.main_func(module).args[0]) == (3, 8)


def test_cut_names_must_exist(ox):
    model = chain(ox)
    with pytest.raises(NpucError) as err:
        import_onnx(model, outputs=["sigg"])
    text = str(err.value)
    assert "unknown output tensor name: sigg" in text
    assert "valid tensor names: x, k, vals, idx, a, b, c, side" in text
    with pytest.raises(NpucError, match=r"unknown input tensor names: p, q"):
        import_onnx(model, inputs=["p", "q"])
    with pytest.raises(NpucError, match=r"did you mean: idx, side\?"):
        import_onnx(model, outputs=["sid"])


def test_cut_outputs_must_be_computable_from_the_cut_inputs(ox):
    nodes = [ox.node("Add", ["x", "z"], ["a"], "add"), ox.node("Relu", ["a"], ["y"], "relu")]
    model = ox.make_model(nodes, [("x", [2]), ("z", [2])], ["y"])
    with pytest.raises(
        NpucError, match="depend on graph input 'z', which is not among the chosen inputs"
    ):
        import_onnx(model, inputs=["x"])


# ----------------------------------------------------------------------------- unsupported


def test_unsupported_constructs_are_reported_together(ox, monkeypatch):
    monkeypatch.setenv("NPUC_NO_PLUGIN_ENTRY_POINTS", "1")  # no plugin is installed
    monkeypatch.delenv("NPUC_PLUGIN_PATH", raising=False)
    nodes = [
        ox.node("Einsum", ["x", "w"], ["h1"], "einsum_1", equation="nij,kmj->nk"),
        ox.node("Einsum", ["x", "w"], ["h2"], "einsum_2", equation="nij,kmj->nk"),
        ox.node(
            "Resize",
            ["img", "roi", "scales"],
            ["big"],
            "resize_3",
            coordinate_transformation_mode="tf_crop_and_resize",
        ),
        ox.node("MaxPool", ["img"], ["pooled", "where"], "pool", kernel_shape=[2, 2]),
        ox.node("Relu", ["where_f"], ["w_relu"], "after_pool"),
        ox.node("Cast", ["where"], ["where_f"], to=F),
        helper.make_node("FusedConv", ["img"], ["fused"], name="custom", domain="com.microsoft"),
        ox.node("Conv", ["vol", "w3"], ["c3"], "conv3d"),
        ox.node("Relu", ["big"], ["ok"], "fine"),
    ]
    nodes = [nodes[i] for i in (0, 1, 2, 3, 5, 4, 6, 7, 8)]
    inits = [
        ox.init("w", np.zeros((1, 16, 3), np.float32)),
        ox.init("roi", np.zeros(8, np.float32)),
        ox.init("scales", np.array([1, 1, 2, 2], np.float32)),
        ox.init("w3", np.zeros((2, 1, 1, 1, 1), np.float32)),
    ]
    inputs = [("x", [1, 2, 3]), ("img", [1, 1, 4, 4]), ("vol", [1, 1, 2, 2, 2])]
    model = ox.make_model(nodes, inputs, ["h1", "h2", "ok", "w_relu", "fused", "c3"], inits)
    with pytest.raises(NpucError) as err:
        import_onnx(model, location="model.onnx")
    assert str(err.value) == (
        "model.onnx: error: op 'com.microsoft::FusedConv' needs a plugin that provides it; "
        "installed plugins: none; and 4 more lines:\n"
        "  unsupported ONNX constructs (5 nodes): "
        "Einsum x2: einsum_1, einsum_2 (op not supported); and 3 more lines:\n"
        "    Resize x1: resize_3 "
        "(coordinate_transformation_mode 'tf_crop_and_resize' not supported)\n"
        "    MaxPool x1: pool (Indices output not supported)\n"
        "    Conv x1: conv3d (3-D convolution not supported)"
    )


def test_nodes_after_an_unsupported_node_are_still_checked(ox):
    nodes = [
        ox.node("NonMaxSuppression", ["boxes", "scores"], ["sel"], "nms"),
        ox.node("Shape", ["sel"], ["s"], "shape"),
        ox.node("Reshape", ["boxes", "s"], ["r"], "reshape_by_nms"),
        ox.node("Resize", ["img", "", "", "sizes"], ["y"], "resize", antialias=1, mode="linear"),
        ox.node("Cast", ["img"], ["yh"], "to_half", to=onnx.TensorProto.FLOAT16),
    ]
    inputs = [("boxes", [1, 4, 4]), ("scores", [1, 1, 4]), ("img", [1, 1, 8, 8])]
    model = ox.make_model(
        nodes,
        inputs,
        ["r", "y", ox.tensor("yh", None, onnx.TensorProto.FLOAT16)],
        [ox.init("sizes", i64(1, 1, 4, 4))],
        opset=18,
    )
    with pytest.raises(NpucError) as err:
        import_onnx(model)
    assert (
        str(err.value)
        .splitlines()[0]
        .endswith(": NonMaxSuppression x1: nms (op not supported); and 2 more lines:")
    )
    assert str(err.value).splitlines()[1:] == [
        "  Resize x1: resize (antialias not supported)",
        "  Cast x1: to_half (cast to float16 at run time not supported)",
    ]


def test_invalid_nodes_are_reported_as_invalid(ox):
    nodes = [ox.node("Conv", ["x", "w"], ["y"], "bad_conv")]
    model = ox.make_model(
        nodes, [("x", [1, 3, 8, 8])], ["y"], [ox.init("w", np.zeros((4, 2, 3, 3), np.float32))]
    )
    with pytest.raises(
        NpucError,
        match=r"invalid ONNX nodes \(1 node\): Conv x1: bad_conv \(invalid node: input chan",
    ):
        import_onnx(model)


# ----------------------------------------------------------------------------- corrupt input


def test_garbage_and_truncated_bytes(ox):
    data = conv_relu(ox).SerializeToString()
    with pytest.raises(NpucError, match=r"^broken.onnx: error: not an ONNX model"):
        import_onnx(data[: len(data) // 2], location="broken.onnx")
    with pytest.raises(NpucError, match="not an ONNX model"):
        import_onnx(b"\xff\xfe garbage \x00\x01" * 10)
    with pytest.raises(NpucError, match="the file is empty"):
        import_onnx(b"")
    with pytest.raises(NpucError, match="not an ONNX model"):
        import_onnx(b"\x08\x07")


def test_missing_and_corrupt_files(tmp_path):
    missing = tmp_path / "nope.onnx"
    with pytest.raises(NpucError, match=r"nope.onnx: error: cannot read ONNX model: No such file"):
        import_onnx(missing)
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not protobuf" * 3)
    with pytest.raises(NpucError, match=rf"^{bad}: error: not an ONNX model"):
        import_onnx(bad)


def test_invalid_graphs(ox):
    dangling = ox.make_model([ox.node("Add", ["x", "ghost"], ["y"], "add")], [("x", [2])], ["y"])
    with pytest.raises(
        NpucError,
        match="node 'add' reads tensor 'ghost', which no node, initializer or graph input",
    ):
        import_onnx(dangling)
    cycle = ox.make_model(
        [ox.node("Add", ["x", "b"], ["a"], "n1"), ox.node("Relu", ["a"], ["b"], "n2")],
        [("x", [2])],
        ["a"],
    )
    with pytest.raises(NpucError, match="cycle"):
        import_onnx(cycle)
    no_outputs = ox.make_model([ox.node("Relu", ["x"], ["y"])], [("x", [2])], [])
    with pytest.raises(NpucError, match="the graph has no outputs"):
        import_onnx(no_outputs)


@pytest.mark.parametrize("opset", [7, 21, 23, onnx.defs.onnx_opset_version()])
def test_any_opset_onnx_knows_is_read(ox, opset):
    # Relu has not changed since opset 14, so a newer model stamp does not matter.
    model = ox.make_model([ox.node("Relu", ["x"], ["y"])], [("x", [2])], ["y"], opset=opset)
    assert ox.op_names(import_onnx(model)) == ["nn.relu"]


def test_opset_newer_than_onnx_knows_is_rejected(ox):
    newest = onnx.defs.onnx_opset_version()
    model = ox.make_model([ox.node("Relu", ["x"], ["y"])], [("x", [2])], ["y"], opset=newest + 1)
    with pytest.raises(
        NpucError, match=rf"opset {newest + 1} is newer than the installed onnx package knows"
    ):
        import_onnx(model)


def test_op_versions_newer_than_21_are_judged_per_node(ox):
    nodes = [
        ox.node("SpaceToDepth", ["x"], ["s2d"], "s2d", blocksize=2),
        ox.node("Mod", ["c", "c"], ["m"], "mod", fmod=1),
        ox.node("DepthToSpace", ["x"], ["d2s"], "d2s", blocksize=2),
        ox.node("Conv", ["x", "w"], ["conv"], "conv"),
    ]
    inits = [ox.init("c", [1.0, 2.0]), ox.init("w", np.ones((1, 4, 1, 1), np.float32))]
    model = ox.make_model(nodes, [("x", [1, 4, 2, 2])], ["s2d", "m", "d2s", "conv"], inits, 28)
    with pytest.raises(NpucError) as err:
        import_onnx(model, location="new.onnx")
    # SpaceToDepth-28 adds `mode` and Mod-28 redefines fmod=0 on floats; DepthToSpace-28
    # (a function body only) and Conv-22 (bfloat16 only) keep their opset-21 meaning.
    assert str(err.value) == (
        "new.onnx: error: unsupported ONNX constructs (2 nodes): "
        "SpaceToDepth x1: s2d (SpaceToDepth-28 is newer than npuc supports (opset <= 21)); "
        "and 1 more line:\n"
        "  Mod x1: mod (Mod-28 is newer than npuc supports (opset <= 21))"
    )
    module = import_onnx(model, outputs=["d2s", "conv"])
    assert ox.op_names(module) == ["nn.depth_to_space", "nn.conv2d"]


@pytest.mark.parametrize(
    ("to", "opset"), [(onnx.TensorProto.FLOAT8E4M3FN, 21), (onnx.TensorProto.FLOAT8E8M0, 24)]
)
def test_casts_to_8_bit_floats_are_not_folded(ox, to, opset):
    # ONNX saturates 1e6 to 448 in float8e4m3fn, numpy gives NaN; Cast-24 rounds to
    # float8e8m0 as its round_mode says. npuc refuses rather than fold a different value.
    nodes = [ox.node("Cast", ["c"], ["y"], "narrow", to=to)]
    model = ox.make_model(nodes, [], ["y"], [ox.init("c", [1e6, 5.0])], opset=opset)
    name = onnx.TensorProto.DataType.Name(to).lower()
    with pytest.raises(NpucError, match=rf"Cast x1: narrow \(cast to {name} not supported\)"):
        import_onnx(model)


def test_models_before_opset_7_are_upgraded(ox):
    nodes = [
        ox.node("Add", ["x", "b"], ["a"], "legacy_add", broadcast=1),
        ox.node("PRelu", ["a", "slope"], ["p"], "prelu"),
        ox.node("BatchNormalization", ["p", "s", "b3", "m", "v"], ["y"], "bn", is_test=1),
    ]
    inits = [
        ox.init("b", np.arange(4, dtype=np.float32)),
        ox.init("slope", np.array([0.1, 0.2, 0.3], np.float32)),
        *(ox.init(n, np.ones(3, np.float32)) for n in ("s", "b3", "m", "v")),
    ]
    model = ox.make_model(nodes, [("x", [2, 3, 4])], ["y"], inits, opset=6)
    model.ir_version = 3
    model.graph.input.extend(ox.tensor(t.name, list(t.dims)) for t in model.graph.initializer)
    module = import_onnx(model)
    assert ox.op_names(module) == ["nn.add", "nn.prelu", "nn.batch_norm"]
    prelu = ox.nn_ops(module)[1]
    assert ox.shape(prelu.operands[1]) == (3, 1)


def test_upgrade_failure_is_a_diagnostic(ox):
    nodes = [ox.node("Add", ["x", "w"], ["y"], "legacy_add", broadcast=1, axis=1)]
    model = ox.make_model(nodes, [("x", [2, 3, 4])], ["y"], [ox.init("w", np.ones(3))], opset=6)
    model.ir_version = 3
    with pytest.raises(
        NpucError, match=r"opset 6 is older than the supported opsets 7-21, and onnx\.version_conv"
    ):
        import_onnx(model)


def test_non_tensor_and_zero_size_inputs(ox):
    seq = helper.make_tensor_sequence_value_info("xs", onnx.TensorProto.FLOAT, [2])
    model = ox.make_model([ox.node("Identity", ["xs"], ["y"])], [seq], ["y"])
    with pytest.raises(NpucError, match=r"graph input 'xs' is not a tensor \(its type is sequence"):
        import_onnx(model)
    model = ox.make_model([ox.node("Relu", ["x"], ["y"])], [("x", [2, 0, 4])], ["y"])
    with pytest.raises(NpucError, match=r"input 'x' has a zero-size dimension \(2x0x4\)"):
        import_onnx(model)


# ----------------------------------------------------------------------------- external data


def external_model(ox, tmp_path):
    w = np.arange(2 * 3 * 16, dtype=np.float32).reshape(2, 3, 4, 4)
    model = ox.make_model(
        [ox.node("Conv", ["x", "w"], ["y"], "conv")],
        [("x", [1, 3, 4, 4])],
        ["y"],
        [ox.init("w", w)],
    )
    path = tmp_path / "ext.onnx"
    onnx.save_model(model, path, save_as_external_data=True, location="ext.bin", size_threshold=0)
    return path, w


def test_external_data_from_path_and_from_bytes_with_location(ox, tmp_path):
    path, w = external_model(ox, tmp_path)
    assert (tmp_path / "ext.bin").exists()
    for module in (import_onnx(path), import_onnx(path.read_bytes(), location=str(path))):
        const = ox.nn_ops(module, constants=True)[0]
        np.testing.assert_array_equal(from_dense(const.value), w)
    proto = onnx.load(path, load_external_data=False)
    module = import_onnx(proto, location=str(path))
    np.testing.assert_array_equal(from_dense(ox.nn_ops(module, constants=True)[0].value), w)


def test_external_data_errors(ox, tmp_path):
    path, _ = external_model(ox, tmp_path)
    with pytest.raises(
        NpucError, match="external file, but the model was given without a location"
    ):
        import_onnx(path.read_bytes())
    (tmp_path / "ext.bin").unlink()
    with pytest.raises(
        NpucError, match=r"ext.onnx: error: cannot read the external data of tensor 'w'"
    ):
        import_onnx(path)


def test_output_types_are_f32(ox):
    module = import_onnx(conv_relu(ox))
    for t in ox.main_func(module).function_type.outputs:
        assert isinstance(t.element_type, Float32Type)


def test_imported_module_prints_and_parses_back(ox):
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.parser import Parser

    from npuc.dialects.nn import NN

    nodes = [
        ox.node("ConstantOfShape", ["ws"], ["w"], value=helper.make_tensor("v", F, [1], [0.5])),
        ox.node("Conv", ["x", "w"], ["c"], "conv"),
        ox.node("Resize", ["c", "", "scales"], ["r"], "resize", mode="linear"),
        ox.node("Split", ["r"], ["a", "b"], "split", axis=1, num_outputs=2),
        ox.node("ArgMax", ["a"], ["am"], "argmax", axis=1),
    ]
    inits = [
        ox.init("ws", i64(4, 3, 1, 1)),
        ox.init("scales", np.array([1, 1, 2, 1.5], np.float32)),
    ]
    outputs = [ox.tensor("am", None, I64), "b"]
    module = import_onnx(ox.make_model(nodes, [("x", [1, 3, 4, 4])], outputs, inits, opset=18))
    ctx = Context()
    for dialect in (Builtin, Func, NN):
        ctx.load_dialect(dialect)
    text = str(module)
    parsed = Parser(ctx, text).parse_module()
    parsed.verify()
    assert str(parsed) == text
