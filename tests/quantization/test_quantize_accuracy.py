"""The quantize pass end to end: every op family lowers to qnn (or stays float, hybrid),
and the qnn interpreter's results approximate the float model.

Ranges are measured on the float model's own intermediates (`run_module(keep="all")`),
so the figures isolate quantization error from calibration choices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from digits_model import digits_cnn, digits_data
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from npuc import graph_io
from npuc.api import apply_pipeline
from npuc.dialects import nn, qnn
from npuc.frontends.onnx import import_onnx
from npuc.passes.quantize import QuantizeConfig, quantize_module
from npuc.runtime import qnn_interpreter
from npuc.runtime.nn_interpreter import run_module
from npuc.tensors import to_dense

RNG = np.random.default_rng(2024)

# --------------------------------------------------------------------------- building graphs


def attr(value: Any) -> Attribute:
    if isinstance(value, Attribute):
        return value
    if isinstance(value, bool):
        return BoolAttr.from_bool(value)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, f32)
    if isinstance(value, str):
        return StringAttr(value)
    return nn.ints(list(value))


class Net:
    """A float `nn` @main under construction; inputs and outputs carry names."""

    def __init__(self, **inputs: Sequence[int]):
        self.input_names = list(inputs)
        self.block = Block(arg_types=[TensorType(f32, list(s)) for s in inputs.values()])
        self.inputs = dict(zip(self.input_names, self.block.args, strict=True))

    def const(self, array: np.ndarray, name: str | None = None) -> SSAValue:
        op = nn.ConstantOp(to_dense(np.asarray(array, np.float32)), name)
        self.block.add_op(op)
        return op.output

    def __call__(
        self,
        op_type: type[nn.NNOperation],
        *operands: SSAValue | Operation,
        name: str | None = None,
        shapes: Sequence[Sequence[int]] | None = None,
        **props: Any,
    ) -> Operation:
        types = None if shapes is None else [TensorType(f32, list(s)) for s in shapes]
        op = nn.build(
            op_type, operands, {k: attr(v) for k, v in props.items()}, name=name, result_types=types
        )
        self.block.add_op(op)
        return op

    def module(self, **outputs: SSAValue | Operation) -> ModuleOp:
        values = [SSAValue.get(v) for v in outputs.values()]
        self.block.add_op(ReturnOp(*values))
        signature = FunctionType.from_lists(
            [a.type for a in self.block.args], [v.type for v in values]
        )
        func = FuncOp("main", signature, Region(self.block))
        func.arg_attrs = graph_io.name_attrs(self.input_names)
        func.res_attrs = graph_io.name_attrs(list(outputs))
        module = ModuleOp([func])
        module.verify()
        return module


def window(pad: int = 1, stride: int = 1, groups: int = 1) -> dict[str, Any]:
    return {"strides": [stride, stride], "pads": [pad] * 4, "dilations": [1, 1], "groups": groups}


def conv(net: Net, x, cin: int, cout: int, name: str, k: int = 3, groups: int = 1, **act):
    w = net.const(RNG.standard_normal((cout, cin // groups, k, k)) * (1.5 / np.sqrt(cin * k * k)))
    b = net.const(RNG.standard_normal(cout) * 0.1)
    return net(nn.Conv2dOp, x, w, b, name=name, **window(pad=k // 2, groups=groups), **act)


RELU = {"activation": "clip", "activation_min": 0.0}

# --------------------------------------------------------------------------- measuring


def samples(module: ModuleOp, count: int, seed: int = 0, positive: bool = False) -> list[dict]:
    func = graph_io.entry_function(module)
    rng = np.random.default_rng(seed)
    feeds = []
    for _ in range(count):
        feed = {}
        for name, arg in zip(graph_io.input_names(func), func.body.block.args, strict=True):
            x = rng.standard_normal(tuple(arg.type.get_shape())).astype(np.float32)
            feed[name] = np.abs(x) + np.float32(0.25) if positive else x
        feeds.append(feed)
    return feeds


def float_ranges(module: ModuleOp, feeds: list[dict]) -> dict[str, tuple[float, float]]:
    """Extrema of every input and intermediate over `feeds`."""
    ranges: dict[str, tuple[float, float]] = {}
    for feed in feeds:
        _, intermediates = run_module(module, feed, keep="all")
        for key, array in [*feed.items(), *intermediates.items()]:
            lo, hi = float(np.min(array)), float(np.max(array))
            old = ranges.get(key, (lo, hi))
            ranges[key] = (min(lo, old[0]), max(hi, old[1]))
    return ranges


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def compare(
    module: ModuleOp, config: QuantizeConfig, feeds: list[dict]
) -> tuple[ModuleOp, float, Any]:
    """Quantize a clone with ranges from `feeds`; the output cosine over `feeds`."""
    ranges = float_ranges(module, feeds)
    quantized = module.clone()
    report = quantize_module(quantized, ranges, config)
    ref, got = [], []
    for feed in feeds:
        ref += [v.ravel() for v in run_module(module, feed).values()]
        out = qnn_interpreter.dequantized_outputs(
            quantized, qnn_interpreter.run_module(quantized, feed)
        )
        got += [v.ravel() for k, v in out.items() if not k.endswith(".q")]
    return quantized, cosine(np.concatenate(ref), np.concatenate(got)), report


def op_names(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith(("nn.", "qnn."))]


def leftover_nn(module: ModuleOp) -> list[str]:
    return [n for n in op_names(module) if n.startswith("nn.") and n != "nn.constant"]


# --------------------------------------------------------------------------- a residual CNN


def residual_cnn() -> ModuleOp:
    """The same network whichever tests ran before: the weight generator is reseeded."""
    global RNG
    RNG = np.random.default_rng(2024)
    net = Net(image=(1, 3, 16, 16))
    c1 = conv(net, net.inputs["image"], 3, 8, "conv1", **RELU)
    c2 = conv(net, c1, 8, 8, "conv2", **RELU)
    c3 = conv(net, c2, 8, 8, "conv3")
    res = net(nn.AddOp, c3, c1, name="residual", **RELU)
    dw = conv(net, res, 8, 8, "dwconv", groups=8, **RELU)
    pool = net(
        nn.MaxPool2dOp,
        dw,
        name="pool",
        kernel=[2, 2],
        strides=[2, 2],
        pads=[0] * 4,
        dilations=[1, 1],
    )
    c4 = conv(net, pool, 8, 12, "conv4", k=1)
    sig = net(nn.SigmoidOp, c4, name="gate")
    gated = net(nn.MulOp, c4, sig, name="swish")
    cat = net(nn.ConcatOp, gated, pool, name="cat", axis=1)
    gap = net(nn.GlobalAvgPoolOp, cat, name="gap")
    flat = net(nn.ReshapeOp, gap, name="flat", shapes=[(1, 20)])
    w = net.const(RNG.standard_normal((10, 20)) * 0.4)
    b = net.const(RNG.standard_normal(10) * 0.1)
    fc = net(nn.FullyConnectedOp, flat, w, b, name="fc")
    return net.module(logits=fc)


@pytest.mark.parametrize(
    ("scheme", "threshold"),
    [
        ("int8-per-channel", 0.99),
        ("int8", 0.99),
        ("uint8", 0.99),
        ("int16", 0.999),
        ("pow2", 0.98),
    ],
)
def test_residual_cnn_approximates_float(scheme, threshold):
    module = residual_cnn()
    quantized, cos, report = compare(module, QuantizeConfig(scheme=scheme), samples(module, 8))
    assert cos > threshold, f"{scheme}: cosine {cos}"
    leftover = leftover_nn(quantized)
    if scheme == "int16":
        # 16-bit inputs have no LUT: the sigmoid stays float between conversions.
        assert leftover == ["nn.sigmoid"]
        assert [r.name for r in report.float_layers] == ["gate"]
        assert report.layers["gate"].reason == "look-up tables need 8-bit inputs"
    else:
        assert leftover == [] and report.float_layers == []
        assert "qnn.lut" in op_names(quantized)


def test_int16_is_more_accurate_than_int8():
    module = residual_cnn()
    feeds = samples(module, 8)
    _, cos8, _ = compare(module, QuantizeConfig(scheme="int8-per-channel"), feeds)
    _, cos16, _ = compare(module, QuantizeConfig(scheme="int16"), feeds)
    # Weights stay 8-bit (16x8), so their rounding bounds the gain.
    assert 1 - cos16 < (1 - cos8) / 2


def test_quantized_io_takes_and_returns_stored_integers():
    module = residual_cnn()
    feeds = samples(module, 4)
    ranges = float_ranges(module, feeds)
    quantized = module.clone()
    quantize_module(quantized, ranges, QuantizeConfig(io="quantized"))
    func = graph_io.entry_function(quantized)
    (arg_type,) = func.function_type.inputs
    (out_type,) = func.function_type.outputs
    assert isinstance(arg_type.element_type, qnn.UniformQuantizedType)
    assert isinstance(out_type.element_type, qnn.UniformQuantizedType)
    assert "qnn.quantize" not in op_names(quantized)
    assert "qnn.dequantize" not in op_names(quantized)
    ref, got = [], []
    for feed in feeds:
        ref.append(run_module(module, feed)["logits"])
        raw = qnn_interpreter.run_module(quantized, feed)
        got.append(qnn_interpreter.dequantized_outputs(quantized, raw)["logits"])
        assert raw["logits"].dtype == np.int8
    assert cosine(np.concatenate(ref), np.concatenate(got)) > 0.99


# --------------------------------------------------------------------------- op families


def single(op_type, shape=(1, 4, 6, 6), positive=False, out_shape=None, **props):
    """x -> op -> y, as (module, feeds)."""
    net = Net(x=shape)
    shapes = None if out_shape is None else [out_shape]
    y = net(op_type, net.inputs["x"], name="op", shapes=shapes, **props)
    module = net.module(y=y)
    return module, samples(module, 6, positive=positive)


LUT_CASES: list[tuple[type[nn.NNOperation], dict[str, Any], bool]] = [
    (nn.SigmoidOp, {}, False),
    (nn.TanhOp, {}, False),
    (nn.HardSwishOp, {}, False),
    (nn.ExpOp, {}, False),
    (nn.GeluOp, {}, False),
    (nn.GeluOp, {"approximate": "tanh"}, False),
    (nn.EluOp, {"alpha": 1.0}, False),
    (nn.SoftplusOp, {}, False),
    (nn.LeakyReluOp, {"alpha": 0.1}, False),
    (nn.HardSigmoidOp, {"alpha": 0.2, "beta": 0.5}, False),
    (nn.ErfOp, {}, False),
    (nn.LogOp, {}, True),
    (nn.SqrtOp, {}, True),
    (nn.AbsOp, {}, False),
    (nn.NegOp, {}, False),
    (nn.ReciprocalOp, {}, True),
]


@pytest.mark.parametrize(("op_type", "props", "positive"), LUT_CASES)
def test_unary_ops_become_luts(op_type, props, positive):
    module, feeds = single(op_type, positive=positive, **props)
    quantized, cos, report = compare(module, QuantizeConfig(), feeds)
    assert op_names(quantized) == ["qnn.quantize", "qnn.lut", "qnn.dequantize"]
    assert report.layers["op"].lowering == "qnn.lut"
    assert cos > 0.99, f"{op_type.name}: cosine {cos}"


def _pool(**extra):
    return {"kernel": [2, 2], "strides": [2, 2], "pads": [0] * 4, **extra}


MOVEMENT_CASES: list[tuple[type[nn.NNOperation], dict[str, Any], tuple | None, str]] = [
    (nn.MaxPool2dOp, _pool(dilations=[1, 1]), None, "qnn.max_pool2d"),
    (nn.GlobalMaxPoolOp, {}, None, "qnn.global_max_pool"),
    (nn.ReshapeOp, {}, (4, 36), "qnn.reshape"),
    (nn.TransposeOp, {"perm": [0, 2, 3, 1]}, None, "qnn.transpose"),
    (nn.SliceOp, {"starts": [0, 1, 0, 5], "ends": [1, 4, 6, -1], "steps": [1, 2, 2, -2]}, None,
     "qnn.slice"),
    (nn.PadOp, {"pads": [0, 0, 1, 2, 0, 0, 2, 1]}, None, "qnn.pad"),
    (nn.PadOp, {"pads": [0, 0, 1, 2, 0, 0, 2, 1], "mode": "reflect"}, None, "qnn.pad"),
    (nn.ResizeOp, {"scales": DenseArrayBase.from_list(f32, [1.0, 1.0, 2.0, 1.5]),
                   "mode": "nearest"}, (1, 4, 12, 9), "qnn.resize"),
    (nn.DepthToSpaceOp, {"block_size": 2}, None, "qnn.depth_to_space"),
    (nn.SpaceToDepthOp, {"block_size": 2}, None, "qnn.space_to_depth"),
]  # fmt: skip


@pytest.mark.parametrize(("op_type", "props", "out_shape", "lowered"), MOVEMENT_CASES)
def test_movement_ops_keep_the_input_type(op_type, props, out_shape, lowered):
    module, feeds = single(op_type, out_shape=out_shape, **props)
    quantized, cos, _ = compare(module, QuantizeConfig(), feeds)
    assert op_names(quantized) == ["qnn.quantize", lowered, "qnn.dequantize"]
    moved = next(op for op in quantized.walk() if op.name == lowered)
    assert moved.results[0].type.element_type == moved.operands[0].type.element_type
    assert cos > 0.999


def test_split_results_share_the_input_type():
    net = Net(x=(1, 6, 4, 4))
    split = net(
        nn.SplitOp, net.inputs["x"], name="split", axis=1, shapes=[(1, 2, 4, 4), (1, 4, 4, 4)]
    )
    a = net(nn.SigmoidOp, split.results[0], name="a")
    module = net.module(a=a, b=split.results[1])
    quantized, cos, report = compare(module, QuantizeConfig(), samples(module, 4))
    (lowered,) = [op for op in quantized.walk() if isinstance(op, qnn.SplitOp)]
    q_in = lowered.input.type.element_type
    assert all(r.type.element_type == q_in for r in lowered.outputs)
    assert report.layers["split"].lowering == "qnn.split"
    assert cos > 0.99


def test_pools_and_arithmetic():
    net = Net(x=(2, 4, 6, 6), y=(2, 4, 6, 6))
    x, y = net.inputs["x"], net.inputs["y"]
    avg = net(
        nn.AvgPool2dOp,
        x,
        name="avg",
        kernel=[3, 3],
        strides=[1, 1],
        pads=[1] * 4,
        count_include_pad=False,
    )
    sub = net(nn.SubOp, avg, y, name="sub")
    mul = net(nn.MulOp, sub, net.const(RNG.uniform(0.5, 2.0, (4, 1, 1))), name="scale")
    gap = net(nn.GlobalAvgPoolOp, mul, name="gap")
    flat = net(nn.ReshapeOp, gap, name="flat", shapes=[(2, 4)])
    mm = net(nn.MatMulOp, flat, net.const(RNG.standard_normal((4, 3))), name="mm", **RELU)
    prod = net(nn.MatMulOp, net(nn.TransposeOp, flat, name="t", perm=[1, 0]), mm, name="outer")
    module = net.module(out=prod)
    quantized, cos, report = compare(module, QuantizeConfig(), samples(module, 6))
    assert leftover_nn(quantized) == []
    lowered = {r.name: r.lowering for r in report.layers.values()}
    assert lowered == {
        "avg": "qnn.avg_pool2d",
        "sub": "qnn.sub",
        "scale": "qnn.mul",
        "gap": "qnn.global_avg_pool",
        "flat": "qnn.reshape",
        "mm": "qnn.matmul",
        "t": "qnn.transpose",
        "outer": "qnn.matmul",
    }
    assert cos > 0.99


def test_fused_leaky_relu_becomes_a_lut_after_the_layer():
    net = Net(x=(1, 3, 6, 6))
    c = conv(net, net.inputs["x"], 3, 4, "conv", activation="leaky_relu", activation_alpha=0.1)
    module = net.module(y=c)
    quantized, cos, report = compare(module, QuantizeConfig(), samples(module, 6))
    assert op_names(quantized)[-3:] == ["qnn.conv2d", "qnn.lut", "qnn.dequantize"]
    assert report.layers["conv"].lowering == "qnn.conv2d + qnn.lut"
    assert cos > 0.99


# (test_quantize_layer_rules.py quantizes a last-axis softmax, bilinear resize and means.)
FLOAT_CASES = [
    (nn.SoftmaxOp, {"axis": 1}, None),
    (nn.ResizeOp, {"scales": DenseArrayBase.from_list(f32, [1.0, 1.0, 2.0, 2.0]),
                   "mode": "cubic"}, (1, 4, 12, 12)),
    (nn.ReduceProdOp, {"axes": [2, 3]}, None),
    (nn.LogSoftmaxOp, {"axis": 1}, None),
]  # fmt: skip


@pytest.mark.parametrize(("op_type", "props", "out_shape"), FLOAT_CASES)
def test_ops_without_integer_lowering_stay_float_between_conversions(op_type, props, out_shape):
    net = Net(x=(1, 4, 6, 6))
    pre = net(nn.AddOp, net.inputs["x"], net.inputs["x"], name="pre")
    shapes = None if out_shape is None else [out_shape]
    mid = net(op_type, pre, name="mid", shapes=shapes, **props)
    post = net(nn.MulOp, mid, mid, name="post")
    module = net.module(y=post)
    quantized, cos, report = compare(module, QuantizeConfig(), samples(module, 4))
    names = op_names(quantized)
    at = names.index(op_type.name)
    assert names[at - 2 : at + 3] == [
        "qnn.add",
        "qnn.dequantize",
        op_type.name,
        "qnn.quantize",
        "qnn.mul",
    ]
    assert [r.name for r in report.float_layers] == ["mid"]
    assert "no integer lowering" in report.layers["mid"].reason
    assert cos > 0.99


def test_unfused_batch_norm_and_layer_norm_stay_float():
    net = Net(x=(1, 4, 6, 6))
    params = [
        net.const(v)
        for v in (
            RNG.uniform(0.5, 2, 4),
            RNG.standard_normal(4),
            RNG.standard_normal(4),
            RNG.uniform(0.5, 2, 4),
        )
    ]
    bn = net(nn.BatchNormOp, net.inputs["x"], *params, name="bn", epsilon=1e-5)
    ln = net(nn.LayerNormOp, bn, net.const(np.ones(6)), name="ln", axis=-1, epsilon=1e-5)
    relu = net(nn.ReluOp, ln, name="relu")
    module = net.module(y=relu)
    quantized, cos, report = compare(module, QuantizeConfig(), samples(module, 4))
    assert [r.name for r in report.float_layers] == ["bn", "ln"]
    assert leftover_nn(quantized) == ["nn.batch_norm", "nn.layer_norm"]
    assert cos > 0.99


# --------------------------------------------------------------------------- a trained model


@pytest.fixture(scope="module")
def digits() -> tuple[ModuleOp, dict[str, tuple[float, float]], Any]:
    data = digits_data()
    module = import_onnx(digits_cnn(batch=len(data.test_y)))
    apply_pipeline(module)
    calibration = [{"image": data.train_x[i * 100 : (i + 1) * 100]} for i in range(4)]
    calib_module = import_onnx(digits_cnn(batch=100))
    apply_pipeline(calib_module)
    return module, float_ranges(calib_module, calibration), data


@pytest.mark.parametrize(
    ("scheme", "threshold"),
    [
        ("int8-per-channel", 0.999),
        ("int8", 0.999),
        ("uint8", 0.999),
        ("int16", 0.99995),
        ("pow2", 0.999),
    ],
)
def test_trained_digits_cnn_keeps_its_accuracy(digits, scheme, threshold):
    module, ranges, data = digits
    quantized = module.clone()
    quantize_module(quantized, ranges, QuantizeConfig(scheme=scheme))
    ref = run_module(module, {"image": data.test_x})["logits"]
    got = qnn_interpreter.run_module(quantized, {"image": data.test_x})["logits"]
    assert cosine(ref, got) > threshold
    float_acc = (ref.argmax(1) == data.test_y).mean()
    assert (got.argmax(1) == data.test_y).mean() >= float_acc - 0.01
    assert (got.argmax(1) == ref.argmax(1)).mean() >= 0.99


def test_tflite_rounding_option():
    module = residual_cnn()
    quantized, cos, _ = compare(module, QuantizeConfig(rounding="tflite"), samples(module, 4))
    roundings = {op.rounding.data for op in quantized.walk() if isinstance(op, qnn.Requantizing)}
    assert roundings == {"tflite"}
    assert cos > 0.99
