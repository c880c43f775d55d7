"""`npu-bundle`: plan a model's memory and write the embedded bundle and memory reports.

Writes NAME.h, NAME.weights.bin, NAME.weights.txt, NAME.mem.mlir, NAME.memory.txt,
NAME.memory.json and NAME.memory.png into OUTDIR; nothing is written if any step fails.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..diagnostics import located, working_on
from .cli_options import add_debug_option, add_import_options, import_options
from .reporting import finish, reported_errors


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
    add_debug_option(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    from ..api import apply_pipeline, load_model
    from ..backend.bundle import check_name, identifier_from
    from ..backend.outputs import memory_files, memory_summary
    from ..output_files import check_output_dir, write_folder
    from ..passes.memory.ir import is_planned, read_plan
    from ..registry import DEFAULT_PIPELINE
    from ..target import load_target

    args = build_parser().parse_args(argv)
    model = Path(args.model)
    name = check_name(args.name) if args.name is not None else identifier_from(model.stem)
    outdir = Path(args.output_dir)
    check_output_dir(outdir)
    target = load_target(args.target)
    with working_on("step", "import"), located(model):
        module = load_model(model, **import_options(args))
    with working_on("step", "passes"), located(model):
        if args.passes is not None:
            apply_pipeline(module, args.passes)
        elif not is_planned(module):
            apply_pipeline(module, DEFAULT_PIPELINE)
    with working_on("step", "plan memory"):
        if not is_planned(module):
            spec = args.target if "/" not in args.target else json.dumps(args.target)
            apply_pipeline(module, f"plan-memory{{target={spec}}}")
        planned = read_plan(module)
    with working_on("step", "emit"):
        files = memory_files(name, module, planned, target, model.name)
    written = write_folder(outdir, files)
    for line in memory_summary(planned, target):
        print(line)
    for path in written:
        print(f"wrote {path}")
    return 0


def main(argv: list[str] | None = None) -> None:
    with reported_errors("npu-bundle"):
        status = run(argv)
    finish(status, argv)


if __name__ == "__main__":
    main()
