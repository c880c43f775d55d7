"""The `.npubin` encoder: an `npu.program` (or its plain-data `Program`) to bytes.

The layout is docs/binary-format.md; the output is deterministic (a function
of the program alone). `npu-opt -t npubin -o FILE` uses `NpubinTarget`.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from npuc.diagnostics import NpucError
from npuc.dialects import constant_codec
from npuc.dialects import npu_isa as isa
from npuc.dialects.constant_codec_batch import encode_streams
from npuc.dialects.npu import program_op
from npuc.dialects.npubin_format import (
    CONSTANTS_HEAD,
    COUNT,
    DEBUG_ENTRY,
    DEFAULT_ALIGNMENT,
    DIM,
    HEADER,
    INSTRUCTION,
    IO_ENTRY,
    IO_HEAD,
    MAGIC,
    NO_LAYER,
    REGION,
    SECTION,
    SECTION_ALIGNMENT,
    SECTION_IDS,
    SECTION_SINCE,
    STATE_ENTRY,
    STREAM_ENTRY,
    STREAMS_SINCE,
    STRING,
    TENSOR,
    align,
    pad8,
    params_size,
    params_struct,
)


class _Strings:
    """The string table: each distinct string once, in order of first use."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))

    def section(self) -> bytes:
        encoded = [s.encode("utf-8") for s in self.index]
        head = COUNT.pack(len(encoded), 0)
        table, offset = [], 0
        for data in encoded:
            table.append(STRING.pack(offset, len(data)))
            offset += len(data)
        return head + b"".join(table) + b"".join(encoded)


def _tensor(t: isa.TensorRef) -> bytes:
    head = TENSOR.pack(
        isa.REGION_KINDS.index(t.region),
        isa.DTYPE_NAMES.index(t.dtype),
        len(t.shape),
        0,
        0,
        t.offset,
    )
    return head + b"".join(DIM.pack(d, s) for d, s in zip(t.shape, t.strides, strict=True))


def _field_values(f: isa.Field, value, strings: _Strings) -> list[int]:
    if f.choices:
        return [f.choices.index(value)]
    if f.flag:
        return [int(value)]
    if f.string:
        return [strings(value)]
    if f.count:
        return [*value, *([0] * (f.count - len(value)))]
    return [value]


def _params(inst: isa.Instruction, strings: _Strings) -> bytes:
    values = []
    for f in inst.spec.fields:
        values.extend(_field_values(f, inst.params[f.name], strings))
    packed = params_struct(inst.spec).pack(*values)
    return packed.ljust(params_size(inst.spec), b"\0")


def _instruction(inst: isa.Instruction, strings: _Strings) -> bytes:
    params = _params(inst, strings)
    deps = struct.pack(f"<{len(inst.deps)}I", *inst.deps)
    deps = deps.ljust(pad8(len(deps)), b"\0")
    operands = b"".join(_tensor(t) for t in inst.operands)
    size = INSTRUCTION.size + len(params) + len(deps) + len(operands)
    head = INSTRUCTION.pack(
        inst.spec.opcode,
        isa.ENGINES.index(inst.engine),
        len(inst.operands),
        len(inst.deps),
        len(params),
        NO_LAYER if inst.layer is None else inst.layer,
        size,
    )
    return head + params + deps + operands


def _io(program: isa.Program, strings: _Strings) -> bytes:
    parts = [IO_HEAD.pack(strings(program.name), len(program.inputs), len(program.outputs), 0)]
    for desc in (*program.inputs, *program.outputs):
        parts.append(IO_ENTRY.pack(strings(desc.name), desc.zero_point, desc.scale))
        parts.append(_tensor(desc.tensor))
    return b"".join(parts)


def encode_program(
    program: isa.Program, section: bytes | None = None, *, instructions_checked: bool = False
) -> bytes:
    """The binary of a program (checked first: invalid programs raise NpucError).
    `section`: its `constants_section`, when the caller has it already.
    `instructions_checked`: every instruction passed `check_instruction` already (the
    program comes from lowering, which checks each one); the whole program is still checked."""
    from npuc.dialects.npu_rules import check_instruction, check_program

    try:
        for inst in () if instructions_checked else program.instructions:
            check_instruction(inst)
        check_program(program)
    except isa.ISAError as e:
        raise NpucError(f"cannot encode program '{program.name}': {e}") from None
    strings = _Strings()
    strings(program.name)
    regions = COUNT.pack(len(program.regions), 0) + b"".join(
        REGION.pack(isa.REGION_KINDS.index(r.kind), strings(r.memory), r.size)
        for r in program.regions
    )
    io = _io(program, strings)
    layers = COUNT.pack(len(program.layers), 0) + struct.pack(
        f"<{len(program.layers)}I", *(strings(name) for name in program.layers)
    )
    commands = COUNT.pack(len(program.instructions), 0) + b"".join(
        _instruction(inst, strings) for inst in program.instructions
    )
    layers = layers.ljust(pad8(len(layers)), b"\0")
    constants = constants_section(program) if section is None else section
    sections = [
        ("REGIONS", regions),
        ("IO", io),
        ("LAYERS", layers),
        ("COMMANDS", commands),
        ("CONSTANTS", constants),
    ]
    if program.debug:
        debug = COUNT.pack(len(program.debug), 0) + b"".join(
            DEBUG_ENTRY.pack(strings(k), strings(v)) for k, v in program.debug
        )
        sections.append(("DEBUG", debug))
    if program.state:
        sections.append(("STATE", _state(program.state)))
    sections.insert(0, ("STRINGS", strings.section()))
    return _assemble(sections, STREAMS_SINCE if program.streams else None)


def constants_section(program: isa.Program) -> bytes:
    """The binary's CONSTANTS section: with streams, their table and the encoded bytes (the
    costly part of encoding a program with streams)."""
    return _streams(program) if program.streams else program.constants


def constants_image(program: isa.Program, section: bytes | None = None) -> bytes:
    """The bytes the constants occupy in the target's memory: the CONSTANTS section (with
    encoded streams; `section` when the caller has it), or the region's bytes as they are."""
    if program.streams:
        return constants_section(program) if section is None else section
    region = program.region("constants")
    size = 0 if region is None else region.size
    return program.constants + bytes(size - len(program.constants))


def _streams(program: isa.Program) -> bytes:
    """A version-2 CONSTANTS section: the stream table, then the region's bytes with each
    stream's bytes replaced by its payload."""
    data = program.constants
    entries, body, position = [], bytearray(), 0
    payloads = encode_streams([(data[s.offset : s.end], s.dtype) for s in program.streams])
    for s, payload in zip(program.streams, payloads, strict=True):
        body += data[position : s.offset]
        entries.append(
            STREAM_ENTRY.pack(
                s.offset,
                s.size,
                len(body),
                len(payload),
                constant_codec.CODEC_IDS[s.codec],
                isa.DTYPE_NAMES.index(s.dtype),
                0,
            )
        )
        body += payload
        position = s.end
    body += data[position:]
    head = CONSTANTS_HEAD.pack(len(data), len(entries), 0)
    return head + b"".join(entries) + bytes(body)


def _state(pairs: tuple[isa.StatePair, ...]) -> bytes:
    """The STATE section: the entries, then each initial value zero padded to 8 bytes."""
    entries, data = [], bytearray()
    for pair in pairs:
        entries.append(STATE_ENTRY.pack(pair.input, pair.output, len(data), len(pair.initial)))
        data += pair.initial.ljust(pad8(len(pair.initial)), b"\0")
    return COUNT.pack(len(pairs), 0) + b"".join(entries) + bytes(data)


def _assemble(sections: list[tuple[str, bytes]], version: tuple[int, int] | None = None) -> bytes:
    table_end = HEADER.size + SECTION.size * len(sections)
    entries, body, offset = [], bytearray(), table_end
    for name, data in sections:
        alignment = SECTION_ALIGNMENT.get(name, DEFAULT_ALIGNMENT)
        start = align(offset, alignment)
        body += b"\0" * (start - offset) + data
        offset = start + len(data)
        entries.append(
            SECTION.pack(SECTION_IDS[name], alignment, start, len(data), zlib.crc32(data), 0)
        )
    table = b"".join(entries)
    # the oldest version that holds the file: 1.0 when it has no section of a later one
    major, minor = max(
        [SECTION_SINCE.get(name, (1, 0)) for name, _ in sections] + [version or (1, 0)]
    )
    head = HEADER.pack(MAGIC, major, minor, HEADER.size, len(sections), offset, 0, 0)[:-4]
    crc = zlib.crc32(head + table)
    return head + struct.pack("<I", crc) + table + bytes(body)


def encode_module(module: ModuleOp) -> bytes:
    """The binary of a module's npu.program, verified first (hazards included)."""
    op = program_op(module)
    op.verify()
    return encode_program(op.program())


@dataclass(frozen=True)
class NpubinTarget(Target):
    """`-t npubin`: the module's npu.program as a .npubin binary (bytes: needs `-o FILE`)."""

    name = "npubin"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        raise NpucError("the npubin target writes bytes; give an output file with -o FILE")

    def emit_bytes(self, ctx: Context, module: ModuleOp) -> bytes:
        return encode_module(module)
