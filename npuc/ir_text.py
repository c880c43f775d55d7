"""Reading textual IR the user wrote: every way it can be wrong is a diagnostic at a location.

xDSL's parser reports syntax errors as `file:line:col`, but some malformed input reaches
it as other exceptions: a constant out of its type's range (ValueError), an integer
type of a width numpy cannot hold (`array<i642: 1>`, NotImplementedError), a dense
literal splatted over billions of elements (MemoryError), a type whose parameters its
verifier refuses (VerifyException, without a location). `parse_module` turns each into
an error at the token the parser had reached, and refuses a dense literal larger than
the tensor size limit (npuc/limits.py) before building it.

`verify_module` runs the verifiers and a dominance check that xDSL does not do: every
operand is defined before its use (by an earlier op of its block, an argument of the
block or of an enclosing one, or an op before the enclosing op).
"""

from __future__ import annotations

import dataclasses

from xdsl.context import Context
from xdsl.dialects.builtin import (
    AnyFloat,
    ComplexType,
    IndexType,
    IntegerType,
    ModuleOp,
    RankedStructure,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.parser import Parser
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from . import xdsl_patches  # noqa: F401  (the lexer's string pattern, made linear)
from .diagnostics import NpucError, failing_op
from .limits import TensorTooLarge, check_tensor
from .tensors import element_bytes


class IRParser(Parser):
    """xDSL's parser; a failure that is not a parse error becomes one at the current token."""

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
            text = str(e).strip().splitlines()[0] if str(e).strip() else ""
            self.raise_error(f"invalid IR: {type(e).__name__}" + (f": {text}" * bool(text)))

    def location(self) -> str:
        """`file:line:col` of the current token."""
        return str(self._current_token.span.get_location())


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
    """The verifiers and the dominance check; with a `location`, a failure is an NpucError
    there naming the op, else the VerifyException itself."""
    try:
        module.verify()
        check_dominance(module)
    except VerifyException as e:
        if location is None:
            raise
        where = _failing_location(module)
        location = f"{location}: {where}" if where else location
        raise NpucError(f"{e}{failing_op(e)}", location) from None


def _failing_location(module: ModuleOp) -> str | None:
    """The location (e.g. `layer "conv1"`) of the first op whose own verifier fails."""
    from .locations import describe

    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except (VerifyException, ValueError):
            return describe(op.location)
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
                raise VerifyException(_use_before_def(op, i, operand))
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
