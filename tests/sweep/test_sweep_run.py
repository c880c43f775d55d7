"""npu-sweep end to end: the issue's minimal file, target fields against npu-compile on a
target file written out by hand, resuming a killed sweep, failed points."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest
from tool_runner import REPO

import npuc.sweep

MINIMAL = """\
[sweep]
models = ["examples/lenet5.onnx"]
targets = ["mcu-64", "ethos-u55-256-hee"]
[sweep.options]
optimise = ["performance", "size"]
scheme = ["int8", "int8-per-channel"]
calib-random = [4]
"""
# Figures that do not depend on the machine (compile_s does).
FIGURES = ["total_cycles", "sram_peak_bytes", "flash_bytes", "inference_ms"]
AXES = ["model", "target", "optimise", "scheme", "calib-random"]


@pytest.fixture(scope="module")
def minimal(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("minimal") / "minimal.toml"
    path.write_text(MINIMAL)
    return path


@pytest.fixture(scope="module")
def local(minimal: Path, tmp_path_factory):
    """The minimal file's results in this process (one job), and their folder."""
    out = tmp_path_factory.mktemp("local")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        return npuc.sweep.run(minimal, out, jobs=1, progress=False), out


def test_minimal_file_gives_eight_rows(local) -> None:
    frame, out = local
    assert len(frame) == 8
    assert list(frame.columns[1:6]) == AXES
    assert (frame["status"] == "ok").all(), frame["error"].tolist()
    assert frame[AXES].drop_duplicates().shape[0] == 8
    assert frame["key"].is_unique
    # The tiler trades cycles for SRAM: optimising for size never needs more SRAM.
    by = frame.set_index(["target", "optimise", "scheme"])["sram_peak_bytes"]
    for target in ("mcu-64", "ethos-u55-256-hee"):
        for scheme in ("int8", "int8-per-channel"):
            assert by[target, "size", scheme] <= by[target, "performance", scheme]
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["key"] for r in rows] == frame["key"].tolist()
    assert [int(r["total_cycles"]) for r in rows] == frame["total_cycles"].tolist()
    parquet = pd.read_parquet(out / "results.parquet")
    pd.testing.assert_frame_equal(parquet, frame)


def test_ray_gives_the_same_figures(minimal: Path, local, tmp_path: Path) -> None:
    out = tmp_path / "ray"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        npuc.sweep.run(minimal, out, jobs=2, ray=True, progress=False)  # a local Ray instance
    remote = pd.read_parquet(out / "results.parquet").set_index("key").sort_index()
    here = local[0].set_index("key").sort_index()
    assert list(remote.index) == list(here.index)
    assert (remote["status"] == "ok").all()
    pd.testing.assert_frame_equal(remote[AXES[1:] + FIGURES], here[AXES[1:] + FIGURES])
