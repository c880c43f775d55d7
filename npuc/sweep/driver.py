"""`npuc.sweep.run`: a sweep from its file to its results (what `npu-sweep` runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

from ..progress import progress as progress_bar
from . import shared_stages
from .execute import Executor
from .points import Point, Points
from .results import ResultLog, load, write_parquet
from .search import optuna_search, planned_points
from .spec import read_spec


def run(
    spec: str | Path,
    output: str | Path | None = None,
    *,
    jobs: int = 1,
    ray: bool = False,
    address: str | None = None,
    progress: bool = True,
    stream: TextIO | None = None,
) -> Any:
    """Run the sweep a SWEEP.toml describes, resuming from the results already in `output`
    (default: SWEEP-results/ beside the current folder); returns the results as a pandas
    DataFrame (one row per point, with a `pareto` column). `jobs` local worker processes,
    or Ray tasks (`ray=True`: on the cluster at `address`, or on a local Ray instance of
    `jobs` CPUs). `stream`: where to say what it does (None: nowhere)."""
    sweep = read_spec(spec)
    folder = Path(output) if output is not None else Path(f"{sweep.path.stem}-results")
    log = ResultLog(folder, sweep)
    points = Points(sweep)

    def say(text: str) -> None:
        if stream is not None:
            print(text, file=stream, flush=True)

    with Executor(folder / shared_stages.FOLDER, jobs, ray, address) as executor:

        def compute(chosen: list[Point], bar: Any = None) -> dict[str, dict[str, Any]]:
            todo = list({p.key: p for p in chosen if p.key not in log.rows}.values())
            for row in executor.rows(todo):
                log.append(row)
                if bar is not None:
                    bar.update(1)
            return {p.key: log.rows[p.key] for p in chosen}

        if sweep.search == "optuna":
            say(f"optuna search: {sweep.trials} trials over a grid of {sweep.grid_size} points")
            with progress_bar(
                desc="sweep", total=sweep.trials, unit="trial", enabled=progress
            ) as bar:

                def counted(chosen: list[Point]) -> dict[str, dict[str, Any]]:
                    rows = compute(chosen)
                    bar.update(len(chosen))
                    return rows

                optuna_search(sweep, points, counted, max(jobs, 1))
        else:
            planned = planned_points(sweep, points)
            todo = [p for p in planned if p.key not in log.rows]
            say(
                f"{len(planned)} points: {len(planned) - len(todo)} already in {log.path}, "
                f"computing {len(todo)}"
            )
            with progress_bar(desc="sweep", total=len(todo), unit="point", enabled=progress) as bar:
                compute(todo, bar)
    frame, _ = load(folder)
    write_parquet(frame, folder)
    return frame
