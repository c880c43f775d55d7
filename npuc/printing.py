"""Printing IR: every constant in full unless eliding is asked for, as in mlir-opt.

`--mlir-elide-elementsattrs-if-larger=N` (npu-opt, npu-run --print-ir) prints a constant of
more than N elements as `dense_resource<__elided__>`: readable, but no longer parseable into
the same program. `--print-debuginfo` prints each op's location (`loc("layer")`).
"""

from __future__ import annotations

import argparse
import io
from dataclasses import dataclass
from typing import IO, Any

from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IndexType, IntegerType, ModuleOp
from xdsl.ir import Attribute
from xdsl.printer import Printer
from xdsl.targets.mlir import MLIRTarget

ELIDE_OPTION = "--mlir-elide-elementsattrs-if-larger"
HEX_ABOVE = 100  # elements: xDSL prints larger constants as hex (print_without_type)


class _Printer(Printer):
    """xDSL's printer, with large integer constants printed as xDSL prints them (hex) but
    straight from their bytes: xDSL unpacks every element into a tuple, twice, first."""

    def print_attribute(self, attribute: Attribute) -> None:
        if (
            isinstance(attribute, DenseIntOrFPElementsAttr)
            and len(attribute) > HEX_ABOVE
            and isinstance(attribute.get_element_type(), IntegerType | IndexType)
            and attribute.shape_is_complete
            and not _is_splat(attribute.data.data, attribute.get_element_type().compile_time_size)
        ):
            self.print_string(f'dense<"0x{attribute.data.data.hex().upper()}"> : ')
            super().print_attribute(attribute.get_type())
            return
        super().print_attribute(attribute)

    def print_bytes_literal(self, bytestring: bytes) -> None:
        # xDSL's text, escaped through one table instead of a print_string call a byte
        # (string literals, e.g. layer names and host bodies, are much of a program's text)
        self.print_string(_bytes_literal(bytestring))


# how xDSL's Printer.print_bytes_literal writes each byte inside a string literal
_ESCAPED = {b: f"\\{b:02X}" for b in range(256) if b < 0x20 or b > 0x7E or b == 0x22}
_ESCAPED[0x5C] = "\\\\"


def _bytes_literal(bytestring: bytes) -> str:
    return '"' + bytestring.decode("latin-1").translate(_ESCAPED) + '"'


def string_literal(text: str) -> str:
    """`text` as xDSL's printer writes a string literal (UTF-8, bytes outside printable ASCII,
    quotes and backslashes escaped)."""
    return _bytes_literal(text.encode("utf-8"))


def _is_splat(data: bytes, size: int) -> bool:
    return data == data[:size] * (len(data) // size)


class _ElidingPrinter(_Printer):
    def __init__(self, *args: Any, elide_above: int, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._elide_above = elide_above

    def print_attribute(self, attribute: Attribute) -> None:
        if isinstance(attribute, DenseIntOrFPElementsAttr) and len(attribute) > self._elide_above:
            self.print_string("dense_resource<__elided__> : ")
            super().print_attribute(attribute.get_type())
            return
        super().print_attribute(attribute)


def make_printer(
    stream: IO[str],
    elide_above: int | None = None,
    *,
    print_generic_format: bool = False,
    print_properties_as_attributes: bool = False,
    print_debuginfo: bool = False,
) -> Printer:
    """xDSL's printer with its flags, eliding constants of more than `elide_above` elements
    when that is given."""
    if elide_above is None:
        return _Printer(
            stream=stream,
            print_generic_format=print_generic_format,
            print_properties_as_attributes=print_properties_as_attributes,
            print_debuginfo=print_debuginfo,
        )
    return _ElidingPrinter(
        stream=stream,
        elide_above=elide_above,
        print_generic_format=print_generic_format,
        print_properties_as_attributes=print_properties_as_attributes,
        print_debuginfo=print_debuginfo,
    )


def print_module(
    module: ModuleOp, elide_above: int | None = None, *, debuginfo: bool = False
) -> str:
    """Textual IR, every constant in full (or elided above `elide_above` elements)."""
    stream = io.StringIO()
    make_printer(stream, elide_above, print_debuginfo=debuginfo).print_op(module)
    return stream.getvalue()


@dataclass(frozen=True)
class TextTarget(MLIRTarget):
    """`npu-opt -t mlir`: xDSL's MLIR target with mlir-opt's eliding of large constants
    (`elide_above` < 0: print every constant)."""

    elide_above: int = -1

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if self.syntax_highlight or self.elide_above < 0:
            return super().emit(ctx, module, output)
        printer = make_printer(
            output,
            self.elide_above,
            print_generic_format=self.print_generic_format,
            print_properties_as_attributes=self.print_properties_as_attributes,
            print_debuginfo=self.print_debuginfo,
        )
        printer.print_op(module)
        printer.print_metadata(ctx.loaded_dialects)
        print("\n", file=output)


def add_printing_options(parser: argparse.ArgumentParser, debuginfo: bool = True) -> None:
    """mlir-opt's printing flags: eliding large constants, and (unless the parser has it
    already, as xDSL's does) printing locations."""
    parser.add_argument(
        ELIDE_OPTION,
        dest="elide_above",
        type=_count,
        metavar="N",
        default=None,
        help="print constants of more than N elements as dense_resource<__elided__> "
        "(readable, but not parseable into the same program)",
    )
    if debuginfo:
        parser.add_argument(
            "--print-debuginfo",
            action="store_true",
            help="print each op's location, e.g. loc(\"conv1\") for the model's layer",
        )


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of elements, got '{text}'")
    return value
