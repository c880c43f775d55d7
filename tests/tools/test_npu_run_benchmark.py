"""npu-run --benchmark N [--warmup K] [--json FILE]: timing like LiteRT's benchmark_model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tool_runner import RELU_MLIR, REPO, run_tool

from npuc.tools import npu_run

LENET = REPO / "examples" / "lenet5.onnx"

#: y = x + acc; the state `acc` (initially 1) becomes y.
STATEFUL_MLIR = """\
func.func @main(%x: tensor<1x4xf32> {nn.name = "x"},
                %s: tensor<1x4xf32> {nn.name = "acc", nn.state = "acc"})
    -> (tensor<1x4xf32> {nn.name = "y"}, tensor<1x4xf32> {nn.name = "acc", nn.state = "acc"})
    attributes {nn.state_init = {acc = dense<1.0> : tensor<1x4xf32>}} {
  %0 = nn.add %x, %s : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %0, %0 : tensor<1x4xf32>, tensor<1x4xf32>
}
"""
SUMMARY = ("runs:", "min:", "median:", "mean:", "max:")


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """A small model of each kind: .mlir, .tflite, .onnx (LeNet-5) and a compiled .npubin."""
    from tflite_builder import TFLiteModel

    folder = tmp_path_factory.mktemp("models")
    (folder / "relu.mlir").write_text(RELU_MLIR)
    (folder / "acc.mlir").write_text(STATEFUL_MLIR)
    m = TFLiteModel()
    x, y = m.tensor("x", [1, 4]), m.tensor("y", [1, 4])
    m.op("RELU", [x], [y])
    (folder / "relu.tflite").write_bytes(m.build([x], [y]))
    for name in ("relu", "acc"):
        done = run_tool(
            "npu-compile",
            folder / f"{name}.mlir",
            "-t",
            "mcu-64",
            "--calib-random",
            "4",
            "-q",
            "-o",
            folder / name,
        )
        assert done.returncode == 0, done.stderr
    return {
        ".mlir": folder / "relu.mlir",
        ".tflite": folder / "relu.tflite",
        ".onnx": LENET,
        ".npubin": folder / "relu" / "relu.npubin",
        "stateful .mlir": folder / "acc.mlir",
        "stateful .npubin": folder / "acc" / "acc.npubin",
    }


def check_record(record: dict, model: Path, runs: int, warmup: int) -> None:
    latency = record["latency_ms"]
    assert record["runs"] == runs and record["warmup"] == warmup
    assert record["model"] == str(model)
    engine = "npu-runtime" if model.suffix == ".npubin" else "reference-interpreter"
    assert record["engine"] == engine
    assert set(latency) >= {"min", "median", "max", "mean"}
    assert 0 < latency["min"] <= latency["median"] <= latency["max"]
    assert latency["min"] <= latency["mean"] <= latency["max"]
    assert record["first_ms"] > 0 and record["init_ms"] > 0


@pytest.mark.parametrize("kind", [".npubin", ".onnx", ".tflite", ".mlir"])
def test_benchmark_prints_the_summary_and_writes_the_json(models, kind, tmp_path: Path):
    model, report = models[kind], tmp_path / "bench.json"
    done = run_tool("npu-run", model, "--benchmark", "3", "--warmup", "2", "--json", report)
    assert done.returncode == 0, done.stderr
    check_record(json.loads(report.read_text()), model, runs=3, warmup=2)
    lines = done.stdout.splitlines()
    engine = "the NPU runtime" if kind == ".npubin" else "the reference interpreter"
    assert f"benchmark: {model} on {engine}" in lines
    for key in SUMMARY:
        assert any(
            line.split()[:1] == [key] and line.endswith(" ms") != (key == "runs:") for line in lines
        ), key
    assert any(line.split()[:2] == ["runs:", "3"] for line in lines)
    # The benchmark replaces the output summary: no "NAME: shape (...)" lines.
    assert not [line for line in lines if ": shape (" in line]
    assert f"wrote the benchmark to {report}" in lines
    assert "Traceback" not in done.stderr


def test_the_runtime_is_built_once_and_run_warmup_plus_n_times(models, monkeypatch, capsys):
    from npuc.runtime.executor import Executor

    calls = {"init": 0, "run": 0}
    build, execute = Executor.__init__, Executor.run

    def counted_init(self, *args, **kwargs):
        calls["init"] += 1
        build(self, *args, **kwargs)

    def counted_run(self, *args, **kwargs):
        calls["run"] += 1
        return execute(self, *args, **kwargs)

    monkeypatch.setattr(Executor, "__init__", counted_init)
    monkeypatch.setattr(Executor, "run", counted_run)
    assert npu_run.run([str(models[".npubin"]), "--benchmark", "5", "--warmup", "3"]) == 0
    assert calls == {"init": 1, "run": 8}
    calls.update(init=0, run=0)
    assert npu_run.run([str(models[".npubin"]), "--benchmark", "4"]) == 0  # default warm-up 1
    assert calls == {"init": 1, "run": 5}
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert "runs: 4 timed, after 1 warm-up run" in lines


@pytest.mark.parametrize("kind", [".onnx", ".mlir"])
def test_the_interpreter_imports_once_and_runs_warmup_plus_n_times(models, kind, monkeypatch):
    from npuc import api
    from npuc.runtime.qnn_interpreter import QuantizedFunctionRunner

    calls = {"import": 0, "run": 0}
    load, execute = api.load_model, QuantizedFunctionRunner.run

    def counted_load(*args, **kwargs):
        calls["import"] += 1
        return load(*args, **kwargs)

    def counted_run(self, *args, **kwargs):
        calls["run"] += 1
        return execute(self, *args, **kwargs)

    monkeypatch.setattr(api, "load_model", counted_load)
    monkeypatch.setattr(QuantizedFunctionRunner, "run", counted_run)
    assert npu_run.run([str(models[kind]), "--benchmark", "4", "--warmup", "0"]) == 0
    assert calls == {"import": 1, "run": 4}


@pytest.mark.parametrize("kind", [".onnx", ".npubin", "stateful .mlir", "stateful .npubin"])
def test_saved_outputs_are_those_of_a_plain_run(models, kind, tmp_path: Path):
    """-o saves the last timed run's outputs: the same as npu-run without --benchmark (same
    seeded inputs; a stateful model's first call, from its initial state)."""
    model = models[kind]
    plain, timed = tmp_path / "plain.npz", tmp_path / "timed.npz"
    assert run_tool("npu-run", model, "-o", plain).returncode == 0
    done = run_tool("npu-run", model, "--benchmark", "2", "-o", timed)
    assert done.returncode == 0, done.stderr
    assert "saved the last run's" in done.stdout
    with np.load(plain) as a, np.load(timed) as b:
        assert sorted(a.files) == sorted(b.files) and "acc" not in a.files
        for name in a.files:
            np.testing.assert_array_equal(a[name], b[name])


def test_given_inputs_are_used_and_described(models, tmp_path: Path):
    feed, report = tmp_path / "x.npy", tmp_path / "bench.json"
    np.save(feed, np.full((1, 4), -1.0, np.float32))
    done = run_tool(
        "npu-run",
        models[".mlir"],
        "--input",
        f"x={feed}",
        "--benchmark",
        "1",
        "--json",
        report,
        "-o",
        tmp_path / "out.npz",
    )
    assert done.returncode == 0, done.stderr
    assert "note: no --input" not in done.stdout
    record = json.loads(report.read_text())
    assert record["inputs"] == {"x": {"shape": [1, 4], "dtype": "float32", "source": "file"}}
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_array_equal(out["y"], np.zeros((1, 4), np.float32))


def test_with_quantize_the_json_holds_the_timings_not_a_comparison(models, tmp_path: Path):
    report = tmp_path / "bench.json"
    done = run_tool(
        "npu-run",
        models[".mlir"],
        "--quantize",
        "int8",
        "--calib-random",
        "2",
        "--benchmark",
        "2",
        "--json",
        report,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(report.read_text())
    check_record(record, models[".mlir"], runs=2, warmup=1)
    assert "outputs" not in record and "tensors" not in record
    assert "cosine" not in done.stdout


@pytest.mark.parametrize("value", ["0", "-1", "x", "1.5", ""])
def test_a_bad_count_is_a_usage_error_naming_the_option(models, value):
    done = run_tool("npu-run", models[".mlir"], "--benchmark", value)
    assert done.returncode == 2, done.stderr
    assert "argument --benchmark: expected a positive integer" in done.stderr
    assert f"got '{value}'" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("value", ["-1", "x"])
def test_a_bad_warmup_is_a_usage_error_naming_the_option(models, value):
    done = run_tool("npu-run", models[".npubin"], "--benchmark", "2", "--warmup", value)
    assert done.returncode == 2, done.stderr
    assert "argument --warmup: expected a non-negative integer" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_count_beyond_the_limit_is_refused(models):
    done = run_tool("npu-run", models[".mlir"], "--benchmark", str(2**31))
    assert done.returncode == 2 and "--benchmark: must be at most 2147483647" in done.stderr


@pytest.mark.parametrize(
    ("kind", "options", "message"),
    [
        (".mlir", ["--warmup", "2"], "--warmup needs --benchmark N"),
        (
            ".npubin",
            ["--benchmark", "2", "--profile"],
            "--profile cannot be combined with --benchmark",
        ),
        (
            ".npubin",
            ["--benchmark", "2", "--dump-tensors", "all"],
            "--dump-tensors cannot be combined with --benchmark",
        ),
        (
            ".mlir",
            ["--benchmark", "2", "--sequence", "3"],
            "--sequence cannot be combined with --benchmark",
        ),
        (
            ".mlir",
            ["--benchmark", "2", "--quantize", "int8", "--calib-random", "2", "--compare"],
            "--compare cannot be combined with --benchmark",
        ),
    ],
)
def test_other_kinds_of_run_are_refused_with_benchmark(models, kind, options, message):
    done = run_tool("npu-run", models[kind], *options)
    assert done.returncode == 2, done.stderr
    assert f"npu-run: error: {message}" in done.stderr and "Traceback" not in done.stderr


def test_json_without_benchmark_keeps_its_meaning(models, tmp_path: Path):
    report = tmp_path / "x.json"
    model = run_tool("npu-run", models[".mlir"], "--json", report)
    assert model.returncode == 1 and "--json needs --quantize SCHEME" in model.stderr
    binary = run_tool("npu-run", models[".npubin"], "--json", report)
    assert binary.returncode == 1 and "--json with a .npubin writes the profile" in binary.stderr
    assert not report.exists()


@pytest.mark.parametrize("kind", [".mlir", ".npubin"])
def test_an_unwritable_json_is_refused_before_running(models, kind, tmp_path: Path):
    report = tmp_path / "missing" / "bench.json"
    done = run_tool("npu-run", models[kind], "--benchmark", "2", "--json", report)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{report}: error: cannot write: its directory does not exist" in done.stderr
    assert "benchmark:" not in done.stdout


def test_an_unknown_input_is_a_diagnostic(models, tmp_path: Path):
    feed = tmp_path / "x.npy"
    np.save(feed, np.zeros((1, 4), np.float32))
    done = run_tool("npu-run", models[".mlir"], "--benchmark", "2", "--input", f"nope={feed}")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "unknown input(s) 'nope'; the model's inputs are 'x'" in done.stderr


def test_config_run_section_profile_does_not_apply_to_a_benchmark(models, tmp_path: Path):
    """[run]'s profile and json describe a plain run; --benchmark leaves them out."""
    config = tmp_path / "run.toml"
    config.write_text('[run]\nprofile = true\njson = "profile.json"\n')
    done = run_tool("npu-run", models[".npubin"], "--config", config, "--benchmark", "2")
    assert done.returncode == 0, done.stderr
    assert "benchmark:" in done.stdout and not (tmp_path / "profile.json").exists()


@pytest.mark.parametrize("kind", ["stateful .mlir", "stateful .npubin"])
def test_state_is_not_an_input(models, kind, tmp_path: Path):
    feed = tmp_path / "acc.npy"
    np.save(feed, np.zeros((1, 4), np.float32))
    done = run_tool("npu-run", models[kind], "--benchmark", "2", "--input", f"acc={feed}")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "input 'acc' is state" in done.stderr
