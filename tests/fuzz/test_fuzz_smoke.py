"""A seeded fuzz smoke pass over every input kind, and the replay of the committed crashes.

The rule (tests/fuzz/run.py): input at fault gives a diagnostic naming the file (or the
option) with exit 1; npuc never prints a traceback, hangs, exits 0 on input a mutation
made definitely invalid, leaves a half-written output, or reports an internal error
(exit 70) on such input. A few thousand cases run in worker processes (two, or one on a
single CPU); `PYTHONPATH=tests .venv/bin/python tests/fuzz/run.py --help` runs more.
"""

from __future__ import annotations

import os
import time
from collections import Counter

from fuzz import run

SEED = 20251125
#: Cases per kind: the slower kinds (quantizing, compiling) get fewer.
CASES = {
    "onnx": 400,
    "tflite": 400,
    "mlir": 500,
    "npubin": 400,
    "npy": 300,
    "calib": 150,
    "json": 200,
    "cli": 250,
}
JOBS = 2 if (os.cpu_count() or 1) > 1 else 1


def _failures(cases, results) -> str:
    lines = []
    for case, result in zip(cases, results, strict=True):
        if result.outcome in run.FAILURES:
            lines.append(
                f"[{case.kind} {result.outcome}] {case.tool} {case.argv}: "
                f"{case.description}\n    {run._summary(result)[:300]}"
            )
    return "\n".join(lines[:20])


def test_smoke_every_kind(corpus):
    started = time.perf_counter()
    cases = []
    for kind, n in CASES.items():
        cases += run.generate(corpus, [kind], n, SEED)
    results = run.run_cases(cases, str(corpus.root), jobs=JOBS, timeout=20)
    counts = run.tally(cases, results)
    print(f"\n{run.table(counts)}\n{len(cases)} cases in {time.perf_counter() - started:.1f} s")
    failed = sum(c[f] for c in counts.values() for f in run.FAILURES)
    assert failed == 0, _failures(cases, results)
    # The mutations reach past the first check: some inputs are valid, most are refused.
    for kind, c in counts.items():
        assert c["clean"] > c["tried"] // 3, (kind, c)
    assert sum(c["ok"] for c in counts.values()) > len(cases) // 20


def test_committed_crashes_are_clean_diagnostics(corpus):
    cases = run.load_crashes()
    assert cases, "tests/fuzz/crashes/ holds the minimized crashes; none were found"
    results = run.run_cases(cases, str(corpus.root), jobs=JOBS, timeout=30)
    outcomes = Counter(r.outcome for r in results)
    bad = [(c, r) for c, r in zip(cases, results, strict=True) if r.outcome != "clean"]
    assert not bad, f"{outcomes}\n" + "\n".join(
        f"{c.description} [{c.tool} {c.argv}]: {r.outcome}: {run._summary(r)[:300]}"
        for c, r in bad[:20]
    )


def test_classification():
    """The runner's verdicts on hand-made outcomes."""
    case = run.Case("onnx", "npu-opt", ["x"], names=["case.onnx"], bad=True)
    assert run.classify(case, 1, "npu-opt: /t/case.onnx: error: bad") == "clean"
    assert run.classify(case, 1, "npu-opt: error: bad") == "unnamed"
    assert run.classify(case, 70, "npu-opt: internal error: KeyError") == "internal"
    assert run.classify(case, 0, "") == "exit0-bad"
    assert run.classify(case, 1, "Traceback (most recent call last):\n") == "traceback"
    assert run.classify(case, 1, "npu-opt: case.onnx: error: x", "out.npz") == "half-written"
    cli = run.Case("cli", "npu-run", [], names=["--seed"])
    assert run.classify(cli, 2, "usage: npu-run\nnpu-run: error: argument --seed: x") == "clean"


def test_raw_diagnostics_are_failures():
    """Python's exception text, or a first line that is not the whole diagnostic, is 'raw'
    (docs/robustness.md); indented continuation lines are fine."""
    case = run.Case("tflite", "npu-run", ["x"], names=["case.tflite"], bad=True)
    prefix = "npu-run: /t/case.tflite: error: "
    raw = [
        "corrupt TFLite model (TypeError: bad number -260728 for type uint32)",
        "invalid operator: IndexError: tuple index out of range",
        "invalid IR: MemoryError: ",
        "cannot read: ('EOF in multi-line statement', (2, 0))",
        "unsupported TFLite operators (2):\nFOO x1: a (no kernel)",  # unindented continuation
        "",  # no `error: WHAT`
    ]
    for message in raw:
        assert run.classify(case, 1, prefix + message) == "raw", message
    two_lines = (
        "unsupported TFLite operators (2): FOO x1: a (why); and 1 more line:\n  BAR x1: b (why)"
    )
    assert run.classify(case, 1, prefix + two_lines) == "clean"
    assert run.classify(case, 1, prefix + "scale 0 of tensor 'x' must be positive") == "clean"
