"""Brute force over every partition of a model's layers into runs, the oracle of the tile
search's dynamic programs (tests/tiling/test_search_optimal.py, test_search_over_limit.py)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from npuc.passes.tiling.search import Estimate, Planner

LONGEST = 12  # layers per cascade (docs/tiling.md, "Auto mode")


def every_run(planner: Planner) -> dict[tuple[int, int], list[Estimate]]:
    """The feasible options of every run a..b the layers allow (at most LONGEST layers)."""
    n = len(planner.layers)
    return {
        (a, b): planner._feasible(a, b)
        for b in range(n)
        for a in range(max(0, b - LONGEST + 1), b + 1)
        if all(planner.joins(k, b) for k in range(a, b))
    }


def best_partition(
    n: int, runs: dict[tuple[int, int], list[Estimate]], score: Callable, join: Callable, empty
):
    """The best (least) score of a partition of layers 0..n-1 into the given runs: `score`
    of a run's options, `join` of a run's score and the rest's, `empty` of no layers; None
    where no partition exists."""

    @functools.cache
    def best(a: int):
        if a == n:
            return empty
        found = None
        for b in range(a, n):
            options = runs.get((a, b))
            rest = best(b + 1)
            if not options or rest is None:
                continue
            value = join(score(options), rest)
            if found is None or value < found:
                found = value
        return found

    return best(0)


def lowest_peak(n: int, runs: dict[tuple[int, int], list[Estimate]]) -> int | None:
    """The least, over every partition, of the largest of its runs' lowest peaks."""
    return best_partition(n, runs, lambda options: min(e.peak for e in options), max, 0)
