"""Compile time, whole process: `npu-compile` next to Vela in the same run.

Rows: the shared MobileNetV2 (int8 TFLite) with --optimise performance and size, every
corpus model (tests/models/corpus.toml; a float model calibrated on 2 random samples, as
tests/models/table.py builds it), and the conv chains of bench_compile_scale.py. Each
figure is the median CPU seconds (user + system) of the whole process, imports included,
over --repeat runs after a warm-up; npuc and Vela run in turn (A B A B ...) and the ratio
is the median of the per-pair ratios. Vela compiles the int8 TFLite models only (the others
show "-"); a chain's ratio is against Vela's MobileNetV2 (performance) of the same run.
Targets (issue 15): MobileNetV2 at most 1x Vela, int8 TFLite corpus models at
most 2x Vela, the others at most 3 s, the 1000-layer chain at most 20x Vela's MobileNetV2
and 1 GiB.

Run: PYTHONPATH=tests .venv/bin/python tests/bench/bench_compile.py [--repeat N]
         [--only NAME,...] [--chains 10,100,1000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import onnx
from bench_compile_scale import conv_chain, npuc_command, vela_command
from bench_vela import TARGET
from shared_models import MBV2
from whole_process import Pair, Run, paired

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from corpus import MODELS
from test_corpus import INPUT_SHAPES

HEAD = (
    f"{'model':<22} {'kind':<13} {'npuc s':>7} {'Vela s':>7} {'ratio':>6} {'goal':>8} "
    f"{'npuc MiB':>9} {'Vela MiB':>9}"
)


def row(name: str, kind: str, pair: Pair, goal: str) -> str:
    vela: Run | None = pair.b
    failed = f"  npuc exit {pair.a.status}" if pair.a.status else ""
    ratio = pair.ratio
    if vela is not None and vela.status:
        failed += f"  Vela exit {vela.status}"
        vela = ratio = None
    return (
        f"{name:<22} {kind:<13} {pair.a.cpu:>7.2f} "
        f"{f'{vela.cpu:.2f}' if vela else '-':>7} "
        f"{f'{pair.ratio:.2f}' if ratio is not None else '-':>6} {goal:>8} "
        f"{pair.a.peak_mib:>9.0f} {f'{vela.peak_mib:.0f}' if vela else '-':>9}{failed}"
    )


def shape_flags(name: str) -> list[str]:
    shapes = INPUT_SHAPES.get(name, {})
    return [f"--input-shape={k}:{','.join(map(str, v))}" for k, v in shapes.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", help="comma-separated row names (mbv2, corpus names, chainN)")
    parser.add_argument("--chains", default="10,100,1000")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    print(f"target {TARGET}; CPU seconds of the whole process, median of {args.repeat} runs")
    print(HEAD)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        vela_mbv2 = None
        for optimise in ("performance", "size"):
            name = f"mbv2 {optimise}"
            if only and "mbv2" not in only:
                continue
            extra = ["--optimise", optimise]
            pair = paired(
                npuc_command(MBV2, out / "npuc", *extra),
                vela_command(MBV2, out / "vela", optimise),
                args.repeat,
            )
            vela_mbv2 = vela_mbv2 or pair.b
            print(row(name, "tflite-int8", pair, "1x Vela"), flush=True)
        for model in MODELS:
            if only and model.name not in only:
                continue
            calib = [] if model.kind in ("tflite-int8", "onnx-qdq") else ["--calib-random", "2"]
            ours = npuc_command(model.file, out / "npuc", *calib, *shape_flags(model.name))
            theirs = vela_command(model.file, out / "vela") if model.kind == "tflite-int8" else None
            pair = paired(ours, theirs, args.repeat)
            goal = "2x Vela" if theirs else "3 s"
            print(row(model.name, model.kind, pair, goal), flush=True)
        for n in (int(x) for x in args.chains.split(",") if x):
            name = f"chain{n}"
            if only and name not in only:
                continue
            path = out / f"{name}.onnx"
            onnx.save(conv_chain(n), path)
            command = npuc_command(path, out / "npuc", "--calib-random", "2")
            ours = paired(command, None, 1 if n >= 1000 else args.repeat, warmup=0).a
            # the ratio column: against Vela's MobileNetV2 (performance) of this run
            ratio = ours.cpu / vela_mbv2.cpu if vela_mbv2 is not None else None
            print(row(name, "onnx-float", Pair(ours, None, ratio), "20x mbv2"), flush=True)


if __name__ == "__main__":
    main()
