"""SWEEP.toml: what a design-space sweep varies, how it searches and what it measures
(docs/sweeps.md).

Reading is strict: an unknown key, an unknown npu-compile option or target field, a value
its option or field refuses, or a missing model is an `NpucError` naming the file, the line
and the dotted key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import read_toml
from ..diagnostics import NpucError
from .axes import AxisError, OptionAxes, check_target_fields
from .metrics import DEFAULT_METRICS, FIDELITY_METRICS, METRICS

SEARCHES = ("grid", "random", "optuna")
DEFAULT_OBJECTIVES = ("total_cycles", "sram_peak_bytes")
_SWEEP_KEYS = (
    "models",
    "targets",
    "options",
    "target",
    "metrics",
    "data",
    "search",
    "points",
    "trials",
    "objectives",
    "seed",
)


@dataclass(frozen=True)
class Axis:
    """One thing a sweep varies: its column name, what it sets and the values it takes."""

    name: str
    kind: str  # "model", "target", "option" (npu-compile's or "pipeline"), "field" (target)
    values: tuple[Any, ...]


@dataclass(frozen=True)
class SweepSpec:
    path: Path
    axes: tuple[Axis, ...]  # model, target, then the options, then the target fields
    metrics: tuple[str, ...]  # the measured columns, in order
    objectives: tuple[str, ...]  # what the Pareto front (and an Optuna search) minimises/maximises
    data: str | None  # samples for the fidelity metrics
    search: str
    points: int | None  # random search: how many points of the grid
    trials: int | None  # optuna: the budget of trials
    seed: int

    def axis(self, kind: str) -> tuple[Axis, ...]:
        return tuple(a for a in self.axes if a.kind == kind)

    @property
    def grid_size(self) -> int:
        size = 1
        for axis in self.axes:
            size *= len(axis.values)
        return size


class _Located:
    """Errors at the line of a key in the sweep file (tomllib does not keep lines)."""

    def __init__(self, path: Path, text: str):
        self.path, self.lines = path, text.splitlines()

    def line_of(self, table: str, key: str) -> int | None:
        current = ""
        header = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]\s*(#.*)?$")
        entry = re.compile(rf'^\s*"?{re.escape(key)}"?\s*=')
        for number, line in enumerate(self.lines, 1):
            found = header.match(line)
            if found:
                current = found.group(1).replace('"', "").replace(" ", "")
            elif current == table and entry.match(line):
                return number
        return None

    def fail(self, table: str, key: str, message: str) -> NpucError:
        line = self.line_of(table, key)
        where = f"{self.path}:{line}" if line else str(self.path)
        return NpucError(f"{table}.{key}: {message}", where)


def read_spec(path: str | Path) -> SweepSpec:
    """Read and check a sweep file (model paths are relative to the current directory)."""
    path = Path(path)
    text, data = read_toml(path, "sweep file")
    return parse_spec(data, _Located(path, text))


def parse_spec(data: dict[str, Any], at: _Located) -> SweepSpec:
    unknown = [k for k in data if k != "sweep"]
    if unknown or not isinstance(data.get("sweep"), dict):
        raise NpucError("expected a [sweep] table and nothing else", str(at.path))
    sweep: dict[str, Any] = data["sweep"]
    for key in sweep:
        if key not in _SWEEP_KEYS:
            raise at.fail("sweep", key, f"unknown key (allowed: {', '.join(_SWEEP_KEYS)})")
    models = _strings(sweep, "models", at, required=True)
    for model in models:
        if not Path(model).is_file():
            raise at.fail("sweep", "models", f"no such model file: {model}")
    targets = _strings(sweep, "targets", at, required=True)
    options = _table(sweep, "options", at)
    fields = _table(sweep, "target", at)
    option_axes = OptionAxes()
    axes = [Axis("model", "model", tuple(models)), Axis("target", "target", tuple(targets))]
    for key, raw in options.items():
        values = _values(raw)
        try:
            axes.append(Axis(key, "option", tuple(option_axes.check(key, values))))
        except AxisError as e:
            raise at.fail("sweep.options", key, e.message) from None
    try:
        option_axes.check_combination(list(options))
        check_target_fields(targets, {k: _values(v) for k, v in fields.items()})
    except AxisError as e:
        table = "sweep.target" if e.key in fields else "sweep.options"
        raise at.fail(table, e.key, e.message) from None
    axes += [Axis(k, "field", tuple(_values(v))) for k, v in fields.items()]
    names = [a.name for a in axes]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise at.fail("sweep.target", duplicate, "names an option axis too; rename one")
    data_dir = sweep.get("data")
    if data_dir is not None and not (isinstance(data_dir, str) and Path(data_dir).is_dir()):
        raise at.fail("sweep", "data", f"expected a folder of samples, got {data_dir!r}")
    default = DEFAULT_METRICS + (FIDELITY_METRICS if data_dir else ())
    metrics = _strings(sweep, "metrics", at) or default
    objectives = _strings(sweep, "objectives", at) or DEFAULT_OBJECTIVES
    for key, names_ in (("metrics", metrics), ("objectives", objectives)):
        for name in names_:
            if name not in METRICS:
                raise at.fail(
                    "sweep", key, f"unknown metric '{name}' (known: {', '.join(METRICS)})"
                )
            if name in FIDELITY_METRICS and not data_dir:
                raise at.fail("sweep", key, f"'{name}' needs data = DIR (samples to compare on)")
    search = sweep.get("search", "grid")
    if search not in SEARCHES:
        raise at.fail("sweep", "search", f"expected one of {', '.join(SEARCHES)}, got {search!r}")
    points = _count(sweep, "points", at)
    trials = _count(sweep, "trials", at)
    if search == "random" and points is None:
        raise at.fail("sweep", "search", "a random search needs points = N")
    if search == "optuna" and trials is None:
        raise at.fail("sweep", "search", "an optuna search needs trials = N (its budget)")
    seed = sweep.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise at.fail("sweep", "seed", f"expected an integer, got {seed!r}")
    measured = tuple(dict.fromkeys([*metrics, *objectives]))
    return SweepSpec(
        at.path, tuple(axes), measured, tuple(objectives), data_dir, search, points, trials, seed
    )


def _values(raw: object) -> list[Any]:
    """An axis' values: a list, or one value (an axis of one point)."""
    return list(raw) if isinstance(raw, list) else [raw]


def _table(sweep: dict[str, Any], key: str, at: _Located) -> dict[str, Any]:
    value = sweep.get(key, {})
    if not isinstance(value, dict):
        raise at.fail("sweep", key, f"expected a table [sweep.{key}], got {value!r}")
    for name, values in value.items():
        if isinstance(values, list) and not values:
            raise at.fail(f"sweep.{key}", name, "expected at least one value")
    return value


def _strings(sweep: dict[str, Any], key: str, at: _Located, required: bool = False) -> list[str]:
    value = sweep.get(key)
    if value is None:
        if required:
            raise at.fail("sweep", key, "missing required key")
        return []
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise at.fail("sweep", key, f"expected a non-empty list of strings, got {value!r}")
    return list(dict.fromkeys(value))


def _count(sweep: dict[str, Any], key: str, at: _Located) -> int | None:
    value = sweep.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise at.fail("sweep", key, f"expected a positive integer, got {value!r}")
    return value
