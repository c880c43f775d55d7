"""The .npubin encoder, loader and disassembler: round trips, determinism, and the bytes
checked by an independent decoder written from docs/binary-format.md."""

from __future__ import annotations

import dataclasses
import random
import struct
import subprocess
import sys
import zlib

import pytest
from npu_programs import fix_crcs
from tool_runner import tool_command

from npuc.backend.npubin import encode_module, encode_program
from npuc.backend.npubin_disasm import disassemble
from npuc.diagnostics import NpucError
from npuc.printing import print_module
from npuc.runtime.loader import load

NAMES = ("tiny", "eltwise", "conv_pool", "empty")

# --------------------------------------------------------------------------- independent decoder
# Written from docs/binary-format.md with struct.unpack only; shares no code with npuc.

DOC_SECTIONS = {
    1: "STRINGS",
    2: "REGIONS",
    3: "IO",
    4: "LAYERS",
    5: "COMMANDS",
    6: "CONSTANTS",
    7: "DEBUG",
}
# opcode: (name, engine, operand count, parameter block size)
DOC_OPCODES = {
    1: ("dma", 0, 2, 0), 2: ("conv2d", 1, 4, 56), 3: ("matmul", 1, 4, 24), 4: ("pool", 1, 2, 72),
    5: ("eltwise", 1, 3, 56), 6: ("lut", 1, 3, 8), 7: ("softmax", 1, 2, 16), 8: ("move", 1, 2, 80),
    9: ("host", 2, None, 8),
}  # fmt: skip
DOC_REGIONS = ("constants", "mutable", "activations", "sram")
DOC_DTYPES = ("i8", "u8", "i16", "u16", "i32", "i64", "f32")


def doc_decode(data: bytes) -> dict:
    """Header, section table (CRCs checked), strings, regions, layers and every record."""
    magic, major, minor, header_size, count, total, flags, crc = struct.unpack_from(
        "<4sHHIIQII", data, 0
    )
    assert (magic, major, minor, header_size, flags) == (b"NPUB", 1, 0, 32, 0)
    assert total == len(data)
    table = data[32 : 32 + 32 * count]
    assert zlib.crc32(data[:28] + table) == crc
    sections = {}
    for i in range(count):
        kind, alignment, offset, size, section_crc, reserved = struct.unpack_from(
            "<IIQQII", table, 32 * i
        )
        assert reserved == 0 and offset % alignment == 0
        assert alignment == (64 if DOC_SECTIONS[kind] == "CONSTANTS" else 8)
        assert zlib.crc32(data[offset : offset + size]) == section_crc
        sections[DOC_SECTIONS[kind]] = (offset, size)
    out = {"sections": sections, "strings": [], "regions": [], "records": []}
    at, size = sections["STRINGS"]
    (n,) = struct.unpack_from("<I", data, at)
    blob = at + 8 + 8 * n
    for i in range(n):
        offset, length = struct.unpack_from("<II", data, at + 8 + 8 * i)
        out["strings"].append(data[blob + offset : blob + offset + length].decode())
    at, size = sections["REGIONS"]
    (n,) = struct.unpack_from("<I", data, at)
    assert size == 8 + 16 * n
    for i in range(n):
        kind, memory, region_size = struct.unpack_from("<IIQ", data, at + 8 + 16 * i)
        out["regions"].append((DOC_REGIONS[kind], region_size, out["strings"][memory]))
    at, size = sections["LAYERS"]
    (n,) = struct.unpack_from("<I", data, at)
    out["layers"] = [out["strings"][j] for j in struct.unpack_from(f"<{n}I", data, at + 8)]
    at, size = sections["COMMANDS"]
    (n,) = struct.unpack_from("<I", data, at)
    cursor = at + 8
    for _ in range(n):
        opcode, engine, operands, deps, params, layer, record = struct.unpack_from(
            "<HBBHHII", data, cursor
        )
        name, want_engine, want_operands, want_params = DOC_OPCODES[opcode]
        assert engine == want_engine and params == want_params
        assert want_operands in (None, operands)
        block = data[cursor + 16 : cursor + 16 + params]
        dep_list = list(struct.unpack_from(f"<{deps}I", data, cursor + 16 + params))
        position = cursor + 16 + params + (4 * deps + 7) // 8 * 8
        tensors = []
        for _ in range(operands):
            region, dtype, rank, _r1, _r2, offset = struct.unpack_from("<BBBBIQ", data, position)
            dims = [struct.unpack_from("<II", data, position + 16 + 8 * d) for d in range(rank)]
            tensors.append(
                (
                    DOC_REGIONS[region],
                    offset,
                    [d for d, _ in dims],
                    [s for _, s in dims],
                    DOC_DTYPES[dtype],
                )
            )
            position += 16 + 8 * rank
        assert position == cursor + record
        out["records"].append(
            {
                "op": name,
                "params": block,
                "deps": dep_list,
                "tensors": tensors,
                "layer": None if layer == 0xFFFFFFFF else layer,
            }
        )
        cursor += record
    assert cursor == at + size
    return out


@pytest.mark.parametrize("name", NAMES)
def test_independent_decoder_reads_what_was_encoded(programs, name):
    program = programs[name]
    data = encode_program(program)
    doc = doc_decode(data)
    assert doc["strings"][0] == program.name
    assert doc["regions"] == [(r.kind, r.size, r.memory) for r in program.regions]
    assert doc["layers"] == list(program.layers)
    start, size = doc["sections"]["CONSTANTS"]
    assert data[start : start + size] == program.constants
    assert len(doc["records"]) == len(program.instructions)
    for record, inst in zip(doc["records"], program.instructions, strict=True):
        assert record["op"] == inst.op
        assert record["deps"] == list(inst.deps)
        assert record["layer"] == inst.layer
        assert record["tensors"] == [
            (t.region, t.offset, list(t.shape), list(t.strides), t.dtype) for t in inst.operands
        ]


def test_parameter_offsets_follow_the_doc(programs):
    """Spot checks of documented parameter offsets in the encoded blocks."""
    records = doc_decode(encode_program(programs["conv_pool"]))["records"]
    conv, pool_sum, pool_avg = records[1]["params"], records[2]["params"], records[3]["params"]
    assert struct.unpack_from("<2I4I2II", conv, 0) == (2, 2, 1, 1, 0, 0, 1, 1, 1)
    assert struct.unpack_from("<iiii", conv, 36) == (0, 0, -1000, 30000)
    assert conv[52] == 0  # rounding half_away_from_zero
    assert struct.unpack_from("<iiii", pool_sum, 44) == (-7, 1 << 30, 33, -100)
    assert (pool_sum[64], pool_sum[65]) == (2, 2)  # mode sum, rounding tflite
    assert struct.unpack_from("<2I2I4I", pool_avg, 0) == (3, 3, 2, 2, 1, 1, 1, 1)
    assert tuple(pool_avg[64:68]) == (1, 0, 1, 1)  # avg, half away, ceil_mode, count_include_pad
    move = records[7]["params"]
    assert struct.unpack_from("<i", move, 0) == (-5,)
    assert tuple(move[4:12]) == (0, 1, 2, 3, 0, 0, 0, 0)  # identity perm of a rank-4 ifm
    assert struct.unpack_from("<16I", move, 12) == (1, 0, 1, 0) + (0,) * 12
    matmul = records[9]["params"]
    assert struct.unpack_from("<ii", matmul, 0) == (-1, 2) and matmul[16] == 3  # half_up
    eltwise = doc_decode(encode_program(programs["eltwise"]))["records"]
    assert [r["params"][48] for r in eltwise[:8]] == list(range(8))  # kinds in doc order
    assert eltwise[7]["params"][50] == 1  # div overshift x86
    assert struct.unpack_from("<12i", eltwise[0]["params"], 0)[:5] == (-3, 128, 0, 20, 1 << 30)


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("name", NAMES)
def test_binary_text_binary_is_byte_identical(programs, parse, ctx, name):
    data = encode_program(programs[name])
    loaded = load(data)
    assert loaded == programs[name]
    module = disassemble(loaded, ctx)
    module.verify()
    assert encode_module(module) == data
    text = print_module(module, elide_above=None)
    assert encode_module(parse(text)) == data


def test_text_round_trip_of_the_tiny_network(parse, tiny_text):
    module = parse(tiny_text)
    data = encode_module(module)
    text = print_module(disassemble(load(data)), elide_above=None)
    assert encode_module(parse(text)) == data
    assert "npu.host" in text and "qnn.argmax" in text


def test_encoding_is_deterministic(programs):
    for program in programs.values():
        first = encode_program(program)
        shuffled = []
        rng = random.Random(0)
        for inst in program.instructions:
            items = list(inst.params.items())
            rng.shuffle(items)
            shuffled.append(dataclasses.replace(inst, params=dict(items)))
        rebuilt = dataclasses.replace(program, instructions=tuple(shuffled))
        assert encode_program(rebuilt) == first == encode_program(program)


def test_a_changed_program_changes_the_bytes(programs):
    program = programs["eltwise"]
    other = dataclasses.replace(program, layers=("x",), name="eltwise2")
    assert encode_program(other) != encode_program(program)


def test_invalid_programs_are_not_encoded(programs):
    program = programs["eltwise"]
    bad = dataclasses.replace(program, regions=program.regions[:2])  # drops activations
    with pytest.raises(NpucError, match="region 'activations' is not declared"):
        encode_program(bad)


# --------------------------------------------------------------------------- loader messages


def test_loader_messages(programs):
    data = encode_program(programs["tiny"])
    with pytest.raises(NpucError, match=r"byte 16 .*truncated"):
        load(data[:-10])
    with pytest.raises(NpucError, match="not an npubin file"):
        load(b"PK\x03\x04" + data[4:])
    newer = bytearray(data)
    newer[4:6] = (3).to_bytes(2, "little")
    with pytest.raises(NpucError, match=r"format version 3\.0 is newer .* reads 3\.x"):
        load(bytes(newer))
    corrupt = bytearray(data)
    offset, _ = doc_decode(data)["sections"]["COMMANDS"]
    corrupt[offset + 20] ^= 1
    with pytest.raises(NpucError, match=r"section 4 \(COMMANDS\): CRC32 mismatch"):
        load(bytes(corrupt))
    with pytest.raises(NpucError, match=r"region 2 \(activations\): 4096 bytes exceed"):
        load(data, max_region_bytes=4000)


def test_operand_outside_its_region_is_refused(programs):
    data = bytearray(encode_program(programs["eltwise"]))
    doc = doc_decode(bytes(data))
    # The first record's ofm descriptor: after the header, 56 parameter bytes and two operands.
    at = doc["sections"]["COMMANDS"][0] + 8 + 16 + 56 + 2 * (16 + 3 * 8)
    struct.pack_into("<Q", data, at + 8, 1008)  # activations hold 1024 bytes; 24 needed
    fix_crcs(data)
    with pytest.raises(NpucError, match=r"instruction 0 \(eltwise\): ofm: bytes \[1008, 1032\)"):
        load(bytes(data))
    struct.pack_into("<Q", data, at + 8, 1000 - 64)
    fix_crcs(data)
    assert load(bytes(data)).instructions[0].operands[2].offset == 936


# --------------------------------------------------------------------------- npu-opt


def _npu_opt(*args, stdin=None):
    return subprocess.run(
        [*tool_command("npu-opt"), *map(str, args)],
        capture_output=True,
        input=stdin,
        timeout=120,
    )


def test_npu_opt_writes_and_disassembles_binaries(tmp_path, tiny_text):
    source = tmp_path / "tiny.mlir"
    source.write_text(tiny_text)
    binary = tmp_path / "tiny.npubin"
    run = _npu_opt(source, "-t", "npubin", "-o", binary)
    assert run.returncode == 0, run.stderr
    assert binary.read_bytes()[:4] == b"NPUB"
    text = _npu_opt(binary)
    assert text.returncode == 0, text.stderr
    assert b"npu.program @tiny" in text.stdout
    again = tmp_path / "again.npubin"
    assert _npu_opt("-f", "mlir", "-t", "npubin", "-o", again, stdin=text.stdout).returncode == 0
    assert again.read_bytes() == binary.read_bytes()
    piped = _npu_opt(source, "-t", "npubin")  # not a terminal: the bytes go to stdout
    assert piped.stdout == binary.read_bytes()


def test_npu_opt_refuses_bad_binaries_without_output(tmp_path):
    bad = tmp_path / "bad.npubin"
    bad.write_bytes(b"NPUB" + bytes(40))
    out = tmp_path / "out.mlir"
    run = _npu_opt(bad, "-o", out)
    assert run.returncode == 1
    assert b"bad.npubin: error: byte 4" in run.stderr and b"Traceback" not in run.stderr
    assert not out.exists()
    invalid = tmp_path / "invalid.mlir"
    invalid.write_text(
        "npu.program @p regions [] inputs [] outputs [] layers [] {\n"
        '  %0 = npu.dma <"sram", 0, [4], i8> -> <"sram", 8, [4], i8>\n}\n'
    )
    binary = tmp_path / "p.npubin"
    run = _npu_opt(invalid, "-t", "npubin", "-o", binary)
    assert run.returncode == 1 and b"region 'sram' is not declared" in run.stderr
    assert not binary.exists()


def test_npu_opt_refuses_to_print_a_binary_to_a_terminal(monkeypatch, tmp_path, tiny_text):
    from npuc.tools import npu_opt

    source = tmp_path / "tiny.mlir"
    source.write_text(tiny_text)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    with pytest.raises(SystemExit) as exit_info:
        npu_opt.main([str(source), "-t", "npubin"])
    assert exit_info.value.code == 1


def test_non_ascii_names_survive_the_binary(programs, ctx):
    program = dataclasses.replace(programs["eltwise"], name="réseau", layers=("couche π",))
    program = dataclasses.replace(
        program, instructions=(dataclasses.replace(program.instructions[0], layer=0),)
    )
    data = encode_program(program)
    assert load(data) == program
    assert "couche π".encode() in data
    assert encode_module(disassemble(load(data), ctx)) == data


def doc_assemble(sections: list[tuple[int, int, bytes]], minor: int = 0) -> bytes:
    """A container written from the doc: (kind, alignment, bytes) sections in the given order."""
    table_end = 32 + 32 * len(sections)
    body, entries, offset = bytearray(), [], table_end
    for kind, alignment, data in sections:
        start = -(-offset // alignment) * alignment
        body += bytes(start - offset) + data
        offset = start + len(data)
        entries.append(
            struct.pack("<IIQQII", kind, alignment, start, len(data), zlib.crc32(data), 0)
        )
    head = struct.pack("<4sHHIIQI", b"NPUB", 1, minor, 32, len(sections), offset, 0)
    table = b"".join(entries)
    return head + struct.pack("<I", zlib.crc32(head + table)) + table + bytes(body)


def test_sections_in_any_order_and_newer_minor_versions(programs):
    program = programs["conv_pool"]
    data = encode_program(program)
    kinds = {name: kind for kind, name in DOC_SECTIONS.items()}
    sections = [
        (kinds[name], 16 if name != "CONSTANTS" else 128, data[at : at + size])
        for name, (at, size) in doc_decode(data)["sections"].items()
    ]
    assert load(doc_assemble(sections[::-1])) == program
    extra = [*sections, (42, 8, b"from a newer npuc")]
    assert load(doc_assemble(extra, minor=3)) == program
    with pytest.raises(NpucError, match="unknown kind 42"):
        load(doc_assemble(extra))
    with pytest.raises(NpucError, match="the LAYERS section is missing"):
        load(doc_assemble([s for s in sections if s[0] != kinds["LAYERS"]]))
