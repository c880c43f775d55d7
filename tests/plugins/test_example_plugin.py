"""The example plugin (examples/plugins/npuc-example-ops, an installed entry point) end to end:
its op against numpy's formula, compiled to the NPU bit-exactly against the qnn interpreter,
in the profile, its pass, its target, and the same model without it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from compile_helpers import assert_not_degenerate, assert_same, compile_and_run, quantize_float
from flatbuffers import flexbuffers
from onnx import TensorProto, helper
from plugin_variants import MODEL, variant_env
from tflite_builder import TFLiteModel
from tool_runner import run_tool

import npuc
from npuc.diagnostics import NpucError
from npuc.frontends.tflite import import_tflite
from npuc.runtime.executor import Executor
from npuc.runtime.loader import load
from npuc.runtime.qnn_interpreter import random_inputs, run_module
from npuc.target import available_targets, load_target, shipped_targets

SOFT_CLIP_LAYERS = ("soft_clip1", "soft_clip2")


def numpy_soft_clip(x: np.ndarray, limit: float) -> np.ndarray:
    """SoftClip as the plugin documents it, in float64."""
    return limit * np.tanh(x.astype(np.float64) / limit)


def soft_clip_model(limit: float, shape: list[int]) -> onnx.ModelProto:
    node = helper.make_node("SoftClip", ["x"], ["y"], name="clip", domain="com.example")
    node.attribute.append(helper.make_attribute("limit", limit))
    graph = helper.make_graph(
        [node],
        "one_soft_clip",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
    )
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)]
    return helper.make_model(graph, opset_imports=opsets)


def test_float_kernel_matches_the_formula(tmp_path: Path) -> None:
    path = tmp_path / "clip.onnx"
    onnx.save(soft_clip_model(2.5, [2, 3, 50]), path)
    x = np.linspace(-12.0, 12.0, 300, dtype=np.float32).reshape(2, 3, 50)
    y = npuc.run(str(path), {"x": x})["y"]
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, numpy_soft_clip(x, 2.5), rtol=1e-6, atol=1e-6)
    assert np.abs(y).max() < 2.5 and np.abs(y).max() > 2.49  # it saturates smoothly


def test_tflite_custom_operator_converts_with_its_options() -> None:
    m = TFLiteModel()
    x = m.tensor("x", [1, 4, 4, 3])
    y = m.tensor("y", [1, 4, 4, 3])
    m.custom_op("SoftClip", [x], [y], bytes(flexbuffers.Dumps({"limit": 0.75})))
    module = import_tflite(m.build([x], [y]))
    assert [op.name for op in module.walk() if op.name.startswith("example.")] == [
        "example.soft_clip"
    ]
    data = np.random.default_rng(1).standard_normal((1, 4, 4, 3)).astype(np.float32) * 3
    got = next(iter(run_module(module, {"x": data}).values()))
    np.testing.assert_allclose(got, numpy_soft_clip(data, 0.75), rtol=1e-6, atol=1e-6)


def test_quantized_soft_clip_lowers_to_lut_and_runs_bit_exact() -> None:
    quantized = quantize_float(npuc.load_model(MODEL))
    names = [op.name for op in quantized.walk() if op.name.startswith("example.")]
    assert names == ["example.qsoft_clip", "example.qsoft_clip"]
    inputs = random_inputs(quantized, seed=3)
    reference = run_module(quantized, inputs)
    assert_not_degenerate(reference)
    # host=float: a quantized op without an NPU instruction would be refused
    outputs, program = compile_and_run(quantized, "ethos-u55-256-hee", "performance", inputs)
    assert_same(reference, outputs)
    luts = [program.layers[i.layer] for i in program.instructions if i.op == "lut"]
    assert sorted(luts) == list(SOFT_CLIP_LAYERS)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's command: npu-compile of the example model for the Ethos-U55."""
    out = tmp_path_factory.mktemp("compiled")
    done = run_tool(
        "npu-compile", MODEL, "--target", "ethos-u55-256-hee", "--calib-random", "4", "-o", out
    )
    assert done.returncode == 0, done.stderr
    return out


def test_npu_compile_binary_is_bit_exact_with_the_qnn_interpreter(compiled: Path) -> None:
    quantized = quantize_float(npuc.load_model(MODEL))  # npu-compile's calibration
    inputs = random_inputs(quantized, seed=7)
    program = load((compiled / "model.npubin").read_bytes())
    assert_same(run_module(quantized, inputs), Executor(program).run(inputs))


def test_soft_clip_layers_appear_in_the_profile(compiled: Path) -> None:
    profile = json.loads((compiled / "model.profile.json").read_text())
    layers = {layer["name"]: layer for layer in profile["layers"]}
    for name in SOFT_CLIP_LAYERS:
        assert layers[name]["cycles"] > 0 and layers[name]["instructions"] == 1
    table = (compiled / "model.profile.txt").read_text()
    assert all(name in table for name in SOFT_CLIP_LAYERS)


def test_list_plugins_shows_what_the_example_provides() -> None:
    done = run_tool("npu-opt", "--list-plugins")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "example: entry point npuc_example_ops:plugin (npuc-example-ops 0.1.0)" in text
    for line in (
        "dialect: example",
        "ONNX ops: com.example::SoftClip",
        "TFLite custom ops: SoftClip (float)",
        "kernels: example.soft_clip, example.qsoft_clip",
        "quantization: example.soft_clip -> example.qsoft_clip (8-bit)",
        "NPU lowerings: example.qsoft_clip",
        "passes: example-harden-soft-clip",
        "targets: example-npu",
    ):
        assert f"  {line}\n" in text


def test_plugin_pass_runs_in_a_pipeline_with_its_option() -> None:
    done = run_tool("npu-opt", MODEL, "-p", "example-harden-soft-clip{min_limit=2.0}")
    assert done.returncode == 0, done.stderr
    # soft_clip1 (limit 1) stays; soft_clip2 (limit 3) becomes a clip to [-3, 3]
    assert done.stdout.count("example.soft_clip") == 1
    assert "nn.clip %" in done.stdout and "max = 3.000000e+00 : f32" in done.stdout
    assert "min = -3.000000e+00 : f32" in done.stdout


def test_plugin_pass_changes_only_what_its_option_selects() -> None:
    module = npuc.load_model(MODEL)
    npuc.apply_pipeline(module, "example-harden-soft-clip{min_limit=0.5}")
    assert not [op for op in module.walk() if op.name.startswith("example.")]
    x = np.random.default_rng(2).standard_normal((1, 3, 16, 16)).astype(np.float32)
    hard = npuc.run(module, {"image": x})["logits"]
    soft = npuc.run(str(MODEL), {"image": x})["logits"]
    assert not np.allclose(hard, soft)  # a clip is not a tanh


def test_plugin_target_is_listed_and_compiles() -> None:
    assert "example-npu" in available_targets()
    assert "example-npu" not in shipped_targets()
    assert load_target("example-npu").sram.size == 64 * 1024
    quantized = quantize_float(npuc.load_model(MODEL))
    inputs = random_inputs(quantized, seed=5)
    outputs, _ = compile_and_run(quantized, "example-npu", "size", inputs)
    assert_same(run_module(quantized, inputs), outputs)


def test_textual_ir_with_plugin_ops_parses_back() -> None:
    module = npuc.load_model(MODEL)
    text = str(module)
    assert "example.soft_clip" in text
    assert str(npuc.parse_mlir(text)) == text


def test_without_the_plugin_the_op_needs_one() -> None:
    done = run_tool("npu-opt", MODEL, env=variant_env(None))
    assert done.returncode == 1
    assert done.stderr == (
        f"npu-opt: {MODEL}: error: op 'com.example::SoftClip' needs a plugin that provides it; "
        "installed plugins: none\n"
    )


def test_an_op_no_installed_plugin_provides_lists_the_installed_ones(tmp_path: Path) -> None:
    model = soft_clip_model(1.0, [4])
    model.graph.node[0].domain = "com.other"
    model.opset_import.append(helper.make_opsetid("com.other", 1))
    path = tmp_path / "other.onnx"
    onnx.save(model, path)
    with pytest.raises(NpucError) as error:
        npuc.load_model(path)
    assert error.value.message == (
        "op 'com.other::SoftClip' needs a plugin that provides it; installed plugins: example"
    )
