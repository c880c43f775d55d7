"""Which points a sweep computes: the whole grid, a random sample of it, or the trials of a
multi-objective Optuna study (NSGA-II over the sweep's objectives, within a trial budget)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .metrics import METRICS
from .points import Point, Points
from .spec import SweepSpec

# Computes the points not yet in the results and returns every point's row by key.
Compute = Callable[[list[Point]], dict[str, dict[str, Any]]]


def planned_points(spec: SweepSpec, points: Points) -> list[Point]:
    """The points of a grid or random search, those sharing a model and options together
    (so that a worker's quantized model serves the next point too)."""
    chosen = (
        list(points.grid()) if spec.search == "grid" else points.sample(spec.points or 0, spec.seed)
    )
    return sorted(chosen, key=lambda p: (p.model, repr(sorted(p.options.items()))))


def optuna_search(spec: SweepSpec, points: Points, compute: Compute, batch: int) -> int:
    """Run `spec.trials` trials, `batch` at a time (one per worker); returns how many."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    directions = ["minimize" if METRICS[o].goal == "min" else "maximize" for o in spec.objectives]
    trials = spec.trials or 0
    # Several generations even on a small budget, so the search is more than its first sample.
    population = min(50, max(4, trials // 4))
    sampler = optuna.samplers.NSGAIISampler(population_size=population, seed=spec.seed)
    study = optuna.create_study(directions=directions, sampler=sampler)
    done = 0
    while done < trials:
        asked = [study.ask() for _ in range(min(batch, trials - done))]
        chosen = [
            points.at(
                tuple(t.suggest_categorical(a.name, list(range(len(a.values)))) for a in spec.axes)
            )
            for t in asked
        ]
        rows = compute(chosen)
        for trial, point in zip(asked, chosen, strict=True):
            row = rows[point.key]
            values = [float(row[o]) for o in spec.objectives] if row["status"] == "ok" else None
            if values is None or any(v != v for v in values):  # failed, or a NaN metric
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, values)
        done += len(asked)
    return done
