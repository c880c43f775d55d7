"""Version 2.0 binaries: a CONSTANTS section with encoded streams (docs/binary-format.md).

The section is read here from the document (struct only, payloads by test_constant_codec's
decoder); the loader must give the same bytes, refuse a corrupted section at the byte
where it shows, still read 1.x files, and the text form must carry the streams so that
binary -> text -> binary is byte-identical.
"""

from __future__ import annotations

import dataclasses
import re
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from npu_programs import fix_crcs
from rice_doc import doc_decode as doc_decode_payload

from npuc.backend.npubin import encode_module, encode_program
from npuc.backend.npubin_disasm import disassemble
from npuc.diagnostics import NpucError
from npuc.dialects.npu_isa import ConstantStream, Program
from npuc.passes.compress_constants import choose_streams, constant_runs
from npuc.printing import print_module
from npuc.runtime.loader import load

DOC_DTYPES = ("i8", "u8", "i16", "u16", "i32", "i64", "f32")  # the element type codes


def section_table(data: bytes) -> dict[str, tuple[int, int]]:
    (count,) = struct.unpack_from("<I", data, 12)
    names = {6: "CONSTANTS"}
    table = {}
    for i in range(count):
        kind, _, offset, size = struct.unpack_from("<IIQQ", data, 32 + 32 * i)
        table[names.get(kind, str(kind))] = (offset, size)
    return table


def doc_constants(data: bytes) -> tuple[bytes, list[tuple[int, int, str]]]:
    """The constants a version-2.0 file gives, and its streams, read as the document says."""
    assert struct.unpack_from("<4sHH", data, 0) == (b"NPUB", 2, 0)
    start, size = section_table(data)["CONSTANTS"]
    decoded, count, reserved = struct.unpack_from("<QII", data, start)
    assert reserved == 0
    area = start + 16 + 32 * count
    out, position, read, streams = bytearray(), 0, area, []
    for i in range(count):
        offset, length, payload_at, payload_size, codec, dtype, reserved = struct.unpack_from(
            "<QQQIBBH", data, start + 16 + 32 * i
        )
        assert codec == 1 and reserved == 0
        out += data[read : read + offset - position]
        read += offset - position
        assert payload_at == read - area
        run = doc_decode_payload(data[read : read + payload_size], DOC_DTYPES[dtype], length)
        assert run is not None
        out += run
        read += payload_size
        position = offset + length
        streams.append((offset, length, DOC_DTYPES[dtype]))
    out += data[read : start + size]
    assert len(out) == decoded
    return bytes(out), streams


def with_all_streams(program: Program) -> Program:
    """Every constants run the instructions read, as a stream (paying or not)."""
    streams = [
        ConstantStream(a, b - a, dtype)
        for a, b, dtype in constant_runs(program)
        if dtype is not None and b <= len(program.constants)
    ]
    return dataclasses.replace(program, streams=tuple(streams))


@pytest.fixture(scope="module")
def streamed(programs) -> Program:
    program = with_all_streams(programs["conv_pool"])
    assert len(program.streams) >= 4  # i16 weights, i8 weights, i32 tables, an i16 LUT
    assert {s.dtype for s in program.streams} >= {"i16", "i32"}
    return program


def test_the_loader_gives_the_bytes_the_document_gives(streamed):
    data = encode_program(streamed)
    constants, streams = doc_constants(data)
    assert constants == streamed.constants
    assert streams == [(s.offset, s.size, s.dtype) for s in streamed.streams]
    assert load(data) == streamed


def test_programs_without_streams_keep_their_version(programs):
    for name in ("tiny", "eltwise", "conv_pool"):
        data = encode_program(programs[name])
        assert struct.unpack_from("<HH", data, 4) == (1, 0)
        start, size = section_table(data)["CONSTANTS"]
        assert data[start : start + size] == programs[name].constants  # 1.x: raw bytes
        assert load(data) == programs[name]


def test_a_newer_minor_version_of_2_is_read(streamed):
    data = bytearray(encode_program(streamed))
    data[6:8] = (1).to_bytes(2, "little")
    fix_crcs(data)
    assert load(bytes(data)).constants == streamed.constants


def test_binary_text_binary_is_byte_identical(streamed, parse, ctx):
    data = encode_program(streamed)
    module = disassemble(load(data), ctx)
    module.verify()
    assert encode_module(module) == data
    text = print_module(module, elide_above=None)
    assert '#npu.stream<"rice", ' in text
    assert encode_module(parse(text)) == data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: [dataclasses.replace(s[0], codec="lz")], "unknown codec 'lz'"),
        (lambda s: [dataclasses.replace(s[0], dtype="f32")], "element type f32"),
        (lambda s: [dataclasses.replace(s[-1], size=s[-1].size - 1)], "not whole i16s"),
        (lambda s: [s[1], s[0]], "before the end of the last"),
        (lambda s: [dataclasses.replace(s[-1], size=10**6)], "past the"),
    ],
)
def test_invalid_streams_are_not_encoded(streamed, change, message):
    bad = dataclasses.replace(streamed, streams=tuple(change(list(streamed.streams))))
    with pytest.raises(NpucError, match=message):
        encode_program(bad)


def payload_spans(data: bytes) -> list[tuple[int, int]]:
    start, _ = section_table(data)["CONSTANTS"]
    (count,) = struct.unpack_from("<I", data, start + 8)
    area = start + 16 + 32 * count
    spans = []
    for i in range(count):
        payload_at, payload_size = struct.unpack_from("<QI", data, start + 16 + 32 * i + 16)
        spans.append((area + payload_at, area + payload_at + payload_size))
    return spans


def test_a_corrupted_payload_is_refused_at_its_byte(streamed):
    data = encode_program(streamed)
    first, _ = payload_spans(data)[0]
    bad = bytearray(data)
    bad[first + 1] = 7  # a reserved byte of the stream head
    fix_crcs(bad)
    with pytest.raises(NpucError, match=rf"byte {first + 1} .*stream 0 \(i8, rice\): reserved"):
        load(bytes(bad))
    bad = bytearray(data)
    bad[first + 12] = 200  # lane 0's Rice parameter
    fix_crcs(bad)
    with pytest.raises(NpucError, match=rf"byte {first + 12} .*Rice parameter 200"):
        load(bytes(bad))


@settings(max_examples=300, deadline=3000)
@given(st.data())
def test_corrupted_constants_are_refused_with_a_byte_offset(streamed, data):
    """Any change to the CONSTANTS section (CRCs then fixed): the loader gives the
    document's bytes or an NpucError naming a byte of the file, never anything else."""
    blob = bytearray(encode_program(streamed))
    start, size = section_table(bytes(blob))["CONSTANTS"]
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(start, start + size - 1))
        blob[at] = data.draw(st.integers(0, 255))
    fix_crcs(blob)
    try:
        program = load(bytes(blob))
    except NpucError as e:
        assert (m := re.search(r"byte (\d+)", str(e))), str(e)
        assert int(m[1]) < len(blob)
    else:
        constants, _ = doc_constants(bytes(blob))
        assert program.constants == constants


def test_streams_are_chosen_where_they_pay():
    """A run of narrow int8 weights is encoded; a run of uniform random bytes is not."""
    from npu_programs import inst, tensor

    from npuc.dialects.npu_isa import Region

    rng = np.random.default_rng(1)
    narrow = rng.integers(-6, 7, 4096).astype(np.int8).tobytes()
    noise = rng.integers(-128, 128, 4096).astype(np.int8).tobytes()
    program = Program(
        "p",
        (Region("constants", 8192, "flash"), Region("activations", 8192, "sram")),
        (),
        (),
        (),
        tuple(
            inst(
                "dma",
                (tensor("constants", at, (4096,), "i8"), tensor("activations", at, (4096,), "i8")),
            )
            for at in (0, 4096)
        ),
        narrow + noise,
    )
    assert choose_streams(program) == (ConstantStream(0, 4096, "i8"),)


def test_a_payload_size_past_the_section_is_refused_at_its_field(streamed):
    """docs/binary-format.md: stream entry i at 16 + 32i of CONSTANTS, its u32 payload size
    at + 24."""
    data = bytearray(encode_program(streamed))
    start, _ = section_table(bytes(data))["CONSTANTS"]
    (count,) = struct.unpack_from("<I", data, start + 8)
    last = count - 1
    field = start + 16 + 32 * last + 24
    struct.pack_into("<I", data, field, 1 << 30)
    fix_crcs(data)
    with pytest.raises(NpucError) as info:
        load(bytes(data))
    message = info.value.message
    assert message.startswith(f"byte {field} ({field:#x}): stream {last}: its payload runs past")
