"""`npu-run`: execute a model with the reference interpreter; summarise or save its outputs."""

from __future__ import annotations

import argparse

import numpy as np

from ..diagnostics import NpucError, input_files
from ..limits import MAX_COUNT
from ..printing import add_printing_options
from ..progress import quiet
from .benchmark import (
    add_benchmark_options,
    benchmark_binary,
    benchmark_model,
    check_benchmark_options,
)
from .cli_options import add_debug_option, add_import_options
from .quantize_options import add_quantize_options, check_options
from .reporting import finish, reported_errors
from .run_binary import add_binary_options, apply_config, run_binary
from .run_model import run_model


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npu-run",
        description="Run a model (.onnx, .tflite or .mlir) with npuc's reference interpreter, "
        "or a compiled program (.npubin) with the NPU runtime.",
    )
    parser.add_argument(
        "model", nargs="?", help="model file: .onnx, .tflite, .mlir, or a compiled .npubin"
    )
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="input tensor from a .npy file (repeatable); missing inputs get seeded random data. "
        "A quantized input takes floats (quantized with its type) or its storage integers",
    )
    parser.add_argument(
        "-o", "--output", metavar="OUT.npz", help="save the outputs, keyed by tensor name"
    )
    parser.add_argument(
        "-p",
        "--passes",
        default="",
        metavar="PIPELINE",
        help="passes to apply before running (npu-opt -p syntax; 'default': the standard pipeline)",
    )
    parser.add_argument("--print-ir", action="store_true", help="print the IR that is executed")
    add_printing_options(parser)
    parser.add_argument(
        "--export-qdq",
        metavar="FILE.onnx",
        help="write the (quantized) model as ONNX QDQ, to cross-check in onnxruntime or view",
    )
    parser.add_argument(
        "--level",
        choices=("nn", "qnn", "tile", "mem"),
        help="require the model to use only this level's ops (nn: float ops; qnn: also "
        "quantized ops; tile: also tiles and DMA; mem: also memory plans). Quantized outputs "
        "are reported dequantized as NAME and as stored integers as NAME.q",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for generated inputs (default 0)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    parser.add_argument(
        "--sequence",
        type=int,
        metavar="N",
        help="run N calls carrying the model's state (e.g. TFLite variables); --input arrays "
        "then have a leading axis of length N, and -o saves every step's outputs stacked",
    )
    add_import_options(parser)
    add_quantize_options(parser)
    add_binary_options(parser)
    add_benchmark_options(parser)
    add_debug_option(parser)
    return parser


def load_input(spec: str) -> tuple[str, np.ndarray]:
    name, sep, file = spec.partition("=")
    if not sep or not name or not file:
        raise NpucError(f"bad --input '{spec}': expected NAME=FILE.npy")
    from ..input_files import ARRAY_FILE_ERRORS, array_file_error

    try:
        array = np.load(file, allow_pickle=False)
    except OSError as e:
        raise NpucError(f"cannot read a numpy array: {e.strerror or e}", file) from None
    except ARRAY_FILE_ERRORS as e:  # numpy's header parser raises assorted errors
        raise NpucError(f"not a numpy .npy/.npz array: {array_file_error(e)}", file) from None
    if isinstance(array, np.lib.npyio.NpzFile):
        with array:
            if len(array.files) != 1:
                raise NpucError(
                    f"an .npz input must hold exactly one array, found {len(array.files)}", file
                )
            try:
                array = array[array.files[0]]
            except ARRAY_FILE_ERRORS as e:
                raise NpucError(f"not a numpy .npz archive: {array_file_error(e)}", file) from None
    return name, array


def _input_paths(specs: list[str]) -> dict[str, str]:
    """Input name -> the file its --input NAME=FILE reads."""
    return {name: file for name, sep, file in (s.partition("=") for s in specs) if sep}


#: The options that apply to a compiled .npubin program (the others are refused).
BINARY_OPTIONS = frozenset(
    {
        "help",
        "input",
        "output",
        "seed",
        "sequence",
        "json",
        "profile",
        "target",
        "dump_tensors",
        "config",
        "debug",
        "max_tensor_bytes",
        "benchmark",
        "warmup",
        "quiet",
        "version",
    }
)


def run(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    with quiet(args.quiet):
        return _run(parser, args)


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    check_benchmark_options(parser, args)
    apply_config(args)
    if not 0 <= args.seed < 2**64:
        raise NpucError(f"--seed must be an integer in [0, 2**64), got {args.seed}")
    if args.sequence is not None and args.sequence < 1:
        raise NpucError(f"--sequence must be at least 1, not {args.sequence}")
    if args.sequence is not None and args.sequence > MAX_COUNT:
        raise NpucError(f"--sequence must be at most {MAX_COUNT}, not {args.sequence}")
    if args.model is None:
        raise NpucError("missing the model (or --config FILE naming a build)")
    if args.model.endswith(".npubin"):
        parser = build_parser()
        for action in parser._actions:
            given = getattr(args, action.dest, None)
            if (
                action.dest not in BINARY_OPTIONS
                and action.option_strings
                and (given != parser.get_default(action.dest))
            ):
                raise NpucError(
                    f"{action.option_strings[-1]} applies to a model, not to a "
                    "compiled .npubin program"
                )
        with input_files(_input_paths(args.input)):
            inputs = dict(load_input(spec) for spec in args.input)
            return (run_binary if args.benchmark is None else benchmark_binary)(args, inputs)
    for option in ("profile", "dump_tensors", "target"):
        if getattr(args, option) not in (None, False):
            raise NpucError(f"--{option.replace('_', '-')} needs a compiled .npubin program")
    # With --benchmark, --json holds the timings, not the --quantize comparison.
    check_options(
        args if args.benchmark is None else argparse.Namespace(**(vars(args) | {"json": None}))
    )
    with input_files(_input_paths(args.input)):
        feeds = dict(load_input(spec) for spec in args.input)
        return (run_model if args.benchmark is None else benchmark_model)(args, feeds)


def main(argv: list[str] | None = None) -> None:
    with reported_errors("npu-run"):
        status = run(argv)
    finish(status, argv)


if __name__ == "__main__":
    main()
