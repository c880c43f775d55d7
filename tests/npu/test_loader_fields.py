"""Every field of valid binaries, corrupted one at a time: the loader names the field's byte
and says what is wrong with it.

The files' layout is walked (tests/npubin_layout.py) with struct formats written from
docs/binary-format.md (the header, the section table, every section's records, instruction
records and tensor descriptors), so the byte each diagnostic must name comes from the
document, not from npuc; the corruptions are in tests/npubin_corruptions.py and
tests/npubin_command_corruptions.py.
Each case edits one field of an encoded program (CRCs fixed afterwards unless the CRC is the
subject), and the loader's message must start with `byte N (0xN): ` for the field's N and
contain the case's words. Cases that must load (zero padding after the file, optional sections
removed, a newer minor version's unknown section) check the loaded program instead.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib

import pytest
from npu_programs import fix_crcs, inst, tensor
from npubin_command_corruptions import command_cases, constants_cases
from npubin_corruptions import (
    Case,
    debug_cases,
    entry_cases,
    header_cases,
    io_cases,
    layer_cases,
    region_cases,
    state_cases,
    string_cases,
)
from npubin_layout import NAMES, OPCODES, Layout, u32

from npuc.backend.npubin import encode_program
from npuc.diagnostics import NpucError
from npuc.dialects.npu_isa import ConstantStream, IODesc, Program, Region, StatePair
from npuc.runtime.loader import load


def all_cases(data: bytes) -> list[Case]:
    lay = Layout(data)
    cases = [
        *header_cases(lay),
        *entry_cases(lay),
        *string_cases(lay),
        *region_cases(lay),
        *io_cases(lay),
        *layer_cases(lay),
        *debug_cases(lay),
        *state_cases(lay),
        *command_cases(lay),
        *constants_cases(lay),
    ]
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases


# --------------------------------------------------------------------------- the programs


def two_states() -> Program:
    """Two state pairs of 5 and 3 bytes (so their values are padded): input 1 takes output 0,
    input 2 output 1."""
    x, high, high_next = (tensor("mutable", at, (1, 5)) for at in (0, 8, 24))
    low, low_next = tensor("mutable", 16, (1, 3)), tensor("mutable", 32, (1, 3))
    return Program(
        "running_range",
        (Region("mutable", 40, "sram"),),
        (IODesc("x", x, 0.5, 3), IODesc("high", high, 0.5, 3), IODesc("low", low, 0.5, 3)),
        (IODesc("high", high_next, 0.5, 3), IODesc("low", low_next, 0.5, 3)),
        ("max", "min"),
        (
            inst("eltwise", (high, x, high_next), kind="maximum", layer=0),
            inst(
                "eltwise",
                (low, tensor("mutable", 0, (1, 3)), low_next),
                kind="minimum",
                layer=1,
            ),
        ),
        state=(StatePair(1, 0, bytes([1, 2, 3, 4, 5])), StatePair(2, 1, bytes([9, 8, 7]))),
    )


def gathered() -> Program:
    """Five copies, then an add waiting for all of them: 5 deps, 20 bytes and 4 of padding
    (with 1 or 3 deps the padding ends where 3 * deps, rounded up to 8, ends too)."""
    x = tensor("mutable", 0, (1, 8))
    parts = [tensor("activations", 16 * k, (1, 8)) for k in range(5)]
    y = tensor("mutable", 16, (1, 8))
    copies = tuple(inst("dma", (x, part)) for part in parts[:4])
    copies += (inst("dma", (tensor("constants", 0, (1, 8)), parts[4])),)
    return Program(
        "gathered",
        (
            Region("constants", 8, "flash"),
            Region("mutable", 32, "sram"),
            Region("activations", 80, "sram"),
        ),
        (IODesc("x", x),),
        (IODesc("y", y),),
        (),
        (*copies, inst("eltwise", (parts[0], parts[4], y), deps=tuple(range(5)), kind="add")),
        constants=bytes(range(1, 9)),
    )


def rank_8() -> Program:
    """A copy of a tensor of the largest rank, 8 (docs/binary-format.md: rank 1 to 8)."""
    shape = (1, 2, 1, 3, 1, 2, 1, 2)
    x, y = tensor("mutable", 0, shape), tensor("mutable", 32, shape)
    return Program(
        "rank_8",
        (Region("mutable", 64, "sram"),),
        (IODesc("x", x),),
        (IODesc("y", y),),
        (),
        (inst("dma", (x, y)),),
    )


def streamed(program: Program) -> Program:
    """Every run of the constants the instructions read of 16 bytes or more, as a stream."""
    from npuc.passes.compress_constants import constant_runs

    streams = tuple(
        ConstantStream(a, b - a, dtype)
        for a, b, dtype in constant_runs(program)
        if dtype is not None and b <= len(program.constants) and b - a >= 16
    )
    return dataclasses.replace(program, streams=streams)


@pytest.fixture(scope="module")
def binaries(programs) -> dict[str, bytes]:
    out = {name: encode_program(programs[name]) for name in ("tiny", "eltwise", "conv_pool")}
    out["state"] = encode_program(two_states())
    out["gathered"] = encode_program(gathered())
    out["streams"] = encode_program(streamed(programs["conv_pool"]))
    return out


def outcome(case: Case, data: bytes) -> str | None:
    """None if the loader did what the case says, else what it did."""
    edited = bytearray(data)
    case.edit(edited)
    if case.fix == "all":
        fix_crcs(edited)
    elif case.fix == "header":
        (count,) = struct.unpack_from("<I", edited, 12)
        crc = zlib.crc32(edited[:28] + edited[32 : 32 + 32 * count])
        struct.pack_into("<I", edited, 28, crc)
    try:
        limit = {} if case.limit is None else {"max_region_bytes": case.limit}
        program = load(bytes(edited), **limit)
    except NpucError as e:
        if case.place < 0:
            return f"refused: {e.message}"
        want = f"byte {case.place} ({case.place:#x}): "
        ok = e.message.startswith(want) and case.says in e.message
        return None if ok else f"said {e.message!r}, expected {want}...{case.says}..."
    if case.place >= 0:
        return "loaded"
    if case.loads is not None and not case.loads(program):
        return "loaded something else"
    return None


@pytest.mark.parametrize("name", ["tiny", "eltwise", "conv_pool", "state", "streams", "gathered"])
def test_every_corrupted_field_is_refused_at_its_byte(binaries, name):
    data = binaries[name]
    wrong = {c.name: why for c in all_cases(data) if (why := outcome(c, data)) is not None}
    assert not wrong, wrong


def test_the_cases_cover_every_structure(binaries):
    """The programs hold every section, every opcode and every optional part the cases edit."""
    layouts = [Layout(data) for data in binaries.values()]
    kinds = {k for lay in layouts for k in lay.entries}
    assert kinds == set(NAMES), kinds
    ops = {r.op for lay in layouts for r in lay.records}
    assert ops == set(OPCODES.values()), ops
    assert any(r.deps % 2 for lay in layouts for r in lay.records)  # dep padding
    assert any(r.deps % 2 and r.deps >= 5 for lay in layouts for r in lay.records)
    assert any(u32(lay.data, lay.offset(4)) % 2 for lay in layouts)  # layer padding
    assert any(lay.major == 2 for lay in layouts)
    cases = sum(len(all_cases(data)) for data in binaries.values())
    assert cases > 1000, cases


@pytest.mark.parametrize(
    "name", ["tiny", "eltwise", "conv_pool", "state", "streams", "empty", "rank_8"]
)
def test_valid_files_load_to_the_program_they_encode(programs, name):
    program = {
        "rank_8": rank_8(),
        "state": two_states(),
        "streams": streamed(programs["conv_pool"]),
    }.get(name) or programs[name]
    data = encode_program(program)
    assert load(data) == program
    assert encode_program(load(data)) == data


def test_a_newer_minor_version_skips_a_section_kind_it_adds(binaries):
    """docs/binary-format.md, "Versions": a loader reads a newer minor version and skips the
    section kinds it does not know."""
    data = bytearray(binaries["conv_pool"])
    lay = Layout(bytes(data))
    struct.pack_into("<H", data, 6, 7)  # version 1.7
    struct.pack_into("<I", data, lay.entries[7][0], 99)  # DEBUG becomes a kind of 1.7
    fix_crcs(data)
    program = load(bytes(data))
    assert program.debug == () and program.instructions


def test_a_file_of_16_sections_loads(binaries):
    """docs/binary-format.md: the section count is 1 to 16, and a newer minor version's
    unknown kinds are skipped. The conv_pool file with empty sections of an unknown kind
    added up to 16 entries (the sections moved by what the table grows, rounded up to the
    largest alignment, 64)."""
    data = binaries["conv_pool"]
    lay = Layout(data)
    assert max(alignment for _, alignment, _, _ in lay.entries.values()) == 64
    move = -(-32 * (16 - lay.count) // 64) * 64
    out = bytearray(data[: lay.table_end]) + bytes(move) + data[lay.table_end :]
    out += bytes(-len(out) % 8)  # the empty sections go at the end, 8-aligned
    end = len(out)
    for at, _, offset, _ in lay.entries.values():
        struct.pack_into("<Q", out, at + 8, offset + move)
    for i in range(lay.count, 16):
        struct.pack_into("<IIQQII", out, 32 + 32 * i, 99, 8, end, 0, 0, 0)
    struct.pack_into("<HHIIQ", out, 4, 1, 2, 32, 16, end)  # version 1.2, 16 sections
    fix_crcs(out)
    assert load(bytes(out)) == load(data)


def test_version_2_constants_need_a_constants_region(programs):
    """docs/binary-format.md, CONSTANTS 2.0: the decoded size S is at most the constants
    region's size; a program without that region (the empty one) has room for none."""
    data = bytearray(encode_program(programs["empty"]))
    lay = Layout(bytes(data))
    at, alignment, offset, size = lay.entries[6]
    assert size == 0 and offset == len(data)  # the last section, empty
    contents = struct.pack("<QII", 1, 0, 0) + b"\x01"  # S = 1, no streams, one byte
    data += contents
    struct.pack_into("<IIQQII", data, at, 6, alignment, offset, len(contents), 0, 0)
    struct.pack_into("<HH", data, 4, 2, 0)
    struct.pack_into("<Q", data, 16, len(data))
    fix_crcs(data)
    with pytest.raises(NpucError) as info:
        load(bytes(data))
    want = f"byte {offset} ({offset:#x}): CONSTANTS: 1 bytes exceed the constants region (0)"
    assert info.value.message == want
