"""Pre-quantized ONNX models (onnxruntime's quantize_static, QDQ and QOperator) imported into qnn.

The reference is onnxruntime running the quantized model on the same float inputs. npuc's
requantization is exact integer arithmetic rounding half to even; onnxruntime multiplies in
float32 (QLinear kernels) or runs the float op between DequantizeLinear and QuantizeLinear, so
a value on or next to a rounding tie may land one step apart. Outputs must agree within one
quantization step; per layer, a layer whose inputs agree exactly must agree within one step
(a step at a steep activation's input can move its output by several steps downstream).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_models import float_graph, random_init, residual_cnn
from onnxruntime.quantization import (
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quantize_static,
)
from onnxruntime_reference import reference_session
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from npuc.diagnostics import NpucError
from npuc.dialects import qnn
from npuc.frontends.onnx import import_onnx
from npuc.graph_io import entry_function
from npuc.runtime.nn_interpreter import FunctionRunner
from npuc.runtime.nn_interpreter import run_module as run_float
from npuc.runtime.qnn_interpreter import run_module

SAMPLES = 32

# --------------------------------------------------------------------------- float models


def _const(name: str, values, dtype=np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, dtype), name)


def mlp(opset: int = 13) -> onnx.ModelProto:
    """MatMul + Add + Clip(0, 6), reshapes, MatMul, Tanh, LeakyRelu, Gemm with a [K, N] weight."""
    rng = np.random.default_rng(1)
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "w1"], ["m1"], name="mm1"),
        n("Add", ["m1", "b1"], ["a1"], name="bias1"),
        n("Clip", ["a1", "lo", "hi"], ["c1"], name="relu6"),
        n("Unsqueeze", ["c1", "ax1"], ["u"], name="unsqueeze"),
        n("Transpose", ["u"], ["t"], name="transpose", perm=[1, 0, 2]),
        n("Squeeze", ["t", "ax0"], ["s"], name="squeeze"),
        n("MatMul", ["s", "w2"], ["m2"], name="mm2"),
        n("Tanh", ["m2"], ["th"], name="tanh"),
        n("LeakyRelu", ["th"], ["lr"], name="leaky", alpha=0.1),
        n("Reshape", ["lr", "shape"], ["r"], name="reshape"),
        n("Gemm", ["r", "w3", "b3"], ["y"], name="fc"),
    ]
    inits = [
        random_init(rng, "w1", [16, 32]), random_init(rng, "b1", [32], 0.1), _const("lo", 0.0),
        _const("hi", 6.0), _const("ax1", [1], np.int64), _const("ax0", [0], np.int64),
        random_init(rng, "w2", [32, 8]), _const("shape", [1, 16], np.int64),
        random_init(rng, "w3", [16, 4]), random_init(rng, "b3", [4], 0.1),
    ]  # fmt: skip
    return float_graph(nodes, inits, [2, 16], [1, 4], opset)


MODELS: dict[str, Callable[..., onnx.ModelProto]] = {"cnn": residual_cnn, "mlp": mlp}


def inputs(model: onnx.ModelProto, count: int, seed: int) -> list[np.ndarray]:
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(dims) * 1.5).astype(np.float32) for _ in range(count)]


class Reader(CalibrationDataReader):
    """A tiny random calibration set."""

    def __init__(self, model: onnx.ModelProto):
        self.batches: Iterator[np.ndarray] = iter(inputs(model, 8, seed=100))

    def get_next(self) -> dict[str, np.ndarray] | None:
        batch = next(self.batches, None)
        return None if batch is None else {"x": batch}


def ort_quantize(
    tmp_path, model: onnx.ModelProto, fmt: str, act: str, per_channel: bool, **extra
) -> onnx.ModelProto:
    src, dst = tmp_path / "float.onnx", tmp_path / f"q_{fmt}_{act}_{per_channel}.onnx"
    onnx.save(model, src)
    quantize_static(
        str(src),
        str(dst),
        Reader(model),
        quant_format=getattr(QuantFormat, fmt),
        per_channel=per_channel,
        activation_type=getattr(QuantType, act),
        weight_type=QuantType.QInt8,
        extra_options=extra or None,
    )
    return onnx.load(dst)


# --------------------------------------------------------------------------- comparison


def ort_run(model: onnx.ModelProto, xs: list[np.ndarray], outputs=None) -> list[list[np.ndarray]]:
    session = reference_session(model)
    return [session.run(outputs, {"x": x}) for x in xs]


def output_scale(model: onnx.ModelProto) -> float:
    """The scale of the DequantizeLinear that produces the graph output."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    out = model.graph.output[0].name
    node = next(n for n in model.graph.node if out in n.output)
    assert node.op_type == "DequantizeLinear"
    return float(inits[node.input[1]])


def step_diffs(module: ModuleOp, model: onnx.ModelProto, xs: list[np.ndarray]) -> np.ndarray:
    """npuc minus onnxruntime on the output, in output quantization steps."""
    scale = output_scale(model)
    refs = ort_run(model, xs)
    ours = [run_module(module, {"x": x})["y"] for x in xs]
    diffs = [np.rint((a - r[0]) / scale).ravel() for a, r in zip(ours, refs, strict=True)]
    return np.concatenate(diffs)


def op_names(module: ModuleOp) -> list[str]:
    return [op.name for op in entry_function(module).body.block.ops]


def layer_agreement(
    module: ModuleOp, model: onnx.ModelProto, xs: list[np.ndarray]
) -> dict[str, tuple[int, int, int]]:
    """Per npuc layer: (values compared, values equal, max |diff|) where its inputs agree.

    A layer's ONNX tensor is the QuantizeLinear output after the float node of its name (QDQ)
    or the output of the QLinear/movement node of its name (QOperator).
    """
    func = entry_function(module)
    keys = FunctionRunner(func).keys
    known = set(keys.values())
    producer = {o: n for n in model.graph.node for o in n.output}
    quantized = {n.input[0] for n in model.graph.node if n.op_type == "QuantizeLinear"}
    floats = quantized | {o.name for o in model.graph.output}
    tensors: dict[str, str] = {}
    for node in model.graph.node:
        if node.op_type == "QuantizeLinear":
            source = producer.get(node.input[0])
            for key in (node.name, source.name if source is not None else None):
                if key in known:
                    tensors[key] = node.output[0]
                    break
    for node in model.graph.node:  # QOperator: integer results of QLinear and movement nodes
        new = node.name in known and node.name not in tensors
        if new and node.output[0] not in floats and node.op_type != "DequantizeLinear":
            tensors[node.name] = node.output[0]
    probe = run_module(module, {"x": xs[0]}, keep=set(tensors))[1]
    traced = onnx.ModelProto()
    traced.CopyFrom(model)
    for key, tensor in tensors.items():
        elem = helper.np_dtype_to_tensor_dtype(probe[key].dtype)
        traced.graph.output.append(helper.make_tensor_value_info(tensor, elem, None))
    names = [o.name for o in traced.graph.output]

    def sources(value: SSAValue) -> set[str]:
        key = keys.get(value)
        if key in tensors:
            return {key}
        owner = value.owner
        if not hasattr(owner, "operands") or isinstance(owner, qnn.ConstantOp):
            return set()
        return set().union(*(sources(v) for v in owner.operands))

    inputs_of = {}
    for op in func.body.block.ops:
        for r in op.results:
            if keys.get(r) in tensors:
                inputs_of[keys[r]] = set().union(set(), *(sources(v) for v in op.operands))
    stats = {key: [0, 0, 0] for key in tensors}
    for x, ref in zip(xs, ort_run(traced, xs), strict=True):
        theirs = dict(zip(names, ref, strict=True))
        ours = run_module(module, {"x": x}, keep=set(tensors))[1]
        for key, tensor in tensors.items():
            if any(not np.array_equal(ours[k], theirs[tensors[k]]) for k in inputs_of[key]):
                continue
            diff = ours[key].astype(np.int64) - theirs[tensor].astype(np.int64)
            stat = stats[key]
            stat[0] += diff.size
            stat[1] += int((diff == 0).sum())
            stat[2] = max(stat[2], int(np.abs(diff).max()))
    return {k: (a, b, c) for k, (a, b, c) in stats.items()}


def check_layers(stats: dict[str, tuple[int, int, int]], min_exact: float) -> None:
    compared = sum(s[0] for s in stats.values())
    exact = sum(s[1] for s in stats.values())
    assert compared > 0
    assert max(s[2] for s in stats.values()) <= 1, stats
    assert exact / compared >= min_exact, stats


# --------------------------------------------------------------------------- keep


@pytest.mark.parametrize("per_channel", [True, False], ids=["per_channel", "per_tensor"])
@pytest.mark.parametrize("act", ["QInt8", "QUInt8"])
@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
@pytest.mark.parametrize("name", ["cnn", "mlp"])
def test_prequantized_keep_matches_onnxruntime(tmp_path, name, fmt, act, per_channel):
    float_model = MODELS[name]()
    model = ort_quantize(tmp_path, float_model, fmt, act, per_channel)
    module = import_onnx(model)
    kinds = set(op_names(module)) - {"func.return"}
    assert all(k.startswith("qnn.") for k in kinds), kinds  # integer-only between the I/O
    assert "qnn.lut" in kinds
    diffs = step_diffs(module, model, inputs(float_model, SAMPLES, seed=7))
    exact = float((diffs == 0).mean())
    print(f"{name} {fmt} {act} per_channel={per_channel}: {exact:.1%} of outputs exactly equal")
    assert np.abs(diffs).max() <= 1
    assert exact >= 0.8


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_prequantized_layers_match_onnxruntime(tmp_path, fmt):
    float_model = residual_cnn()
    model = ort_quantize(tmp_path, float_model, fmt, "QUInt8", True)
    module = import_onnx(model)
    stats = layer_agreement(module, model, inputs(float_model, 16, seed=3))
    assert {"conv1", "pool1", "add", "concat", "avgpool", "sig", "gap", "fc"} <= {
        k.removesuffix("_quant") for k in stats
    }
    check_layers(stats, min_exact=0.97)


def test_prequantized_keeps_node_names_and_parameters(tmp_path):
    model = ort_quantize(tmp_path, residual_cnn(), "QDQ", "QInt8", True)
    module = import_onnx(model)
    ops = {
        op.properties["name"].data: op
        for op in entry_function(module).body.block.ops
        if "name" in op.properties and not isinstance(op, qnn.ConstantOp)
    }
    conv = ops["conv1"]
    assert isinstance(conv, qnn.Conv2dOp) and conv.rounding.data == "half_to_even"
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    w = qnn.qtype(conv.weight)
    assert w.per_axis and np.allclose(w.scale_values(), inits["w1_scale"])
    out = qnn.qtype(conv.output)
    assert (out.scale, out.zero_point) == (float(inits["r1_scale"]), int(inits["r1_zero_point"]))
    assert isinstance(ops["pool1"], qnn.MaxPool2dOp) and isinstance(ops["fc"], qnn.FullyConnectedOp)
    assert isinstance(ops["sig"], qnn.LutOp)


def test_prequantized_int16_activations(tmp_path):
    """QInt16 activations with int8 weights (opset 21 QuantizeLinear/DequantizeLinear)."""
    float_model = mlp(opset=21)
    model = ort_quantize(tmp_path, float_model, "QDQ", "QInt16", True)
    module = import_onnx(model)
    storages = {
        qnn.qtype(op.results[0]).storage
        for op in entry_function(module).body.block.ops
        if isinstance(op, qnn.Requantizing | qnn.LutOp)
    }
    assert storages == {"i16"}
    check_layers(layer_agreement(module, model, inputs(float_model, 16, seed=5)), 0.97)


def test_prequantized_kept_activations_vanish_when_the_range_already_clamps(tmp_path):
    """QDQKeepRemovableActivations keeps Relu/Clip between Q/DQ pairs of equal parameters
    whose range already lies within the bounds: the clamp changes nothing, so no op remains."""
    float_model = residual_cnn()
    model = ort_quantize(
        tmp_path, float_model, "QDQ", "QUInt8", True, QDQKeepRemovableActivations=True
    )
    assert sum(n.op_type == "Relu" for n in model.graph.node) == 2
    module = import_onnx(model)
    names = {
        op.properties["name"].data
        for op in entry_function(module).body.block.ops
        if "name" in op.properties
    }
    assert not names & {"relu1", "relu2"}
    diffs = step_diffs(module, model, inputs(float_model, SAMPLES, seed=8))
    assert np.abs(diffs).max() <= 1


def test_prequantized_symmetric_relu_is_a_clamping_requantize(tmp_path):
    """Symmetric activations keep Relu as its own quantized layer: a requantize with a clamp."""
    float_model = residual_cnn()
    model = ort_quantize(tmp_path, float_model, "QDQ", "QInt8", True, ActivationSymmetric=True)
    module = import_onnx(model)
    relus = [
        op
        for op in entry_function(module).body.block.ops
        if isinstance(op, qnn.RequantizeOp) and op.properties["name"].data.startswith("relu")
    ]
    assert relus and all(op.clamp_min is not None for op in relus)
    check_layers(layer_agreement(module, model, inputs(float_model, 16, seed=9)), 0.97)


def movement() -> onnx.ModelProto:
    """1-D conv, unsqueeze, pad, nearest resize, split, reversing slice, concat, GAP, fc,
    softmax."""
    rng = np.random.default_rng(2)
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], name="conv1d", pads=[1, 1]),
        n("Relu", ["c1"], ["r1"], name="relu"),
        n("Unsqueeze", ["r1", "ax2"], ["u"], name="unsqueeze"),
        n("Pad", ["u", "pads"], ["p"], name="pad", mode="constant"),
        n("Resize", ["p", "", "scales"], ["rs"], name="resize", mode="nearest"),
        n("Split", ["rs", "split"], ["s0", "s1"], name="split", axis=1),
        n("Slice", ["s1", "starts", "ends", "axes"], ["sl"], name="slice"),
        n("Concat", ["sl", "s0"], ["cat"], name="concat", axis=1),
        n("GlobalAveragePool", ["cat"], ["g"], name="gap"),
        n("Flatten", ["g"], ["f"], name="flatten"),
        n("Gemm", ["f", "wf", "bf"], ["logits"], name="fc", transB=1),
        n("Softmax", ["logits"], ["y"], name="softmax", axis=1),
    ]
    inits = [
        random_init(rng, "w1", [8, 3, 3]), random_init(rng, "b1", [8], 0.1),
        _const("ax2", [2], np.int64),
        _const("pads", [0, 0, 0, 1, 0, 0, 0, 1], np.int64), _const("scales", [1, 1, 2, 2]),
        _const("split", [4, 4], np.int64), _const("starts", [-1], np.int64),
        _const("ends", [np.iinfo(np.int64).min], np.int64), _const("axes", [3], np.int64),
        random_init(rng, "wf", [5, 8]), random_init(rng, "bf", [5], 0.1),
    ]  # fmt: skip
    nodes[6].input.append("steps")  # reverse the last axis
    inits.append(_const("steps", [-1], np.int64))
    return float_graph(nodes, inits, [1, 3, 16], [1, 5])


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_prequantized_data_movement_and_hybrid_softmax(tmp_path, fmt):
    """Data movement stays integer; Softmax, with no qnn form, runs float between
    qnn.dequantize and qnn.quantize (QLinearSoftmax too)."""
    float_model = movement()
    model = ort_quantize(tmp_path, float_model, fmt, "QUInt8", True)
    module = import_onnx(model)
    ops = list(entry_function(module).body.block.ops)
    kinds = {op.name for op in ops}
    assert {"qnn.conv2d", "qnn.pad", "qnn.resize", "qnn.split", "qnn.slice", "qnn.concat"} <= kinds
    assert {k for k in kinds if k.startswith("nn.")} == {"nn.softmax"}
    softmax = next(op for op in ops if op.name == "nn.softmax")
    assert isinstance(softmax.operands[0].owner, qnn.DequantizeOp)
    assert isinstance(next(iter(softmax.results[0].uses)).operation, qnn.QuantizeOp)
    xs = inputs(float_model, SAMPLES, seed=10)
    diffs = step_diffs(module, model, xs)
    assert np.abs(diffs).max() <= 1
    stats = layer_agreement(module, model, xs[:8])
    assert all(s[1] == s[0] for k, s in stats.items() if "softmax" not in k and "y_" not in k)


# --------------------------------------------------------------------------- dequantize


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_prequantized_dequantize_gives_the_float_model(tmp_path, fmt):
    float_model = residual_cnn()
    model = ort_quantize(tmp_path, float_model, fmt, "QUInt8", True)
    module = import_onnx(model, prequantized="dequantize")
    kinds = set(op_names(module))
    assert not any(k.startswith("qnn.") for k in kinds)
    assert "nn.relu" in kinds  # the Relus onnxruntime folded into zero points come back
    xs = inputs(float_model, SAMPLES, seed=11)
    ref = [r[0] for r in ort_run(float_model, xs)]
    quantized = [r[0] for r in ort_run(model, xs)]
    ours = [run_float(module, {"x": x})["y"] for x in xs]
    ours_err = max(float(np.abs(a - r).max()) for a, r in zip(ours, ref, strict=True))
    quantized_err = max(float(np.abs(q - r).max()) for q, r in zip(quantized, ref, strict=True))
    # Only the weights are rounded now: closer to the float model than the quantized model is.
    assert ours_err <= quantized_err
    assert ours_err <= 2 * output_scale(model)


def test_prequantized_dequantize_then_requantize_with_npuc(tmp_path):
    """The dequantized model re-calibrates with npuc's own quantize pass."""
    from npuc.passes.quantize import quantize_module

    float_model = mlp()
    model = ort_quantize(tmp_path, float_model, "QOperator", "QInt8", True)
    module = import_onnx(model, prequantized="dequantize")
    xs = inputs(float_model, 8, seed=12)
    keys = FunctionRunner(entry_function(module)).keys
    _, values = run_float(module, {"x": xs[0]}, keep="all")
    ranges = {k: (min(float(v.min()), 0.0), max(float(v.max()), 0.0)) for k, v in values.items()}
    ranges["x"] = (-5.0, 5.0)
    assert set(values) <= set(keys.values())
    quantize_module(module, ranges)
    assert "qnn.fully_connected" in op_names(module)
    out = run_module(module, {"x": xs[0]})["y"]
    ref = ort_run(float_model, xs[:1])[0][0]
    assert np.abs(out - ref).max() < 0.25


# --------------------------------------------------------------------------- hand-built graphs


def _qdq_conv(opset: int, activation: str, float_bias: bool = False, **q_attrs):
    """x -> Q -> DQ -> Conv (DQ int8 weights, DQ int32 or float bias) -> Relu/Clip -> Q -> DQ."""
    rng = np.random.default_rng(4)
    w = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    n = helper.make_node
    bounds = ["clip_lo", "clip_hi"] if opset >= 11 else []
    act_attrs = {"min": 0.0, "max": 1.5} if opset < 11 and activation == "Clip" else {}
    nodes = [
        n("QuantizeLinear", ["x", "sx", "zx"], ["xq"], name="qx", **q_attrs),
        n("DequantizeLinear", ["xq", "sx", "zx"], ["xf"], name="dqx"),
        n("DequantizeLinear", ["w", "sw", "zw"], ["wf"], name="dqw"),
        n("DequantizeLinear", ["b", "sb", "zb"], ["bf"], name="dqb"),
        n("Conv", ["xf", "wf", "fb" if float_bias else "bf"], ["c"], name="conv", pads=[1] * 4),
        n(
            activation,
            ["c", *(bounds if activation == "Clip" else [])],
            ["a"],
            name="act",
            **act_attrs,
        ),
        n("QuantizeLinear", ["a", "sy", "zy"], ["yq"], name="qy", **q_attrs),
        n("DequantizeLinear", ["yq", "sy", "zy"], ["y"], name="dqy"),
    ]
    inits = [
        _const("sx", 0.02), _const("zx", 3, np.uint8), numpy_helper.from_array(w, "w"),
        _const("sw", 0.004), _const("zw", 0, np.int8),
        numpy_helper.from_array(rng.integers(-500, 500, 4).astype(np.int32), "b"),
        _const("sb", 0.02 * 0.004), _const("zb", 0, np.int32),
        _const("sy", 0.01), _const("zy", 100, np.uint8),
        _const("clip_lo", 0.0), _const("clip_hi", 1.5), _const("fb", [0.3, -0.2, 0.05, 1.0]),
    ]  # fmt: skip
    if float_bias:
        nodes = [node for node in nodes if node.name != "dqb"]
    used = {i for node in nodes for i in node.input}
    return float_graph(
        nodes, [t for t in inits if t.name in used], [1, 3, 6, 6], [1, 4, 6, 6], opset
    )


@pytest.mark.parametrize(
    ("opset", "activation", "float_bias", "attrs"),
    [
        (10, "Relu", False, {}),
        (10, "Clip", False, {}),
        (13, "Clip", False, {}),
        (13, "Relu", True, {}),
        (19, "Relu", False, {"saturate": 1}),
    ],
)
def test_prequantized_hand_built_qdq_conv(opset, activation, float_bias, attrs):
    """Relu/Clip between Conv and QuantizeLinear fold into the clamp; opset 10 to 19 forms."""
    model = _qdq_conv(opset, activation, float_bias, **attrs)
    module = import_onnx(model)
    assert [k for k in op_names(module) if k != "qnn.constant"] == [
        "qnn.quantize",
        "qnn.conv2d",
        "qnn.dequantize",
        "func.return",
    ]
    conv = next(op for op in entry_function(module).body.block.ops if isinstance(op, qnn.Conv2dOp))
    assert conv.clamp_min.value.data == 100  # real 0 at the zero point
    if activation == "Clip":
        assert conv.clamp_max.value.data == 250  # 100 + 1.5 / 0.01
    xs = inputs(model, SAMPLES, seed=13)
    diffs = step_diffs(module, model, xs)
    assert np.abs(diffs).max() <= 1 and (diffs == 0).mean() >= 0.99


def test_prequantized_unsupported_constructs_are_reported_together():
    model = _qdq_conv(21, "Relu")
    dq = next(n for n in model.graph.node if n.name == "dqw")
    dq.attribute.append(helper.make_attribute("block_size", 3))
    sw = next(t for t in model.graph.initializer if t.name == "sw")
    sw.CopyFrom(_const("sw", np.full((4, 1, 3, 3), 0.004, np.float32)))
    sw.name = "sw"
    model.graph.node.insert(
        2, helper.make_node("QLinearWhere", ["xq"], ["where"], name="where", domain="com.microsoft")
    )
    model.graph.output.append(helper.make_tensor_value_info("where", TensorProto.UINT8, None))
    with pytest.raises(NpucError) as info:
        import_onnx(model)
    text = str(info.value)
    assert "op 'com.microsoft::QLinearWhere' needs a plugin that provides it" in text
    assert "unsupported ONNX constructs (1 node)" in text
    assert "DequantizeLinear x1: dqw (blocked quantization (block_size) not supported)" in text


def test_prequantized_integer_tensor_into_an_arithmetic_op_is_reported(tmp_path):
    model = ort_quantize(tmp_path, mlp(), "QOperator", "QInt8", True)
    squeeze = next(n for n in model.graph.node if n.op_type == "Squeeze")
    model.graph.node.insert(
        list(model.graph.node).index(squeeze) + 1,
        helper.make_node("Neg", [squeeze.output[0]], ["negated"], name="neg"),
    )
    model.graph.output.append(helper.make_tensor_value_info("negated", TensorProto.INT8, None))
    with pytest.raises(NpucError, match=r"Neg x1: neg \(Neg on quantized \(integer\) tensors"):
        import_onnx(model)


def test_prequantized_mode_is_checked(tmp_path):
    with pytest.raises(NpucError, match="prequantized must be one of keep, dequantize"):
        import_onnx(residual_cnn(), prequantized="float")
