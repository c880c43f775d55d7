"""Fuzzing the .npubin loader: truncations, bit flips and field edits of real binaries.

Every mutated file is either rejected with an NpucError naming a byte offset, or it
loads to a program that passes every rule (so it re-encodes and reloads to itself) and
whose disassembly verifies or reports a missing token or a bad host body.
Any other exception fails the test. Field edits recompute the CRCs, so they reach
the structural and semantic checks behind the checksums.
"""

from __future__ import annotations

import random
import re
import struct
from collections import Counter

import pytest
from fuzz.mutators import edited_int
from npu_programs import fix_crcs
from xdsl.utils.exceptions import VerifyException

from npuc.backend.npubin import encode_program
from npuc.backend.npubin_disasm import disassemble
from npuc.diagnostics import NpucError
from npuc.runtime.loader import load

SEED = 20240606
CASES = 3000
INTERESTING = (
    0,
    1,
    2,
    3,
    7,
    8,
    9,
    15,
    16,
    31,
    32,
    63,
    64,
    127,
    128,
    255,
    256,
    1023,
    4096,
    65535,
    65536,
    2**31 - 1,
    2**31,
    2**32 - 1,
)


def fields(data: bytes) -> list[tuple[int, int]]:
    """(offset, byte width) of the integer fields of a binary, found by walking it as the
    format doc describes (header, table, section heads, entries, records, descriptors)."""
    out = [(4, 2), (6, 2), (8, 4), (12, 4), (16, 8), (24, 4)]
    (count,) = struct.unpack_from("<I", data, 12)
    sections = {}
    for i in range(count):
        at = 32 + 32 * i
        out += [(at, 4), (at + 4, 4), (at + 8, 8), (at + 16, 8)]
        kind, _, offset, size = struct.unpack_from("<IIQQ", data, at)
        sections[kind] = (offset, size)
        out.append((offset, 4))  # every section but CONSTANTS starts with a count
    strings_at, _ = sections[1]
    (n,) = struct.unpack_from("<I", data, strings_at)
    out += [(strings_at + 8 + 4 * k, 4) for k in range(2 * n)]
    regions_at, _ = sections[2]
    (n,) = struct.unpack_from("<I", data, regions_at)
    for k in range(n):
        out += [
            (regions_at + 8 + 16 * k, 4),
            (regions_at + 12 + 16 * k, 4),
            (regions_at + 16 + 16 * k, 8),
        ]
    io_at, io_size = sections[3]
    out += [(io_at + 4, 4), (io_at + 8, 4)]
    at = io_at + 16
    while at < io_at + io_size:
        out += [(at, 4), (at + 4, 4)]
        at = descriptor(data, at + 16, out)
    commands_at, _ = sections[5]
    (n,) = struct.unpack_from("<I", data, commands_at)
    at = commands_at + 8
    for _ in range(n):
        _, _, operands, deps, params, _, size = struct.unpack_from("<HBBHHII", data, at)
        out += [
            (at, 2),
            (at + 2, 1),
            (at + 3, 1),
            (at + 4, 2),
            (at + 6, 2),
            (at + 8, 4),
            (at + 12, 4),
        ]
        out += [(at + 16 + k, 1) for k in range(params)]  # enums, flags and int bytes
        out += [(at + 16 + k, 4) for k in range(0, params, 4)]
        dep_at = at + 16 + params
        out += [(dep_at + 4 * k, 4) for k in range(deps)]
        cursor = dep_at + (4 * deps + 7) // 8 * 8
        for _ in range(operands):
            cursor = descriptor(data, cursor, out)
        at += size
    return out


def descriptor(data: bytes, at: int, out: list[tuple[int, int]]) -> int:
    rank = data[at + 2]
    out += [(at, 1), (at + 1, 1), (at + 2, 1), (at + 3, 1), (at + 8, 8)]
    out += [(at + 16 + 4 * k, 4) for k in range(2 * rank)]
    return at + 16 + 8 * rank


def mutate(data: bytes, layout: list[tuple[int, int]], rng: random.Random) -> tuple[str, bytes]:
    buf = bytearray(data)
    kind = rng.choices(
        ["truncate", "flip", "flip+crc", "field", "field+field", "splice"], [1, 1, 3, 8, 2, 1]
    )[0]
    if kind == "truncate":
        return kind, bytes(buf[: rng.randrange(len(buf))])
    if kind.startswith("flip"):
        for _ in range(rng.choice((1, 1, 2, 8))):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
    elif kind.startswith("field"):
        for _ in range(kind.count("field")):
            offset, width = rng.choice(layout)
            value = edited_int(buf, offset, width, rng, INTERESTING)
            buf[offset : offset + width] = value.to_bytes(width, "little")
    else:  # splice: duplicate or drop a chunk, then fix the total size
        at, n = rng.randrange(32, len(buf)), rng.choice((1, 4, 8, 16, 64))
        buf[at:at] = buf[at : at + n] if rng.random() < 0.5 else b""
        if rng.random() < 0.5:
            del buf[at : at + n]
        struct.pack_into("<Q", buf, 16, len(buf))
    if kind != "flip":
        fix_crcs(buf)
    return kind, bytes(buf)


def test_mutated_binaries_are_rejected_cleanly_or_load_valid(programs, ctx):
    rng = random.Random(SEED)
    originals = [encode_program(p) for p in programs.values()]
    layouts = [fields(data) for data in originals]
    outcomes: Counter[str] = Counter()
    messages: Counter[str] = Counter()
    for _ in range(CASES):
        index = rng.randrange(len(originals))
        kind, data = mutate(originals[index], layouts[index], rng)
        try:
            program = load(data)
        except NpucError as e:
            assert re.match(r"<npubin>: error: byte \d+ \(0x[0-9a-f]+\): ", str(e)), str(e)
            outcomes[f"{kind} rejected"] += 1
            messages[re.sub(r"[\d\[\](),'-]+", "", e.message.split(": ", 1)[1])[:40]] += 1
            continue
        outcomes[f"{kind} loaded"] += 1
        again = encode_program(program)
        assert load(again) == program
        try:  # the disassembly of a loaded file verifies, or names a hazard or a bad host body
            disassemble(program, ctx).verify()
        except NpucError as e:
            assert "(host): its body" in e.message, e.message
        except VerifyException as e:
            assert re.search(r"without waiting for its token|'npu.host'", str(e)), str(e)
    # The mutations reach deep: many kinds of rejection, and some edits are benign.
    assert len(messages) >= 40, messages
    assert outcomes["field loaded"] > 0 and outcomes["field rejected"] > outcomes["field loaded"]
    assert outcomes["flip rejected"] > 0 and outcomes["truncate rejected"] > 0


def test_fuzz_fields_cover_every_structure(programs):
    """The field walker finds the header, table, entries, records and descriptors."""
    data = encode_program(programs["conv_pool"])
    layout = fields(data)
    assert len(set(layout)) == len(layout) > 600
    assert max(offset for offset, _ in layout) > len(data) // 2


@pytest.mark.parametrize("region_offset", [0, 656])
def test_flipped_constant_bits_load_when_the_crc_matches(programs, region_offset):
    """A bit flip in constant data (a LUT, plain weights) is not an error the loader can see."""
    original = encode_program(programs["tiny"])
    (count,) = struct.unpack_from("<I", original, 12)
    table = {struct.unpack_from("<I", original, 32 + 32 * i)[0]: 32 + 32 * i for i in range(count)}
    constants_at = struct.unpack_from("<Q", original, table[6] + 8)[0]
    buf = bytearray(original)
    buf[constants_at + region_offset + 5] ^= 0x10
    with pytest.raises(NpucError, match=r"section 5 \(CONSTANTS\): CRC32 mismatch"):
        load(bytes(buf))
    fix_crcs(buf)
    program = load(bytes(buf))
    assert program.constants != programs["tiny"].constants
    assert program.instructions == programs["tiny"].instructions
