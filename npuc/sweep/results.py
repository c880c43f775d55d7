"""RESULTS_DIR: results.csv, appended a row at a time as points finish (so a killed sweep
loses no finished point and a rerun skips them), results.parquet and the DataFrame with each
row's place on the Pareto front, and sweep.json (what the report needs to know)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..diagnostics import NpucError
from .metrics import ALWAYS, METRICS
from .spec import SweepSpec

CSV = "results.csv"
PARQUET = "results.parquet"
META = "sweep.json"


def columns(spec: SweepSpec) -> list[str]:
    """key, one column per axis, the figures every sweep has, status, the other metrics
    chosen, error."""
    chosen = [m for m in spec.metrics if m not in ALWAYS]
    return ["key", *(a.name for a in spec.axes), *ALWAYS, "status", *chosen, "error"]


class ResultLog:
    """The rows of results.csv by key; `append` writes one to disk at once."""

    def __init__(self, folder: Path, spec: SweepSpec):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.path, self.columns = folder, folder / CSV, columns(spec)
        self.rows: dict[str, dict[str, Any]] = {}
        if self.path.exists() and self.path.stat().st_size:
            self._load()
        else:
            with open(self.path, "w", newline="", encoding="utf-8") as f:
                csv.writer(f).writerow(self.columns)
        meta = {
            "sweep": str(spec.path),
            "axes": [a.name for a in spec.axes],
            "metrics": list(spec.metrics),
            "objectives": list(spec.objectives),
            "search": spec.search,
        }
        (folder / META).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    def _load(self) -> None:
        text = self.path.read_text(encoding="utf-8")
        if not text.endswith("\n"):  # the sweep was killed while writing a row: drop it
            text = text[: text.rfind("\n") + 1]
            self.path.write_text(text, encoding="utf-8")
        reader = csv.DictReader(text.splitlines())
        if reader.fieldnames != self.columns:
            raise NpucError(
                "holds the results of a sweep with other axes or metrics; "
                "give another results folder (-o)",
                str(self.path),
            )
        self.rows = {row["key"]: row for row in reader}

    def append(self, row: dict[str, Any]) -> None:
        with open(self.path, "a", newline="", encoding="utf-8") as f:
            csv.DictWriter(f, self.columns, extrasaction="ignore").writerow(row)
            f.flush()
            os.fsync(f.fileno())
        self.rows[row["key"]] = row


def load(folder: Path) -> tuple[Any, dict[str, Any]]:
    """results.csv as a DataFrame with a `pareto` column (over the sweep's objectives, among
    the points that compiled), and sweep.json."""
    import pandas as pd

    for name in (CSV, META):
        if not (folder / name).is_file():
            raise NpucError(f"no {name} here: not a sweep's results folder", str(folder))
    meta = json.loads((folder / META).read_text(encoding="utf-8"))
    # Missing figures (a failed point's, a fidelity metric without a float model) are NaN;
    # an axis value such as "none" or "NA" stays the text it is.
    missing = {m: ["", "nan"] for m in METRICS}
    frame = pd.read_csv(folder / CSV, keep_default_na=False, na_values=missing)
    frame["pareto"] = pareto_mask(frame, meta["objectives"])
    return frame, meta


def pareto_mask(frame: Any, objectives: list[str]) -> Any:
    """True for the rows no other ok row dominates (no worse in every objective, better in
    one), the objectives' goals taken from METRICS."""
    ok = (frame["status"] == "ok").to_numpy(dtype=bool, copy=True)
    signs = np.array([1.0 if METRICS[o].goal == "min" else -1.0 for o in objectives])
    values = frame[objectives].to_numpy(dtype=float) * signs
    ok &= ~np.isnan(values).any(axis=1)
    mask = np.zeros(len(frame), dtype=bool)
    candidates = values[ok]
    for i in np.flatnonzero(ok):
        no_worse = (candidates <= values[i]).all(axis=1)
        better = (candidates < values[i]).any(axis=1)
        mask[i] = not (no_worse & better).any()
    return mask


def write_parquet(frame: Any, folder: Path) -> Path:
    path = folder / PARQUET
    frame.to_parquet(path, index=False)
    return path
