"""The tools and the Python API on the bundled example, checked against onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnxruntime_reference import reference_session
from tool_runner import EXAMPLE, run_tool

import npuc


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return np.random.default_rng(7).standard_normal((1, 3, 16, 16)).astype(np.float32)


@pytest.fixture(scope="module")
def reference(image: np.ndarray) -> np.ndarray:
    session = reference_session(EXAMPLE)
    return session.run(["probs"], {"image": image})[0]


def test_npu_run_saves_outputs_matching_onnxruntime(tmp_path: Path, image, reference):
    feed = tmp_path / "image.npy"
    np.save(feed, image)
    out = tmp_path / "out.npz"
    result = run_tool("npu-run", EXAMPLE, "--input", f"image={feed}", "-o", out, "-p", "default")
    assert result.returncode == 0, result.stderr
    assert "probs: shape (1, 10) float32" in result.stdout
    with np.load(out) as saved:
        assert list(saved.files) == ["probs"]
        np.testing.assert_allclose(saved["probs"], reference, rtol=1e-5, atol=1e-6)


def test_npu_run_generates_missing_inputs_deterministically(tmp_path: Path):
    outs = []
    for i in range(2):
        out = tmp_path / f"out{i}.npz"
        result = run_tool("npu-run", EXAMPLE, "-o", out)
        assert result.returncode == 0, result.stderr
        assert "no --input for 'image'" in result.stdout
        with np.load(out) as saved:
            outs.append(saved["probs"])
    np.testing.assert_array_equal(outs[0], outs[1])


def test_npu_opt_imports_onnx_and_output_parses_back(tmp_path: Path):
    first = run_tool("npu-opt", EXAMPLE)
    assert first.returncode == 0, first.stderr
    assert 'name = "conv1"' in first.stdout and '{nn.name = "image"}' in first.stdout
    text = tmp_path / "tiny.mlir"
    text.write_text(first.stdout)
    again = run_tool("npu-opt", text)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout


def test_default_pipeline_folds_and_fuses(tmp_path: Path):
    from npuc.registry import DEFAULT_PIPELINE

    result = run_tool("npu-opt", EXAMPLE, "-p", DEFAULT_PIPELINE)
    assert result.returncode == 0, result.stderr
    ir = result.stdout
    assert "nn.batch_norm" not in ir
    assert "nn.relu" not in ir and "nn.clip" not in ir
    assert ir.count('activation = "clip"') == 3


def test_mlir_model_runs_like_the_onnx_model(tmp_path: Path, image, reference):
    mlir = tmp_path / "tiny.mlir"
    result = run_tool("npu-opt", EXAMPLE, "-o", mlir)
    assert result.returncode == 0, result.stderr
    outputs = npuc.run(mlir, {"image": image})
    np.testing.assert_allclose(outputs["probs"], reference, rtol=1e-5, atol=1e-6)


def test_python_api_matches_onnxruntime(image, reference):
    module = npuc.load_model(EXAMPLE)
    npuc.apply_pipeline(module)
    outputs = npuc.run(module, {"image": image})
    np.testing.assert_allclose(outputs["probs"], reference, rtol=1e-5, atol=1e-6)


def test_npu_opt_version_is_npucs():
    result = run_tool("npu-opt", "--version")
    assert result.returncode == 0 and result.stdout.startswith("npu-opt ")
