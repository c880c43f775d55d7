"""npu-sweep end to end: the issue's minimal file gives its eight rows, in results.csv,
results.parquet and the DataFrame alike."""

from __future__ import annotations

import csv

import pandas as pd

from npuc.sweep.shared_stages import runs

AXES = ["model", "target", "optimise", "scheme", "calib-random"]


def test_minimal_file_gives_eight_rows(minimal_local) -> None:
    frame, out = minimal_local
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
    # Two quantized models (one per scheme) serve the eight points.
    assert len(runs(out)) == len(set(runs(out))) == 2
