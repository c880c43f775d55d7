"""`npu-bundle`: plan a model's memory and write the embedded bundle and memory reports.

Writes NAME.h, NAME.weights.bin, NAME.weights.txt, NAME.mem.mlir, NAME.memory.txt,
NAME.memory.json and NAME.memory.png into OUTDIR; nothing is written if any step fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from ..diagnostics import NpucError, reported_errors
from .cli_options import add_import_options, import_options


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npu-bundle",
        description="Plan a model's memory for a target and write NAME.h, the weights and "
        "memory reports.",
    )
    parser.add_argument("model", help="model file: .onnx, .tflite or .mlir")
    parser.add_argument("--target", "-t", required=True, help="target name or TOML file")
    parser.add_argument(
        "-p",
        "--passes",
        metavar="PIPELINE",
        help="passes to run (npu-opt -p syntax); default: npuc's default pipeline. "
        "plan-memory{target=T} follows unless the result is already planned",
    )
    parser.add_argument("--name", help="bundle name, a C identifier (default: the model's name)")
    parser.add_argument("-o", "--output-dir", required=True, metavar="OUTDIR")
    add_import_options(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    from ..api import apply_pipeline, load_model
    from ..backend.bundle import (
        check_name,
        header_text,
        identifier_from,
        weights_bytes,
        weights_text,
    )
    from ..backend.memory_ir import ACTIVATIONS, CONSTANTS, MUTABLE, is_planned, read_plan
    from ..backend.memory_plot import plot_profile
    from ..backend.memory_report import format_memory_report, memory_json, memory_usage
    from ..printing import print_module
    from ..registry import DEFAULT_PIPELINE
    from ..target import load_target

    args = build_parser().parse_args(argv)
    model = Path(args.model)
    name = check_name(args.name) if args.name is not None else identifier_from(model.stem)
    outdir = Path(args.output_dir)
    if outdir.exists() and not outdir.is_dir():
        raise NpucError(f"output directory is a file: {outdir}")
    if not outdir.resolve().parent.is_dir():
        raise NpucError(f"parent of the output directory does not exist: {outdir.parent}")
    target = load_target(args.target)
    module = load_model(model, **import_options(args))
    if args.passes is not None:
        apply_pipeline(module, args.passes)
    elif not is_planned(module):
        apply_pipeline(module, DEFAULT_PIPELINE)
    if not is_planned(module):
        spec = args.target if "/" not in args.target else json.dumps(args.target)
        apply_pipeline(module, f"plan-memory{{target={spec}}}")
    planned = read_plan(module)
    weights = weights_bytes(planned)
    files = {
        f"{name}.h": header_text(name, planned, model.name, target.name).encode(),
        f"{name}.weights.bin": weights,
        f"{name}.weights.txt": weights_text(weights).encode(),
        f"{name}.mem.mlir": print_module(module, elide_above=None).encode(),
        f"{name}.memory.txt": format_memory_report(planned, target).encode(),
        f"{name}.memory.json": (json.dumps(memory_json(planned, target), indent=1) + "\n").encode(),
        f"{name}.memory.png": plot_profile(planned, f"{name} on {target.name}"),
    }
    written = _write_all(outdir, files)
    labels = ((CONSTANTS, "constant"), (MUTABLE, "mutable"), (ACTIVATIONS, "activations"))
    for region, label in labels:
        size = planned.regions[region].size if region in planned.regions else 0
        print(f"{label} memory: {size} bytes ({size / 1024:.1f} KiB)")
    for memory, used, capacity in memory_usage(planned, target):
        if used > capacity:
            print(f"warning: memory '{memory}' needs {used} bytes but holds {capacity}")
    for path in written:
        print(f"wrote {path}")
    return 0


def _write_all(outdir: Path, files: dict[str, bytes]) -> list[Path]:
    """Write every file into a temporary folder first, then move them into `outdir`."""
    tmp = Path(tempfile.mkdtemp(prefix=".npu-bundle-", dir=outdir.resolve().parent))
    try:
        for file, data in files.items():
            (tmp / file).write_bytes(data)
        outdir.mkdir(exist_ok=True)
        paths = []
        for file in files:
            os.replace(tmp / file, outdir / file)
            paths.append(outdir / file)
        return paths
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    with reported_errors("npu-bundle"):
        sys.exit(run(argv))


if __name__ == "__main__":
    main()
