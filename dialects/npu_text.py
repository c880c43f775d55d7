"""The text of npu instructions written in one piece: what their declarative formats print.

xDSL prints a declarative format token by token, each attribute through the generic
attribute printer. npu.mlir has one instruction a tile (3,200 for MobileNetV2 in size
mode), and printing them that way took most of the time of writing it. `install`
replaces an instruction class's generated `print` with one that writes the same text
from the property values, and falls back to the format where the op holds something
not written here (a discardable attribute, a property of another kind). The formats
stay the op's definition: they parse the text, and tests/npu/test_npu_text.py checks
the two printers agree on whole programs.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr, i1, i64
from xdsl.ir import Attribute
from xdsl.irdl import IRDLOperation
from xdsl.printer import Printer
from xdsl.utils.mlir_lexer import MLIRLexer

from npuc.printing import string_literal

from .npu_attrs import TensorAttr

_LABELLED = re.compile(r"`(\w+)` \$(\w+)")
_ARROW = re.compile(r"\$(\w+) `->` \$(\w+)")
_TAIL = " (`after` $deps^)? attr-dict"


def value_text(attr: Attribute) -> str | None:
    """How the generic printer writes `attr` in an attribute dictionary, for the kinds the
    instructions' properties take (None for any other)."""
    if isinstance(attr, IntegerAttr):
        if attr.type == i1:
            return "true" if attr.value.data else "false"
        return f"{attr.value.data} : i64" if attr.type == i64 else None
    if isinstance(attr, DenseArrayBase):
        if attr.elt_type != i64:
            return None
        values = attr.get_values()
        return f"array<i64: {', '.join(map(str, values))}>" if values else "array<i64>"
    if isinstance(attr, StringAttr):
        return string_literal(attr.data)
    return None


def _head_writer(assembly_format: str) -> Callable[[IRDLOperation], str | None]:
    """The operands part of a format `role $role ...` or `$src -> $dst`, then `after` and the
    attribute dictionary (which this module writes as the rest)."""
    if not assembly_format.endswith(_TAIL):
        raise ValueError(f"not an instruction format: {assembly_format!r}")
    operands = assembly_format.removesuffix(_TAIL)
    if arrow := _ARROW.fullmatch(operands):
        src, dst = arrow.groups()
        return lambda op: _arrow(op, src, dst)
    roles = tuple(role for _, role in _LABELLED.findall(operands))
    if " ".join(f"`{r}` ${r}" for r in roles) != operands:
        raise ValueError(f"not an instruction format: {assembly_format!r}")
    return lambda op: _labelled(op, roles)


def _arrow(op: IRDLOperation, src: str, dst: str) -> str | None:
    a, b = op.properties.get(src), op.properties.get(dst)
    if not isinstance(a, TensorAttr) or not isinstance(b, TensorAttr):
        return None
    return f" {a.parameters_text()} -> {b.parameters_text()}"


def _labelled(op: IRDLOperation, roles: tuple[str, ...]) -> str | None:
    parts = []
    for role in roles:
        t = op.properties.get(role)
        if not isinstance(t, TensorAttr):
            return None
        parts.append(f" {role} {t.parameters_text()}")
    return "".join(parts)


def _dictionary(op: IRDLOperation, shown: frozenset[str], listed: frozenset[str]) -> str | None:
    """The attribute dictionary: every property but those `shown` elsewhere, all of them
    `listed` (None for anything else: the format decides)."""
    items = []
    for name, attr in op.properties.items():
        if name in shown:
            continue
        text = value_text(attr) if name in listed else None
        if text is None:
            return None
        items.append(f"{name} = {text}")
    return f" {{{', '.join(items)}}}" if items else ""


_GENERATED: dict[type[IRDLOperation], Callable[[IRDLOperation, Printer], None]] = {}


def print_with_format(op: IRDLOperation, printer: Printer) -> None:
    """Print `op`'s custom form through its declarative format (as before `install`)."""
    generated = _GENERATED.get(type(op))
    if generated is None:
        op.print(printer)
    else:
        generated(op, printer)


def install(cls: type[IRDLOperation]) -> None:
    """Give instruction class `cls` (its format `_format(...)` or the dma's arrow) a `print`
    writing its format's text at once, the generated one kept as the fallback."""
    assert cls.assembly_format is not None
    head = _head_writer(cls.assembly_format)
    shown = frozenset(re.findall(r"\$(\w+)", cls.assembly_format))
    definitions = cls.get_irdl_definition().properties
    if any(d.default_value is not None for d in definitions.values()):
        raise ValueError(f"{cls.name}: the format leaves out properties at their default")
    # the op's own properties, named as they print bare (the format quotes any other name)
    bare = MLIRLexer.bare_identifier_regex
    listed = frozenset(name for name in definitions if bare.fullmatch(name))
    generated = _GENERATED[cls] = cls.print

    def print_instruction(op: IRDLOperation, printer: Printer) -> None:
        text = None if op.attributes else head(op)
        rest = None if text is None else _dictionary(op, shown, listed)
        if text is None or rest is None:
            generated(op, printer)
            return
        printer.print_string(text)
        if op.operands:
            printer.print_string(" after ")
            printer.print_list(op.operands, printer.print_ssa_value)
        printer.print_string(rest)

    cls.print = print_instruction  # type: ignore[method-assign, assignment]
