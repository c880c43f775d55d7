"""`--ray`: the minimal file's points as Ray tasks, on a local Ray instance the sweep starts
and on a Ray cluster started with `ray start --head` (its address given as `--ray ADDRESS`),
give the figures of the run in this process. The Ray workers compute each quantized model
once per sweep, not once per worker; a sweep whose RESULTS_DIR holds them already (as a
rerun's does) computes none."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
from tool_runner import REPO, run_tool

import npuc.sweep
from npuc.sweep.shared_stages import FOLDER, runs


def test_local_ray_instance_gives_the_same_figures(
    minimal: Path, minimal_local, assert_same_figures, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(REPO)
    frame = npuc.sweep.run(minimal, tmp_path / "out", jobs=2, ray=True, progress=False)
    assert_same_figures(frame, minimal_local[0])
    assert sorted(runs(tmp_path / "out")) == sorted(runs(minimal_local[1]))


def test_ray_address_gives_the_same_figures(
    ray_cluster: str, minimal: Path, minimal_local, assert_same_figures, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    # The quantized models of the run in this process: every point compiles from the parsed
    # IR text, none from a module its worker computed.
    shutil.copytree(minimal_local[1] / FOLDER, out / FOLDER)
    done = run_tool("npu-sweep", minimal, "--ray", ray_cluster, "-q", "-o", out, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"8 points: 0 already in {out / 'results.csv'}, computing 8")
    assert_same_figures(pd.read_parquet(out / "results.parquet"), minimal_local[0])
    assert runs(out) == runs(minimal_local[1])  # none computed again
