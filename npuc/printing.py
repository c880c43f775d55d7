"""Printing IR for people, with large constants elided as mlir-opt does."""

from __future__ import annotations

import io
from typing import Any

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.ir import Attribute
from xdsl.printer import Printer


class _ElidingPrinter(Printer):
    def __init__(self, *args: Any, elide_above: int, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._elide_above = elide_above

    def print_attribute(self, attribute: Attribute) -> None:
        if isinstance(attribute, DenseIntOrFPElementsAttr) and len(attribute) > self._elide_above:
            self.print_string("dense_resource<__elided__> : ")
            super().print_attribute(attribute.get_type())
            return
        super().print_attribute(attribute)


def print_module(module: ModuleOp, elide_above: int | None = 16) -> str:
    """Textual IR; constants over `elide_above` elements print as `dense_resource<__elided__>`."""
    stream = io.StringIO()
    printer = (
        Printer(stream=stream)
        if elide_above is None
        else _ElidingPrinter(stream=stream, elide_above=elide_above)
    )
    printer.print_op(module)
    return stream.getvalue()
