"""Figures for the `nn` level: import + pipeline time; interpreter latency vs onnxruntime.

Run: PYTHONPATH=tests .venv/bin/python tests/bench/bench_interpreter.py [--repeat N]
Both engines run in this process, one thread each (onnxruntime's intra- and inter-op
pools, npuc's BLAS through threadpoolctl), on the same inputs and the same seeded random
weights (the light graphs ship constant-filled ones); the ratio is what matters. The
target (issue 15): at most 2x onnxruntime on light_resnet50 and light_densenet121.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx_models import LIGHT_DIR, with_random_weights
from threadpoolctl import threadpool_limits

from npuc.api import apply_pipeline, random_inputs
from npuc.frontends.onnx import import_onnx
from npuc.graph_io import entry_function, input_names
from npuc.registry import DEFAULT_PIPELINE
from npuc.runtime.nn_interpreter import FunctionRunner


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def compile_model(model: onnx.ModelProto | Path):
    module = import_onnx(model)
    apply_pipeline(module, DEFAULT_PIPELINE)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    print(f"{'model':<22} {'import':>9} {'import+pipeline':>16}")
    models = {}
    for name in ("light_resnet50", "light_densenet121"):
        models[name] = with_random_weights(onnx.load(LIGHT_DIR / f"{name}.onnx"), seed=0)
        t_import, _ = timed(lambda m=models[name]: import_onnx(m), 3)
        t_total, _ = timed(lambda m=models[name]: compile_model(m), 3)
        print(f"{name:<22} {t_import:>8.2f}s {t_total:>15.2f}s")

    print()
    for name, model in models.items():
        latency(name, model, args.repeat)


def latency(name: str, model: onnx.ModelProto, repeat: int) -> None:
    module = compile_model(model)
    feeds = random_inputs(module, seed=0)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    # Both prepared once (a runner, a session), then timed per call, as npu-run --benchmark,
    # taking turns call by call so that a busy machine slows both alike.
    func = entry_function(module)
    runner = FunctionRunner(func)
    args = [feeds[name] for name in input_names(func)]
    ours_times, theirs_times = [], []
    with threadpool_limits(limits=1, user_api="blas"):
        runner.run(args)
        session.run(None, feeds)
        for _ in range(repeat):
            t_one, (ours, _) = timed(lambda: runner.run(args), 1)
            t_two, theirs = timed(lambda: session.run(None, feeds), 1)
            ours_times.append(t_one)
            theirs_times.append(t_two)
    t_npuc, t_ort = statistics.median(ours_times), statistics.median(theirs_times)
    diff = float(np.max(np.abs(ours[0] - theirs[0])))
    print(
        f"{name} latency (median, 1 thread): npuc reference interpreter {t_npuc * 1e3:.1f} ms, "
        f"onnxruntime CPU {t_ort * 1e3:.1f} ms, ratio {t_npuc / t_ort:.2f}x (target <= 2x); "
        f"max |diff| {diff:.2e}"
    )


if __name__ == "__main__":
    main()
