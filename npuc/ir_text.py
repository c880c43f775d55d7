"""Reading textual IR the user wrote: every way it can be wrong is a diagnostic at a location.

xDSL's parser reports syntax errors as `file:line:col`, but some malformed input reaches
it as other exceptions: a constant out of its type's range (ValueError), an integer
type of a width numpy cannot hold (`array<i642: 1>`, NotImplementedError), a dense
literal splatted over billions of elements (MemoryError), a type whose parameters its
verifier refuses (VerifyException, without a location). `parse_module` turns each into
an error at the token the parser had reached, and refuses a dense literal larger than
the tensor size limit (npuc/limits.py) before building it.

`verify_module` runs the verifiers and two checks that xDSL does not do: every operand is
defined before its use (by an earlier op of its block, an argument of the block or of an
enclosing one, or an op before the enclosing op), and every element type fits the shape
of its tensor (npuc/element_types.py: a per-axis quantized function argument). The parser
records each op's `file:line:col` as its location (as MLIR does), so a verifier error is
reported where the op is written.
"""

from __future__ import annotations

import bisect
import dataclasses
import re

from xdsl.context import Context
from xdsl.dialects.builtin import (
    AnyFloat,
    ComplexType,
    FileLineColLoc,
    IndexType,
    IntAttr,
    IntegerType,
    ModuleOp,
    RankedStructure,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.parser import Parser
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Location, Span

from . import xdsl_patches  # noqa: F401  (the lexer's string pattern, made linear)
from .diagnostics import NpucError, failing_op
from .element_types import OpVerifyException, verify_element_shapes
from .limits import TensorTooLarge, check_tensor
from .locations import describe
from .tensors import element_bytes


class IRParser(Parser):
    """xDSL's parser; a failure that is not a parse error becomes one at the current token.
    An op without a `loc(...)` of its own is located where it is written."""

    line_offset = 0  # the lines before this chunk of a --split-input-file input
    _newlines: tuple[object, list[int]] = (None, [])  # an input's content, its newline offsets

    def parse_operation(self) -> Operation:
        start = self._location_of(self._current_token.span)
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):
            line = IntAttr(start.line + self.line_offset)
            op.location = FileLineColLoc(StringAttr(start.file), line, IntAttr(start.col))
        return op

    def _parse_dense_literal_type(
        self,
    ) -> RankedStructure[IntegerType | IndexType | AnyFloat | ComplexType]:
        ty = super()._parse_dense_literal_type()
        shape = list(ty.get_shape())
        if all(d >= 0 for d in shape):
            try:
                check_tensor(shape, element_bytes(ty.get_element_type()), "a dense literal")
            except TensorTooLarge as e:
                self.raise_error(e.message)
        return ty

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            return super().parse_module(allow_implicit_module)
        except (ParseError, DiagnosticException, NpucError):
            raise
        except Exception as e:  # the parser met a value it cannot represent
            self.raise_error(f"invalid IR: {unrepresentable(e)}")

    def location(self) -> str:
        """`file:line:col` of the current token."""
        return str(self._location_of(self._current_token.span))

    def _location_of(self, span: Span) -> Location:
        """`span.get_location()`, from the input's newline offsets found once: that counts
        the newlines before the span anew, which made locating every op of a file
        quadratic in its size (half of npu-opt's time on a 6 MB module)."""
        content = span.input.content
        if self._newlines[0] is not content:
            newline = span.input.newline
            offsets = [m.start() for m in re.finditer(re.escape(newline), content)]
            self._newlines = (content, offsets)
        offsets = self._newlines[1]
        before = bisect.bisect_left(offsets, span.start)  # newlines before the span
        line_start = offsets[before - 1] + 1 if before else 0
        line = before + 1 + span.line_offset
        return Location(span.input.name, line, span.start - line_start + 1)


def unrepresentable(error: Exception) -> str:
    """What a value the parser could not build was, in the IR's terms."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if isinstance(error, NotImplementedError) and (m := re.search(r"for (\S+)", text)):
        return f"element type {m[1]} has no numeric storage here (i1 to i64, f16 to f64)"
    if isinstance(error, MemoryError):
        return "a value too large to build (out of memory)"
    if isinstance(error, RecursionError):
        return "nested too deeply"
    return text or "a value the parser cannot represent"


def decode(data: bytes | str, location: str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        raise NpucError(f"not a UTF-8 text file ({e.reason} at byte {e.start})", location) from None


def parse_module(
    ctx: Context,
    data: bytes | str,
    location: str,
    *,
    implicit_module: bool = True,
    line_offset: int = 0,
    located_errors: bool = True,
) -> ModuleOp:
    """Parse textual IR (not verified). With `located_errors`, a verifier error raised while
    parsing (a type's or attribute's parameters) becomes an NpucError at `file:line:col`;
    without it, it stays a VerifyException (for --verify-diagnostics)."""
    parser = IRParser(ctx, decode(data, location), location)
    parser.line_offset = line_offset
    try:
        return parser.parse_module(implicit_module)
    except ParseError as e:
        if line_offset:
            e.span = dataclasses.replace(e.span, line_offset=line_offset)
        raise
    except VerifyException as e:
        if not located_errors:
            raise
        where = parser.location()
        if line_offset:
            file, line, col = where.rsplit(":", 2)
            where = f"{file}:{int(line) + line_offset}:{col}"
        raise NpucError(str(e), where) from None


def verify_module(module: ModuleOp, location: str | None = None) -> None:
    """The verifiers and the checks above; with a `location` (the file), a failure is an
    NpucError at the failing op's `file:line:col` (or at the file) naming the op, else the
    VerifyException itself."""
    try:
        module.verify()
        check_dominance(module)
        verify_element_shapes(module)
    except VerifyException as e:
        if location is None:
            raise
        op = e.op if isinstance(e, OpVerifyException) else _first_failing_op(module)
        where = op_location(op) if op is not None else None
        if where is None and op is not None:  # an op a pass made: its layer, if it has one
            layer = describe(op.location)
            where = f"{location}: {layer}" if layer and location else layer
        # An OpVerifyException is located at its own op; xDSL's note marks the op whose
        # verifier raised it (a module-level check run by another op).
        shown = "" if isinstance(e, OpVerifyException) else failing_op(e)
        raise NpucError(f"{e}{shown}", where or location) from None


def op_location(op: Operation) -> str | None:
    """`file:line:col` of an op parsed from text (None for an op a pass made)."""
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return None


def _first_failing_op(module: ModuleOp) -> Operation | None:
    """The op whose own verifier fails first, in the order xDSL verifies (regions first)."""
    for op in module.walk(region_first=True):
        try:
            op.verify(verify_nested_ops=False)
        except (VerifyException, ValueError):
            return op
    return None


def check_dominance(root: Operation) -> None:
    """Every operand is defined before it is used (VerifyException naming the first that is
    not). Regions of several blocks are checked per region, not per block."""
    for region in root.regions:
        _check_region(region, set())


def check_region_dominance(region: Region) -> None:
    """`check_dominance` for a region on its own (values from outside it are refused)."""
    _check_region(region, set())


def _check_region(region: Region, visible: set[SSAValue]) -> None:
    blocks = list(region.blocks)
    if len(blocks) > 1:  # a CFG: a value of another block may dominate; allow the region's own
        visible = visible | {a for b in blocks for a in b.args}
        visible |= {r for b in blocks for op in b.ops for r in op.results}
    for block in blocks:
        _check_block(block, visible)


def _check_block(block: Block, outer: set[SSAValue]) -> None:
    visible = outer | set(block.args)
    for op in block.ops:
        for i, operand in enumerate(op.operands):
            if operand not in visible:
                raise OpVerifyException(op, _use_before_def(op, i, operand))
        inner = set() if op.has_trait(IsolatedFromAbove) else visible
        for region in op.regions:
            _check_region(region, inner)
        visible.update(op.results)


def _use_before_def(op: Operation, index: int, operand: SSAValue) -> str:
    owner = operand.owner
    where = f"'{owner.name}'" if isinstance(owner, Operation) else "a block argument"
    text = str(op)
    text = text if len(text) < 400 else text[:400] + " ..."
    return (
        f"'{op.name}': operand {index} is used before its definition (by {where}) or "
        f"outside its scope\n  in: {text}"
    )


def string_literals_closed(text: str) -> bool:
    """Every string literal ends on its line. xDSL 0.74's lexer backtracks exponentially on
    an unterminated literal, so a hostile body is refused before it reaches the parser."""
    for line in text.splitlines():
        inside, escaped = False, False
        for char in line:
            if escaped:
                escaped = False
            elif char == "\\" and inside:
                escaped = True
            elif char == '"':
                inside = not inside
        if inside:
            return False
    return True
