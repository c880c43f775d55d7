"""Differential tests: ONNX models imported into `nn` and run by the reference interpreter
agree with onnxruntime on seeded random inputs."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import pytest

from npuc.frontends.onnx import import_onnx
from npuc.runtime.nn_interpreter import run_module

RNG = np.random.default_rng(1234)
F = onnx.TensorProto.FLOAT
I64 = onnx.TensorProto.INT64


def rand(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


# ----------------------------------------------------------------------------- models


def small_cnn(ox) -> onnx.ModelProto:
    nodes = [
        ox.node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1], strides=[2, 2]),
        ox.node(
            "BatchNormalization", ["c1", "g", "beta", "mean", "var"], ["bn"], "bn1", epsilon=1e-3
        ),
        ox.node("Relu", ["bn"], ["r1"], "relu1"),
        ox.node(
            "MaxPool", ["r1"], ["p1"], "pool1", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1
        ),
        ox.node(
            "Conv",
            ["p1", "w2"],
            ["c2"],
            "dwconv",
            group=8,
            auto_pad="SAME_UPPER",
            kernel_shape=[3, 3],
        ),
        ox.node(
            "AveragePool",
            ["c2"],
            ["p2"],
            "avg",
            kernel_shape=[2, 2],
            pads=[0, 0, 1, 1],
            count_include_pad=1,
        ),
        ox.node("GlobalAveragePool", ["p2"], ["gap"], "gap"),
        ox.node("Flatten", ["gap"], ["flat"], "flatten"),
        ox.node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], "fc", transB=1, alpha=0.5, beta=2.0),
        ox.node("Softmax", ["logits"], ["prob"], "softmax", axis=1),
    ]
    var = np.abs(rand(8)) + 0.5
    inits = [
        ox.init("w1", rand(8, 3, 3, 3)),
        ox.init("b1", rand(8)),
        ox.init("g", rand(8)),
        ox.init("beta", rand(8)),
        ox.init("mean", rand(8)),
        ox.init("var", var),
        ox.init("w2", rand(8, 1, 3, 3)),
        ox.init("fc_w", rand(5, 8)),
        ox.init("fc_b", rand(5)),
    ]
    return ox.make_model(nodes, [("x", [1, 3, 17, 17])], ["prob"], inits, opset=11)


def shape_subgraph(ox) -> onnx.ModelProto:
    nodes = [
        ox.node("Transpose", ["x"], ["t"], "tr", perm=[0, 2, 1, 3]),
        ox.node("Shape", ["t"], ["s"], "shape"),
        ox.node("Gather", ["s", "zero"], ["n"], "g0", axis=0),
        ox.node("Gather", ["s", "one"], ["h"], "g1", axis=0),
        ox.node("Mul", ["h", "two"], ["h2"], "mul"),
        ox.node("Unsqueeze", ["n", "ax0"], ["n1"], "u0"),
        ox.node("Unsqueeze", ["h2", "ax0"], ["h1"], "u1"),
        ox.node("Concat", ["n1", "h1", "minus1"], ["shp"], "cat", axis=0),
        ox.node("Reshape", ["t", "shp"], ["y"], "reshape"),
        ox.node("Sigmoid", ["y"], ["z"], "sig"),
    ]
    inits = [
        ox.init("zero", i64(0).reshape(())),
        ox.init("one", i64(1).reshape(())),
        ox.init("two", i64(2).reshape(())),
        ox.init("ax0", i64(0)),
        ox.init("minus1", i64(-1)),
    ]
    return ox.make_model(nodes, [("x", [2, 3, 4, 6])], ["z"], inits, opset=13)


def split_concat(opset: int) -> Callable[..., onnx.ModelProto]:
    def build(ox) -> onnx.ModelProto:
        inits = []
        if opset < 13:
            split = ox.node("Split", ["x"], ["a", "b", "c"], "split", axis=1, split=[1, 2, 3])
        elif opset < 18:
            split = ox.node("Split", ["x", "sizes"], ["a", "b", "c"], "split", axis=1)
            inits.append(ox.init("sizes", i64(1, 2, 3)))
        else:
            split = ox.node("Split", ["x"], ["a", "b", "c"], "split", axis=1, num_outputs=3)
        nodes = [
            split,
            ox.node("Relu", ["a"], ["ra"], "relu"),
            ox.node("Neg", ["c"], ["nc"], "neg"),
            ox.node("Concat", ["nc", "ra", "b"], ["y"], "cat", axis=1),
        ]
        return ox.make_model(nodes, [("x", [2, 6 if opset < 18 else 7, 3])], ["y"], inits, opset)

    return build


def transformer_block(ox) -> onnx.ModelProto:
    d, heads, seq = 8, 2, 5
    nodes = [
        ox.node("LayerNormalization", ["x", "ln_g", "ln_b"], ["ln"], "ln1", axis=-1, epsilon=1e-5),
        ox.node("MatMul", ["ln", "wq"], ["q"], "q"),
        ox.node("MatMul", ["ln", "wk"], ["k"], "k"),
        ox.node("MatMul", ["ln", "wv"], ["v"], "v"),
        ox.node("Reshape", ["q", "heads_shape"], ["q4"], "q_reshape"),
        ox.node("Reshape", ["k", "heads_shape"], ["k4"], "k_reshape"),
        ox.node("Reshape", ["v", "heads_shape"], ["v4"], "v_reshape"),
        ox.node("Transpose", ["q4"], ["qt"], "q_t", perm=[0, 2, 1, 3]),
        ox.node("Transpose", ["k4"], ["kt"], "k_t", perm=[0, 2, 3, 1]),
        ox.node("Transpose", ["v4"], ["vt"], "v_t", perm=[0, 2, 1, 3]),
        ox.node("MatMul", ["qt", "kt"], ["scores"], "scores"),
        ox.node("Div", ["scores", "sqrt_d"], ["scaled"], "scale"),
        ox.node("Softmax", ["scaled"], ["attn"], "softmax", axis=-1),
        ox.node("MatMul", ["attn", "vt"], ["ctx"], "context"),
        ox.node("Transpose", ["ctx"], ["ctx_t"], "ctx_t", perm=[0, 2, 1, 3]),
        ox.node("Reshape", ["ctx_t", "merge_shape"], ["merged"], "merge"),
        ox.node("Add", ["merged", "x"], ["res"], "residual"),
        ox.node("MatMul", ["res", "w1"], ["h"], "ffn1"),
        ox.node("Add", ["h", "b1"], ["hb"], "ffn1_bias"),
        ox.node("Gelu", ["hb"], ["act"], "gelu", approximate="tanh"),
        ox.node("MatMul", ["act", "w2"], ["out"], "ffn2"),
        ox.node("Erf", ["out"], ["y"], "erf"),
    ]
    inits = [
        ox.init("ln_g", rand(d)),
        ox.init("ln_b", rand(d)),
        ox.init("wq", rand(d, d, scale=0.3)),
        ox.init("wk", rand(d, d, scale=0.3)),
        ox.init("wv", rand(d, d, scale=0.3)),
        ox.init("heads_shape", i64(0, 0, heads, d // heads)),
        ox.init("merge_shape", i64(0, 0, -1)),
        ox.init("sqrt_d", np.array(np.sqrt(d // heads), np.float32)),
        ox.init("w1", rand(d, 16, scale=0.3)),
        ox.init("b1", rand(16)),
        ox.init("w2", rand(16, d, scale=0.3)),
    ]
    return ox.make_model(nodes, [("x", [1, seq, d])], ["y"], inits, opset=20)


def upsample(opset: int, mode: str) -> Callable[..., onnx.ModelProto]:
    def build(ox) -> onnx.ModelProto:
        scales = np.array([1, 1, 2, 3], np.float32)
        if opset == 7:
            nodes = [ox.node("Upsample", ["x"], ["y"], "up", mode=mode, scales=scales.tolist())]
            inits = []
        else:
            nodes = [ox.node("Upsample", ["x", "scales"], ["y"], "up", mode=mode)]
            inits = [ox.init("scales", scales)]
        return ox.make_model(nodes, [("x", [1, 2, 3, 4])], ["y"], inits, opset=opset)

    return build


def resize(
    opset: int,
    mode: str,
    coordinate_mode: str = "half_pixel",
    *,
    scales: list[float] | None = None,
    sizes: list[int] | None = None,
    **attrs,
) -> Callable[..., onnx.ModelProto]:
    def build(ox) -> onnx.ModelProto:
        inits = []
        if opset == 10:
            inputs = ["x", "scales"]
            inits.append(ox.init("scales", np.array(scales, np.float32)))
        else:
            legacy = opset == 11
            inputs = [
                "x",
                "roi" if legacy else "",
                "scales" if scales or legacy else "",
                "sizes" if sizes else "",
            ]
            if legacy:
                inits.append(ox.init("roi", np.zeros(0, np.float32)))
                if not scales:
                    inits.append(ox.init("scales", np.zeros(0, np.float32)))
            if scales:
                inits.append(ox.init("scales", np.array(scales, np.float32)))
            if sizes:
                inits.append(ox.init("sizes", np.array(sizes, np.int64)))
            while inputs[-1] == "":
                inputs.pop()
            attrs["coordinate_transformation_mode"] = coordinate_mode
        nodes = [ox.node("Resize", inputs, ["y"], "resize", mode=mode, **attrs)]
        return ox.make_model(nodes, [("x", [1, 2, 5, 7])], ["y"], inits, opset=opset)

    return build


def pad(opset: int, mode: str) -> Callable[..., onnx.ModelProto]:
    def build(ox) -> onnx.ModelProto:
        pads = [0, 1, 2, 0, 0, 1, 1, 1]
        if opset < 11:
            nodes = [ox.node("Pad", ["x"], ["y"], "pad", mode=mode, pads=pads, value=1.5)]
            return ox.make_model(nodes, [("x", [1, 2, 4, 5])], ["y"], [], opset=opset)
        inits = [ox.init("pads", i64(*pads)), ox.init("value", np.array(1.5, np.float32))]
        inputs = ["x", "pads", "value" if mode == "constant" else ""]
        if opset >= 18:
            inits[0] = ox.init("pads", i64(1, 2, 2, 1))
            inits.append(ox.init("axes", i64(-3, 2)))
            inputs = ["x", "pads", inputs[2], "axes"]
        nodes = [ox.node("Pad", inputs, ["y"], "pad", mode=mode)]
        return ox.make_model(nodes, [("x", [1, 3, 4, 5])], ["y"], inits, opset=opset)

    return build


def activations(opset: int) -> Callable[..., onnx.ModelProto]:
    def build(ox) -> onnx.ModelProto:
        inits = [ox.init("slope", rand(3, 1, 1))]
        if opset < 11:
            clip = ox.node("Clip", ["x"], ["c"], "clip", min=-0.5, max=0.7)
        else:
            clip = ox.node("Clip", ["x", "lo", "hi"], ["c"], "clip")
            inits += [
                ox.init("lo", np.array(-0.5, np.float32)),
                ox.init("hi", np.array(0.7, np.float32)),
            ]
        nodes = [
            clip,
            ox.node("LeakyRelu", ["x"], ["a"], "leaky", alpha=0.2),
            ox.node("PRelu", ["x", "slope"], ["b"], "prelu"),
            ox.node("HardSigmoid", ["x"], ["d"], "hsig", alpha=0.3, beta=0.4),
            ox.node("Elu", ["x"], ["e"], "elu", alpha=0.8),
            ox.node("Selu", ["x"], ["f"], "selu"),
            ox.node("Softsign", ["x"], ["g"], "softsign"),
            ox.node("Softplus", ["x"], ["h"], "softplus"),
            ox.node("Tanh", ["x"], ["i"], "tanh"),
            ox.node("Sum", ["a", "b", "c"], ["s1"], "sum"),
            ox.node("Max", ["d", "e", "f"], ["s2"], "max"),
            ox.node("Min", ["g", "h"], ["s3"], "min"),
            ox.node("Mean", ["s1", "s2", "s3", "i"], ["y"], "mean"),
        ]
        if opset >= 14:
            nodes += [
                ox.node("HardSwish", ["y"], ["hs"], "hswish"),
                ox.node("Exp", ["hs"], ["ex"], "exp"),
                ox.node("Abs", ["x"], ["ab"], "abs"),
                ox.node("Add", ["ab", "one"], ["ab1"], "add1"),
                ox.node("Log", ["ab1"], ["lg"], "log"),
                ox.node("Sqrt", ["ab1"], ["sq"], "sqrt"),
                ox.node("Reciprocal", ["sq"], ["rc"], "recip"),
                ox.node("Pow", ["rc", "two"], ["pw"], "pow"),
                ox.node("Floor", ["lg"], ["fl"], "floor"),
                ox.node("Ceil", ["ex"], ["ce"], "ceil"),
                ox.node("Sub", ["pw", "fl"], ["d1"], "sub"),
                ox.node("Mul", ["d1", "ce"], ["y2"], "mul"),
            ]
            inits += [
                ox.init("one", np.array(1, np.float32)),
                ox.init("two", np.array(2, np.float32)),
            ]
            out = "y2"
        else:
            out = "y"
        return ox.make_model(nodes, [("x", [2, 3, 4, 4])], [out], inits, opset=opset)

    return build


def slices(opset: int) -> Callable[..., onnx.ModelProto]:
    def build(ox) -> onnx.ModelProto:
        if opset < 10:
            nodes = [
                ox.node("Slice", ["x"], ["a"], "s1", starts=[1, -3], ends=[1000, -1], axes=[1, 3]),
                ox.node("Relu", ["a"], ["y"], "relu"),
            ]
            return ox.make_model(nodes, [("x", [2, 4, 5, 6])], ["y"], [], opset=opset)
        nodes = [
            ox.node("Slice", ["x", "st", "en", "ax", "sp"], ["a"], "s1"),
            ox.node("Slice", ["a", "st2", "en2"], ["y"], "s2"),
        ]
        inits = [
            ox.init("st", i64(-1, 0, 10)),
            ox.init("en", i64(-1000, 4, 0)),
            ox.init("ax", i64(3, 1, 2)),
            ox.init("sp", i64(-2, 3, -1)),
            ox.init("st2", i64(0, 1)),
            ox.init("en2", i64(1, 100)),
        ]
        return ox.make_model(nodes, [("x", [2, 5, 5, 6])], ["y"], inits, opset=opset)

    return build


def conv_variants(ox) -> onnx.ModelProto:
    nodes = [
        ox.node("Conv", ["x", "w1d"], ["c1"], "conv1d", pads=[2, 1], dilations=[2], strides=[2]),
        ox.node("MaxPool", ["c1"], ["p1"], "pool1d", kernel_shape=[2], strides=[2], ceil_mode=1),
        ox.node("Unsqueeze", ["p1", "ax"], ["p4"], "unsq"),
        ox.node(
            "ConvTranspose", ["p4", "wt"], ["t1"], "deconv", strides=[2, 2], output_shape=[3, 9]
        ),
        ox.node(
            "ConvTranspose",
            ["t1", "wt2", "bt2"],
            ["t2"],
            "deconv_same",
            strides=[2, 2],
            auto_pad="SAME_LOWER",
        ),
        ox.node(
            "ConvTranspose",
            ["t2", "wt3"],
            ["t3"],
            "deconv_grouped",
            group=2,
            pads=[1, 0, 0, 1],
            output_padding=[1, 1],
            strides=[2, 2],
            dilations=[1, 2],
        ),
        ox.node(
            "Conv",
            ["t3", "w2"],
            ["c2"],
            "conv_lower",
            auto_pad="SAME_LOWER",
            strides=[2, 3],
            kernel_shape=[2, 4],
        ),
        ox.node(
            "MaxPool",
            ["c2"],
            ["y"],
            "pool_dil",
            kernel_shape=[2, 2],
            dilations=[2, 1],
            pads=[1, 0, 1, 1],
            ceil_mode=1,
        ),
    ]
    inits = [
        ox.init("w1d", rand(4, 3, 3)),
        ox.init("ax", i64(2)),
        ox.init("wt", rand(4, 2, 3, 3)),
        ox.init("wt2", rand(2, 4, 2, 2)),
        ox.init("bt2", rand(4)),
        ox.init("wt3", rand(4, 3, 3, 3)),
        ox.init("w2", rand(5, 6, 2, 4)),
    ]
    return ox.make_model(nodes, [("x", [1, 3, 20])], ["y"], inits, opset=13)


def softmax_legacy(op_type: str, opset: int, axis: int) -> Callable[..., onnx.ModelProto]:
    def build(ox) -> onnx.ModelProto:
        nodes = [ox.node(op_type, ["x"], ["y"], "sm", axis=axis)]
        return ox.make_model(nodes, [("x", [2, 3, 4, 5])], ["y"], [], opset=opset)

    return build


def reductions(ox) -> onnx.ModelProto:
    nodes = [
        ox.node("ReduceMean", ["x"], ["a"], "mean", axes=[1, -1]),
        ox.node("ReduceSum", ["x", "ax"], ["b"], "sum", keepdims=0),
        ox.node("ReduceMax", ["x"], ["c"], "max", axes=[2]),
        ox.node("ReduceMin", ["x"], ["d"], "min", axes=[0], keepdims=0),
        ox.node("ReduceProd", ["x"], ["e"], "prod", axes=[3]),
        ox.node("ReduceL2", ["x"], ["f"], "l2", axes=[1]),
        ox.node("ReduceL1", ["x"], ["g"], "l1", axes=[1]),
        ox.node("ReduceSumSquare", ["x"], ["h"], "ss", axes=[1]),
        ox.node("ReduceLogSumExp", ["x"], ["i"], "lse", axes=[1]),
        ox.node("ArgMax", ["x"], ["j"], "argmax", axis=1, keepdims=0),
        ox.node("ArgMin", ["x"], ["k"], "argmin", axis=-1, select_last_index=1),
    ]
    model = ox.make_model(
        nodes,
        [("x", [2, 3, 4, 5])],
        [
            "a",
            "b",
            "c",
            "d",
            "e",
            "f",
            "g",
            "h",
            "i",
            ox.tensor("j", None, I64),
            ox.tensor("k", None, I64),
        ],
        [ox.init("ax", i64(1, 2))],
        opset=13,
    )
    return model


def reductions_18(ox) -> onnx.ModelProto:
    nodes = [
        ox.node("ReduceMean", ["x", "ax"], ["a"], "mean"),
        ox.node("ReduceMax", ["x", "ax"], ["b"], "max", keepdims=0),
        ox.node("ReduceSum", ["x"], ["c"], "sum_all"),
        ox.node("ReduceMin", ["x", "empty"], ["d"], "noop", noop_with_empty_axes=1),
    ]
    inits = [ox.init("ax", i64(-2)), ox.init("empty", np.zeros(0, np.int64))]
    return ox.make_model(nodes, [("x", [2, 3, 4])], ["a", "b", "c", "d"], inits, opset=18)


def gemm_runtime_b(ox) -> onnx.ModelProto:
    nodes = [
        ox.node("Gemm", ["a", "b", "c"], ["y"], "gemm", transA=1, transB=1, alpha=0.7, beta=-1.5),
        ox.node("Gemm", ["y", "w"], ["z"], "gemm_const", alpha=2.0),
        ox.node("Gemm", ["z", "w2", "c2"], ["u"], "gemm_full_c", transB=1, beta=0.5),
    ]
    inits = [
        ox.init("c", rand(3, 5)),
        ox.init("w", rand(5, 4)),
        ox.init("w2", rand(6, 4)),
        ox.init("c2", rand(3, 1)),
    ]
    return ox.make_model(nodes, [("a", [4, 3]), ("b", [5, 4])], ["u"], inits, opset=13)


def movement(ox) -> onnx.ModelProto:
    nodes = [
        ox.node("DepthToSpace", ["x"], ["d2s"], "d2s_dcr", blocksize=2),
        ox.node("DepthToSpace", ["x"], ["crd"], "d2s_crd", blocksize=2, mode="CRD"),
        ox.node("Add", ["d2s", "crd"], ["sum"], "add"),
        ox.node("SpaceToDepth", ["sum"], ["s2d"], "s2d", blocksize=2),
        ox.node("Gather", ["s2d", "idx"], ["gth"], "gather", axis=1),
        ox.node("Expand", ["gth", "eshape"], ["exp"], "expand"),
        ox.node("Tile", ["exp", "reps"], ["tile"], "tile"),
        ox.node("Squeeze", ["tile", "sq_axes"], ["sq"], "squeeze"),
        ox.node("Unsqueeze", ["sq", "usq_axes"], ["usq"], "unsqueeze"),
        ox.node("Transpose", ["usq"], ["y"], "transpose"),
    ]
    inits = [
        ox.init("idx", i64(3, 0, -1, 3)),
        ox.init("eshape", i64(2, 1, 1, 1, 1)),
        ox.init("reps", i64(1, 1, 2, 1, 3)),
        ox.init("sq_axes", i64(1)),
        ox.init("usq_axes", i64(1, -1)),
    ]
    return ox.make_model(nodes, [("x", [1, 8, 3, 2])], ["y"], inits, opset=13)


def norms(ox) -> onnx.ModelProto:
    nodes = [
        ox.node("InstanceNormalization", ["x", "s", "b"], ["i"], "inorm", epsilon=1e-4),
        ox.node("LRN", ["i"], ["l"], "lrn", size=3, alpha=1e-3, beta=0.6, bias=2.0),
        ox.node("BatchNormalization", ["l", "s", "b", "m", "v"], ["bn"], "bn"),
        ox.node("Dropout", ["bn"], ["dr"], "dropout", ratio=0.5),
        ox.node("Identity", ["dr"], ["y"], "identity"),
    ]
    inits = [
        ox.init("s", rand(4)),
        ox.init("b", rand(4)),
        ox.init("m", rand(4)),
        ox.init("v", np.abs(rand(4)) + 0.1),
    ]
    return ox.make_model(nodes, [("x", [2, 4, 3, 3])], ["y"], inits, opset=7)


def dropout_12(ox) -> onnx.ModelProto:
    nodes = [
        ox.node("Dropout", ["x", "ratio", "train"], ["d"], "dropout"),
        ox.node("Cast", ["d"], ["c"], "cast", to=onnx.TensorProto.FLOAT),
        ox.node("Sigmoid", ["c"], ["y"], "sig"),
    ]
    inits = [ox.init("ratio", np.array(0.3, np.float32)), ox.init("train", np.array(False))]
    return ox.make_model(nodes, [("x", [3, 4])], ["y"], inits, opset=12)


def old_style_initializer_inputs(ox) -> onnx.ModelProto:
    nodes = [
        ox.node("Conv", ["x", "w"], ["c"], "conv"),
        ox.node("Mul", ["c", "scale"], ["m"], "mul"),
        ox.node(
            "ConstantOfShape",
            ["shape"],
            ["bias"],
            "bias",
            value=onnx.helper.make_tensor("v", F, [1], [0.25]),
        ),
        ox.node("Add", ["m", "bias"], ["y"], "add"),
    ]
    inits = [
        ox.init("w", rand(2, 3, 1, 1)),
        ox.init("scale", rand(1, 2, 1, 1)),
        ox.init("shape", i64(1, 2, 1, 1)),
    ]
    model = ox.make_model(nodes, [("x", [1, 3, 4, 4])], ["y"], inits, opset=9)
    model.graph.input.extend(
        [
            ox.tensor("w", [2, 3, 1, 1]),
            ox.tensor("scale", [1, 2, 1, 1]),
            ox.tensor("shape", [4], I64),
        ]
    )
    return model


def layer_norm_statistics(ox) -> onnx.ModelProto:
    nodes = [
        ox.node(
            "LayerNormalization", ["x", "g"], ["y", "mean", "inv_std"], "ln", axis=1, epsilon=1e-3
        ),
        ox.node("Clip", ["y", "hi", "lo"], ["clipped"], "clip_inverted"),
    ]
    inits = [
        ox.init("g", rand(3, 4)),
        ox.init("hi", np.array(0.5, np.float32)),
        ox.init("lo", np.array(-0.5, np.float32)),
    ]
    return ox.make_model(nodes, [("x", [2, 3, 4])], ["clipped", "mean", "inv_std"], inits, 17)


def prelu_per_channel_opset6(ox) -> onnx.ModelProto:
    """Checked against onnxruntime on the opset-7 form (per-channel slope [C, 1, 1])."""
    nodes = [ox.node("PRelu", ["x", "slope"], ["y"], "prelu")]
    model = ox.make_model(nodes, [("x", [2, 3, 4, 4])], ["y"], [ox.init("slope", rand(3))], 6)
    model.ir_version = 3
    model.graph.input.append(ox.tensor("slope", [3]))
    return model


def odds_and_ends(ox) -> onnx.ModelProto:
    nodes = [
        ox.node("Gather", ["x", "scalar"], ["g"], "gather_scalar", axis=1),
        ox.node("Pad", ["g", "crop"], ["p"], "crop", mode="constant"),
        ox.node("Softmax", ["p"], ["s"], "softmax_all", axis=0),
        ox.node("Mish", ["s"], ["m"], "mish"),
        ox.node("Gelu", ["m"], ["gl"], "gelu"),
        ox.node("Expand", ["gl", "eshape"], ["e"], "expand"),
        ox.node("Tile", ["e", "reps"], ["t"], "tile"),
        ox.node("Reshape", ["t", "flat"], ["r"], "flatten_all"),
        ox.node("Slice", ["r", "st", "en", "ax", "sp"], ["y"], "every_third_reversed"),
    ]
    inits = [
        ox.init("scalar", np.array(-2, np.int64)),
        ox.init("crop", i64(-1, 1, 0, 0)),
        ox.init("eshape", i64(2, 1, 1)),
        ox.init("reps", i64(1, 2, 3)),
        ox.init("flat", i64(-1)),
        ox.init("st", i64(-2)),
        ox.init("en", i64(-1000)),
        ox.init("ax", i64(0)),
        ox.init("sp", i64(-3)),
    ]
    return ox.make_model(nodes, [("x", [3, 4, 5])], ["y"], inits, opset=20)


def dilated_average_pools(ox) -> onnx.ModelProto:
    """AveragePool-19 dilations, 2-D with padding and ceil mode, and 1-D."""
    nodes = [
        ox.node(
            "AveragePool",
            ["x"],
            ["p2"],
            "dilated_2d",
            kernel_shape=[2, 3],
            dilations=[2, 2],
            strides=[1, 2],
            pads=[1, 0, 1, 2],
            ceil_mode=1,
            count_include_pad=1,
        ),
        ox.node("Reshape", ["p2", "rows"], ["r"], "to_1d"),
        ox.node("AveragePool", ["r"], ["y"], "dilated_1d", kernel_shape=[3], dilations=[3]),
    ]
    inits = [ox.init("rows", i64(1, 3, -1))]
    return ox.make_model(nodes, [("x", [1, 3, 9, 10])], ["y"], inits, opset=19)


MODELS: dict[str, Callable[..., onnx.ModelProto]] = {
    "dilated_average_pools_19": dilated_average_pools,
    "odds_and_ends": odds_and_ends,
    "layer_norm_statistics": layer_norm_statistics,
    "small_cnn": small_cnn,
    "shape_subgraph": shape_subgraph,
    "split_concat_11": split_concat(11),
    "split_concat_13": split_concat(13),
    "split_concat_18": split_concat(18),
    "transformer_block": transformer_block,
    "upsample_7_nearest": upsample(7, "nearest"),
    "upsample_7_linear": upsample(7, "linear"),
    "upsample_9_nearest": upsample(9, "nearest"),
    "resize_10_nearest_down": resize(10, "nearest", scales=[1, 1, 0.6, 0.5]),
    "resize_10_linear": resize(10, "linear", scales=[1, 1, 2, 1.5]),
    "resize_11_nearest_sizes": resize(
        11, "nearest", "asymmetric", sizes=[1, 2, 9, 4], nearest_mode="ceil"
    ),
    "resize_11_linear_align": resize(11, "linear", "align_corners", scales=[1, 1, 1.7, 0.6]),
    "resize_11_cubic_half": resize(
        11, "cubic", "half_pixel", scales=[1, 1, 2, 2], cubic_coeff_a=-0.5
    ),
    "resize_13_nearest_tf": resize(13, "nearest", "tf_half_pixel_for_nn", scales=[1, 1, 1.6, 2.2]),
    "resize_13_linear_pytorch": resize(13, "linear", "pytorch_half_pixel", sizes=[1, 2, 1, 12]),
    "resize_13_cubic_exclude": resize(
        13, "cubic", "asymmetric", sizes=[1, 2, 8, 3], exclude_outside=1
    ),
    "resize_13_nearest_prefer_ceil": resize(
        13, "nearest", "half_pixel", scales=[1, 1, 3, 0.5], nearest_mode="round_prefer_ceil"
    ),
    "resize_18_axes_not_larger": resize(
        18, "linear", "half_pixel", sizes=[8, 8], axes=[2, 3], keep_aspect_ratio_policy="not_larger"
    ),
    "resize_18_axes_not_smaller": resize(
        18,
        "nearest",
        "asymmetric",
        sizes=[8, 8],
        axes=[3, 2],
        keep_aspect_ratio_policy="not_smaller",
    ),
    "resize_19_symmetric": resize(19, "linear", "half_pixel_symmetric", scales=[1, 1, 1.5, 0.7]),
    "pad_7_constant": pad(7, "constant"),
    "pad_7_reflect": pad(7, "reflect"),
    "pad_11_constant": pad(11, "constant"),
    "pad_11_reflect": pad(11, "reflect"),
    "pad_11_edge": pad(11, "edge"),
    "pad_18_axes": pad(18, "constant"),
    "pad_19_wrap": pad(19, "wrap"),
    "activations_7": activations(7),
    "activations_11": activations(11),
    "activations_14": activations(14),
    "slice_9": slices(9),
    "slice_13": slices(13),
    "conv_variants": conv_variants,
    "softmax_11_flatten": softmax_legacy("Softmax", 11, 1),
    "softmax_11_last": softmax_legacy("Softmax", 11, -1),
    "logsoftmax_7_flatten": softmax_legacy("LogSoftmax", 7, 2),
    "softmax_13_axis1": softmax_legacy("Softmax", 13, 1),
    "reductions_13": reductions,
    "reductions_18": reductions_18,
    "gemm_runtime_b": gemm_runtime_b,
    "movement": movement,
    "norms_7": norms,
    "dropout_12": dropout_12,
    "old_style_initializer_inputs": old_style_initializer_inputs,
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_matches_onnxruntime(name: str, ox) -> None:
    model = MODELS[name](ox)
    feeds = ox.random_feeds(model, seed=7)
    expected = ox.run_onnxruntime(model, feeds)
    module = import_onnx(model)
    got = run_module(module, feeds)
    assert list(got) == list(expected)
    for key, want in expected.items():
        assert got[key].shape == want.shape, key
        if want.dtype.kind in "iu":
            np.testing.assert_array_equal(got[key], want, err_msg=key)
        else:
            np.testing.assert_allclose(got[key], want, rtol=1e-4, atol=1e-4, err_msg=key)


def test_opset6_per_channel_prelu(ox) -> None:
    model = prelu_per_channel_opset6(ox)
    feeds = ox.random_feeds(model, seed=7)
    slope = onnx.numpy_helper.to_array(model.graph.initializer[0]).reshape(3, 1, 1)
    x = feeds["x"]
    got = run_module(import_onnx(model), feeds)["y"]
    np.testing.assert_allclose(got, np.where(x >= 0, x, slope * x), rtol=1e-6)
