"""Whole-process figures of a command: CPU seconds, wall seconds and peak RSS, as GNU time
(/usr/bin/time) reports them for that one process, so a compiler and its peer are
measured the same way, process start and imports included. (GNU time starts the command
from its own small process: a child forked straight from this one would count this
process's memory in its peak.)

Both run with compiled bytecode, as an installed tool does: PYTHONDONTWRITEBYTECODE is
dropped and the .pyc files go to one temporary PYTHONPYCACHEPREFIX, written by a warm-up
run of each command (otherwise a shell that sets PYTHONDONTWRITEBYTECODE makes every run
compile every module of numpy, xDSL and the tool from source).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

VENV_BIN = Path(__file__).resolve().parents[2] / ".venv" / "bin"
PYCACHE = Path(tempfile.gettempdir()) / "npuc-bench-pycache"
GNU_TIME = "/usr/bin/time"


@dataclass(frozen=True)
class Run:
    cpu: float  # user + system seconds
    wall: float
    peak_mib: float
    status: int
    stderr: str = ""


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return env


def run(command: list[str], timeout: float = 3600) -> Run:
    """One run of `command` (its output discarded, its error stream kept)."""
    with tempfile.TemporaryDirectory() as tmp:
        figures = Path(tmp) / "time"
        start = time.perf_counter()
        done = subprocess.run(
            [GNU_TIME, "-f", "%U %S %M %x", "-o", str(figures), *command],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=environment(),
            timeout=timeout,
            check=False,
        )
        wall = time.perf_counter() - start
        user, system, kib, status = figures.read_text().split()[-4:]
    return Run(
        float(user) + float(system),
        wall,
        int(kib) / 1024,
        int(status),
        done.stderr.decode(errors="replace"),
    )


@dataclass(frozen=True)
class Pair:
    """Median figures of A and B measured in turn (A B A B ...), and the median of the
    per-pair CPU ratios A/B (a pair shares the machine's load of its moment)."""

    a: Run
    b: Run | None
    ratio: float | None


def median_run(runs: list[Run]) -> Run:
    return Run(
        statistics.median(r.cpu for r in runs),
        statistics.median(r.wall for r in runs),
        max(r.peak_mib for r in runs),
        max((r.status for r in runs), key=abs),
        runs[-1].stderr,
    )


def paired(a: list[str], b: list[str] | None, repeat: int, warmup: int = 1) -> Pair:
    for _ in range(warmup):
        run(a)
        if b is not None:
            run(b)
    runs_a: list[Run] = []
    runs_b: list[Run] = []
    for _ in range(repeat):
        runs_a.append(run(a))
        if b is not None:
            runs_b.append(run(b))
    if b is None:
        return Pair(median_run(runs_a), None, None)
    ratio = statistics.median(x.cpu / y.cpu for x, y in zip(runs_a, runs_b, strict=True))
    return Pair(median_run(runs_a), median_run(runs_b), ratio)
