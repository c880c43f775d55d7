"""plan-memory figures on real graphs: the activations region against its bounds and peers.

Run: PYTHONPATH=tests .venv/bin/python tests/bench/bench_plan_memory.py [--alignment A] [--budget S]

For the shared MobileNetV2 (int8, no tiling) and the ONNX model-zoo graphs shipped with
the onnx wheel (float, after npuc's default pipeline), the plan-memory pass builds the
activation buffers (views, in-place and concat slices included) and places them. The
same buffers are then placed by the TFLite-style best fit (greedy by size) and the TVM
USMP-style first fit (greedy by size), so the columns compare placement algorithms on
one problem. The "raw" columns drop every view (each tensor its own buffer, as in
planners without in-place reuse), which is the setting of the peers' MobileNetV2
figures in ../shared/models/README.md. Columns are KiB; "plan ms" is the whole pass,
"place ms" the placement.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from onnx_models import LIGHT_DIR
from shared_models import MBV2

import npuc.api as api
from npuc.graph_io import entry_function
from npuc.passes.memory.assign import plan_function
from npuc.passes.memory.plan import greedy_by_size, lower_bound, naive_size
from npuc.passes.memory.report import verify_placement
from npuc.registry import DEFAULT_PIPELINE
from npuc.target import load_target

LIGHT = [
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
]


def models():
    if MBV2.exists():
        yield "mbv2_int8_224", api.load_model(MBV2)
    for name in LIGHT:
        module = api.load_model(LIGHT_DIR / f"light_{name}.onnx")
        api.apply_pipeline(module, DEFAULT_PIPELINE)
        yield name, module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alignment", type=int, default=16)
    ap.add_argument("--budget", type=float, default=2.0, help="placement budget (s)")
    ap.add_argument("--target", default="mcu-64")
    args = ap.parse_args()
    target, a, kib = load_target(args.target), args.alignment, 1024
    print(f"target {target.name}, alignment {a}, activations region (KiB)")
    print(
        f"{'model':<15} {'ops':>5} {'bufs':>5} {'views':>5} {'lower':>8} {'npuc':>8} "
        f"{'tflite':>8} {'tvm':>8} {'naive':>9} {'plan ms':>8} {'place ms':>8} "
        f"{'raw lower':>9} {'raw tflite':>10} {'raw tvm':>8}"
    )
    for name, module in models():
        func = entry_function(module)
        t0 = time.perf_counter()
        plan = plan_function(func, target, a, budget_seconds=args.budget)
        seconds = time.perf_counter() - t0
        bufs = plan.problems["activations"]
        report = next(r for r in plan.reports if r.region == "activations")
        tflite = greedy_by_size(bufs, a)
        tvm = greedy_by_size(bufs, a, best_fit=False)
        for p in (tflite, tvm):
            verify_placement(bufs, p, a)
        ops = sum(1 for _ in func.body.block.ops)
        raw = [replace(b, aliases_of=None, offset_in_parent=0) for b in bufs]
        raw_tflite, raw_tvm = greedy_by_size(raw, a), greedy_by_size(raw, a, best_fit=False)
        print(
            f"{name:<15} {ops:>5} {len(bufs):>5} {sum(plan.views.values()):>5} "
            f"{report.lower_bound / kib:>8.1f} {report.planned / kib:>8.1f} "
            f"{tflite.total_size / kib:>8.1f} {tvm.total_size / kib:>8.1f} "
            f"{naive_size(bufs, a) / kib:>9.1f} {seconds * 1000:>8.0f} "
            f"{report.seconds * 1000:>8.1f} "
            f"{lower_bound(raw, a) / kib:>9.1f} {raw_tflite.total_size / kib:>10.1f} "
            f"{raw_tvm.total_size / kib:>8.1f}"
        )


if __name__ == "__main__":
    main()
