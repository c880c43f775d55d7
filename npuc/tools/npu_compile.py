"""`npu-compile`: the one-shot driver, model in, deployable files and reports out."""

from __future__ import annotations

import os

# One BLAS thread unless the user asks for more: calibration and the accuracy report run
# many small GEMMs, for which OpenBLAS's threads only spin (on a busy 2-core machine a
# 16-channel 32x32 convolution took 18x the CPU time with them). Set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import csv
import gc
import io
from pathlib import Path
from typing import TYPE_CHECKING

from ..diagnostics import NpucError
from ..target import load_target
from .cli_options import add_debug_option, add_import_options, import_options
from .compare_vela import check_comparable, comparison, run_vela, vela_arguments
from .listing import ListTargetsAction
from .quantize_options import SCHEMES
from .reporting import finish, reported_errors

if TYPE_CHECKING:
    from ..compile_flow import CompileOptions, CompileResult


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npu-compile",
        description="Compile a model for a target: import, optimise, quantize (or keep the "
        "model's quantization), tile, plan memory and write the bundle and reports.",
    )
    parser.add_argument("model", nargs="?", help="model file: .onnx, .tflite or .mlir")
    parser.add_argument("--target", "-t", help="target name or TOML file (see docs/targets.md)")
    parser.add_argument("--list-targets", action=ListTargetsAction)
    parser.add_argument(
        "--optimise",
        choices=("performance", "size"),
        help="tile for the fewest estimated cycles (default) or the least peak SRAM",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--calib", metavar="DIR", help="calibration data for a float model")
    source.add_argument("--calib-random", type=int, metavar="N", help="N seeded random samples")
    parser.add_argument(
        "--scheme", choices=SCHEMES, help="quantization scheme of a float model (default int8)"
    )
    parser.add_argument(
        "--tiling",
        metavar="MANUAL",
        help='manual tiling, e.g. "(0,3,4,1);(7,7,1,2)", or "none": one instruction a layer',
    )
    parser.add_argument(
        "--no-host-fallback",
        action="store_true",
        help="refuse quantized ops without an NPU instruction instead of running them on the "
        "target's host CPU (float ops at the model's edges still run there)",
    )
    parser.add_argument(
        "--show-host-ops", action="store_true", help="list the ops that run on the host and why"
    )
    parser.add_argument(
        "--compare-vela",
        action="store_true",
        help="print Arm Vela's SRAM, flash and cycles for the same int8 TFLite model beside "
        "npuc's (needs vela, and a target mirroring a Vela configuration)",
    )
    parser.add_argument("--name", help="output name, a C identifier (default: the model's)")
    parser.add_argument("--config", metavar="FILE", help="TOML file with a [build] section")
    parser.add_argument("-o", "--output-dir", metavar="OUTDIR")
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no stage lines and no progress bars"
    )
    add_import_options(parser)
    add_debug_option(parser)
    return parser


def options_from(args: argparse.Namespace):
    """CompileOptions from the flags, over the config file's [build] section."""
    from ..compile_flow import CompileOptions
    from ..config import read_config

    build = read_config(args.config)["build"] if args.config else {}
    flags = {
        "model": args.model,
        "target": args.target,
        "optimise": args.optimise,
        "scheme": args.scheme,
        "calib": args.calib,
        "calib_random": args.calib_random,
        "tiling": args.tiling,
        "name": args.name,
        "output": args.output_dir,
    }
    merged = {**build, **{k: v for k, v in flags.items() if v is not None}}
    if args.calib is not None or args.calib_random is not None:
        merged.pop("calib_random" if args.calib is not None else "calib", None)
    if not args.input_shape and "input_shape" in build:
        args.input_shape = build["input_shape"]
    for key, flag in (("model", "MODEL"), ("target", "--target"), ("output", "-o OUTDIR")):
        if not merged.get(key):
            raise NpucError(f"missing {flag} (give it as a flag or in the config's [build])")
    return CompileOptions(
        model=Path(merged["model"]),
        target=merged["target"],
        output=Path(merged["output"]),
        name=merged.get("name"),
        optimise=merged.get("optimise", "performance"),
        scheme=merged.get("scheme"),
        calib=merged.get("calib"),
        calib_random=merged.get("calib_random"),
        tiling=merged.get("tiling", ""),
        host_fallback=not args.no_host_fallback and build.get("host_fallback", True),
        import_options=import_options(args),
    )


def run(argv: list[str] | None = None) -> int:
    from ..compile_flow import compile_model
    from ..output_files import check_output_dir

    args = build_parser().parse_args(argv)
    options = options_from(args)
    check_output_dir(options.output)
    vela = check_comparable(options.model, load_target(options.target)) if args.compare_vela else ""
    # The cyclic garbage collector walks every live object at each full collection, and a
    # compile keeps its IR (10^5 to 10^6 objects) alive to the end: collecting took 15-18 %
    # of the CPU time of MobileNetV2 and of a 1000-layer chain and freed next to nothing
    # (their peak memory grows by under 5 % without it). Reference counting still frees
    # everything that is not in a cycle. After the compile, its objects (mostly garbage in
    # cycles by then) are frozen until the end: the first collection after re-enabling
    # would otherwise walk every one of them (0.43 s of the chain, 0.07 s of MobileNetV2).
    gc.disable()
    try:
        result = compile_model(options, progress=not args.quiet)
        gc.freeze()
    finally:
        gc.enable()
    try:
        return _report(args, options, result, vela)
    finally:
        gc.unfreeze()  # in-process callers: collected by a later full collection


def _report(
    args: argparse.Namespace, options: CompileOptions, result: CompileResult, vela: str
) -> int:
    """Write the compiled files and print the summary (and Vela's figures next to it)."""
    from ..output_files import write_folder

    if vela and f"{result.name}.accuracy.txt" in result.files:
        raise NpucError(
            f"--compare-vela needs an int8 TFLite model; {options.model.name} is a float model"
        )
    written = write_folder(options.output, result.files)
    for line in result.summary:
        print(line)
    if args.show_host_ops:
        print("ops on the host:")
        for line in result.host_ops:
            print(line)
    total = sum(t for _, t in result.timings)
    print(f"compiled {options.model.name} for {options.target} in {total:.2f} s")
    print(f"wrote {len(written)} files to {options.output}/:")
    for path in written:
        print(f"  {path.name}")
    if vela:
        summary = result.files[f"{result.name}.summary.csv"].decode()
        ours = next(csv.DictReader(io.StringIO(summary)))
        theirs = run_vela(vela, options.model, result.target, options.optimise)
        configuration = " ".join(vela_arguments(result.target))
        print(f"npuc and Vela on {result.target.name} (Vela: {configuration}):")
        for line in comparison(ours, theirs, result.target):
            print(f"  {line}")
    return 0


def main(argv: list[str] | None = None) -> None:
    with reported_errors("npu-compile"):
        status = run(argv)
    finish(status, argv)


if __name__ == "__main__":
    main()
