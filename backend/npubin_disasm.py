"""The `.npubin` disassembler: a loaded `Program` back to an `npu.program` module.

Properties equal to their defaults are left out, so the text is the shortest
that encodes to the same bytes: binary -> text -> binary is byte-identical.
`npu-opt FILE.npubin` uses `disassemble`.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    i8,
    i64,
)
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError

from npuc.diagnostics import NpucError
from npuc.dialects import npu_isa as isa
from npuc.dialects.npu import INSTRUCTIONS, HostOp, NPUInstruction, ProgramOp, host_body_text
from npuc.dialects.npu_attrs import IOAttr, RegionAttr, StateAttr, TensorAttr, TokenType


def _default_context() -> Context:
    from npuc.registry import DIALECTS

    ctx = Context()
    for name, factory in DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx


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


def _host(
    inst: isa.Instruction, ctx: Context, index: int, location: str, parsed: dict[str, Region]
) -> HostOp:
    """The npu.host of `inst`; `parsed` keeps the bodies read so far (the tiles of one host
    op share their text, so each distinct body is parsed and checked once, then cloned)."""
    n = inst.params["inputs"]
    props = {
        "ins": ArrayAttr([TensorAttr.from_ref(t) for t in inst.operands[:n]]),
        "outs": ArrayAttr([TensorAttr.from_ref(t) for t in inst.operands[n:]]),
    }
    if inst.layer is not None:
        props["layer"] = IntegerAttr(inst.layer, i64)
    text = inst.params["body"]
    if text in parsed:
        body = parsed[text].clone()
        return HostOp.create(result_types=[TokenType()], properties=props, regions=[body])
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
    return HostOp.create(result_types=[TokenType()], properties=props, regions=[body])


def disassemble(
    program: isa.Program, ctx: Context | None = None, location: str = "<npubin>"
) -> ModuleOp:
    """An `npu.program` module stating `program` (host bodies are parsed with `ctx`)."""
    ctx = ctx or _default_context()
    ops: list[NPUInstruction] = []
    bodies: dict[str, Region] = {}
    for index, inst in enumerate(program.instructions):
        if inst.op == "host":
            op = _host(inst, ctx, index, location, bodies)
        else:
            cls = INSTRUCTIONS[inst.op]
            op = cls.create(result_types=[TokenType()], properties=cls.properties_of(inst))
        op.operands = [ops[d].token for d in inst.deps]
        ops.append(op)
    props = {
        "sym_name": StringAttr(program.name),
        "memory_regions": ArrayAttr([RegionAttr.from_region(r) for r in program.regions]),
        "inputs": ArrayAttr([IOAttr.from_desc(d) for d in program.inputs]),
        "outputs": ArrayAttr([IOAttr.from_desc(d) for d in program.outputs]),
        "layers": ArrayAttr([StringAttr(name) for name in program.layers]),
    }
    if program.constants:
        ty = TensorType(i8, [len(program.constants)])
        props["constants"] = DenseIntOrFPElementsAttr(ty, BytesAttr(program.constants))
    if program.debug:
        props["debug"] = DictionaryAttr({k: StringAttr(v) for k, v in program.debug})
    if program.state:
        props["state"] = ArrayAttr([StateAttr.from_pair(p) for p in program.state])
    body = Region(Block(ops))
    return ModuleOp([ProgramOp.create(properties=props, regions=[body])])
