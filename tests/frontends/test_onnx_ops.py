"""Per-op conversion and the opset-dependent forms of ONNX ops (attribute vs input, semantics)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from xdsl.dialects.builtin import IntegerType

from npuc.diagnostics import NpucError
from npuc.frontends.onnx import import_onnx
from npuc.runtime.nn_interpreter import run_module
from npuc.tensors import from_dense

I64 = onnx.TensorProto.INT64


def i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def one_node(ox, op_type, inputs, shape, *, inits=(), opset=13, outputs=("y",), **attrs):
    nodes = [ox.node(op_type, inputs, outputs, "n", **attrs)]
    return import_onnx(
        ox.make_model(nodes, [("x", shape)], list(outputs), list(inits), opset=opset)
    )


def only_op(ox, module, name=None):
    ops = ox.nn_ops(module)
    assert len(ops) == 1, [op.name for op in ops]
    if name is not None:
        assert ops[0].name == name
    return ops[0]


def out_shapes(ox, module):
    return [tuple(t.get_shape()) for t in ox.main_func(module).function_type.outputs]


def constants(ox, module):
    return [
        from_dense(op.value) for op in ox.nn_ops(module, constants=True) if op.name == "nn.constant"
    ]


# ----------------------------------------------------------------------------- Split


@pytest.mark.parametrize(
    ("opset", "attrs", "inits", "shape", "expected"),
    [
        (11, {"split": [1, 2, 3]}, [], [2, 6], [(2, 1), (2, 2), (2, 3)]),
        (11, {}, [], [2, 6], [(2, 2)] * 3),
        (13, {}, [("split", i64(3, 2, 1))], [2, 6], [(2, 3), (2, 2), (2, 1)]),
        (18, {"num_outputs": 3}, [], [2, 7], [(2, 3), (2, 3), (2, 1)]),
    ],
)
def test_split_forms(ox, opset, attrs, inits, shape, expected):
    inputs = ["x"] + [name for name, _ in inits]
    module = one_node(
        ox,
        "Split",
        inputs,
        shape,
        inits=[ox.init(n, v) for n, v in inits],
        opset=opset,
        outputs=("a", "b", "c"),
        axis=-1,
        **attrs,
    )
    op = only_op(ox, module, "nn.split")
    assert op.properties["axis"].value.data == 1
    assert [ox.shape(r) for r in op.results] == expected


def test_split_sizes_must_match(ox):
    with pytest.raises(NpucError, match="invalid node: split sizes"):
        one_node(ox, "Split", ["x"], [2, 6], opset=11, outputs=("a", "b"), axis=1, split=[1, 2])


# ----------------------------------------------------------------------------- Squeeze / Unsqueeze


@pytest.mark.parametrize("opset", [11, 13, 21])
def test_squeeze_and_unsqueeze_axes(ox, opset):
    if opset < 13:
        sq = ox.node("Squeeze", ["x"], ["s"], "sq", axes=[-2])
        usq = ox.node("Unsqueeze", ["s"], ["y"], "usq", axes=[0, -1])
        inits = []
    else:
        sq = ox.node("Squeeze", ["x", "sa"], ["s"], "sq")
        usq = ox.node("Unsqueeze", ["s", "ua"], ["y"], "usq")
        inits = [ox.init("sa", i64(-2)), ox.init("ua", i64(0, -1))]
    module = import_onnx(ox.make_model([sq, usq], [("x", [2, 1, 3])], ["y"], inits, opset=opset))
    assert ox.op_names(module) == ["nn.reshape", "nn.reshape"]
    assert out_shapes(ox, module) == [(1, 2, 3, 1)]


def test_squeeze_without_axes_removes_all_ones(ox):
    module = one_node(ox, "Squeeze", ["x"], [1, 3, 1, 2])
    assert out_shapes(ox, module) == [(3, 2)]


# ----------------------------------------------------------------------------- reductions


@pytest.mark.parametrize(
    ("op_type", "opset", "as_input"),
    [
        ("ReduceMean", 13, False),
        ("ReduceMean", 18, True),
        ("ReduceSum", 11, False),
        ("ReduceSum", 13, True),
        ("ReduceMax", 20, True),
    ],
)
def test_reduce_axes_attribute_or_input(ox, op_type, opset, as_input):
    if as_input:
        module = one_node(
            ox,
            op_type,
            ["x", "axes"],
            [2, 3, 4],
            inits=[ox.init("axes", i64(-1, 0))],
            opset=opset,
            keepdims=0,
        )
    else:
        module = one_node(ox, op_type, ["x"], [2, 3, 4], opset=opset, axes=[-1, 0], keepdims=0)
    op = only_op(ox, module)
    assert (
        op.name
        == {
            "ReduceMean": "nn.reduce_mean",
            "ReduceSum": "nn.reduce_sum",
            "ReduceMax": "nn.reduce_max",
        }[op_type]
    )
    assert ox.prop_values(op, "axes") == [0, 2]
    assert op.properties["keepdims"].value.data == 0
    assert out_shapes(ox, module) == [(3,)]


def test_reduce_empty_axes(ox):
    module = one_node(ox, "ReduceSum", ["x"], [2, 3], opset=13)
    assert ox.prop_values(only_op(ox, module), "axes") == []
    assert out_shapes(ox, module) == [(1, 1)]
    module = one_node(ox, "ReduceSum", ["x"], [2, 3], opset=13, noop_with_empty_axes=1)
    assert ox.nn_ops(module) == []
    assert out_shapes(ox, module) == [(2, 3)]


# ----------------------------------------------------------------------------- Pad and Clip


def test_pad_attribute_form(ox):
    module = one_node(
        ox, "Pad", ["x"], [1, 2, 3], opset=7, pads=[0, 1, 2, 0, -1, 1], mode="edge", value=2.0
    )
    op = only_op(ox, module, "nn.pad")
    assert ox.prop_values(op, "pads") == [0, 1, 2, 0, -1, 1]
    assert op.properties["mode"].data == "edge"
    assert out_shapes(ox, module) == [(1, 2, 6)]


def test_pad_input_forms(ox):
    inits = [ox.init("pads", i64(0, 0, 1, 0, 0, 2)), ox.init("value", np.array(-1.5, np.float32))]
    op = only_op(
        ox, one_node(ox, "Pad", ["x", "pads", "value"], [1, 2, 3], inits=inits, opset=11), "nn.pad"
    )
    assert ox.prop_values(op, "pads") == [0, 0, 1, 0, 0, 2]
    assert op.properties["value"].value.data == -1.5
    inits = [ox.init("pads", i64(1, 2)), ox.init("axes", i64(-1))]
    op = only_op(
        ox,
        one_node(
            ox, "Pad", ["x", "pads", "", "axes"], [1, 2, 3], inits=inits, opset=18, mode="reflect"
        ),
    )
    assert ox.prop_values(op, "pads") == [0, 0, 1, 0, 0, 2]
    assert op.properties["mode"].data == "reflect"


def test_pad_wrap_and_zero_pads(ox):
    inits = [ox.init("pads", i64(0, 0, 0, 0))]
    assert (
        ox.nn_ops(one_node(ox, "Pad", ["x", "pads"], [2, 3], inits=inits, opset=19, mode="wrap"))
        == []
    )


@pytest.mark.parametrize(
    ("opset", "attrs", "inits", "expected"),
    [
        (7, {"min": 0.0, "max": 6.0}, [], (0.0, 6.0)),
        (7, {"max": 6.0}, [], (None, 6.0)),
        (11, {}, [("lo", -1.0), ("hi", 1.0)], (-1.0, 1.0)),
        (13, {}, [("lo", 0.0)], (0.0, None)),
    ],
)
def test_clip_forms(ox, opset, attrs, inits, expected):
    inputs = ["x"] + [n for n, _ in inits]
    module = one_node(
        ox,
        "Clip",
        inputs,
        [4],
        inits=[ox.init(n, np.array(v, np.float32)) for n, v in inits],
        opset=opset,
        **attrs,
    )
    op = only_op(ox, module, "nn.clip")
    got = tuple(
        None if op.properties.get(k) is None else op.properties[k].value.data
        for k in ("min", "max")
    )
    assert got == expected


def test_clip_with_runtime_bound_is_unsupported(ox):
    model = ox.make_model(
        [ox.node("Clip", ["x", "lo"], ["y"], "clip")], [("x", [4]), ("lo", [])], ["y"], opset=13
    )
    with pytest.raises(NpucError, match=r"Clip x1: clip \(non-constant min\)"):
        import_onnx(model)


# ----------------------------------------------------------------------------- softmax


@pytest.mark.parametrize(
    ("opset", "axis", "shape", "expected"),
    [
        (11, 1, [2, 3, 4], ["nn.reshape", "nn.softmax", "nn.reshape"]),
        (11, None, [2, 3, 1], ["nn.softmax"]),
        (11, -1, [2, 3, 4], ["nn.softmax"]),
        (13, 1, [2, 3, 4], ["nn.softmax"]),
        (13, None, [2, 3, 4], ["nn.softmax"]),
    ],
)
def test_softmax_versions(ox, opset, axis, shape, expected):
    attrs = {} if axis is None else {"axis": axis}
    module = one_node(ox, "Softmax", ["x"], shape, opset=opset, **attrs)
    assert ox.op_names(module) == expected
    softmax = next(op for op in ox.nn_ops(module) if op.name == "nn.softmax")
    if len(expected) == 3:
        assert ox.shape(softmax.operands[0]) == (2, 12)
        assert softmax.properties["axis"].value.data == 1
    elif opset >= 13:
        assert softmax.properties["axis"].value.data == (2 if axis is None else 1)
    else:
        assert softmax.properties["axis"].value.data == (1 if axis is None else 2)


# ----------------------------------------------------------------------------- BatchNorm, Dropout


@pytest.mark.parametrize("opset", [7, 9, 14, 15])
def test_batch_norm_versions(ox, opset):
    inits = [ox.init(n, np.ones(3, np.float32)) for n in ("s", "b", "m", "v")]
    outputs = ["y", "", ""] if opset in (7, 9) else ["y"]
    nodes = [ox.node("BatchNormalization", ["x", "s", "b", "m", "v"], outputs, "bn", epsilon=1e-3)]
    module = import_onnx(ox.make_model(nodes, [("x", [1, 3, 2, 2])], ["y"], inits, opset=opset))
    op = only_op(ox, module, "nn.batch_norm")
    assert op.properties["epsilon"].value.data == pytest.approx(1e-3)


def test_batch_norm_training_and_per_activation_are_unsupported(ox):
    inits = [ox.init(n, np.ones(3, np.float32)) for n in ("s", "b", "m", "v")]
    train = ox.node(
        "BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], "bn_train", training_mode=1
    )
    with pytest.raises(NpucError, match=r"bn_train \(training_mode=1 not supported\)"):
        import_onnx(ox.make_model([train], [("x", [1, 3, 2])], ["y"], inits, opset=15))
    spatial = ox.node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], "bn_act", spatial=0)
    with pytest.raises(NpucError, match=r"bn_act \(spatial=0 not supported\)"):
        import_onnx(ox.make_model([spatial], [("x", [1, 3, 2])], ["y"], inits, opset=7))


@pytest.mark.parametrize("opset", [7, 10, 12, 13])
def test_dropout_is_a_passthrough(ox, opset):
    nodes = [
        ox.node("Dropout", ["x"], ["d", "mask"], "drop"),
        ox.node("Relu", ["d"], ["y"], "relu"),
    ]
    module = import_onnx(ox.make_model(nodes, [("x", [3])], ["y"], opset=opset))
    assert ox.op_names(module) == ["nn.relu"]
    assert ox.nn_ops(module)[0].operands[0] is ox.main_func(module).args[0]


def test_dropout_training_mode_is_unsupported(ox):
    nodes = [ox.node("Dropout", ["x", "", "train"], ["y"], "drop")]
    model = ox.make_model(nodes, [("x", [3])], ["y"], [ox.init("train", np.array(True))], opset=12)
    with pytest.raises(NpucError, match=r"drop \(training_mode=1 not supported\)"):
        import_onnx(model)


# ----------------------------------------------------------------------------- Resize / Upsample


def resize_props(op):
    return (
        [round(s, 6) for s in ox_values(op, "scales")],
        op.properties["mode"].data,
        op.properties["coordinate_mode"].data,
        op.properties["nearest_mode"].data,
    )


def ox_values(op, key):
    return list(op.properties[key].get_values())


@pytest.mark.parametrize("opset", [7, 9])
def test_upsample_versions(ox, opset):
    if opset == 7:
        module = one_node(ox, "Upsample", ["x"], [1, 2, 3, 4], opset=7, scales=[1.0, 1.0, 2.0, 1.5])
    else:
        inits = [ox.init("s", np.array([1, 1, 2, 1.5], np.float32))]
        module = one_node(
            ox, "Upsample", ["x", "s"], [1, 2, 3, 4], inits=inits, opset=9, mode="linear"
        )
    op = only_op(ox, module, "nn.resize")
    mode = "nearest" if opset == 7 else "linear"
    assert resize_props(op) == ([1, 1, 2, 1.5], mode, "asymmetric", "floor")
    assert out_shapes(ox, module) == [(1, 2, 6, 6)]


def test_resize_10_downsampling_rounds_up(ox):
    inits = [ox.init("s", np.array([1, 1, 0.5, 0.6], np.float32))]
    module = one_node(ox, "Resize", ["x", "s"], [1, 2, 5, 5], inits=inits, opset=10)
    op = only_op(ox, module, "nn.resize")
    assert resize_props(op) == ([1, 1, 0.5, 0.6], "nearest", "asymmetric", "ceil")
    assert out_shapes(ox, module) == [(1, 2, 2, 3)]


def test_resize_sizes_become_scales(ox):
    inits = [
        ox.init("roi", np.zeros(0, np.float32)),
        ox.init("scales", np.zeros(0, np.float32)),
        ox.init("sizes", i64(1, 2, 7, 2)),
    ]
    module = one_node(
        ox,
        "Resize",
        ["x", "roi", "scales", "sizes"],
        [1, 2, 5, 4],
        inits=inits,
        opset=11,
        mode="cubic",
        coordinate_transformation_mode="align_corners",
        cubic_coeff_a=-0.5,
        exclude_outside=1,
    )
    op = only_op(ox, module, "nn.resize")
    assert resize_props(op) == ([1, 1, 1.4, 0.5], "cubic", "align_corners", "round_prefer_floor")
    assert op.properties["cubic_coeff_a"].value.data == -0.5
    assert op.properties["exclude_outside"].value.data != 0
    assert out_shapes(ox, module) == [(1, 2, 7, 2)]


def test_resize_18_axes_and_keep_aspect_ratio(ox):
    inits = [ox.init("sizes", i64(10, 10))]
    module = one_node(
        ox,
        "Resize",
        ["x", "", "", "sizes"],
        [1, 1, 4, 8],
        inits=inits,
        opset=18,
        axes=[2, 3],
        keep_aspect_ratio_policy="not_larger",
        mode="linear",
    )
    op = only_op(ox, module, "nn.resize")
    assert resize_props(op)[0] == [1, 1, 1.25, 1.25]
    assert out_shapes(ox, module) == [(1, 1, 5, 10)]


def test_resize_scales_floor_the_output_size(ox):
    inits = [ox.init("scales", np.array([1, 1, 0.7, 1.3], np.float32))]
    module = one_node(
        ox, "Resize", ["x", "", "scales"], [1, 1, 6, 6], inits=inits, opset=13, nearest_mode="floor"
    )
    assert out_shapes(ox, module) == [(1, 1, 4, 7)]
    assert resize_props(only_op(ox, module))[1:] == ("nearest", "half_pixel", "floor")


# ----------------------------------------------------------------------------- Conv family


@pytest.mark.parametrize(
    ("auto_pad", "size", "strides", "expected_pads", "expected_shape"),
    [
        ("SAME_UPPER", 8, [2, 2], [0, 0, 1, 1], (1, 2, 4, 4)),
        ("SAME_LOWER", 8, [2, 2], [1, 1, 0, 0], (1, 2, 4, 4)),
        ("SAME_UPPER", 7, [2, 2], [1, 1, 1, 1], (1, 2, 4, 4)),
        ("SAME_UPPER", 7, [1, 1], [1, 1, 1, 1], (1, 2, 7, 7)),
        ("VALID", 7, [1, 1], [0, 0, 0, 0], (1, 2, 5, 5)),
    ],
)
def test_conv_auto_pad(ox, auto_pad, size, strides, expected_pads, expected_shape):
    inits = [ox.init("w", np.ones((2, 3, 3, 3), np.float32))]
    module = one_node(
        ox, "Conv", ["x", "w"], [1, 3, size, size], inits=inits, auto_pad=auto_pad, strides=strides
    )
    op = only_op(ox, module, "nn.conv2d")
    assert ox.prop_values(op, "pads") == expected_pads
    assert out_shapes(ox, module) == [expected_shape]


def test_conv_1d_runs_as_2d_with_unit_height(ox):
    w = np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3)
    module = one_node(
        ox,
        "Conv",
        ["x", "w", "b"],
        [1, 3, 10],
        inits=[ox.init("w", w), ox.init("b", np.ones(2, np.float32))],
        pads=[1, 2],
        strides=[2],
        dilations=[2],
        group=1,
    )
    assert ox.op_names(module) == ["nn.reshape", "nn.conv2d", "nn.reshape"]
    conv = ox.nn_ops(module)[1]
    assert ox.prop_values(conv, "pads") == [0, 1, 0, 2]
    assert ox.prop_values(conv, "strides") == [1, 2]
    assert ox.prop_values(conv, "dilations") == [1, 2]
    np.testing.assert_array_equal(from_dense(conv.operands[1].owner.value), w.reshape(2, 3, 1, 3))
    assert out_shapes(ox, module) == [(1, 2, 5)]


def test_conv_transpose_output_shape_resolves_pads(ox):
    inits = [ox.init("w", np.ones((3, 2, 3, 3), np.float32))]
    module = one_node(
        ox,
        "ConvTranspose",
        ["x", "w"],
        [1, 3, 5, 5],
        inits=inits,
        strides=[2, 2],
        output_shape=[10, 12],
        group=1,
    )
    op = only_op(ox, module, "nn.conv_transpose2d")
    assert ox.prop_values(op, "pads") == [1, 0, 0, 0]
    assert ox.prop_values(op, "output_padding") == [0, 1]
    assert out_shapes(ox, module) == [(1, 2, 10, 12)]
    module = one_node(
        ox,
        "ConvTranspose",
        ["x", "w"],
        [1, 3, 5, 5],
        inits=inits,
        strides=[2, 2],
        auto_pad="SAME_UPPER",
    )
    assert ox.prop_values(only_op(ox, module), "pads") == [0, 0, 1, 1]


def test_3d_pooling_is_unsupported(ox):
    with pytest.raises(NpucError, match=r"MaxPool x1: n \(3-D pooling not supported\)"):
        one_node(ox, "MaxPool", ["x"], [1, 1, 2, 2, 2], kernel_shape=[1, 1, 1])


def test_pooling_attributes(ox):
    module = one_node(
        ox,
        "MaxPool",
        ["x"],
        [1, 1, 7, 7],
        opset=12,
        kernel_shape=[3, 3],
        strides=[2, 2],
        dilations=[1, 2],
        ceil_mode=1,
        pads=[1, 0, 0, 1],
    )
    op = only_op(ox, module, "nn.max_pool2d")
    assert ox.prop_values(op, "kernel") == [3, 3]
    assert ox.prop_values(op, "dilations") == [1, 2]
    assert op.properties["ceil_mode"].value.data != 0
    module = one_node(
        ox,
        "AveragePool",
        ["x"],
        [1, 1, 6, 6],
        kernel_shape=[2, 2],
        auto_pad="SAME_LOWER",
        strides=[4, 4],
        count_include_pad=1,
    )
    op = only_op(ox, module, "nn.avg_pool2d")
    assert ox.prop_values(op, "pads") == [0, 0, 0, 0]
    assert op.properties["count_include_pad"].value.data != 0
    assert "dilations" not in op.properties
    module = one_node(
        ox, "AveragePool", ["x"], [1, 1, 6, 6], opset=19, kernel_shape=[2, 2], dilations=[2, 2]
    )
    assert ox.prop_values(only_op(ox, module, "nn.avg_pool2d"), "dilations") == [2, 2]


# ----------------------------------------------------------------------------- Gemm / MatMul


def test_gemm_with_constant_b_is_fully_connected(ox):
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    c = np.array([1, 2, 3, 4], np.float32)
    module = one_node(
        ox,
        "Gemm",
        ["x", "b", "c"],
        [2, 3],
        inits=[ox.init("b", b), ox.init("c", c)],
        alpha=0.5,
        beta=2.0,
    )
    op = only_op(ox, module, "nn.fully_connected")
    weight, bias = (from_dense(v.owner.value) for v in op.operands[1:])
    np.testing.assert_array_equal(weight, 0.5 * b.T)
    np.testing.assert_array_equal(bias, 2 * c)
    assert out_shapes(ox, module) == [(2, 4)]


def test_gemm_trans_b_keeps_the_initializer(ox):
    b = np.ones((5, 3), np.float32)
    module = one_node(ox, "Gemm", ["x", "b"], [2, 3], inits=[ox.init("b", b)], transB=1)
    op = only_op(ox, module, "nn.fully_connected")
    assert ox.layer(op.operands[1].owner) == "b"
    assert len(op.operands) == 2


def test_gemm_with_full_c_adds_after(ox):
    inits = [ox.init("b", np.ones((3, 4), np.float32)), ox.init("c", np.ones((2, 4), np.float32))]
    module = one_node(ox, "Gemm", ["x", "b", "c"], [3, 2], inits=inits, transA=1)
    assert ox.op_names(module) == ["nn.transpose", "nn.fully_connected", "nn.add"]


def test_matmul(ox):
    module = one_node(
        ox, "MatMul", ["x", "w"], [2, 5, 3], inits=[ox.init("w", np.ones((3, 4), np.float32))]
    )
    assert only_op(ox, module, "nn.matmul") and out_shapes(ox, module) == [(2, 5, 4)]


# ----------------------------------------------------------------------------- data movement


def test_slice_negative_steps_are_normalised(ox):
    inits = [
        ox.init("st", i64(-1, 100, 1)),
        ox.init("en", i64(-100, 0, -1)),
        ox.init("ax", i64(0, 1, 2)),
        ox.init("sp", i64(-1, -2, 2)),
    ]
    module = one_node(ox, "Slice", ["x", "st", "en", "ax", "sp"], [4, 5, 6], inits=inits)
    op = only_op(ox, module, "nn.slice")
    assert ox.prop_values(op, "starts") == [3, 4, 1]
    assert ox.prop_values(op, "ends") == [-1, 0, 5]
    assert ox.prop_values(op, "steps") == [-1, -2, 2]
    assert out_shapes(ox, module) == [(4, 2, 2)]


def test_slice_attribute_form(ox):
    module = one_node(ox, "Slice", ["x"], [4, 5], opset=9, starts=[1], ends=[-1], axes=[1])
    op = only_op(ox, module, "nn.slice")
    assert (ox.prop_values(op, "starts"), ox.prop_values(op, "ends")) == ([0, 1], [4, 4])


def test_gather_constant_indices(ox):
    module = one_node(
        ox,
        "Gather",
        ["x", "idx"],
        [3, 4],
        inits=[ox.init("idx", np.array([[2, -1]], np.int32))],
        axis=1,
    )
    op = only_op(ox, module, "nn.gather")
    indices = from_dense(op.operands[1].owner.value)
    assert indices.dtype == np.int64 and indices.tolist() == [[2, -1]]
    assert out_shapes(ox, module) == [(3, 1, 2)]


def test_gather_with_runtime_indices(ox):
    model = ox.make_model(
        [ox.node("Gather", ["x", "i"], ["y"], "g")], [("x", [3]), ox.tensor("i", [2], I64)], ["y"]
    )
    module = import_onnx(model)
    assert ox.op_names(module) == ["nn.gather"]
    x = np.array([1.0, 2.0, 3.0], np.float32)
    got = run_module(module, {"x": x, "i": np.array([2, -3], np.int64)})["y"]
    np.testing.assert_array_equal(got, [3.0, 1.0])
    model = ox.make_model(
        [ox.node("ArgMax", ["x"], ["i"], "am"), ox.node("Gather", ["x", "i"], ["y"], "g")],
        [("x", [3])],
        ["y"],
    )
    assert ox.op_names(import_onnx(model)) == ["nn.argmax", "nn.gather"]


@pytest.mark.parametrize(
    ("target", "allowzero", "expected"),
    [
        ([0, -1], 0, (2, 12)),
        ([-1, 4], 0, (6, 4)),
        ([0, 0, 2, 2], 0, (2, 3, 2, 2)),
        ([24, 1], 1, (24, 1)),
    ],
)
def test_reshape_special_values(ox, target, allowzero, expected):
    module = one_node(
        ox,
        "Reshape",
        ["x", "shape"],
        [2, 3, 4],
        inits=[ox.init("shape", i64(*target))],
        opset=14,
        allowzero=allowzero,
    )
    assert out_shapes(ox, module) == [expected]


def test_reshape_with_bad_shape_is_invalid(ox):
    with pytest.raises(NpucError, match="cannot reshape"):
        one_node(ox, "Reshape", ["x", "shape"], [2, 3], inits=[ox.init("shape", i64(4, -1))])


@pytest.mark.parametrize(
    ("axis", "expected"), [(0, (1, 24)), (1, (2, 12)), (-1, (6, 4)), (3, (24, 1))]
)
def test_flatten_axis(ox, axis, expected):
    assert out_shapes(ox, one_node(ox, "Flatten", ["x"], [2, 3, 4], axis=axis)) == [expected]


def test_transpose_default_perm_reverses(ox):
    op = only_op(ox, one_node(ox, "Transpose", ["x"], [2, 3, 4]), "nn.transpose")
    assert ox.prop_values(op, "perm") == [2, 1, 0]


def test_expand_and_tile(ox):
    module = one_node(ox, "Expand", ["x", "s"], [3, 1], inits=[ox.init("s", i64(2, 1, 4))])
    op = only_op(ox, module, "nn.broadcast")
    assert out_shapes(ox, module) == [(2, 3, 4)] and op.name == "nn.broadcast"
    module = one_node(ox, "Tile", ["x", "r"], [2, 3], inits=[ox.init("r", i64(2, 1))])
    assert ox.op_names(module) == ["nn.reshape", "nn.broadcast", "nn.reshape"]
    assert out_shapes(ox, module) == [(4, 3)]


def test_concat_of_constants_and_runtime(ox):
    module = one_node(
        ox,
        "Concat",
        ["x", "c", "empty"],
        [2, 1],
        inits=[
            ox.init("c", np.ones((2, 3), np.float32)),
            ox.init("empty", np.zeros((2, 0), np.float32)),
        ],
        axis=-1,
    )
    op = only_op(ox, module, "nn.concat")
    assert len(op.operands) == 2 and op.properties["axis"].value.data == 1


def test_depth_to_space_modes(ox):
    op = only_op(
        ox, one_node(ox, "DepthToSpace", ["x"], [1, 8, 2, 3], opset=11, blocksize=2, mode="CRD")
    )
    assert op.properties["mode"].data == "CRD" and ox.shape(op.results[0]) == (1, 2, 4, 6)
    op = only_op(ox, one_node(ox, "SpaceToDepth", ["x"], [1, 2, 4, 6], blocksize=2))
    assert ox.shape(op.results[0]) == (1, 8, 2, 3)


def test_elementwise_and_activation_ops(ox):
    cases = {
        "LeakyRelu": ("nn.leaky_relu", {"alpha": 0.3}),
        "Elu": ("nn.elu", {}),
        "HardSigmoid": ("nn.hard_sigmoid", {"beta": 0.1}),
        "HardSwish": ("nn.hard_swish", {}),
        "Gelu": ("nn.gelu", {"approximate": "tanh"}),
        "Erf": ("nn.erf", {}),
        "Softplus": ("nn.softplus", {}),
        "Reciprocal": ("nn.reciprocal", {}),
    }
    for op_type, (expected, attrs) in cases.items():
        op = only_op(ox, one_node(ox, op_type, ["x"], [2, 2], opset=20, **attrs), expected)
        for key, value in attrs.items():
            got = op.properties["approximate" if key == "approximate" else key]
            assert (got.data if key == "approximate" else got.value.data) == pytest.approx(value)


def test_variadic_ops_become_chains(ox):
    nodes = [ox.node("Sum", ["a", "b", "c"], ["s"], "sum"), ox.node("Max", ["s"], ["y"], "max1")]
    model = ox.make_model(nodes, [("a", [2, 1]), ("b", [3]), ("c", [1])], ["y"], opset=8)
    module = import_onnx(model)
    assert ox.op_names(module) == ["nn.add", "nn.add"]
    assert out_shapes(ox, module) == [(2, 3)]


def test_float_constant_arithmetic_is_folded(ox):
    nodes = [
        ox.node("Mul", ["w", "scale"], ["ws"], "scale_w"),
        ox.node("Sqrt", ["ws"], ["wr"], "sqrt_w"),
        ox.node("Add", ["x", "wr"], ["y"], "add"),
    ]
    inits = [
        ox.init("w", np.array([1, 4, 9], np.float32)),
        ox.init("scale", np.array(4, np.float32)),
    ]
    module = import_onnx(ox.make_model(nodes, [("x", [3])], ["y"], inits))
    assert ox.op_names(module) == ["nn.add"]
    np.testing.assert_array_equal(constants(ox, module)[0], [2, 4, 6])


def test_cast_of_float_at_run_time(ox):
    assert ox.nn_ops(one_node(ox, "Cast", ["x"], [2], to=onnx.TensorProto.FLOAT)) == []
    cast = only_op(ox, one_node(ox, "Cast", ["x"], [2], to=onnx.TensorProto.INT32), "nn.cast")
    assert cast.results[0].type.element_type == IntegerType(32)
    with pytest.raises(NpucError, match=r"cast to float16 at run time not supported"):
        one_node(ox, "Cast", ["x"], [2], to=onnx.TensorProto.FLOAT16)


@pytest.mark.parametrize("op_type", ["GlobalMaxPool", "GlobalAveragePool"])
def test_1d_global_pools_run_as_2d(ox, op_type):
    module = one_node(ox, op_type, ["x"], [1, 3, 7])
    pool = "nn.global_max_pool" if op_type == "GlobalMaxPool" else "nn.global_avg_pool"
    assert ox.op_names(module) == ["nn.reshape", pool, "nn.reshape"]
    assert ox.shape(ox.nn_ops(module)[1].results[0]) == (1, 3, 1, 1)
    x = np.arange(21, dtype=np.float32).reshape(1, 3, 7)
    got = run_module(module, {"x": x})["y"]
    want = x.max(axis=2, keepdims=True) if op_type == "GlobalMaxPool" else x.mean(2, keepdims=True)
    np.testing.assert_allclose(got, want)
