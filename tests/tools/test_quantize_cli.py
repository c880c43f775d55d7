"""`npu-run --quantize ...`: the command-line contract scripts depend on, on the digits CNN."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from digits_model import digits_cnn, digits_data
from onnxruntime_reference import reference_session
from tool_runner import run_tool


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """The batch-1 digits model, 64 calibration images and 100 test images as .npy folders."""
    root = tmp_path_factory.mktemp("digits")
    onnx.save(digits_cnn(batch=1), root / "digits.onnx")
    data = digits_data()
    for folder, images in (("calib", data.train_x[:64]), ("test", data.test_x[:100])):
        (root / folder).mkdir()
        for i, image in enumerate(images):
            np.save(root / folder / f"{i:04d}.npy", image)
    return root


def quantize(workspace: Path, *extra: str):
    return run_tool(
        "npu-run",
        workspace / "digits.onnx",
        "--quantize",
        "int8-per-channel",
        "--calib",
        workspace / "calib",
        *extra,
    )


def test_compare_writes_the_json_contract(workspace: Path):
    report = workspace / "report.json"
    result = quantize(workspace, "--compare", "--data", workspace / "test", "--json", report)
    assert result.returncode == 0, result.stderr
    assert "logits" in result.stdout and "worst" in result.stdout
    data = json.loads(report.read_text())
    fields = {"name", "cosine", "sqnr_db", "top1_agreement"}
    (logits,) = data["outputs"]
    assert fields <= logits.keys() and logits["name"] == "logits"
    assert logits["cosine"] > 0.999 and logits["top1_agreement"] >= 0.98
    assert {t["name"] for t in data["tensors"]} >= {"conv1", "conv2", "fc"}
    assert all(fields <= t.keys() for t in data["tensors"])
    assert data["meta"]["samples"] == 100


def test_saved_statistics_reload_to_the_same_result(workspace: Path):
    stats, first, second = (workspace / n for n in ("stats.json", "a.json", "b.json"))
    args = ("--compare", "--data", workspace / "test")
    assert quantize(workspace, *args, "--save-stats", stats, "--json", first).returncode == 0
    again = run_tool(
        "npu-run",
        workspace / "digits.onnx",
        "--quantize",
        "int8-per-channel",
        "--stats",
        stats,
        *args,
        "--json",
        second,
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(first.read_text())["outputs"] == json.loads(second.read_text())["outputs"]


def test_search_promotes_layers_until_the_target_is_met(workspace: Path):
    report = workspace / "search.json"
    target = 0.99995
    result = quantize(
        workspace, "--data", workspace / "test", "--target-cosine", str(target), "--json", report
    )
    assert result.returncode == 0, result.stderr
    assert "mixed precision: promoted to int16:" in result.stdout
    promoted = result.stdout.split("promoted to int16:")[1].splitlines()[0].strip()
    assert promoted != "none"
    assert json.loads(report.read_text())["outputs"][0]["cosine"] >= target


def test_a_target_the_search_cannot_meet_is_an_error_naming_why(workspace: Path):
    """Promoting every layer to int16 cannot reach a cosine of 1 - 1e-12."""
    result = quantize(workspace, "--data", workspace / "test", "--target-cosine", "0.999999999999")
    assert result.returncode == 1, result.stdout
    assert "mixed precision: the target (cosine >= 0.999999999999) is not met" in result.stderr
    assert "no integer layer is left to promote" in result.stderr
    assert "output 'logits' stays furthest from it" in result.stderr
    assert "Traceback" not in result.stderr
    steps = [line for line in result.stdout.splitlines() if "worst output cosine" in line]
    assert len(steps) >= 3 and steps[0].startswith("  none promoted:")


def test_edited_layer_config_changes_that_layer(workspace: Path):
    config = workspace / "layers.json"
    assert quantize(workspace, "--write-layer-config", config).returncode == 0
    layers = json.loads(config.read_text())
    assert layers["layers"]["conv2"]["mode"] == "int"
    layers["layers"]["conv2"]["mode"] = "float"
    config.write_text(json.dumps(layers))
    result = quantize(workspace, "--layer-config", config, "--print-ir")
    assert result.returncode == 0, result.stderr
    conv_lines = [line for line in result.stdout.splitlines() if "conv2d" in line]
    assert any("nn.conv2d" in line and 'name = "conv2"' in line for line in conv_lines)
    assert any("qnn.conv2d" in line and 'name = "conv1"' in line for line in conv_lines)


def test_exported_qdq_model_runs_in_onnxruntime_like_npuc(workspace: Path):
    exported = workspace / "digits_qdq.onnx"
    image = workspace / "one.npy"
    np.save(image, digits_data().test_x[:1])
    out = workspace / "npuc.npz"
    result = quantize(workspace, "--export-qdq", exported, "--input", f"image={image}", "-o", out)
    assert result.returncode == 0, result.stderr
    onnx.checker.check_model(onnx.load(exported), full_check=True)
    session = reference_session(exported)
    theirs = session.run(None, {"image": np.load(image)})[0]
    with np.load(out) as saved:
        ours = saved["logits"]
    step = np.abs(np.diff(np.unique(ours))).min()  # one output quantization step, at most
    assert np.abs(ours - theirs).max() <= step + 1e-6


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--compare"], "--compare needs --quantize"),
        (["--quantize", "int8"], "needs calibration"),
        (["--quantize", "int8", "--calib-random", "0"], "positive number"),
        (["--quantize", "int8", "--calib", "no-such-dir"], "no-such-dir"),
        (["--quantize", "int8", "--calib-random", "4", "--activation-strategy", "nope"], "nope"),
    ],
)
def test_bad_quantization_options(workspace: Path, args, message):
    result = run_tool("npu-run", workspace / "digits.onnx", *args)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and message in result.stderr, result.stderr


def test_outlier_trimming_narrows_recorded_ranges(workspace: Path):
    plain, trimmed = workspace / "plain.json", workspace / "trimmed.json"
    assert quantize(workspace, "--save-stats", plain).returncode == 0
    assert (
        quantize(workspace, "--save-stats", trimmed, "--outlier-percentile", "99").returncode == 0
    )
    full = json.loads(plain.read_text())["tensors"]["conv2"]
    cut = json.loads(trimmed.read_text())["tensors"]["conv2"]
    assert cut["max"] < full["max"]
    assert cut["count"] < full["count"]


def test_search_reports_each_steps_cost_on_the_cost_target(workspace: Path):
    result = quantize(
        workspace,
        "--data",
        workspace / "test",
        "--target-cosine",
        "0.9999",
        "--cost-target",
        "ethos-u55-256-hee",
    )
    assert result.returncode == 0, result.stderr
    steps = [line for line in result.stdout.splitlines() if "worst output cosine" in line]
    assert len(steps) >= 2
    costs = []
    for line in steps:
        found = re.search(r"; ([\d,]+) cycles \(([+-][\d.]+)%\), SRAM ([\d.]+) KiB", line)
        assert found, line
        costs.append((int(found[1].replace(",", "")), float(found[2]), float(found[3])))
    base_cycles, _, base_sram = costs[0]
    assert base_cycles > 0 and costs[0][1] == 0.0
    for cycles, percent, sram in costs[1:]:
        assert percent == pytest.approx(100 * (cycles - base_cycles) / base_cycles, abs=0.06)
        # int16 tensors take twice the bytes of int8 ones: SRAM never shrinks
        assert sram >= base_sram


def test_cost_target_needs_a_search_and_a_real_target(workspace: Path):
    alone = quantize(workspace, "--cost-target", "ethos-u55-256-hee")
    assert alone.returncode == 1
    assert "--cost-target applies to a mixed-precision search" in alone.stderr
    unknown = quantize(workspace, "--target-cosine", "0.99", "--cost-target", "no-such-npu")
    assert unknown.returncode == 1 and "no-such-npu" in unknown.stderr
    assert "Traceback" not in unknown.stderr


def test_bias_correction_runs_after_calibration_and_is_refused_with_a_statistics_file(
    workspace: Path,
):
    stats = workspace / "bc_stats.json"
    corrected = quantize(workspace, "--bias-correction", "--save-stats", stats, "--compare")
    assert corrected.returncode == 0, corrected.stderr
    assert "logits" in corrected.stdout
    refused = run_tool(
        "npu-run",
        workspace / "digits.onnx",
        "--quantize",
        "int8-per-channel",
        "--stats",
        stats,
        "--bias-correction",
        "--compare",
        "--data",
        workspace / "test",
    )
    assert refused.returncode == 1
    assert "bias_correction needs calibration samples" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_adaround_learns_the_rounding_of_every_weighted_layer(workspace: Path):
    config = workspace / "adaround_layers.json"
    learned = quantize(workspace, "--adaround", "200", "--write-layer-config", config)
    assert learned.returncode == 0, learned.stderr
    layers = json.loads(config.read_text())["layers"]
    weighted = {name: e for name, e in layers.items() if "weights" in e}
    assert len(weighted) >= 3  # the digits model's convolutions and dense layers
    assert all(e["weights"]["rounding"] == "adaround" for e in weighted.values())
    zero = quantize(workspace, "--adaround", "0")
    assert zero.returncode == 1
    assert "adaround_iterations must be in [1, 100000], got 0" in zero.stderr
