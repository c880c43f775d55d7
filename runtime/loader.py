"""The `.npubin` loader: bytes to a validated `Program`, or an NpucError saying where and why.

It checks everything docs/binary-format.md lists under "Validation" before
returning: the header, every section's bounds, alignment and CRC, every count,
enum, string and reference, and then the instruction-set rules
(dialects/npu_rules.py) that the `npu` dialect's verifiers apply, so the
executor never meets an operand outside its region or an inconsistent shape.
Every read is bounds-checked first: a hostile file gets a diagnostic naming a
byte offset, never an IndexError, struct.error or a huge allocation.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from npuc.diagnostics import NpucError
from npuc.dialects import constant_codec
from npuc.dialects import npu_isa as isa
from npuc.dialects import npu_rules as rules
from npuc.dialects.constant_codec import CODECS, ELEMENT_TYPES
from npuc.dialects.npubin_format import (
    CONSTANTS_HEAD,
    COUNT,
    DEBUG_ENTRY,
    DIM,
    HEADER,
    INSTRUCTION,
    IO_ENTRY,
    IO_HEAD,
    MAGIC,
    MAX_ALIGNMENT,
    MAX_SECTIONS,
    MINORS,
    NO_LAYER,
    REGION,
    REQUIRED_SECTIONS,
    SECTION,
    SECTION_KINDS,
    SECTION_SINCE,
    STATE_ENTRY,
    STREAM_ENTRY,
    STREAMS_SINCE,
    STRING,
    TENSOR,
    VERSION,
    pad8,
    params_size,
    params_struct,
)

#: The largest region a binary may declare unless the caller allows more: the runtime
#: allocates every region, so this bounds what a file can make it allocate.
MAX_REGION_BYTES = 1 << 30


class _Fail(Exception):
    def __init__(self, offset: int, message: str):
        self.offset, self.message = offset, message


def _fail(offset: int, message: str) -> NoReturn:
    raise _Fail(offset, message)


@dataclass
class _Section:
    name: str
    offset: int
    size: int


class _Decoder:
    def __init__(self, data: bytes, max_region_bytes: int):
        self.data = data
        self.max_region_bytes = max_region_bytes
        self.strings: list[str] = []

    # ------------------------------------------------------------------ reading

    def unpack(self, st: struct.Struct, at: int, end: int, what: str) -> tuple:
        if at + st.size > end:
            _fail(at, f"{what} needs {st.size} bytes, only {max(end - at, 0)} remain")
        return st.unpack_from(self.data, at)

    def zeros(self, start: int, end: int, what: str) -> None:
        chunk = self.data[start:end]
        if chunk.count(0) != len(chunk):
            first = next(i for i, b in enumerate(chunk) if b)
            _fail(start + first, f"{what} must be zero")

    def string(self, index: int, at: int, what: str) -> str:
        if not 0 <= index < len(self.strings):
            _fail(at, f"{what}: string {index} does not exist ({len(self.strings)} strings)")
        return self.strings[index]

    # ------------------------------------------------------------------ header and sections

    def header(self) -> dict[str, _Section]:
        data = self.data
        if len(data) < HEADER.size:
            _fail(0, f"file of {len(data)} bytes is too short for the {HEADER.size}-byte header")
        magic, major, minor, header_size, count, total, flags, crc = HEADER.unpack_from(data, 0)
        if magic != MAGIC:
            _fail(0, f"not an npubin file (magic {magic!r}, expected {MAGIC!r})")
        if major not in MINORS:
            newer = "newer than" if major > VERSION[0] else "older than"
            _fail(
                4,
                f"format version {major}.{minor} is {newer} this loader's "
                f"{VERSION[0]}.{VERSION[1]}; use an npuc that reads {major}.x",
            )
        self.version = (major, minor)
        self.newer_minor = minor > MINORS[major]
        if header_size != HEADER.size:
            _fail(8, f"header size {header_size}, expected {HEADER.size}")
        if not 1 <= count <= MAX_SECTIONS:
            _fail(12, f"section count {count} is outside [1, {MAX_SECTIONS}]")
        if total != len(data):
            _fail(
                16,
                f"the header says the file has {total} bytes, it has {len(data)} "
                "(truncated or extended)",
            )
        if flags:
            _fail(24, f"header flags {flags:#x} must be zero")
        table_end = HEADER.size + count * SECTION.size
        if table_end > len(data):
            _fail(HEADER.size, f"the section table ({count} entries) runs past the end")
        if zlib.crc32(data[:28] + data[HEADER.size : table_end]) != crc:
            _fail(28, "header and section table CRC32 mismatch")
        sections: dict[str, _Section] = {}
        spans = []
        for i in range(count):
            at = HEADER.size + i * SECTION.size
            kind, alignment, offset, size, crc, reserved = SECTION.unpack_from(data, at)
            if reserved:
                _fail(at + 28, f"section {i}: reserved field must be zero")
            if alignment < 8 or alignment > MAX_ALIGNMENT or alignment & (alignment - 1):
                _fail(
                    at + 4,
                    f"section {i}: alignment {alignment} is not a power of two "
                    f"in [8, {MAX_ALIGNMENT}]",
                )
            if offset % alignment:
                _fail(at + 8, f"section {i}: offset {offset} is not {alignment}-byte aligned")
            if offset < table_end or offset + size > len(data):
                _fail(
                    at + 8,
                    f"section {i}: bytes [{offset}, {offset + size}) lie outside "
                    f"the file's data area [{table_end}, {len(data)})",
                )
            if zlib.crc32(data[offset : offset + size]) != crc:
                _fail(
                    at + 24,
                    f"section {i} ({SECTION_KINDS.get(kind, kind)}): CRC32 mismatch "
                    f"(bytes [{offset}, {offset + size}) are corrupt)",
                )
            spans.append((offset, offset + size, i))
            name = SECTION_KINDS.get(kind)
            if name is None:
                if self.newer_minor:
                    continue  # a section of a newer minor version: skipped
                _fail(at, f"section {i}: unknown kind {kind}")
            if name in sections:
                _fail(at, f"section {i}: a second {name} section")
            since = SECTION_SINCE.get(name, (1, 0))
            if self.version < since:
                _fail(
                    at,
                    f"section {i}: a {name} section needs format version "
                    f"{since[0]}.{since[1]}, the file says {major}.{minor}",
                )
            sections[name] = _Section(name, offset, size)
        position = table_end
        for start, end, i in sorted(spans):
            if start < position:
                _fail(HEADER.size + i * SECTION.size + 8, f"section {i} overlaps another section")
            self.zeros(position, start, f"padding before section {i}")
            position = end
        self.zeros(position, len(data), "padding after the last section")
        for name in REQUIRED_SECTIONS:
            if name not in sections:
                _fail(12, f"the {name} section is missing")
        return sections

    def counted(self, s: _Section, entry: int) -> tuple[int, int]:
        """(count, first entry offset) of a section that starts with (count, reserved)."""
        count, reserved = self.unpack(COUNT, s.offset, s.offset + s.size, f"{s.name} header")
        if reserved:
            _fail(s.offset + 4, f"{s.name}: reserved field must be zero")
        if count * entry > s.size - COUNT.size:
            _fail(s.offset, f"{s.name}: {count} entries do not fit in {s.size} bytes")
        return count, s.offset + COUNT.size

    def read_strings(self, s: _Section) -> None:
        count, at = self.counted(s, STRING.size)
        blob = at + count * STRING.size
        end = s.offset + s.size
        position = 0
        for i in range(count):
            offset, length = STRING.unpack_from(self.data, at + i * STRING.size)
            if offset != position:  # back to back: the strings never take more than the file
                _fail(at + i * STRING.size, f"string {i} starts at {offset}, expected {position}")
            position += length
            if blob + offset + length > end:
                _fail(at + i * STRING.size, f"string {i} runs past the STRINGS section")
            try:
                self.strings.append(self.data[blob + offset : blob + offset + length].decode())
            except UnicodeDecodeError as e:
                _fail(blob + offset + e.start, f"string {i} is not valid UTF-8")
        if blob + position != end:
            _fail(blob + position, f"STRINGS: {end - blob - position} bytes after the last string")

    # ------------------------------------------------------------------ entities

    def tensor(self, at: int, end: int, what: str) -> tuple[isa.TensorRef, int]:
        region, dtype, rank, r1, r2, offset = self.unpack(TENSOR, at, end, what)
        if r1 or r2:
            _fail(at + 3, f"{what}: reserved fields must be zero")
        if region >= len(isa.REGION_KINDS):
            _fail(at, f"{what}: unknown region {region}")
        if dtype >= len(isa.DTYPE_NAMES):
            _fail(at + 1, f"{what}: unknown element type {dtype}")
        if not 1 <= rank <= isa.MAX_RANK:
            _fail(at + 2, f"{what}: rank {rank} is outside [1, {isa.MAX_RANK}]")
        dims_at = at + TENSOR.size
        if dims_at + rank * DIM.size > end:
            _fail(dims_at, f"{what}: {rank} dimensions run past the end of their section")
        dims = [DIM.unpack_from(self.data, dims_at + i * DIM.size) for i in range(rank)]
        ref = isa.TensorRef(
            isa.REGION_KINDS[region],
            offset,
            tuple(d for d, _ in dims),
            tuple(s for _, s in dims),
            isa.DTYPE_NAMES[dtype],
        )
        try:
            ref.check()
        except isa.ISAError as e:
            _fail(at, f"{what}: {e}")
        return ref, dims_at + rank * DIM.size

    def regions(self, s: _Section) -> tuple[isa.Region, ...]:
        count, at = self.counted(s, REGION.size)
        if s.size != COUNT.size + count * REGION.size:
            _fail(s.offset, f"REGIONS: {s.size} bytes do not hold exactly {count} entries")
        regions = []
        for i in range(count):
            kind, memory, size = REGION.unpack_from(self.data, at + i * REGION.size)
            where = at + i * REGION.size
            if kind >= len(isa.REGION_KINDS):
                _fail(where, f"region {i}: unknown kind {kind}")
            if size > self.max_region_bytes:
                _fail(
                    where + 8,
                    f"region {i} ({isa.REGION_KINDS[kind]}): {size} bytes exceed "
                    f"the loader's limit of {self.max_region_bytes}",
                )
            name = self.string(memory, where + 4, f"region {i} memory")
            regions.append(isa.Region(isa.REGION_KINDS[kind], size, name))
        return tuple(regions)

    def io(self, s: _Section) -> tuple[str, list[tuple[isa.IODesc, int]], int]:
        end = s.offset + s.size
        name, n_in, n_out, reserved = self.unpack(IO_HEAD, s.offset, end, "IO header")
        if reserved:
            _fail(s.offset + 12, "IO: reserved field must be zero")
        if (n_in + n_out) * (IO_ENTRY.size + TENSOR.size) > s.size:
            _fail(s.offset + 4, f"IO: {n_in} inputs and {n_out} outputs do not fit")
        program_name = self.string(name, s.offset, "program name")
        descs, at = [], s.offset + IO_HEAD.size
        for i in range(n_in + n_out):
            what = f"input {i}" if i < n_in else f"output {i - n_in}"
            entry = at
            name, zero_point, scale = self.unpack(IO_ENTRY, at, end, what)
            tensor, at = self.tensor(at + IO_ENTRY.size, end, what)
            desc = isa.IODesc(self.string(name, entry, what), tensor, scale, zero_point)
            descs.append((desc, entry))
        if at != end:
            _fail(at, f"IO: {end - at} bytes after the last descriptor")
        return program_name, descs, n_in

    def layers(self, s: _Section) -> tuple[str, ...]:
        count, at = self.counted(s, 4)
        if s.size != pad8(COUNT.size + 4 * count):
            _fail(s.offset, f"LAYERS: {s.size} bytes do not hold exactly {count} entries")
        self.zeros(at + 4 * count, s.offset + s.size, "LAYERS padding")
        indices = struct.unpack_from(f"<{count}I", self.data, at)
        return tuple(self.string(n, at + 4 * i, f"layer {i}") for i, n in enumerate(indices))

    def debug(self, s: _Section) -> tuple[tuple[str, str], ...]:
        count, at = self.counted(s, DEBUG_ENTRY.size)
        if s.size != COUNT.size + count * DEBUG_ENTRY.size:
            _fail(s.offset, f"DEBUG: {s.size} bytes do not hold exactly {count} entries")
        pairs = []
        for i in range(count):
            where = at + i * DEBUG_ENTRY.size
            key, value = DEBUG_ENTRY.unpack_from(self.data, where)
            pairs.append(
                (self.string(key, where, "debug key"), self.string(value, where + 4, "debug value"))
            )
        return tuple(pairs)

    def state(self, s: _Section) -> list[tuple[isa.StatePair, int]]:
        """The state pairs and their entries' offsets (indices and sizes checked later)."""
        count, at = self.counted(s, STATE_ENTRY.size)
        data = at + count * STATE_ENTRY.size
        end = s.offset + s.size
        pairs, position = [], 0
        for i in range(count):
            where = at + i * STATE_ENTRY.size
            source, result, offset, size = STATE_ENTRY.unpack_from(self.data, where)
            if offset != position:  # back to back, each padded to 8 bytes
                _fail(
                    where + 8, f"state {i}: initial value at offset {offset}, expected {position}"
                )
            if pad8(size) > end - data - position:  # the value and its padding
                _fail(
                    where + 16,
                    f"state {i}: an initial value of {size} bytes runs past the STATE section",
                )
            start = data + position
            self.zeros(start + size, start + pad8(size), f"state {i}: initial value padding")
            pairs.append((isa.StatePair(source, result, self.data[start : start + size]), where))
            position += pad8(size)
        if data + position != end:
            _fail(
                data + position,
                f"STATE: {end - data - position} bytes after the last initial value",
            )
        return pairs

    # ------------------------------------------------------------------ instructions

    def instructions(self, s: _Section, layers: int) -> list[tuple[isa.Instruction, int]]:
        count, at = self.counted(s, INSTRUCTION.size)
        end = s.offset + s.size
        out = []
        for index in range(count):
            inst, size = self.instruction(index, at, end, layers)
            out.append((inst, at))
            at += size
        if at != end:
            _fail(at, f"COMMANDS: {end - at} bytes after the last instruction")
        return out

    def instruction(
        self, index: int, at: int, end: int, layers: int
    ) -> tuple[isa.Instruction, int]:
        what = f"instruction {index}"
        opcode, engine, n_operands, n_deps, size_params, layer, size = self.unpack(
            INSTRUCTION, at, end, what
        )
        spec = isa.OPCODES.get(opcode)
        if spec is None:
            _fail(at, f"{what}: unknown opcode {opcode}")
        what = f"{what} ({spec.name})"
        if engine != isa.ENGINES.index(spec.engine):
            _fail(
                at + 2,
                f"{what}: engine {engine}, expected {isa.ENGINES.index(spec.engine)} "
                f"({spec.engine})",
            )
        if spec.operands and n_operands != len(spec.operands):
            _fail(at + 3, f"{what}: {n_operands} operands, expected {len(spec.operands)}")
        if size_params != params_size(spec):
            _fail(
                at + 6,
                f"{what}: parameter block of {size_params} bytes, expected {params_size(spec)}",
            )
        if layer != NO_LAYER and layer >= layers:
            _fail(at + 8, f"{what}: layer {layer} is not among the {layers} layers")
        if size < INSTRUCTION.size or at + size > end:
            _fail(at + 12, f"{what}: record size {size} runs past the COMMANDS section")
        record_end = at + size
        params_at = at + INSTRUCTION.size
        deps_at = params_at + size_params
        if deps_at + pad8(4 * n_deps) > record_end:
            _fail(deps_at, f"{what}: {n_deps} deps run past the record")
        raw = params_struct(spec).unpack_from(self.data, params_at)
        self.zeros(params_at + params_struct(spec).size, deps_at, f"{what}: parameter padding")
        deps = struct.unpack_from(f"<{n_deps}I", self.data, deps_at)
        self.zeros(deps_at + 4 * n_deps, deps_at + pad8(4 * n_deps), f"{what}: dep padding")
        if len(set(deps)) != n_deps or any(d >= index for d in deps):
            _fail(deps_at, f"{what}: deps {list(deps)} must be distinct earlier instructions")
        operands, cursor = [], deps_at + pad8(4 * n_deps)
        for i in range(n_operands):
            ref, cursor = self.tensor(cursor, record_end, f"{what} operand {i}")
            operands.append(ref)
        if cursor != record_end:
            _fail(cursor, f"{what}: record size {size} does not match its contents")
        params = self.params(spec, raw, operands, params_at, what)
        inst = isa.Instruction(
            spec.name, tuple(operands), params, deps, None if layer == NO_LAYER else layer
        )
        try:
            rules.check_instruction(inst)
        except isa.ISAError as e:
            _fail(at, f"{what}: {e}")
        return inst, size

    def params(
        self, spec: isa.OpSpec, raw: tuple, operands: list[isa.TensorRef], at: int, what: str
    ) -> dict[str, Any]:
        params: dict[str, Any] = {}
        position = 0
        for f in spec.fields:
            n = f.count or 1
            values = raw[position : position + n]
            position += n
            if f.choices:
                if values[0] >= len(f.choices):
                    _fail(at, f"{what}: {f.name} {values[0]} is not one of 0..{len(f.choices) - 1}")
                params[f.name] = f.choices[values[0]]
            elif f.flag:
                if values[0] > 1:
                    _fail(at, f"{what}: {f.name} must be 0 or 1, got {values[0]}")
                params[f.name] = bool(values[0])
            elif f.string:
                params[f.name] = self.string(values[0], at, f"{what} {f.name}")
            elif f.variable:
                used = self.variable_length(spec, f, operands, at, what)
                if any(values[used:]):
                    _fail(at, f"{what}: {f.name} entries past the first {used} must be zero")
                params[f.name] = tuple(values[:used])
            else:
                params[f.name] = tuple(values) if f.count else values[0]
        if spec.name == "host" and params["inputs"] >= len(operands):
            _fail(
                at,
                f"{what}: {params['inputs']} inputs leave no output among {len(operands)} operands",
            )
        return params

    @staticmethod
    def variable_length(
        spec: isa.OpSpec, f: isa.Field, operands: list[isa.TensorRef], at: int, what: str
    ) -> int:
        """How many entries of a move's perm (the ifm rank) or pads (2 x ofm rank) are used."""
        assert spec.name == "move" and f.name in ("perm", "pads")
        return len(operands[0].shape) if f.name == "perm" else 2 * len(operands[1].shape)

    def constants(
        self, s: _Section, regions: tuple[isa.Region, ...]
    ) -> tuple[bytes, tuple[isa.ConstantStream, ...]]:
        """The constants region's first bytes, decoded, and its encoded streams."""
        if self.version < STREAMS_SINCE:
            return bytes(self.data[s.offset : s.offset + s.size]), ()
        end = s.offset + s.size
        size, count, reserved = self.unpack(CONSTANTS_HEAD, s.offset, end, "CONSTANTS header")
        if reserved:
            _fail(s.offset + 12, "CONSTANTS: reserved field must be zero")
        region = next((r.size for r in regions if r.kind == "constants"), 0)
        if size > region:
            _fail(s.offset, f"CONSTANTS: {size} bytes exceed the constants region ({region})")
        table = s.offset + CONSTANTS_HEAD.size
        if count * STREAM_ENTRY.size > end - table:
            _fail(s.offset + 8, f"CONSTANTS: {count} stream entries do not fit")
        data_at = table + count * STREAM_ENTRY.size
        out = bytearray(size)
        position, read = 0, data_at  # in the region, in the file
        streams = []
        for i in range(count):
            at = table + i * STREAM_ENTRY.size
            offset, length, payload_at, payload_size, codec, dtype, reserved = (
                STREAM_ENTRY.unpack_from(self.data, at)
            )
            if reserved:
                _fail(at + 30, f"stream {i}: reserved field must be zero")
            if codec not in CODECS:
                _fail(at + 28, f"stream {i}: unknown codec {codec}")
            name = isa.DTYPE_NAMES[dtype] if dtype < len(isa.DTYPE_NAMES) else None
            if name not in ELEMENT_TYPES:
                _fail(at + 29, f"stream {i}: element type {dtype} cannot be encoded")
            if offset < position or offset + length > size:
                _fail(
                    at,
                    f"stream {i}: bytes [{offset}, {offset + length}) are not after the last "
                    f"stream and inside the {size} constants bytes",
                )
            gap = offset - position
            if read + gap > end:
                _fail(read, f"stream {i}: the bytes before it run past the CONSTANTS section")
            out[position:offset] = self.data[read : read + gap]
            read += gap
            if payload_at != read - data_at:
                _fail(at + 16, f"stream {i}: payload at {payload_at}, expected {read - data_at}")
            if read + payload_size > end:
                _fail(at + 24, f"stream {i}: its payload runs past the CONSTANTS section")
            item = isa.DTYPES[name][0]
            if not length or length % item or offset % item:
                _fail(at, f"stream {i}: bytes [{offset}, {offset + length}) are not whole {name}s")
            try:
                payload = self.data[read : read + payload_size]
                out[offset : offset + length] = constant_codec.decode(payload, name, length)
            except constant_codec.CodecError as e:
                _fail(read + e.offset, f"stream {i} ({name}, {CODECS[codec]}): {e.message}")
            streams.append(isa.ConstantStream(offset, length, name, CODECS[codec]))
            read += payload_size
            position = offset + length
        if end - read != size - position:
            _fail(
                read,
                f"CONSTANTS: {end - read} bytes after the last stream, expected {size - position}",
            )
        out[position:] = self.data[read:end]
        return bytes(out), tuple(streams)

    # ------------------------------------------------------------------ program

    def program(self) -> isa.Program:
        sections = self.header()
        self.read_strings(sections["STRINGS"])
        regions = self.regions(sections["REGIONS"])
        name, descs, n_in = self.io(sections["IO"])
        layers = self.layers(sections["LAYERS"])
        debug = self.debug(sections["DEBUG"]) if "DEBUG" in sections else ()
        state = self.state(sections["STATE"]) if "STATE" in sections else []
        constants, streams = self.constants(sections["CONSTANTS"], regions)
        instructions = self.instructions(sections["COMMANDS"], len(layers))
        program = isa.Program(
            name,
            regions,
            tuple(d for d, _ in descs[:n_in]),
            tuple(d for d, _ in descs[n_in:]),
            layers,
            tuple(i for i, _ in instructions),
            constants,
            debug,
            tuple(pair for pair, _ in state),
            streams,
        )
        self.check(program, sections, descs, n_in, state, instructions)
        return program

    def check(self, program, sections, descs, n_in, state, instructions) -> None:
        try:
            rules.check_regions(program)
        except isa.ISAError as e:
            _fail(sections["REGIONS"].offset, str(e))
        try:
            rules.check_io_names(program)
        except isa.ISAError as e:
            _fail(sections["IO"].offset, str(e))
        if "DEBUG" in sections:
            try:
                rules.check_debug(program)
            except isa.ISAError as e:
                _fail(sections["DEBUG"].offset, str(e))
        for i, (desc, at) in enumerate(descs):
            try:
                rules.check_io(program, desc)
            except isa.ISAError as e:
                kind = f"input {i}" if i < n_in else f"output {i - n_in}"
                _fail(at, f"{kind} '{desc.name}': {e}")
        for i, (pair, at) in enumerate(state):
            try:
                rules.check_state_pair(program, pair, program.state[:i])
            except isa.ISAError as e:
                _fail(at, f"state {i}: {e}")
        for index, (inst, at) in enumerate(instructions):
            try:
                rules.check_in_program(program, index, inst)
            except isa.ISAError as e:
                _fail(at, f"instruction {index} ({inst.op}): {e}")


def load(
    data: bytes, *, location: str = "<npubin>", max_region_bytes: int = MAX_REGION_BYTES
) -> isa.Program:
    """Decode and validate a binary (NpucError with the byte offset of the first problem)."""
    try:
        return _Decoder(bytes(data), max_region_bytes).program()
    except _Fail as e:
        raise NpucError(f"byte {e.offset} ({e.offset:#x}): {e.message}", location) from None


def load_file(path: str | Path, *, max_region_bytes: int = MAX_REGION_BYTES) -> isa.Program:
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise NpucError(f"cannot read: {e.strerror}", str(path)) from None
    return load(data, location=str(path), max_region_bytes=max_region_bytes)
