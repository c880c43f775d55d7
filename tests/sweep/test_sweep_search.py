"""Searches: an Optuna study on a small grid finds points of the grid's true Pareto front
(computed here from the exhaustive grid); a random search draws distinct grid points; a
target field axis gives what npu-compile gives on the target file written out by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tool_runner import REPO

import npuc
import npuc.sweep

GRID = """\
[sweep]
models = ["examples/tiny_cnn.onnx"]
targets = ["mcu-64", "ethos-u55-256-hee"]
objectives = ["total_cycles", "sram_peak_bytes"]
seed = 3
{search}
[sweep.options]
optimise = ["performance", "size"]
calib-random = 2
[sweep.target]
sram_size = [4096, 16384, 262144]
"""
AXES = ["target", "optimise", "sram_size"]


def true_front(points: np.ndarray) -> set[tuple[float, ...]]:
    """The objective vectors (to minimise) no other vector dominates."""
    front = set()
    for p in points:
        dominated = any((q <= p).all() and (q < p).any() for q in points)
        if not dominated:
            front.add(tuple(p))
    return front


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    folder = tmp_path_factory.mktemp("grid")
    (folder / "grid.toml").write_text(GRID.format(search=""))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        return npuc.sweep.run(folder / "grid.toml", folder / "out", progress=False)


def test_grid_pareto_column_is_the_true_front(grid) -> None:
    assert len(grid) == 12 and (grid["status"] == "ok").all()
    figures = grid[["total_cycles", "sram_peak_bytes"]].to_numpy(dtype=float)
    front = true_front(figures)
    assert grid["pareto"].tolist() == [tuple(f) in front for f in figures]


def test_optuna_finds_points_on_the_true_front(grid, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "optuna.toml").write_text(GRID.format(search='search = "optuna"\ntrials = 8'))
    monkeypatch.chdir(REPO)
    found = npuc.sweep.run(tmp_path / "optuna.toml", tmp_path / "out", progress=False)
    assert 1 <= len(found) <= 8  # repeated trials share a row
    by_key = grid.set_index("key")
    columns = ["total_cycles", "sram_peak_bytes"]
    # Every trial is a grid point with the grid's figures.
    for _, row in found.iterrows():
        assert row[columns].tolist() == by_key.loc[row["key"], columns].tolist()
    front = true_front(grid[columns].to_numpy(dtype=float))
    reported = {tuple(r) for r in found[found["pareto"]][columns].to_numpy(dtype=float)}
    assert reported and reported <= front


def test_random_search_draws_distinct_grid_points(grid, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "random.toml").write_text(GRID.format(search='search = "random"\npoints = 3'))
    monkeypatch.chdir(REPO)
    drawn = npuc.sweep.run(tmp_path / "random.toml", tmp_path / "out", progress=False)
    assert len(drawn) == 3 and drawn["key"].is_unique
    assert set(drawn["key"]) <= set(grid["key"])


def test_target_field_matches_npu_compile_on_an_edited_target(grid, tmp_path: Path) -> None:
    text = (REPO / "targets" / "mcu-64.toml").read_text()
    assert 'size = "256 KiB"' in text
    edited = tmp_path / "mcu-64-16k.toml"
    edited.write_text(text.replace('size = "256 KiB"', "size = 16384"))
    compiled = npuc.compile(
        REPO / "examples" / "tiny_cnn.onnx", str(edited), optimise="size", calib_random=2
    )
    summary = compiled.files["tiny_cnn.summary.csv"].decode().splitlines()
    figures = dict(zip(summary[0].split(","), summary[1].split(","), strict=True))
    point = grid.set_index(AXES).loc[("mcu-64", "size", 16384)]
    assert point["total_cycles"] == int(figures["cycles_total"])
    assert point["sram_peak_bytes"] == int(figures["sram_used_bytes"])
    assert point["flash_bytes"] == len(compiled.files["tiny_cnn.npubin"])


def test_pipeline_axis_changes_the_optimise_stage(grid, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "pipelines.toml").write_text(
        '[sweep]\nmodels = ["examples/tiny_cnn.onnx"]\ntargets = ["mcu-64"]\n'
        'metrics = ["total_cycles", "instructions"]\n'
        '[sweep.options]\ncalib-random = 2\npipeline = ["default", "canonicalize"]\n'
    )
    monkeypatch.chdir(REPO)
    frame = npuc.sweep.run(tmp_path / "pipelines.toml", tmp_path / "out", progress=False)
    rows = frame.set_index("pipeline")
    assert (rows["status"] == "ok").all(), rows["error"].tolist()
    # Without fold-batchnorm and fuse-activation the batch norm and the activations stay
    # layers of their own.
    assert rows.loc["canonicalize", "instructions"] > rows.loc["default", "instructions"]
    # The default pipeline on mcu-64 as shipped (256 KiB of SRAM) is the grid's point.
    same = grid.set_index(AXES).loc[("mcu-64", "performance", 262144)]
    assert rows.loc["default", "total_cycles"] == same["total_cycles"]
