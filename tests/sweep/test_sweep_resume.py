"""A sweep killed halfway resumes without redoing its finished points or its quantization; a
point that fails is recorded with its diagnostic and does not stop the sweep."""

from __future__ import annotations

import csv
import io
import subprocess
import time
from pathlib import Path

import pytest
from tool_runner import REPO, tool_command

import npuc
import npuc.sweep
from npuc.diagnostics import NpucError
from npuc.sweep.shared_stages import runs

SIX_POINTS = """\
[sweep]
models = ["examples/tiny_cnn.onnx"]
targets = ["mcu-64", "ethos-u55-256-hee"]
[sweep.options]
calib-random = 2
[sweep.target]
sram_size = [8192, 16384, 262144]
"""


def data_lines(path: Path) -> list[str]:
    return path.read_text().splitlines()[1:] if path.exists() else []


def test_killed_sweep_resumes_with_the_rest(tmp_path: Path, monkeypatch) -> None:
    sweep, out = tmp_path / "six.toml", tmp_path / "out"
    sweep.write_text(SIX_POINTS)
    command = [*tool_command("npu-sweep"), str(sweep), "-q", "-o", str(out)]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while len(data_lines(out / "results.csv")) < 2 and process.poll() is None:
        assert time.monotonic() < deadline, "no rows appeared"
        time.sleep(0.05)
    process.kill()
    process.wait()
    before = data_lines(out / "results.csv")
    assert 2 <= len(before) < 6, "the sweep ended before it was killed"

    said = io.StringIO()
    monkeypatch.chdir(REPO)
    npuc.sweep.run(sweep, out, progress=False, stream=said)
    assert said.getvalue().splitlines()[0] == (
        f"6 points: {len(before)} already in {out / 'results.csv'}, computing {6 - len(before)}"
    )
    after = data_lines(out / "results.csv")
    assert after[: len(before)] == before
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len({r["key"] for r in rows}) == 6
    assert {(r["target"], r["sram_size"]) for r in rows} == {
        (t, s) for t in ("mcu-64", "ethos-u55-256-hee") for s in ("8192", "16384", "262144")
    }
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    # The killed run quantized the model; the rerun read it back.
    assert len(runs(out)) == 1


def test_failed_point_is_recorded_with_its_diagnostic(tmp_path: Path, monkeypatch) -> None:
    sweep = tmp_path / "tilings.toml"
    sweep.write_text(
        '[sweep]\nmodels = ["examples/tiny_cnn.onnx"]\ntargets = ["mcu-64"]\n'
        '[sweep.options]\ncalib-random = 2\ntiling = ["(0,99,1,1)", "none"]\n'
    )
    monkeypatch.chdir(REPO)
    frame = npuc.sweep.run(sweep, tmp_path / "out", progress=False).set_index("tiling")
    assert frame.loc["none", "status"] == "ok"
    assert frame.loc["(0,99,1,1)", "status"] == "error"
    # The diagnostic npu-compile gives for the same flags.
    with pytest.raises(NpucError) as raised:
        npuc.compile("examples/tiny_cnn.onnx", "mcu-64", calib_random=2, tiling="(0,99,1,1)")
    assert frame.loc["(0,99,1,1)", "error"] == raised.value.diagnostic()
