"""The stages points share are computed once per sweep and stored as IR text: the stored
module parses back to the same IR, a second reader (another worker, a rerun) does not compute
them again, a failure is replayed as it was, and a sweep of a pool of workers quantizes its
one model once and gives npu-compile's figures for every point."""

from __future__ import annotations

from pathlib import Path

import pytest
from tool_runner import REPO

import npuc
import npuc.sweep
from npuc.compile_flow import CompileOptions, Stages, quantized_model
from npuc.printing import print_module
from npuc.sweep.shared_stages import SharedStageFailure, SharedStages, StageStore, runs

MODEL = REPO / "examples" / "tiny_cnn.onnx"


def never() -> SharedStages:
    raise AssertionError("computed again")


def test_stored_module_parses_back_to_the_same_ir(tmp_path: Path) -> None:
    options = CompileOptions(MODEL, "mcu-64", tmp_path, scheme="int8-per-channel", calib_random=2)
    front = quantized_model(options, Stages(7, enabled=False))
    expected = print_module(front.module, debuginfo=True)
    assert "dense<" in expected and "loc(" in expected  # constants and locations to keep
    calls = []

    def compute() -> SharedStages:
        calls.append(1)
        return SharedStages(front, (0.5, 1.0))

    folder = tmp_path / "stages"
    StageStore(folder).get("k", str(MODEL), compute)
    read = StageStore(folder).get("k", str(MODEL), never)
    assert calls == [1]
    assert print_module(read.front.module, debuginfo=True) == expected
    assert read.fidelity == (0.5, 1.0)
    assert read.front.summary == front.summary
    assert read.front.timings == [(label, s) for label, s in front.timings]
    assert read.front.accuracy == front.accuracy
    assert (folder / "runs.log").read_text().count("\n") == 1


def test_failure_is_replayed_without_computing_again(tmp_path: Path) -> None:
    def compute() -> SharedStages:
        raise SharedStageFailure("error", "model.onnx: error: no calibration data")

    folder = tmp_path / "shared-stages"
    for store_compute in (compute, never):
        with pytest.raises(SharedStageFailure) as raised:
            StageStore(folder).get("k", "model.onnx", store_compute)
        assert (raised.value.status, raised.value.text) == (
            "error",
            "model.onnx: error: no calibration data",
        )
    assert runs(tmp_path) == ["k"]


FOUR_POINTS = """\
[sweep]
models = ["examples/tiny_cnn.onnx"]
targets = ["mcu-64", "ethos-u55-256-hee"]
[sweep.options]
optimise = ["performance", "size"]
calib-random = 2
"""


def test_pool_quantizes_once_and_gives_npu_compile_figures(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "four.toml").write_text(FOUR_POINTS)
    monkeypatch.chdir(REPO)
    frame = npuc.sweep.run(tmp_path / "four.toml", tmp_path / "out", jobs=2, progress=False)
    assert len(frame) == 4 and (frame["status"] == "ok").all(), frame["error"].tolist()
    assert len(runs(tmp_path / "out")) == 1
    for _, row in frame.iterrows():  # npu-compile: no sweep, no stored stages
        compiled = npuc.compile(MODEL, row["target"], optimise=row["optimise"], calib_random=2)
        summary = compiled.files["tiny_cnn.summary.csv"].decode().splitlines()
        figures = dict(zip(summary[0].split(","), summary[1].split(","), strict=True))
        assert row["total_cycles"] == int(figures["cycles_total"])
        assert row["sram_peak_bytes"] == int(figures["sram_used_bytes"])
        assert row["flash_bytes"] == len(compiled.files["tiny_cnn.npubin"])
