"""The `.npubin` disassembler: a loaded `Program` back to an `npu.program` module.

Properties equal to their defaults are left out, so the text is the shortest
that encodes to the same bytes: binary -> text -> binary is byte-identical.
`npu-opt FILE.npubin` uses `disassemble`.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ModuleOp,
)
from xdsl.ir import Region
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError

from npuc.diagnostics import NpucError
from npuc.dialects import npu_isa as isa
from npuc.dialects.context import make_context
from npuc.dialects.npu import ProgramOp, host_body_text
from npuc.ir_text import string_literals_closed


def _host_body(
    inst: isa.Instruction, ctx: Context, index: int, location: str, parsed: dict[str, Region]
) -> Region:
    """The body of host instruction `index`, parsed from its text; `parsed` keeps the bodies
    read so far (the tiles of one host op share their text, so each distinct body is parsed
    and checked once, then cloned)."""
    text = inst.params["body"]
    if text in parsed:
        return parsed[text].clone()
    if not string_literals_closed(text):
        raise NpucError(
            f"instruction {index} (host): its body has an unterminated string", location
        )
    try:
        body = Parser(ctx, text, f"{location}: instruction {index}").parse_region()
    except (ParseError, DiagnosticException, RecursionError) as e:
        # DiagnosticException: a type that fails to verify; RecursionError: absurd nesting.
        raise NpucError(
            f"instruction {index} (host): its body does not parse: {e}", location
        ) from None
    if host_body_text(body) != text:  # only what the encoder writes: keeps the round trip exact
        raise NpucError(
            f"instruction {index} (host): its body is not in the encoder's generic form", location
        )
    parsed[text] = body.clone()
    return body


def disassemble(
    program: isa.Program, ctx: Context | None = None, location: str = "<npubin>"
) -> ModuleOp:
    """An `npu.program` module stating `program` (host bodies are parsed with `ctx`)."""
    ctx = ctx or make_context()
    parsed: dict[str, Region] = {}
    bodies = {
        index: _host_body(inst, ctx, index, location, parsed)
        for index, inst in enumerate(program.instructions)
        if inst.op == "host"
    }
    return ModuleOp([ProgramOp.from_program(program, bodies)])
