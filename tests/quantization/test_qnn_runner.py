"""Running whole qnn and mixed nn/qnn functions: inputs, outputs, levels, and npu-run."""

from __future__ import annotations

import numpy as np
import pytest
from tool_runner import run_tool

from npuc.api import apply_pipeline, parse_mlir
from npuc.api import random_inputs as float_random_inputs
from npuc.diagnostics import NpucError
from npuc.dialects import qnn
from npuc.runtime import nn_interpreter
from npuc.runtime.interpreter_kernels import QNN_KERNELS
from npuc.runtime.qnn_interpreter import (
    check_level,
    dequantized_outputs,
    random_inputs,
    run_module,
)

A = "!qnn.uniform<i8:f32, 0.05:-3>"
B = "!qnn.uniform<u8:f32, 0.02:100>"
W = "!qnn.uniform<i8:f32:0, {0.01, 0.02}>"

# A 1x1 convolution (so the reference is a channel matmul), a float sigmoid between
# dequantize and quantize, then an integer max pool: a hybrid graph.
HYBRID = f"""
func.func @main(%x: tensor<1x3x4x4xf32> {{nn.name = "x"}})
    -> (tensor<1x2x2x2x{B}> {{nn.name = "y"}}, tensor<1x2x4x4xf32> {{nn.name = "s"}}) {{
  %w = qnn.constant {{value = dense<[[[[10]], [[-20]], [[30]]], [[[-40]], [[50]], [[7]]]]>
    : tensor<2x3x1x1xi8>}} : tensor<2x3x1x1x{W}>
  %b = qnn.constant {{value = dense<[100, -100]> : tensor<2xi32>}} : tensor<2xi32>
  %q = qnn.quantize %x {{name = "q"}} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4x{A}>
  %c = qnn.conv2d %q, %w, %b {{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>,
    dilations = array<i64: 1, 1>, groups = 1 : i64, multiplier = array<i64: 1073741824, 1073741824>,
    shift = array<i64: 32, 31>, name = "conv"}}
    : (tensor<1x3x4x4x{A}>, tensor<2x3x1x1x{W}>, tensor<2xi32>) -> tensor<1x2x4x4x{A}>
  %d = qnn.dequantize %c : (tensor<1x2x4x4x{A}>) -> tensor<1x2x4x4xf32>
  %s = nn.sigmoid %d {{name = "sigmoid"}} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %r = qnn.quantize %s : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4x{B}>
  %y = qnn.max_pool2d %r {{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>,
    pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, name = "pool"}}
    : (tensor<1x2x4x4x{B}>) -> tensor<1x2x2x2x{B}>
  func.return %y, %s : tensor<1x2x2x2x{B}>, tensor<1x2x4x4xf32>
}}
"""

N = "!qnn.uniform<i4<-7:7>:f32, 0.5>"
QUANTIZED_ARGS = f"""
func.func @main(%x: tensor<2x3x{A}> {{nn.name = "x"}}, %n: tensor<3x{N}> {{nn.name = "n"}})
    -> (tensor<2x3x{B}> {{nn.name = "y"}}, tensor<3x{N}> {{nn.name = "m"}}) {{
  %y = qnn.requantize %x {{multiplier = array<i64: 1342177280>, shift = array<i64: 30>}}
    : (tensor<2x3x{A}>) -> tensor<2x3x{B}>
  %m = qnn.reshape %n : (tensor<3x{N}>) -> tensor<3x{N}>
  func.return %y, %m : tensor<2x3x{B}>, tensor<3x{N}>
}}
"""


def half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def test_hybrid_graph_runs_integer_and_float_layers():
    rng = np.random.default_rng(3)
    x = rng.normal(0, 2, (1, 3, 4, 4)).astype(np.float32)
    out, kept = run_module(parse_mlir(HYBRID), {"x": x}, keep="all")
    # Reference from docs/quantization.md: quantize, centred 1x1 conv + bias, requantize, ...
    q = np.clip(half_away(x.astype(np.float64) / 0.05) - 3, -128, 127).astype(np.int64)
    w = np.array([[10, -20, 30], [-40, 50, 7]], np.int64)
    acc = np.einsum("oc,nchw->nohw", w, q + 3) + np.array([100, -100]).reshape(2, 1, 1)
    scaled = acc * (1 << 30) / np.array([2.0**32, 2.0**31]).reshape(2, 1, 1)  # exact in float64
    c = np.clip(half_away(scaled) - 3, -128, 127)
    s = (1 / (1 + np.exp(-((c + 3) * 0.05).astype(np.float32)))).astype(np.float32)
    r = np.clip(half_away(s.astype(np.float64) / 0.02) + 100, 0, 255)
    y = r.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5))
    np.testing.assert_allclose(out["s"], s, rtol=1e-6)
    np.testing.assert_array_equal(out["y"], y)
    assert out["y"].dtype == np.uint8 and kept["conv"].dtype == np.int8
    np.testing.assert_array_equal(kept["conv"], c)
    assert set(kept) == {"q", "conv", "%d", "sigmoid", "%r", "pool"}  # constants are not kept


def test_quantized_arguments_take_floats_or_stored_integers():
    module = parse_mlir(QUANTIZED_ARGS)
    x_float = np.array([[0.124, -0.126, 6.0], [-7.0, 0.0, 0.025]], np.float32)
    n = np.array([-7, 0, 7], np.int8)
    out = run_module(module, {"x": x_float, "n": n})
    x_stored = np.clip(half_away(x_float.astype(np.float64) / 0.05) - 3, -128, 127)
    assert x_stored.tolist() == [[-1.0, -6.0, 117.0], [-128.0, -3.0, -2.0]]  # -2.5 -> -3 etc.
    again = run_module(module, {"x": x_stored.astype(np.int8), "n": n})
    np.testing.assert_array_equal(out["y"], again["y"])
    np.testing.assert_array_equal(out["m"], n)
    from_float = run_module(module, {"x": x_float, "n": np.array([-3.6, 0.2, 99.0])})
    assert from_float["m"].tolist() == [-7, 0, 7]  # quantized with scale 0.5, narrow range


@pytest.mark.parametrize(
    ("feeds", "message"),
    [
        ({"x": np.zeros((2, 3), np.int16)}, "has dtype int16 but the model expects floats"),
        ({"x": np.zeros((3, 2), np.float32)}, "has shape (3, 2) but the model expects (2, 3)"),
        ({"n": np.array([-8, 0, 0], np.int8)}, "outside the storage range [-7, 7]"),
    ],
)
def test_bad_quantized_inputs_are_diagnosed(feeds, message):
    good = {"x": np.zeros((2, 3), np.int8), "n": np.zeros(3, np.int8)}
    with pytest.raises(NpucError) as info:
        run_module(parse_mlir(QUANTIZED_ARGS), good | feeds)
    assert message in str(info.value)


def test_unsigned_constants_in_signless_storage_are_reinterpreted():
    module = parse_mlir(
        f"""
        func.func @main() -> tensor<2x{B}> {{
          %c = qnn.constant {{value = dense<[-56, 100]> : tensor<2xi8>}} : tensor<2x{B}>
          func.return %c : tensor<2x{B}>
        }}
        """
    )
    out = run_module(module, {})
    assert out["output_0"].dtype == np.uint8 and out["output_0"].tolist() == [200, 100]


def test_levels_random_inputs_and_dequantized_outputs():
    hybrid, quantized = parse_mlir(HYBRID), parse_mlir(QUANTIZED_ARGS)
    check_level(hybrid, "qnn")
    with pytest.raises(NpucError, match=r"'qnn\.constant' is above the nn level"):
        check_level(hybrid, "nn")
    with pytest.raises(NpucError, match="has quantized tensors, above the nn level"):
        check_level(quantized, "nn")
    float_only = parse_mlir(
        'func.func @main(%x: tensor<3xf32> {nn.name = "x"}) -> tensor<3xf32> {\n'
        "  %0 = nn.relu %x : (tensor<3xf32>) -> tensor<3xf32>\n"
        "  func.return %0 : tensor<3xf32>\n}"
    )
    check_level(float_only, "nn")
    same = random_inputs(hybrid, seed=5)
    np.testing.assert_array_equal(same["x"], float_random_inputs(hybrid, seed=5)["x"])
    feeds = random_inputs(quantized, skip={"n"}, seed=1)
    assert set(feeds) == {"x"} and feeds["x"].dtype == np.float32
    out = run_module(quantized, {**feeds, "n": np.ones(3, np.int8)})
    named = dequantized_outputs(quantized, out)
    assert set(named) == {"y", "y.q", "m", "m.q"}
    np.testing.assert_array_equal(named["y.q"], out["y"])
    want = (0.02 * (out["y"].astype(np.float64) - 100)).astype(np.float32)
    np.testing.assert_array_equal(named["y"], want)
    assert named["m"].tolist() == [0.5, 0.5, 0.5]


def test_integer_kernels_stay_out_of_the_float_registry():
    """fold-constants evaluates nn-level kernels only: it must leave qnn ops alone."""
    assert qnn.QuantizeOp in QNN_KERNELS
    assert nn_interpreter.kernel_for(qnn.QuantizeOp) is None
    module = parse_mlir(
        f"""
        func.func @main() -> tensor<2x{A}> {{
          %c = nn.constant dense<[0.5, -1.0]> : tensor<2xf32>
          %q = qnn.quantize %c : (tensor<2xf32>) -> tensor<2x{A}>
          func.return %q : tensor<2x{A}>
        }}
        """
    )
    apply_pipeline(module, "fold-constants")
    assert any(op.name == "qnn.quantize" for op in module.walk())
    assert run_module(module, {})["output_0"].tolist() == [7, -23]


def test_npu_run_level_qnn(tmp_path):
    model = tmp_path / "hybrid.mlir"
    model.write_text(HYBRID)
    x = np.random.default_rng(0).normal(0, 1, (1, 3, 4, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    done = run_tool(
        "npu-run",
        model,
        "--level",
        "qnn",
        "--input",
        f"x={tmp_path / 'x.npy'}",
        "-o",
        tmp_path / "out.npz",
    )
    assert done.returncode == 0, done.stderr
    assert "y.q: shape (1, 2, 2, 2) uint8" in done.stdout
    saved = np.load(tmp_path / "out.npz")
    assert sorted(saved.files) == ["s", "y", "y.q"]
    want = run_module(parse_mlir(HYBRID), {"x": x})
    np.testing.assert_array_equal(saved["y.q"], want["y"])
    np.testing.assert_array_equal(saved["y"], (0.02 * (want["y"] - 100.0)).astype(np.float32))
    refused = run_tool("npu-run", model, "--level", "nn")
    assert refused.returncode != 0
    assert "'qnn.constant' is above the nn level" in refused.stderr
    assert "--level" in run_tool("npu-run", "--help").stdout


def test_npu_run_takes_stored_integers_and_generates_quantized_inputs(tmp_path):
    model = tmp_path / "args.mlir"
    model.write_text(QUANTIZED_ARGS)
    np.save(tmp_path / "x.npy", np.full((2, 3), 17, np.int8))
    done = run_tool(
        "npu-run", model, "--input", f"x={tmp_path / 'x.npy'}", "-o", tmp_path / "o.npz"
    )
    assert done.returncode == 0, done.stderr
    assert "note: no --input for 'n'" in done.stdout
    saved = np.load(tmp_path / "o.npz")
    # (17 + 3) * 1.25 = 25 above the zero point 100
    assert saved["y.q"].tolist() == [[125] * 3] * 2
    np.save(tmp_path / "bad.npy", np.zeros((2, 3), np.int64))
    bad = run_tool("npu-run", model, "--input", f"x={tmp_path / 'bad.npy'}")
    assert bad.returncode != 0 and "has dtype int64" in bad.stderr


def test_npu_run_levels_below_qnn_take_tiled_and_planned_modules(tmp_path):
    module = parse_mlir(HYBRID)
    x = np.random.default_rng(1).normal(0, 1, (1, 3, 4, 4)).astype(np.float32)
    want = run_module(module, {"x": x})
    apply_pipeline(module, 'tile{target="mcu-64" manual="(0,0,2,1)"},plan-memory{target="mcu-64"}')
    names = {op.name.split(".")[0] for op in module.walk()}
    assert {"tile", "mem"} <= names
    model = tmp_path / "planned.mlir"
    model.write_text(str(module))
    np.save(tmp_path / "x.npy", x)
    done = run_tool(
        "npu-run",
        model,
        "--level",
        "mem",
        "--input",
        f"x={tmp_path / 'x.npy'}",
        "-o",
        tmp_path / "out.npz",
    )
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["y.q"], want["y"])
    refused = run_tool("npu-run", model, "--level", "tile")
    assert refused.returncode != 0
    assert "'mem.region' is above the tile level" in refused.stderr
