"""Did a compile-time change change the compiled output? Compiles a fixed set of models
(the shared MobileNetV2 in both --optimise modes, seven corpus models and the conv chains
of bench_compile_scale.py (--chains), float ones calibrated on 2 seeded random samples)
with this checkout's `npu-compile` and either saves
every output file (`--save DIR`, run on the old code) or compares each file's bytes with
a saved set (`--against DIR`, run on the new code), printing one line per model.

Run: PYTHONPATH=tests .venv/bin/python tests/bench/compare_compiled.py --save /tmp/ref
     (change the code)
     PYTHONPATH=tests .venv/bin/python tests/bench/compare_compiled.py --against /tmp/ref
     (--only NAME,... compiles only those cases: mbv2_performance, magika, chain300, ...,
    and any other corpus model named)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx
from bench_compile import shape_flags
from bench_compile_scale import conv_chain, npuc_command
from shared_models import MBV2

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from corpus import MODELS

CORPUS = (
    "wakeword_alexa",
    "face_detection",
    "selfie_segmentation",
    "magika",
    "silero_vad",
    "ppocr_cls",
    "efficientword_qdq",
)


def cases(
    chains: list[int], folder: Path, more: frozenset[str] = frozenset()
) -> list[tuple[str, list[str]]]:
    """(case name, npu-compile arguments after the output folder): CORPUS and the corpus
    models named in `more`; the chain models are written to `folder`."""
    found = [
        (f"mbv2_{optimise}", [str(MBV2), "--optimise", optimise])
        for optimise in ("performance", "size")
    ]
    for model in MODELS:
        if model.name in CORPUS or model.name in more:
            calib = [] if model.kind in ("tflite-int8", "onnx-qdq") else ["--calib-random", "2"]
            found.append((model.name, [str(model.file), *calib, *shape_flags(model.name)]))
    for layers in chains:
        path = folder / f"chain{layers}.onnx"
        onnx.save(conv_chain(layers), path)
        found.append((f"chain{layers}", [str(path), "--calib-random", "2"]))
    return found


def compile_case(args: list[str], out: Path) -> None:
    model, *extra = args
    command = [*npuc_command(Path(model), out, *extra), "-q"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def compare(saved: Path, fresh: Path) -> list[str]:
    """Files that differ or exist on one side only."""
    names = {p.name for p in saved.iterdir()} | {p.name for p in fresh.iterdir()}
    return sorted(
        n
        for n in names
        if not (saved / n).exists()
        or not (fresh / n).exists()
        or (saved / n).read_bytes() != (fresh / n).read_bytes()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", type=Path)
    mode.add_argument("--against", type=Path)
    parser.add_argument("--chains", default="100,300", help="comma-separated chain depths")
    parser.add_argument("--only", help="comma-separated case names")
    args = parser.parse_args()
    failed = 0
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
    chains = [int(n) for n in args.chains.split(",") if n]
    # A fixed folder: the accuracy report names the model file, so its path must repeat.
    models = Path(tempfile.gettempdir()) / "compare_compiled_models"
    models.mkdir(exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    for name, arguments in cases(chains, models, frozenset(only or ())):
        if only is not None and name not in only:
            continue
        if args.save:
            compile_case(arguments, args.save / name)
            print(f"{name}: saved {len(list((args.save / name).iterdir()))} files", flush=True)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            compile_case(arguments, Path(tmp))
            differ = compare(args.against / name, Path(tmp))
        npubin = any(n.endswith(".npubin") for n in differ)
        verdict = "differ: " + ", ".join(differ) if differ else "all files identical"
        print(f"{name}: .npubin {'DIFFERS' if npubin else 'identical'}; {verdict}", flush=True)
        failed += bool(differ)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
