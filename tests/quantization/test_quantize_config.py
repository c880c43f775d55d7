"""The quantize pass as a pipeline step: range sources, the per-layer configuration file
and its round trip, and mixed precision (16-bit and float layers)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation

from npuc.api import apply_pipeline
from npuc.diagnostics import NpucError
from npuc.dialects.qnn import UniformQuantizedType
from npuc.frontends.onnx import import_onnx
from npuc.passes.quantization.datasets import random_dataset
from npuc.passes.quantization.layer_config import (
    LayerOverrides,
    LayerSetting,
    parse_layers_option,
    read_layer_config,
)
from npuc.passes.quantization.ranges import activation_range
from npuc.passes.quantization.statistics import collect_statistics, save_statistics
from npuc.passes.quantize import QuantizeConfig, quantize_module, ranges_from_statistics
from npuc.runtime import qnn_interpreter
from npuc.runtime.nn_interpreter import run_module

RNG = np.random.default_rng(5)


def onnx_cnn() -> ModuleOp:
    """conv+relu -> conv -> sigmoid gate (mul) -> max pool, concat with a pooled skip ->
    global average pool -> flatten -> gemm -> softmax, imported and optimised."""
    w = {
        "w1": RNG.standard_normal((6, 3, 3, 3)).astype(np.float32) * 0.4,
        "b1": RNG.standard_normal(6).astype(np.float32) * 0.1,
        "w2": RNG.standard_normal((6, 6, 3, 3)).astype(np.float32) * 0.3,
        "b2": RNG.standard_normal(6).astype(np.float32) * 0.1,
        "wf": RNG.standard_normal((5, 12)).astype(np.float32) * 0.5,
        "bf": RNG.standard_normal(5).astype(np.float32) * 0.1,
    }
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        n("Relu", ["c1"], ["r1"], name="relu1"),
        n("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        n("Sigmoid", ["c2"], ["s2"], name="gate"),
        n("Mul", ["c2", "s2"], ["m2"], name="swish"),
        n("MaxPool", ["m2"], ["p2"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        n("MaxPool", ["r1"], ["p1"], name="skip", kernel_shape=[2, 2], strides=[2, 2]),
        n("Concat", ["p2", "p1"], ["cat"], name="cat", axis=1),
        n("GlobalAveragePool", ["cat"], ["gap"], name="gap"),
        n("Flatten", ["gap"], ["flat"], name="flat"),
        n("Gemm", ["flat", "wf", "bf"], ["fc"], name="fc", transB=1),
        n("Softmax", ["fc"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("probs", onnx.TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in w.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    module = import_onnx(model)
    apply_pipeline(module)
    return module


@pytest.fixture(name="model")
def model_fixture(tmp_path: Path) -> tuple[ModuleOp, Path]:
    """The CNN and its calibration statistics file (16 seeded random samples)."""
    module = onnx_cnn()
    stats = collect_statistics(module, random_dataset(module, 16, batch_size=4), progress=False)
    path = tmp_path / "stats.json"
    save_statistics(path, stats)
    return module, path


def layer_signatures(module: ModuleOp) -> dict[str, tuple]:
    """Each named op's kind, properties and operand/result types."""
    found = {}
    for op in module.walk():
        name = op.properties.get("name")
        if name is None or op.name in ("nn.constant", "qnn.constant"):
            continue
        props = tuple(sorted((k, str(v)) for k, v in op.properties.items()))
        types = tuple(str(v.type) for v in (*op.operands, *op.results))
        found[name.data] = (op.name, props, types)
    return found


def conversions(module: ModuleOp) -> list[str]:
    names = ("qnn.quantize", "qnn.dequantize", "qnn.requantize")
    return [op.name for op in module.walk() if op.name in names and "name" not in op.properties]


def run_float_and_quantized(original: ModuleOp, quantized: ModuleOp) -> float:
    feeds = [{"x": RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)} for _ in range(8)]
    ref = np.concatenate([run_module(original, f)["probs"].ravel() for f in feeds])
    got = np.concatenate([qnn_interpreter.run_module(quantized, f)["probs"].ravel() for f in feeds])
    return float(ref @ got / np.linalg.norm(ref) / np.linalg.norm(got))


# --------------------------------------------------------------------------- range sources


def test_stats_file_and_written_configuration(model, tmp_path):
    module, stats = model
    quantized = module.clone()
    config = tmp_path / "layers.json"
    apply_pipeline(quantized, f'quantize{{stats="{stats}" write_config="{config}"}}')
    assert run_float_and_quantized(module, quantized) > 0.99
    written = json.loads(config.read_text())
    assert written["format"] == "npuc-quantize-layers" and written["scheme"] == "int8-per-channel"
    layers = written["layers"]
    assert list(layers) == [
        "conv1",
        "conv2",
        "gate",
        "swish",
        "pool",
        "skip",
        "cat",
        "gap",
        "flat",
        "fc",
        "softmax",
    ]
    conv = layers["conv1"]
    assert (conv["op"], conv["bits"], conv["mode"]) == ("nn.conv2d", 8, "int")
    assert (conv["strategy"], conv["weight_strategy"], conv["weight_bits"]) == (
        "auto",
        "extrema",
        8,
    )
    assert conv["outputs"][0]["strategy"] in ("extrema", "percentile", "mse", "kl")
    assert conv["lowering"] == "qnn.conv2d"
    assert conv["weights"]["granularity"] == "per-channel" and len(conv["weights"]) >= 2
    assert [t["tensor"] for t in conv["inputs"]] == ["x", "w1"]
    assert isinstance(conv["inputs"][0]["scale"], float)
    assert isinstance(conv["inputs"][0]["zero_point"], int)
    assert len(conv["inputs"][1]["scale"]) == 6  # one per output channel
    assert conv["outputs"][0]["tensor"] == "conv1"
    assert layers["gate"]["lowering"] == "qnn.lut"
    softmax = layers["softmax"]
    assert (softmax["mode"], softmax["lowering"]) == ("int", "qnn.softmax")
    assert (softmax["outputs"][0]["scale"], softmax["outputs"][0]["zero_point"]) == (1 / 256, -128)


def test_activation_strategy_uses_the_calibration_library(model):
    module, stats = model
    quantized = module.clone()
    apply_pipeline(quantized, f'quantize{{stats="{stats}" activation_strategy="mean_std"}}')
    from npuc.passes.quantization.statistics import load_statistics

    tensors, _ = load_statistics(stats)
    lo, hi = activation_range(tensors["conv2"], "mean_std")
    assert (lo, hi) != activation_range(tensors["conv2"], "extrema")
    (conv2,) = [op for op in quantized.walk() if _named(op, "conv2")]
    q = conv2.results[0].type.element_type
    assert q.scale == pytest.approx((hi - lo) / 255, rel=1e-12)


def test_ranges_file_and_random_samples(model, tmp_path):
    module, _ = model
    _, intermediates = run_module(module, {"x": np.ones((1, 3, 8, 8), np.float32)}, keep="all")
    ranges = {k: [float(v.min()) - 1, float(v.max()) + 1] for k, v in intermediates.items()}
    ranges["x"] = [-3.0, 3.0]
    path = tmp_path / "ranges.json"
    path.write_text(json.dumps(ranges))
    by_file = module.clone()
    apply_pipeline(by_file, f'quantize{{ranges="{path}" scheme="uint8"}}')
    by_samples = module.clone()
    apply_pipeline(by_samples, "quantize{samples=4}")
    for quantized in (by_file, by_samples):
        assert any(op.name == "qnn.conv2d" for op in quantized.walk())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("", "exactly one of stats=PATH, ranges=PATH or samples=N"),
        ('ranges="missing.json"', "missing.json"),
        ('samples=2 layers="nope:16"', "no layer named nope"),
        ('samples=2 layers="conv1:12"', "SPEC must be 8, 16, int or float"),
        ('samples=2 layers="nn.frobnicate:float"', "unknown op type"),
    ],
)
def test_bad_pass_options(model, options, message):
    module, _ = model
    with pytest.raises(NpucError, match=message):
        apply_pipeline(module.clone(), f"quantize{{{options}}}")


def test_a_strategy_needs_statistics():
    module = onnx_cnn()
    overrides = LayerOverrides({"conv1": LayerSetting(strategy="kl")})
    with pytest.raises(NpucError, match="only fixed ranges were given"):
        quantize_module(module, {}, QuantizeConfig(overrides=overrides))


# --------------------------------------------------------------------------- configuration


def test_layers_option_syntax():
    parsed = parse_layers_option("conv1:16, fc:float,nn.sigmoid:float,gap:int")
    assert parsed.layers == {
        "conv1": LayerSetting(bits=16, mode="int"),
        "fc": LayerSetting(mode="float"),
        "gap": LayerSetting(mode="int"),
    }
    assert parsed.op_types == {"nn.sigmoid": LayerSetting(mode="float")}


def test_unchanged_configuration_reproduces_the_module(model, tmp_path):
    module, stats = model
    first, second = module.clone(), module.clone()
    config = tmp_path / "layers.json"
    apply_pipeline(first, f'quantize{{stats="{stats}" write_config="{config}"}}')
    apply_pipeline(second, f'quantize{{stats="{stats}" config="{config}"}}')
    assert str(first) == str(second)


@pytest.mark.parametrize(
    ("edit", "inserted"),
    [
        ({"bits": 16}, ["qnn.requantize", "qnn.requantize"]),
        ({"mode": "float"}, ["qnn.dequantize", "qnn.quantize"]),
    ],
)
def test_editing_one_layer_changes_only_it_and_its_boundaries(model, tmp_path, edit, inserted):
    module, stats = model
    config = tmp_path / "layers.json"
    before = module.clone()
    apply_pipeline(before, f'quantize{{stats="{stats}" write_config="{config}"}}')
    data = json.loads(config.read_text())
    data["layers"]["conv2"].update(edit)
    config.write_text(json.dumps(data))
    assert read_layer_config(config).layers["conv2"] == LayerSetting(
        bits=edit.get("bits", 8),
        mode=edit.get("mode", "int"),
        strategy="auto",
        weight_bits=8,
        weight_strategy="extrema",
    )
    after = module.clone()
    apply_pipeline(after, f'quantize{{stats="{stats}" config="{config}"}}')

    old, new = layer_signatures(before), layer_signatures(after)
    assert old.keys() == new.keys()
    changed = sorted(name for name in old if old[name] != new[name])
    assert changed == ["conv2"]
    if "bits" in edit:
        op_name, _, types = new["conv2"]
        assert op_name == "qnn.conv2d" and "i16" in types[0] and "i16" in types[-1]
    else:
        assert new["conv2"][0] == "nn.conv2d"
    # conv2 feeds the gate and the mul: one conversion in, one out (shared by both users).
    added = list(conversions(after))
    for name in conversions(before):
        added.remove(name)
    assert sorted(added) == sorted(inserted)
    assert run_float_and_quantized(module, after) > 0.99


def test_op_type_entries_and_similarity_for_display(model, tmp_path):
    module, _ = model
    config = tmp_path / "layers.json"
    config.write_text(json.dumps({"op_types": {"nn.sigmoid": {"mode": "float"}}}))
    quantized = module.clone()
    tensors = collect_statistics(module, random_dataset(module, 4), progress=False)
    report = quantize_module(
        quantized,
        ranges_from_statistics(tensors),
        QuantizeConfig(overrides=read_layer_config(config)),
    )
    assert [r.name for r in report.float_layers] == ["gate"]
    assert report.layers["gate"].reason == "configured float"
    out = tmp_path / "written.json"
    report.write_config(out, similarity={"conv1": 0.9993, "fc": 0.998})
    layers = json.loads(out.read_text())["layers"]
    assert layers["conv1"]["similarity"] == 0.9993 and layers["fc"]["similarity"] == 0.998
    assert "similarity" not in layers["conv2"]
    assert layers["gate"]["mode"] == "float"


def test_sixteen_bit_layer_without_lut_stays_float(model):
    module, stats = model
    quantized = module.clone()
    apply_pipeline(quantized, f'quantize{{stats="{stats}" layers="gate:16"}}')
    (gate,) = [op for op in quantized.walk() if _named(op, "gate")]
    assert gate.name == "nn.sigmoid"


def test_int16_scheme_with_an_8_bit_layer(model):
    module, stats = model
    quantized = module.clone()
    apply_pipeline(quantized, f'quantize{{stats="{stats}" scheme="int16" layers="gate:8"}}')
    (gate,) = [op for op in quantized.walk() if _named(op, "gate")]
    assert gate.name == "qnn.lut"
    storage = {
        op.properties["name"].data: op.results[0].type.element_type.storage
        for op in quantized.walk()
        if "name" in op.properties
        and isinstance(op.results[0].type, TensorType)
        and isinstance(op.results[0].type.element_type, UniformQuantizedType)
    }
    assert storage["gate"] == "i8" and storage["conv2"] == "i16" and storage["fc"] == "i16"
    assert run_float_and_quantized(module, quantized) > 0.999


def _named(op: Operation, name: str) -> bool:
    attr = op.properties.get("name")
    return attr is not None and attr.data == name


def test_per_layer_strategy_and_weight_bits(model, tmp_path):
    module, stats = model
    config = tmp_path / "layers.json"
    edits = {"conv2": {"strategy": "mean_std"}, "conv1": {"weight_bits": 4}}
    config.write_text(json.dumps({"layers": edits}))
    base, edited = module.clone(), module.clone()
    apply_pipeline(base, f'quantize{{stats="{stats}"}}')
    apply_pipeline(edited, f'quantize{{stats="{stats}" config="{config}"}}')
    old, new = layer_signatures(base), layer_signatures(edited)
    # conv2's new range reaches its two consumers (the gate's LUT, the mul's multiplier).
    assert sorted(n for n in old if old[n] != new[n]) == ["conv1", "conv2", "gate", "swish"]
    from npuc.passes.quantization.statistics import load_statistics

    lo, hi = activation_range(load_statistics(stats)[0]["conv2"], "mean_std")
    (conv2,) = [op for op in edited.walk() if _named(op, "conv2")]
    assert conv2.results[0].type.element_type.scale == pytest.approx((hi - lo) / 255, rel=1e-12)
    (conv1,) = [op for op in edited.walk() if _named(op, "conv1")]
    q = conv1.operands[1].type.element_type
    assert (q.storage, q.qmin, q.qmax) == ("i4", -7, 7)


# --------------------------------------------------------------- recorded results read back


def written(model, tmp_path: Path) -> tuple[ModuleOp, Path, dict]:
    """The module quantized with the stats, and the configuration file it wrote."""
    module, stats = model
    first = module.clone()
    config = tmp_path / "layers.json"
    apply_pipeline(first, f'quantize{{stats="{stats}" write_config="{config}"}}')
    return first, config, json.loads(config.read_text())


def other_statistics(module: ModuleOp, tmp_path: Path) -> Path:
    """Statistics of other random samples (seed 7): different ranges."""
    stats = collect_statistics(module, random_dataset(module, 16, seed=7), progress=False)
    path = tmp_path / "other-stats.json"
    save_statistics(path, stats)
    return path


def result_type(module: ModuleOp, layer: str) -> UniformQuantizedType:
    op = next(
        op
        for op in module.walk()
        if op.name.startswith("qnn.") and op.properties.get("name") == layer_name(layer)
    )
    element = op.results[0].type.element_type
    assert isinstance(element, UniformQuantizedType)
    return element


def layer_name(layer: str):
    from xdsl.dialects.builtin import StringAttr

    return StringAttr(layer)


def test_a_written_file_reproduces_its_quantization_from_other_statistics(model, tmp_path):
    first, config, _ = written(model, tmp_path)
    stats = other_statistics(model[0], tmp_path)
    recalibrated = model[0].clone()
    apply_pipeline(recalibrated, f'quantize{{stats="{stats}"}}')
    assert str(recalibrated) != str(first)  # the other statistics do change the scales
    again = model[0].clone()
    apply_pipeline(again, f'quantize{{stats="{stats}" config="{config}"}}')
    assert str(again) == str(first)


def test_an_edited_output_scale_is_applied(model, tmp_path):
    first, config, data = written(model, tmp_path)
    output = data["layers"]["conv2"]["outputs"][0]
    output["scale"], output["zero_point"] = output["scale"] * 1.5, 3
    config.write_text(json.dumps(data))
    module, stats = model
    apply_pipeline(module, f'quantize{{stats="{stats}" config="{config}"}}')
    q = result_type(module, "conv2")
    assert (q.scale, q.zero_point) == (output["scale"], 3)
    assert result_type(first, "conv2").scale != q.scale


def test_a_changed_strategy_recalibrates_the_layer_instead_of_pinning_its_scale(model, tmp_path):
    first, config, data = written(model, tmp_path)
    data["layers"]["conv2"]["strategy"] = "mse"
    config.write_text(json.dumps(data))
    module, stats = model
    apply_pipeline(module, f'quantize{{stats="{stats}" config="{config}"}}')
    assert result_type(module, "conv2").scale != result_type(first, "conv2").scale


@pytest.mark.parametrize(
    ("layer", "field", "value", "message"),
    [
        (
            "pool",
            ("outputs", 0, "scale"),
            0.5,
            r"layers\.pool\.outputs\[0\]: scale 0\.5.* cannot be applied "
            r".*qnn\.max_pool2d keeps its input's type",
        ),
        (
            "swish",
            ("inputs", 0, "scale"),
            0.5,
            r"layers\.swish\.inputs\[0\]: .*an input takes the type its producer gives it",
        ),
        (
            "softmax",
            ("outputs", 0, "zero_point"),
            0,
            r"layers\.softmax\.outputs\[0\]: .*fixed at scale 1/256",
        ),
        (
            "conv1",
            ("lowering",),
            "qnn.matmul",
            r"layers\.conv1\.lowering: edited to 'qnn\.matmul', but it is a result of quantization",
        ),
        (
            "conv1",
            ("outputs", 0, "storage"),
            "i16",
            r"layers\.conv1\.outputs\[0\]\.storage: edited to i16.*follows the layer's bits",
        ),
        (
            "conv1",
            ("outputs", 0, "scale"),
            -1.0,
            r"layers\.conv1\.outputs\[0\]\.scale: must be a positive finite number",
        ),
    ],
)
def test_an_edited_result_that_cannot_apply_is_refused(
    model, tmp_path, layer, field, value, message
):
    _, config, data = written(model, tmp_path)
    target = data["layers"][layer]
    for key in field[:-1]:
        target = target[key]
    target[field[-1]] = value
    config.write_text(json.dumps(data))
    module, stats = model
    with pytest.raises(NpucError, match=message):
        apply_pipeline(module, f'quantize{{stats="{stats}" config="{config}"}}')
