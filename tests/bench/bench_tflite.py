"""Figures for the TFLite importer: import time, qnn interpreter vs LiteRT, bit-exact cases.

Run: PYTHONPATH=tests .venv/bin/python tests/bench/bench_tflite.py [--repeat N] [--model PATH]
All engines run in this process on the same int8 input. LiteRT runs with its reference
kernels (BUILTIN_REF, the kernels npuc is bit-exact with) and with its default builtin
kernels without any delegate (BUILTIN_WITHOUT_DEFAULT_DELEGATES) at 1 and 2 threads.
"""

from __future__ import annotations

import os

# One BLAS thread, as LiteRT's single-threaded runs: on a busy 2-core machine OpenBLAS's
# spinning threads make npuc's GEMMs several times slower (set it before numpy loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from shared_models import MBV2

from npuc.frontends.tflite import import_tflite
from npuc.graph_io import entry_function, input_names
from npuc.runtime.qnn_interpreter import run_module

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS), str(TESTS / "frontends")]
MODEL = MBV2


def times(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def litert_runner(data: bytes, kind: OpResolverType, threads: int | None, x: np.ndarray):
    interp = Interpreter(
        model_content=data, experimental_op_resolver_type=kind, num_threads=threads
    )
    interp.allocate_tensors()
    inp, out = interp.get_input_details()[0]["index"], interp.get_output_details()[0]["index"]

    def run() -> np.ndarray:
        interp.set_tensor(inp, x)
        interp.invoke()
        return interp.get_tensor(out)

    return run


def count_cases() -> None:
    """Single-op cases where npuc equals LiteRT's reference kernels bit for bit.

    Runs the TFLite test files in this process and counts the `check_exact` comparisons
    that passed, by the model's input type.
    """
    import collections

    import pytest
    import tflite_builder

    files = sorted(str(p) for p in (TESTS / "frontends").glob("test_tflite_*.py"))
    code = pytest.main(["-q", "-p", "no:cacheprovider", "--no-header", *files])
    counts = collections.Counter(kind for kind, _ in tflite_builder.EXACT_CASES)
    elements = sum(n for _, n in tflite_builder.EXACT_CASES)
    print(
        f"bit-exact single-op cases vs BUILTIN_REF (pytest exit {int(code)}): "
        + ", ".join(f"{kind} input: {n}" for kind, n in sorted(counts.items()))
        + f"; {sum(counts.values())} cases, {elements} output elements"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--model", type=Path, default=MODEL)
    parser.add_argument("--skip-cases", action="store_true")
    args = parser.parse_args()

    data = args.model.read_bytes()
    import_times = times(lambda: import_tflite(data), 5)
    print(f"model: {args.model.name}")
    print(
        f"import_tflite: best of 5 {min(import_times) * 1e3:.1f} ms "
        f"(median {statistics.median(import_times) * 1e3:.1f} ms)"
    )

    module = import_tflite(data)
    name = input_names(entry_function(module))[0]
    probe = Interpreter(model_content=data)
    detail = probe.get_input_details()[0]
    x = np.random.default_rng(0).integers(-128, 128, detail["shape"]).astype(np.int8)

    def npuc_run() -> np.ndarray:
        return next(iter(run_module(module, {name: x}).values()))

    engines = {
        "npuc qnn interpreter": npuc_run,
        "LiteRT BUILTIN_REF": litert_runner(data, OpResolverType.BUILTIN_REF, None, x),
        "LiteRT builtin, no delegate, 1 thread": litert_runner(
            data, OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES, 1, x
        ),
        "LiteRT builtin, no delegate, 2 threads": litert_runner(
            data, OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES, 2, x
        ),
    }
    outputs, medians = {}, {}
    for label, run in engines.items():
        outputs[label] = run()  # warm-up
        medians[label] = statistics.median(times(run, args.repeat))
    ours = medians["npuc qnn interpreter"]
    print(f"latency, median of {args.repeat}:")
    for label, t in medians.items():
        print(f"  {label:40s} {t * 1e3:9.2f} ms   npuc / this = {ours / t:7.2f}x")
    ref = outputs["LiteRT BUILTIN_REF"].astype(np.int64)
    diff = np.abs(outputs["npuc qnn interpreter"].astype(np.int64) - ref)
    print(
        f"npuc vs BUILTIN_REF output: {int((diff != 0).sum())}/{diff.size} elements differ, "
        f"max |diff| {int(diff.max())} (SOFTMAX goes through float)"
    )
    if not args.skip_cases:
        count_cases()


if __name__ == "__main__":
    main()
