"""The loader names the right field: each diagnostic's byte offset and subject, with the
places worked out from docs/binary-format.md's layout (struct formats written here from the
document, not taken from npuc)."""

from __future__ import annotations

import struct

import pytest
from npu_programs import fix_crcs, inst, tensor

from npuc.backend.npubin import encode_program
from npuc.diagnostics import NpucError
from npuc.dialects.npu_isa import IODesc, Program, Region, StatePair
from npuc.runtime.loader import load

HEADER_SIZE = 32
SECTION = "<IIQQII"  # kind, alignment, offset, size, crc32, reserved
STRINGS, REGIONS, IO, LAYERS, COMMANDS, CONSTANTS, STATE = 1, 2, 3, 4, 5, 6, 8
IO_HEAD_SIZE = 16  # program name, inputs, outputs, reserved
IO_ENTRY_SIZE = 16  # name, zero point, scale
TENSOR_SIZE, DIM_SIZE = 16, 8  # region, dtype, rank, 2 reserved, offset; then (size, stride)
COUNT_SIZE = 8  # count, reserved: the head of COMMANDS
PARAMS_SIZE_AT = 6  # in an instruction record: opcode H, engine B, operands B, deps H, params H


def entry_of(data: bytes, kind: int) -> tuple[int, tuple[int, ...]]:
    """(where the section table's entry of `kind` starts, its fields)."""
    (count,) = struct.unpack_from("<I", data, 12)
    for i in range(count):
        at = HEADER_SIZE + 32 * i
        fields = struct.unpack_from(SECTION, data, at)
        if fields[0] == kind:
            return at, fields
    raise AssertionError(f"no section of kind {kind}")


def section(data: bytes, kind: int) -> int:
    """The offset of the section of `kind`, from the section table."""
    return entry_of(data, kind)[1][2]


def refused(data: bytearray) -> str:
    fix_crcs(data)
    with pytest.raises(NpucError) as info:
        load(bytes(data))
    return info.value.message


@pytest.mark.parametrize("name", ["eltwise", "conv_pool"])
def test_a_wrong_parameter_block_size_is_reported_at_its_field(programs, name):
    data = bytearray(encode_program(programs[name]))
    record = section(data, COMMANDS) + COUNT_SIZE
    field = record + PARAMS_SIZE_AT
    (size,) = struct.unpack_from("<H", data, field)
    struct.pack_into("<H", data, field, size + 8)
    message = refused(data)
    assert message.startswith(f"byte {field} ({field:#x}): "), message
    assert f"parameter block of {size + 8} bytes, expected {size}" in message, message


def test_the_first_output_descriptor_is_named_output_0(programs):
    data = bytearray(encode_program(programs["eltwise"]))
    io = section(data, IO)
    _, inputs, outputs, _ = struct.unpack_from("<IIII", data, io)
    assert inputs >= 1 and outputs >= 1
    at = io + IO_HEAD_SIZE
    for _ in range(inputs):  # past each input's entry and tensor descriptor
        rank = data[at + IO_ENTRY_SIZE + 2]
        at += IO_ENTRY_SIZE + TENSOR_SIZE + DIM_SIZE * rank
    struct.pack_into("<I", data, at, 0xFFFF_FFFF)  # the first output's name: no such string
    message = refused(data)
    assert message.startswith(f"byte {at} ({at:#x}): output 0: string 4294967295"), message


def version_2_constants(program: Program, contents: bytes) -> tuple[bytearray, int]:
    """The program (without constants: its CONSTANTS section is the last one, empty) as a
    version 2.0 file whose CONSTANTS section holds `contents`, and that section's offset."""
    data = bytearray(encode_program(program))
    assert struct.unpack_from("<HH", data, 4) == (1, 0)
    at, (kind, alignment, offset, size, crc, _) = entry_of(data, CONSTANTS)
    assert size == 0 and offset == len(data)
    data += contents
    struct.pack_into(SECTION, data, at, kind, alignment, offset, len(contents), crc, 0)
    struct.pack_into("<HH", data, 4, 2, 0)
    struct.pack_into("<Q", data, 16, len(data))  # the header's total size
    fix_crcs(data)
    return data, offset


def test_a_version_2_constants_section_with_no_streams_and_no_bytes_loads(programs):
    """docs/binary-format.md: version 2.0's CONSTANTS is a 16-byte header (decoded size S,
    stream count N, reserved), N entries, then the data area; S = N = 0 is a valid section of
    16 bytes, whose empty table exactly fills what follows the header."""
    data, _ = version_2_constants(programs["empty"], struct.pack("<QII", 0, 0, 0))
    program = load(bytes(data))
    assert program.constants == b"" and program.streams == ()


def test_a_version_2_constants_header_cut_short_says_how_many_bytes_remain(programs):
    """The 16-byte header of a version 2.0 CONSTANTS section of 8 bytes: reported at the
    section's start with the 8 bytes there are."""
    data, offset = version_2_constants(programs["empty"], bytes(8))
    message = refused(data)
    assert message == (
        f"byte {offset} ({offset:#x}): CONSTANTS header needs 16 bytes, only 8 remain"
    ), message


def test_a_stream_count_past_the_constants_section_is_reported_at_its_field(programs):
    """CONSTANTS 2.0: stream count N (u32 at 8); one 32-byte entry cannot follow a 16-byte
    header that ends the section."""
    data, offset = version_2_constants(programs["empty"], struct.pack("<QII", 0, 1, 0))
    message = refused(data)
    field = offset + 8
    assert message == f"byte {field} ({field:#x}): CONSTANTS: 1 stream entries do not fit", message


def test_nonzero_header_flags_are_reported_at_their_field(programs):
    """File header: flags (u32 at 24) must be 0."""
    data = bytearray(encode_program(programs["eltwise"]))
    struct.pack_into("<I", data, 24, 0x40)
    message = refused(data)
    assert message == "byte 24 (0x18): header flags 0x40 must be zero", message


def test_bytes_after_the_last_string_are_counted_from_where_it_ends(programs):
    """STRINGS: the last string must end at the end of the section. Two bytes shorter, it
    leaves 2 bytes, which start at its new end: data area (8 + 8N) + offset + length."""
    data = bytearray(encode_program(programs["eltwise"]))
    strings = section(data, STRINGS)
    (count,) = struct.unpack_from("<I", data, strings)
    entry = strings + 8 + 8 * (count - 1)
    offset, length = struct.unpack_from("<II", data, entry)
    assert length >= 2 and offset > 0
    struct.pack_into("<II", data, entry, offset, length - 2)
    end = strings + 8 + 8 * count + offset + length - 2
    message = refused(data)
    assert message == f"byte {end} ({end:#x}): STRINGS: 2 bytes after the last string", message


def one_state() -> Program:
    """One state pair: input 1 `acc` (4 bytes, initial value 0) takes output 0."""
    x, acc, acc_next = (tensor("mutable", at, (1, 4)) for at in (0, 8, 16))
    return Program(
        "running_max",
        (Region("mutable", 32, "sram"),),
        (IODesc("x", x, 0.5, 3), IODesc("acc", acc, 0.5, 3)),
        (IODesc("acc", acc_next, 0.5, 3),),
        (),
        (inst("eltwise", (acc, x, acc_next), kind="maximum"),),
        state=(StatePair(1, 0, bytes(4)),),
    )


def test_a_misplaced_initial_value_is_reported_at_its_offset_field():
    """STATE: count N, reserved, then entry i at 8 + 24i: input, output, the value's offset
    (u64 at 8), its size; value 0 is at offset 0."""
    data = bytearray(encode_program(one_state()))
    field = section(data, STATE) + 8 + 8
    assert struct.unpack_from("<Q", data, field) == (0,)
    struct.pack_into("<Q", data, field, 8)
    message = refused(data)
    assert message == f"byte {field} ({field:#x}): state 0: initial value at offset 8, expected 0"


# field edits of a section table entry -> the entry's byte the loader must name, what it says
ENTRY_EDITS = {
    "reserved": (lambda f: (*f[:5], 1), 28, "reserved field must be zero"),
    "alignment": (lambda f: (f[0], 24, *f[2:]), 4, "alignment 24 is not a power of two"),
    "unaligned-offset": (lambda f: (*f[:2], f[2] + 1, *f[3:]), 8, "-byte aligned"),
    "offset-past-the-end": (lambda f: (*f[:2], f[2] + (1 << 20), *f[3:]), 8, "lie outside"),
}


@pytest.mark.parametrize("edit", ENTRY_EDITS.values(), ids=ENTRY_EDITS.keys())
def test_a_bad_section_entry_is_reported_at_its_field(programs, edit):
    data = bytearray(encode_program(programs["eltwise"]))
    at, fields = entry_of(data, COMMANDS)
    change, field, text = edit
    struct.pack_into(SECTION, data, at, *change(fields))
    message = refused(data)
    assert message.startswith(f"byte {at + field} ({at + field:#x}): "), message
    assert text in message, message


def test_a_corrupt_section_is_reported_at_its_crc_field(programs):
    data = bytearray(encode_program(programs["eltwise"]))
    at, (_, _, offset, size, _, _) = entry_of(data, COMMANDS)
    assert size > 0
    data[offset + size - 1] ^= 0xFF  # the header CRC covers the table only: it still holds
    with pytest.raises(NpucError) as info:
        load(bytes(data))
    message = info.value.message
    assert message.startswith(f"byte {at + 24} ({at + 24:#x}): "), message
    assert "CRC32 mismatch" in message, message


def test_a_wrong_header_crc_is_reported_at_its_field(programs):
    data = bytearray(encode_program(programs["eltwise"]))
    data[28] ^= 0x01
    with pytest.raises(NpucError) as info:
        load(bytes(data))
    assert info.value.message.startswith("byte 28 (0x1c): header and section table CRC32"), (
        info.value.message
    )


def test_the_last_string_running_past_its_section_is_reported_at_its_entry(programs):
    """STRINGS: count N, reserved, then (offset, length) of string i at 8 + 8i."""
    data = bytearray(encode_program(programs["eltwise"]))
    strings = section(data, STRINGS)
    (count,) = struct.unpack_from("<I", data, strings)
    last = count - 1
    assert last >= 1
    entry = strings + 8 + 8 * last
    offset, length = struct.unpack_from("<II", data, entry)
    struct.pack_into("<II", data, entry, offset, length + 1)
    message = refused(data)
    assert message.startswith(f"byte {entry} ({entry:#x}): string {last} runs past"), message


def test_a_region_of_unknown_kind_is_reported_at_its_entry(programs):
    """REGIONS: count N, reserved, then (kind, memory, size) of region i at 8 + 16i."""
    data = bytearray(encode_program(programs["eltwise"]))
    regions = section(data, REGIONS)
    (count,) = struct.unpack_from("<I", data, regions)
    assert count >= 2
    entry = regions + 8 + 16 * (count - 1)
    struct.pack_into("<I", data, entry, 99)
    message = refused(data)
    assert message.startswith(f"byte {entry} ({entry:#x}): region {count - 1}: unknown kind 99")


@pytest.mark.parametrize("past", [0, 1])
def test_a_layer_index_past_the_layers_is_reported_at_its_field(programs, past):
    """LAYERS: count N first; an instruction's layer index (u32 at record + 8) must be < N."""
    data = bytearray(encode_program(programs["eltwise"]))
    (layers,) = struct.unpack_from("<I", data, section(data, LAYERS))
    field = section(data, COMMANDS) + COUNT_SIZE + 8
    struct.pack_into("<I", data, field, layers + past)
    message = refused(data)
    assert message.startswith(f"byte {field} ({field:#x}): "), message
    assert f"layer {layers + past} is not among the {layers} layers" in message, message


@pytest.mark.parametrize("size", [8, 1 << 30])
def test_a_record_size_out_of_its_section_is_reported_at_its_field(programs, size):
    """An instruction's record size (u32 at record + 12): at least 16, inside COMMANDS."""
    data = bytearray(encode_program(programs["eltwise"]))
    field = section(data, COMMANDS) + COUNT_SIZE + 12
    struct.pack_into("<I", data, field, size)
    message = refused(data)
    assert message.startswith(f"byte {field} ({field:#x}): "), message
    assert f"record size {size} runs past the COMMANDS section" in message, message
