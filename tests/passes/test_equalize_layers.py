"""equalize-layers keeps the float function, equalizes the weight ranges, and helps per-tensor
int8 weights.

Weight ranges are computed here from the layers' weight constants, independently of the pass.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from corpus import MODELS
from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, TensorType, f32, i64
from xdsl.ir import Operation

from npuc.api import apply_pipeline, load_model
from npuc.diagnostics import NpucError
from npuc.dialects import nn
from npuc.passes.equalize_layers import EqualizeLayersPass, find_pairs
from npuc.passes.nn_patterns import constant_value
from npuc.passes.quantize import QuantizeConfig
from npuc.quantize_flow import calibrate, quantize
from npuc.registry import DEFAULT_PIPELINE
from npuc.runtime import qnn_interpreter
from npuc.runtime.nn_interpreter import run_module

RELU = {"activation": StringAttr("clip"), "activation_min": FloatAttr(0.0, f32)}
RELU6 = RELU | {"activation_max": FloatAttr(6.0, f32)}
LEAKY = {"activation": StringAttr("leaky_relu"), "activation_alpha": FloatAttr(0.1, f32)}


def conv(
    g, x, cin: int, cout: int, name: str, *, k=3, groups=1, bias=True, scale=None, rng=None, **props
):
    """A conv whose output channels have deliberately uneven ranges (or `scale` per channel)."""
    rng = rng or np.random.default_rng(zlib.crc32(name.encode()))
    spread = rng.uniform(0.1, 3.0, cout) if scale is None else scale
    w = rng.standard_normal((cout, cin // groups, k, k)) * spread[:, None, None, None]
    b = g.const(rng.standard_normal(cout) * spread * 0.1, f"{name}.bias") if bias else None
    window = {
        "strides": nn.ints([1, 1]),
        "pads": nn.ints([k // 2] * 4),
        "dilations": nn.ints([1, 1]),
        "groups": IntegerAttr(groups, i64),
    }
    return g.op(nn.Conv2dOp, [x, g.const(w, f"{name}.weight"), b], window | props, name=name)


def weight_of(op: Operation) -> np.ndarray:
    return np.asarray(constant_value(op.rhs if isinstance(op, nn.MatMulOp) else op.weight))


def out_ranges(op: Operation) -> np.ndarray:
    """max |w| per output channel of a layer."""
    w = np.abs(weight_of(op)).astype(np.float64)
    return w.max(0) if isinstance(op, nn.MatMulOp) else w.reshape(len(w), -1).max(1)


def in_ranges(op: Operation) -> np.ndarray:
    """max |w| per input channel; input c of a grouped conv feeds its group's outputs."""
    w = np.abs(weight_of(op)).astype(np.float64)
    if isinstance(op, nn.MatMulOp):
        return w.max(1)
    if isinstance(op, nn.FullyConnectedOp):
        return w.max(0)
    groups = op.groups.value.data
    per_out, per_in = w.shape[0] // groups, w.shape[1]
    ranges = np.empty(per_in * groups)
    for c in range(per_in * groups):
        group, j = divmod(c, per_in)
        ranges[c] = w[group * per_out : (group + 1) * per_out, j].max()
    return ranges


def layers(module) -> dict[str, Operation]:
    kinds = (nn.Conv2dOp, nn.FullyConnectedOp, nn.MatMulOp)
    return {op.layer_name.data: op for op in module.walk() if isinstance(op, kinds)}


def weights_by_layer(module) -> dict[str, np.ndarray]:
    return {name: weight_of(op).copy() for name, op in layers(module).items()}


# --------------------------------------------------------------------------- models


def conv_relu_conv(graph, fused: bool = True):
    g = graph((2, 3, 9, 9))
    c1 = conv(g, g.inputs[0], 3, 8, "c1", **(RELU if fused else {}))
    x = c1 if fused else g.op(nn.ReluOp, [c1])
    return g.module(conv(g, x, 8, 5, "c2")), [("c1", "c2")]


def mobilenet_chain(graph, multiplier: int = 1):
    """conv -> depthwise (channel multiplier) -> 1x1 conv, relu between."""
    g = graph((1, 4, 10, 10))
    c1 = conv(g, g.inputs[0], 4, 6, "c1", **RELU)
    dw = conv(g, c1, 6, 6 * multiplier, "dw", groups=6, **RELU)
    return g.module(conv(g, dw, 6 * multiplier, 7, "pw", k=1)), [("c1", "dw"), ("dw", "pw")]


def leaky_pool_pad(graph):
    """conv (leaky relu) -> max pool -> reflect pad -> zero pad -> conv."""
    g = graph((1, 3, 8, 8))
    c1 = conv(g, g.inputs[0], 3, 6, "c1", **LEAKY)
    pool = g.op(
        nn.MaxPool2dOp,
        [c1],
        {
            "kernel": nn.ints([2, 2]),
            "strides": nn.ints([2, 2]),
            "pads": nn.ints([0] * 4),
            "dilations": nn.ints([1, 1]),
        },
    )
    pad = g.op(
        nn.PadOp, [pool], {"pads": nn.ints([0, 0, 1, 1, 0, 0, 1, 1]), "mode": StringAttr("reflect")}
    )
    zero = g.op(nn.PadOp, [pad], {"pads": nn.ints([0, 0, 0, 2, 0, 0, 1, 0])})
    return g.module(conv(g, zero, 6, 4, "c2")), [("c1", "c2")]


def split_bias(graph):
    """conv without bias -> add(constant [1, C, 1, 1]) with fused relu -> mul(2) -> conv."""
    g = graph((1, 3, 6, 6))
    c1 = conv(g, g.inputs[0], 3, 5, "c1", bias=False)
    add = g.op(nn.AddOp, [g.const(np.linspace(-1, 1, 5).reshape(1, 5, 1, 1)), c1], RELU)
    mul = g.op(nn.MulOp, [add, g.const(np.float32(2.0))])
    return g.module(conv(g, mul, 5, 4, "c2")), [("c1", "c2")]


def flatten_fc(graph):
    """conv -> global average pool -> reshape to [N, C] -> fc -> relu -> fc."""
    rng = np.random.default_rng(7)
    g = graph((2, 3, 6, 6))
    gap = g.op(nn.GlobalAvgPoolOp, [conv(g, g.inputs[0], 3, 8, "c1", **RELU)])
    flat = g.op(nn.ReshapeOp, [gap], result_types=[TensorType(f32, [2, 8])])
    w1 = g.const(rng.standard_normal((6, 8)) * rng.uniform(0.1, 3, (6, 1)))
    fc1 = g.op(nn.FullyConnectedOp, [flat, w1, g.const(rng.standard_normal(6))], name="fc1")
    w2 = g.const(rng.standard_normal((3, 6)))
    fc2 = g.op(nn.FullyConnectedOp, [g.op(nn.ReluOp, [fc1]), w2], name="fc2")
    return g.module(fc2), [("c1", "fc1"), ("fc1", "fc2")]


def transpose_matmul(graph):
    """conv -> NHWC transpose -> matmul -> relu -> matmul (constant rhs)."""
    rng = np.random.default_rng(8)
    g = graph((1, 3, 4, 5))
    nhwc = g.op(nn.TransposeOp, [conv(g, g.inputs[0], 3, 6, "c1")], {"perm": nn.ints([0, 2, 3, 1])})
    rhs1 = g.const(rng.standard_normal((6, 7)) * rng.uniform(0.1, 3, 7))
    m1 = g.op(nn.MatMulOp, [nhwc, rhs1], RELU, name="m1")
    m2 = g.op(nn.MatMulOp, [m1, g.const(rng.standard_normal((7, 2)))], name="m2")
    return g.module(m2), [("c1", "m1"), ("m1", "m2")]


EQUALIZED = {
    "conv-relu-conv": conv_relu_conv,
    "conv-relu-op-conv": lambda graph: conv_relu_conv(graph, fused=False),
    "mobilenet-chain": mobilenet_chain,
    "depthwise-multiplier-2": lambda graph: mobilenet_chain(graph, 2),
    "leaky-pool-pad": leaky_pool_pad,
    "split-bias": split_bias,
    "flatten-fc": flatten_fc,
    "transpose-matmul": transpose_matmul,
}


@pytest.mark.parametrize("build", EQUALIZED.values(), ids=EQUALIZED.keys())
def test_equalized_function_unchanged(graph, check, build):
    module, pairs = build(graph)
    before = {n: (out_ranges(op), in_ranges(op)) for n, op in layers(module).items()}
    check(module, EqualizeLayersPass(), rtol=1e-5, atol=1e-4)  # outputs reach ~50
    after = layers(module)
    for first, second in pairs:
        r1, r2 = out_ranges(after[first]), in_ranges(after[second])
        assert not np.allclose(before[first][0], before[second][1], rtol=1e-2)  # was uneven
        np.testing.assert_allclose(r1, r2, rtol=2e-4)  # the fixed point: r1_i == r2_i
        if len(pairs) == 1:  # one pair: both ranges meet at sqrt(r1_i * r2_i)
            expected = np.sqrt(before[first][0] * before[second][1])
            np.testing.assert_allclose(r1, expected, rtol=1e-5)
    names = {
        o.owner.layer_name.data
        for op in after.values()
        for o in op.operands[1:]
        if isinstance(o.owner, nn.ConstantOp) and o.owner.layer_name
    }
    assert {"c1.weight"} <= names  # replaced constants keep their names


def blocked_models():
    def relu6_fused(graph):
        g = graph((1, 3, 6, 6))
        return g.module(conv(g, conv(g, g.inputs[0], 3, 6, "c1", **RELU6), 6, 4, "c2"))

    def relu6_op(graph):
        g = graph((1, 3, 6, 6))
        c1 = conv(g, g.inputs[0], 3, 6, "c1")
        clip = g.op(nn.ClipOp, [c1], {"min": FloatAttr(0.0, f32), "max": FloatAttr(6.0, f32)})
        return g.module(conv(g, clip, 6, 4, "c2"))

    def two_users(graph):
        g = graph((1, 3, 6, 6))
        relu = g.op(nn.ReluOp, [conv(g, g.inputs[0], 3, 6, "c1")])
        return g.module(conv(g, relu, 6, 4, "c2"), relu)

    def hard_swish(graph):
        g = graph((1, 3, 6, 6))
        hs = g.op(nn.HardSwishOp, [conv(g, g.inputs[0], 3, 6, "c1")])
        return g.module(conv(g, hs, 6, 4, "c2"))

    def residual_add(graph):
        g = graph((1, 6, 6, 6))
        add = g.op(nn.AddOp, [conv(g, g.inputs[0], 6, 6, "c1"), g.inputs[0]])
        return g.module(conv(g, add, 6, 4, "c2"))

    def nonzero_pad(graph):
        g = graph((1, 3, 6, 6))
        pad = g.op(
            nn.PadOp,
            [conv(g, g.inputs[0], 3, 6, "c1")],
            {"pads": nn.ints([0, 0, 1, 1, 0, 0, 1, 1]), "value": FloatAttr(1.0, f32)},
        )
        return g.module(conv(g, pad, 6, 4, "c2"))

    def reciprocal(graph):
        g = graph((1, 3, 6, 6))
        div = g.op(nn.DivOp, [g.const(np.float32(1.0)), conv(g, g.inputs[0], 3, 6, "c1")])
        return g.module(conv(g, div, 6, 4, "c2"))

    return [relu6_fused, relu6_op, two_users, hard_swish, residual_add, nonzero_pad, reciprocal]


@pytest.mark.parametrize("build", blocked_models(), ids=lambda f: f.__name__)
def test_blocked_pairs_left_alone(graph, check, build):
    module = build(graph)
    before = weights_by_layer(module)
    check(module, EqualizeLayersPass())
    after = weights_by_layer(module)
    assert before.keys() == after.keys()
    for name, w in before.items():
        np.testing.assert_array_equal(after[name], w)


@pytest.mark.parametrize(
    "options",
    [{"iterations": 0}, {"tolerance": -1.0}, {"max_scale": 1.0}, {"max_scale": math.inf}],
)
def test_bad_options(graph, options):
    module, _ = conv_relu_conv(graph)
    with pytest.raises(NpucError, match="equalize-layers: "):
        EqualizeLayersPass(**options).apply(Context(), module)
    spec = ",".join(f"{k}={v}" for k, v in options.items())
    with pytest.raises(NpucError, match="equalize-layers"):
        apply_pipeline(module, f"equalize-layers{{{spec}}}")


# --------------------------------------------------------------------------- a real model


def test_corpus_ppocr_cls():
    """PP-OCR's MobileNetV3 angle classifier: relu blocks, squeeze-excite convs, split biases."""
    (model,) = (m for m in MODELS if m.name == "ppocr_cls")
    assert model.file.exists(), "the corpus is not fetched (make setup fetches it)"
    module = load_model(model.file, input_shapes={"x": [2, 3, 48, 192]})
    apply_pipeline(module, DEFAULT_PIPELINE)
    inputs = {"x": np.random.default_rng(3).uniform(-1, 1, (2, 3, 48, 192)).astype(np.float32)}
    reference = run_module(module, inputs)
    before = weights_by_layer(module)
    pairs = [(w1.op.layer_name.data, w2.op.layer_name.data) for w1, w2 in find_pairs(module)]
    EqualizeLayersPass().apply(Context(), module)
    module.verify()
    for name, out in run_module(module, inputs).items():
        np.testing.assert_allclose(out, reference[name], rtol=1e-5, atol=1e-6)
    assert len(pairs) >= 10
    after = layers(module)
    changed = {n for n, w in weights_by_layer(module).items() if not np.array_equal(w, before[n])}
    assert changed == {name for pair in pairs for name in pair}
    for first, second in pairs:  # the fixed point, channels all but zero on either side aside
        r1, r2 = out_ranges(after[first]), in_ranges(after[second])
        live = (r1 > 1e-6 * r1.max()) & (r2 > 1e-6 * r2.max())
        np.testing.assert_allclose(r1[live], r2[live], rtol=5e-4)


# --------------------------------------------------------------------------- quantization


def uneven_model(graph):
    """conv1 (relu) -> conv2 (relu) -> conv3, where conv1's channel 0 is 100x larger and
    conv2 reads it 100x smaller: an ordinary function with a badly spread first layer."""
    rng = np.random.default_rng(5)
    g = graph((1, 3, 12, 12))
    spread = np.ones(8)
    spread[0] = 100.0
    c1 = conv(g, g.inputs[0], 3, 8, "c1", scale=spread * 0.3, rng=rng, **RELU)
    w2 = rng.standard_normal((8, 8, 3, 3)) * 0.2
    w2[:, 0] /= 100.0
    window = {
        "strides": nn.ints([1, 1]),
        "pads": nn.ints([1] * 4),
        "dilations": nn.ints([1, 1]),
        "groups": IntegerAttr(1, i64),
    }
    c2 = g.op(
        nn.Conv2dOp,
        [c1, g.const(w2), g.const(rng.standard_normal(8) * 0.1)],
        window | RELU,
        name="c2",
    )
    return g.module(conv(g, c2, 8, 4, "c3", scale=np.full(4, 0.3), rng=rng))


def int8_cosine(module) -> float:
    rng = np.random.default_rng(9)
    feeds = [{"input_0": rng.standard_normal((1, 3, 12, 12)).astype(np.float32)} for _ in range(6)]
    statistics = calibrate(module, feeds[:4], progress=False)
    quantized, _ = quantize(module, statistics, QuantizeConfig(scheme="int8"))
    ref, got = [], []
    for feed in feeds[4:]:
        ref.append(run_module(module, feed)["output_0"].ravel())
        out = qnn_interpreter.dequantized_outputs(
            quantized, qnn_interpreter.run_module(quantized, feed)
        )
        got.append(out["output_0"].ravel())
    a, b = np.concatenate(ref).astype(np.float64), np.concatenate(got).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_equalization_helps_per_tensor_int8(graph):
    plain = int8_cosine(uneven_model(graph))
    module = uneven_model(graph)
    EqualizeLayersPass().apply(Context(), module)
    equalized = int8_cosine(module)
    assert plain < 0.97 and equalized > 0.995, (plain, equalized)


def test_max_scale_bounds_each_channel(graph, check):
    module = uneven_model(graph)
    before = out_ranges(layers(module)["c1"])
    check(module, EqualizeLayersPass(max_scale=2.0), rtol=1e-5, atol=1e-4)
    ratio = before / out_ranges(layers(module)["c1"])  # s_i: c1 is the first of one pair
    assert np.all(ratio <= 2.0 * (1 + 1e-6)) and np.all(ratio >= 0.5 * (1 - 1e-6))
    assert ratio[0] == pytest.approx(2.0, rel=1e-6)  # the 100x channel hits the bound
