"""Command-line options shared by the tools that import models."""

from __future__ import annotations

import argparse

from ..diagnostics import NpucError
from .reporting import DebugAction


def add_import_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model import")
    group.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME:D0,D1,...",
        help="override or fix an input's shape, e.g. data:1,3,224,224 (repeatable)",
    )
    group.add_argument(
        "--inputs",
        default=None,
        metavar="T1,T2",
        help="cut the graph: these tensors become the inputs",
    )
    group.add_argument(
        "--outputs",
        default=None,
        metavar="T1,T2",
        help="cut the graph: these tensors become the outputs",
    )
    group.add_argument(
        "--prequantized",
        choices=("keep", "dequantize"),
        default="keep",
        help="pre-quantized ONNX (QDQ, QLinear*): import into qnn with the model's own "
        "parameters (keep, default) or as float for re-calibration (dequantize)",
    )


def add_debug_option(parser: argparse.ArgumentParser, version: bool = True) -> None:
    """The options every tool has: --debug, --max-tensor-bytes (npuc/limits.py), --version."""
    from ..limits import add_limit_option

    parser.add_argument("--debug", action=DebugAction)
    add_limit_option(parser)
    if version:  # npu-opt has xDSL's, in the same format
        parser.add_argument("--version", action=VersionAction)


class VersionAction(argparse.Action):
    """argparse's `version` action with the line made when asked for: xDSL's version comes
    from importlib.metadata, 30-40 ms to import, which a tool run without --version skips."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs):
        kwargs.setdefault("help", "show program's version number and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(version_line(parser.prog))
        parser.exit()


def version_line(tool: str) -> str:
    from importlib.metadata import version

    from ..version import __version__

    return f"{tool} {__version__} (xDSL {version('xdsl')})"


def import_options(args: argparse.Namespace) -> dict:
    """Keyword arguments for `load_model`/`import_onnx` from parsed options."""
    shapes: dict[str, list[int]] = {}
    for spec in args.input_shape:
        name, sep, dims = spec.rpartition(":")
        try:
            values = [int(d) for d in dims.split(",")]
        except ValueError:
            values = []
        if not sep or not name or not values or any(v <= 0 for v in values):
            raise NpucError(
                f"bad --input-shape '{spec}': expected NAME:D0,D1,... with positive integer dims"
            )
        shapes[name] = values

    def names(text: str | None) -> list[str] | None:
        return [n for n in text.split(",") if n] if text else None

    return {
        "input_shapes": shapes or None,
        "inputs": names(args.inputs),
        "outputs": names(args.outputs),
        "prequantized": args.prequantized,
    }
