"""The float model's runs of calibration, kept for what runs the same calls again.

Calibration runs the float graph on every call of the data set, keeping every
intermediate. The `auto` probe then replays its first calls op by op, and the
accuracy report compares the quantized model with the float one on the same data
set: with the calibration's runs kept, neither evaluates the float graph again.
Runs are kept in call order while their arrays fit in a byte budget; a call past
it is run again by whoever needs it, as before. A kept run serves only a call whose
arguments equal its own (same dtype, shape and values).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

#: Bytes of intermediates and outputs kept at least (the 1000-convolution chain of the
#: compile-time bench needs 128 MiB for its two calls).
FLOAT_RUN_BYTES = 256 << 20
#: The default budget is this share of the machine's memory when that is more: ddddocr_det
#: needs 259 MiB for its two calls of random calibration, layout_cdla 705 MiB. Keeping them
#: saved 0.6 s of 8.2 s and 1.0 s of 24.9 s, and raised layout_cdla's peak by 168 MiB (of
#: 1469 MiB; ddddocr_det's not at all).
MEMORY_SHARE = 1 / 32
#: ... and never more than this, however large the machine: past the probe's calls a kept
#: run only spares the report one float run, and a large calibration set would otherwise
#: hold gigabytes.
FLOAT_RUN_MAX_BYTES = 2 << 30


def default_budget() -> int:
    """MEMORY_SHARE of the physical memory, within FLOAT_RUN_BYTES..FLOAT_RUN_MAX_BYTES."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):  # no sysconf (Windows) or no such name
        memory = 0
    return min(FLOAT_RUN_MAX_BYTES, max(FLOAT_RUN_BYTES, int(memory * MEMORY_SHARE)))


@dataclass(frozen=True)
class FloatRun:
    """One model call of the float graph: its arguments, outputs and every intermediate
    (FunctionRunner.run with keep="all")."""

    arguments: tuple[np.ndarray, ...]
    results: tuple[np.ndarray, ...]
    intermediates: Mapping[str, np.ndarray]

    def serves(self, arguments: Sequence[np.ndarray]) -> bool:
        """Whether this run is the float graph's run on `arguments`."""
        return len(arguments) == len(self.arguments) and all(
            np.asarray(a).dtype == b.dtype and np.array_equal(a, b)
            for a, b in zip(arguments, self.arguments, strict=True)
        )


class FloatRuns:
    """Calibration's float runs, in call order, up to `budget` bytes (see the module doc)."""

    def __init__(self, budget: int | None = None):
        self.budget = default_budget() if budget is None else budget
        self.runs: list[FloatRun] = []
        self.used = 0
        self.full = False  # a run did not fit: no later one is kept either

    def keep(
        self,
        arguments: Sequence[np.ndarray],
        results: Sequence[np.ndarray],
        intermediates: Mapping[str, np.ndarray],
    ) -> FloatRun | None:
        """Keep the run of the next call if it fits (and return it)."""
        if self.full:
            return None
        arrays = {id(a): a for a in (*results, *intermediates.values())}
        size = sum(np.asarray(a).nbytes for a in arrays.values())
        if self.used + size > self.budget:
            self.full = True
            return None
        self.used += size
        run = FloatRun(tuple(arguments), tuple(results), dict(intermediates))
        self.runs.append(run)
        return run

    def run(self, index: int, arguments: Sequence[np.ndarray]) -> FloatRun | None:
        """The kept run of call `index`, if it was kept and ran on `arguments`."""
        if index < len(self.runs) and self.runs[index].serves(arguments):
            return self.runs[index]
        return None
