"""Dynamic input dimensions fixed by the data a model is given (issue 13, item 6).

`npu-run --input`, `npu-compile --calib` (its first sample) and `npuc.run` take a dynamic
input's shape from the arrays; `--input-shape` overrides; a shape that contradicts the
model's fixed dimensions is an error. Outputs are checked against onnxruntime.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_models import float_graph, random_init
from onnxruntime_reference import reference_session
from tool_runner import run_tool

import npuc
from npuc.diagnostics import NpucError


def dynamic_model(tmp_path: Path) -> Path:
    """Conv 3->4 (3x3, pad 1) + Relu on an input declared N x 3 x H x W."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    model = float_graph(
        nodes, [random_init(rng, "w", [4, 3, 3, 3])], ["N", 3, "H", "W"], ["N", 4, "H", "W"]
    )
    path = tmp_path / "dynamic.onnx"
    onnx.save(model, path)
    return path


def test_npu_run_takes_the_shape_from_the_input_array(tmp_path):
    model = dynamic_model(tmp_path)
    x = np.random.default_rng(1).standard_normal((1, 3, 12, 20)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "y.npz"
    done = run_tool("npu-run", model, "--input", f"x={tmp_path / 'x.npy'}", "-o", out)
    assert done.returncode == 0, done.stderr
    assert "note: input 'x': shape 1x3x12x20 from its --input array" in done.stdout.splitlines()
    expected = reference_session(model).run(None, {"x": x})[0]
    with np.load(out) as saved:
        np.testing.assert_allclose(saved["y"], expected, rtol=1e-5, atol=1e-5)


def test_a_shape_against_the_fixed_dimensions_is_an_error(tmp_path):
    model = dynamic_model(tmp_path)
    np.save(tmp_path / "x.npy", np.zeros((1, 5, 8, 8), np.float32))
    done = run_tool("npu-run", model, "--input", f"x={tmp_path / 'x.npy'}")
    assert done.returncode == 1
    assert "input 'x' is declared ?x3x?x?, but its --input array has shape 1x5x8x8" in done.stderr


def test_without_data_the_error_names_the_open_dimensions(tmp_path):
    done = run_tool("npu-run", dynamic_model(tmp_path))
    assert done.returncode == 1
    assert "--input-shape x:1,3,?,? (a size for each ?), or an --input array" in done.stderr


def test_npu_compile_takes_the_shape_from_the_first_calibration_sample(tmp_path):
    model = dynamic_model(tmp_path)
    calib = tmp_path / "calib"
    calib.mkdir()
    rng = np.random.default_rng(2)
    for i in range(3):  # samples without the batch dimension
        np.save(calib / f"{i}.npy", rng.standard_normal((3, 10, 14)).astype(np.float32))
    out = tmp_path / "out"
    done = run_tool("npu-compile", model, "--target", "mcu-64", "--calib", calib, "-o", out)
    assert done.returncode == 0, done.stderr
    assert "note: input 'x': shape 1x3x10x14 from the first calibration sample" in done.stdout
    header = (out / "dynamic.h").read_text()
    assert f"#define DYNAMIC_INPUT_X_SIZE {3 * 10 * 14}" in header


def test_input_shape_overrides_the_data(tmp_path):
    model = dynamic_model(tmp_path)
    np.save(tmp_path / "x.npy", np.zeros((1, 3, 8, 8), np.float32))
    done = run_tool(
        "npu-run", model, "--input", f"x={tmp_path / 'x.npy'}", "--input-shape", "x:1,3,6,6"
    )
    assert "note:" not in done.stdout
    assert done.returncode == 1  # the array no longer fits the shape that was asked for


def test_the_python_api_takes_shapes_from_its_inputs(tmp_path):
    model = dynamic_model(tmp_path)
    x = np.random.default_rng(3).standard_normal((1, 3, 7, 9)).astype(np.float32)
    y = npuc.run(model, {"x": x})["y"]
    expected = reference_session(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(NpucError, match="dynamic dimensions"):
        npuc.run(model)
