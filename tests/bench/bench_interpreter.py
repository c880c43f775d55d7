"""Figures for the `nn` level: import + pipeline time; interpreter latency vs onnxruntime.

Run: .venv/bin/python tests/bench/bench_interpreter.py [--repeat N]
Both engines run in this process on the same inputs; the ratio is what matters.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from npuc.api import apply_pipeline, random_inputs
from npuc.frontends.onnx import import_onnx
from npuc.registry import DEFAULT_PIPELINE
from npuc.runtime.nn_interpreter import run_module

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def compile_model(path: Path):
    module = import_onnx(path)
    apply_pipeline(module, DEFAULT_PIPELINE)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    print(f"{'model':<22} {'import':>9} {'import+pipeline':>16}")
    modules = {}
    for name in ("light_resnet50", "light_densenet121"):
        path = LIGHT / f"{name}.onnx"
        t_import, _ = timed(lambda p=path: import_onnx(p), 3)
        t_total, modules[name] = timed(lambda p=path: compile_model(p), 3)
        print(f"{name:<22} {t_import:>8.2f}s {t_total:>15.2f}s")

    name = "light_resnet50"
    module = modules[name]
    feeds = random_inputs(module, seed=0)
    session = ort.InferenceSession(str(LIGHT / f"{name}.onnx"), providers=["CPUExecutionProvider"])
    run_module(module, feeds)
    session.run(None, feeds)
    t_npuc, ours = timed(lambda: run_module(module, feeds), args.repeat)
    t_ort, theirs = timed(lambda: session.run(None, feeds), args.repeat * 4)
    diff = float(np.max(np.abs(next(iter(ours.values())) - theirs[0])))
    print(
        f"\n{name} latency (median): npuc reference interpreter {t_npuc * 1e3:.1f} ms, "
        f"onnxruntime CPU {t_ort * 1e3:.1f} ms, ratio {t_npuc / t_ort:.2f}x (target <= 4x); "
        f"max |diff| {diff:.2e}"
    )


if __name__ == "__main__":
    main()
