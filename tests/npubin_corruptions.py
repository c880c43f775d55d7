"""Corruptions of one field each of a valid `.npubin`, with the byte the loader must name
and the words it must say, worked out from docs/binary-format.md: the file header, the
section table and the STRINGS, REGIONS, IO, LAYERS, DEBUG and STATE sections
(npubin_command_corruptions.py: COMMANDS and CONSTANTS)."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from npubin_layout import NAMES, REGION_KINDS, REQUIRED, Layout, Tensor, pad8, u32

from npuc.dialects.npu_isa import Program


@dataclass
class Case:
    name: str
    edit: Callable[[bytearray], None]
    place: int  # the byte the diagnostic names; -1: the file must load
    says: str
    fix: str = "all"  # CRCs recomputed after the edit: "all", "header" (the table's) or "none"
    limit: int | None = None  # the max_region_bytes given to the loader (None: its default)
    loads: Callable[[Program], bool] | None = None


def put(fmt: str, at: int, value: object) -> Callable[[bytearray], None]:
    def edit(data: bytearray) -> None:
        struct.pack_into(fmt, data, at, value)

    return edit


def at_field(name: str, fmt: str, at: int, value: object, says: str, fix: str = "all") -> Case:
    """The field at `at` set to `value`: the loader must name that byte."""
    return Case(name, put(fmt, at, value), at, says, fix)


def header_cases(lay: Layout) -> Iterator[Case]:
    n = len(lay.data)
    for length in (0, 4, 31):
        yield Case(
            f"short-{length}",
            lambda d, length=length: d.__delitem__(slice(length, None)),
            0,
            f"file of {length} bytes is too short for the 32-byte header",
            fix="none",
        )
    yield at_field("magic", "4s", 0, b"NPUC", "not an npubin file (magic b'NPUC'")
    yield at_field("major-3", "<H", 4, 3, "format version 3.")
    yield at_field("major-0", "<H", 4, 0, "is older than this loader's 2.0")
    yield at_field("header-size", "<I", 8, 40, "header size 40, expected 32")
    for count in (0, 17):
        yield at_field(f"count-{count}", "<I", 12, count, f"section count {count} is")
    # one entry: the table's other entries become padding before the first section
    yield Case("count-1", put("<I", 12, 1), 64, "padding before section 0 must be zero")
    for cut in sorted({32, 33, lay.table_end, *(o for _, _, o, _ in lay.entries.values()), n - 1}):
        if cut < n:
            yield Case(
                f"truncated-at-{cut}",
                lambda d, cut=cut: d.__delitem__(slice(cut, None)),
                16,
                f"the header says the file has {n} bytes, it has {cut} (truncated or extended)",
                fix="none",
            )
    yield Case(
        "trailing-bytes",
        lambda d: d.extend(bytes(8)),
        16,
        f"the header says the file has {n} bytes, it has {n + 8}",
        fix="none",
    )

    def extend(tail: bytes) -> Callable[[bytearray], None]:
        def edit(d: bytearray) -> None:
            d.extend(tail)
            struct.pack_into("<Q", d, 16, len(d))

        return edit

    yield Case("trailing-zeros-counted", extend(bytes(16)), -1, "")
    yield Case(
        "trailing-byte-counted",
        extend(bytes(5) + b"\x01"),
        n + 5,
        "padding after the last section must be zero",
    )
    yield at_field("total-size", "<Q", 16, n - 8, f"the file has {n - 8} bytes, it has {n}")
    yield at_field("flags", "<I", 24, 2, "header flags 0x2 must be zero")

    def cut_after_the_table(d: bytearray) -> None:
        del d[lay.table_end :]
        struct.pack_into("<Q", d, 16, len(d))

    first = min(lay.entries.values())  # the table's first entry: its bytes now lie past the end
    yield Case("cut-after-the-table", cut_after_the_table, first[0] + 8, "lie outside")
    if lay.count < 16:
        count = (n - 32) // 32 + 1
        if count <= 16:
            yield Case(
                "table-past-end",
                put("<I", 12, count),
                32,
                f"the section table ({count} entries) runs past the end",
            )
    yield Case(
        "header-crc", put("<I", 28, 0), 28, "header and section table CRC32 mismatch", "none"
    )


def entry_cases(lay: Layout) -> Iterator[Case]:
    data = lay.data
    spans = sorted((o, o + s, (at - 32) // 32) for at, _, o, s in lay.entries.values())
    for kind, (at, alignment, offset, size) in lay.entries.items():
        i, name = (at - 32) // 32, NAMES[kind]
        yield at_field(f"{name}-reserved", "<I", at + 28, 1, "reserved field must be")
        for bad in (4, 24, 8192):
            yield at_field(
                f"{name}-alignment-{bad}",
                "<I",
                at + 4,
                bad,
                f"section {i}: alignment {bad} is not a power of two in [8, 4096]",
            )
        yield at_field(
            f"{name}-offset-unaligned",
            "<Q",
            at + 8,
            offset + 4,
            f"section {i}: offset {offset + 4} is not {alignment}-byte aligned",
        )
        yield Case(
            f"{name}-alignment-4096",
            put("<I", at + 4, 4096),
            at + 8,
            f"section {i}: offset {offset} is not 4096-byte aligned",
        )
        yield at_field(
            f"{name}-in-the-table",
            "<Q",
            at + 8,
            0,
            f"section {i}: bytes [0, {size}) lie outside the file's data area "
            f"[{lay.table_end}, {len(data)})",
        )
        yield Case(
            f"{name}-past-the-end",
            put("<Q", at + 16, len(data) - offset + 1),
            at + 8,
            f"section {i}: bytes [{offset}, {len(data) + 1}) lie outside",
        )
        yield at_field(
            f"{name}-crc",
            "<I",
            at + 24,
            zlib.crc32(data[offset : offset + size]) ^ 1,
            f"section {i} ({name}): CRC32 mismatch (bytes [{offset}, {offset + size}) are corrupt)",
            fix="header",
        )
        yield at_field(f"{name}-unknown-kind", "<I", at, 99, f"section {i}: unknown kind 99")
        if i > 0:
            first = NAMES[struct.unpack_from("<I", data, 32)[0]]
            yield Case(
                f"{name}-twice", put("<I", at, 1 if first == "STRINGS" else 2), at, "a second"
            )
        if 8 not in lay.entries and lay.major == 1:
            yield at_field(
                f"{name}-as-state",
                "<I",
                at,
                8,
                f"section {i}: a STATE section needs format version 1.1, the file says 1.0",
            )
        later = [(s, j) for s, _, j in spans if s > offset]
        if later and size:
            nxt, j = min(later)
            yield Case(
                f"{name}-overlaps-the-next",
                put("<Q", at + 16, nxt - offset + 1),
                32 + 32 * j + 8,
                f"section {j} overlaps another section",
            )
        yield removed(lay, kind)
    position = lay.table_end
    for start, end, j in spans:
        if start > position:
            yield at_field(
                f"padding-before-{j}",
                "B",
                start - 1,
                7,
                f"padding before section {j} must be zero",
            )
        position = end


def removed(lay: Layout, kind: int) -> Case:
    """The section's entry and bytes removed (later entries move up): refused if the section
    is required, else the file loads without it."""
    at, _, offset, size = lay.entries[kind]

    def edit(d: bytearray) -> None:
        d[offset : offset + size] = bytes(size)
        d[at : lay.table_end] = d[at + 32 : lay.table_end] + bytes(32)
        struct.pack_into("<I", d, 12, lay.count - 1)

    name = NAMES[kind]
    if kind in REQUIRED:
        return Case(f"{name}-removed", edit, 12, f"the {name} section is missing")
    gone = {"DEBUG": lambda p: p.debug == (), "STATE": lambda p: p.state == ()}
    return Case(f"{name}-removed", edit, -1, "", loads=gone[name])


def counted_cases(lay: Layout, kind: int, entry: int) -> Iterator[Case]:
    """A section that starts with (count, reserved): the reserved field, a count whose
    entries cannot fit, and (for exact-size sections) one entry fewer."""
    name, s = NAMES[kind], lay.offset(kind)
    size, count = lay.entries[kind][3], u32(lay.data, s)
    yield at_field(f"{name}-head-reserved", "<I", s + 4, 1, f"{name}: reserved field")
    big = (size - 8) // entry + 1
    yield at_field(
        f"{name}-count-too-big",
        "<I",
        s,
        big,
        f"{name}: {big} entries do not fit in {size} bytes",
    )
    if kind in (2, 7) and count:  # REGIONS and DEBUG are exactly 8 + entry x N bytes
        yield at_field(
            f"{name}-one-entry-fewer",
            "<I",
            s,
            count - 1,
            f"{name}: {size} bytes do not hold exactly {count - 1} entries",
        )


def bad_string(at: int, fmt: str, what: str, lay: Layout) -> Case:
    return Case(
        f"{what}-string-at-{at}",
        put(fmt, at, lay.strings),  # the first index without a string
        at,
        f"{what}: string {lay.strings} does not exist ({lay.strings} strings)",
    )


def string_cases(lay: Layout) -> Iterator[Case]:
    data, s = lay.data, lay.offset(1)
    yield from counted_cases(lay, 1, 8)
    count = u32(data, s)
    blob = s + 8 + 8 * count
    for i in range(count):
        entry = s + 8 + 8 * i
        offset, length = struct.unpack_from("<II", data, entry)
        yield at_field(
            f"string-{i}-offset",
            "<I",
            entry,
            offset + 1,
            f"string {i} starts at {offset + 1}, expected {offset}",
        )
        if i + 1 < count:
            yield Case(
                f"string-{i}-longer",
                put("<I", entry + 4, length + 1),
                entry + 8,
                f"string {i + 1} starts at {offset + length}, expected {offset + length + 1}",
            )
        else:
            yield Case(
                f"string-{i}-past-the-section",
                put("<I", entry + 4, length + 1),
                entry,
                f"string {i} runs past the STRINGS section",
            )
            if length:
                end = blob + offset + length - 1
                yield Case(
                    f"string-{i}-shorter",
                    put("<I", entry + 4, length - 1),
                    end,
                    "STRINGS: 1 bytes after the last string",
                )
        if length:
            yield at_field(
                f"string-{i}-utf8",
                "B",
                blob + offset,
                0xFF,
                f"string {i} is not valid UTF-8",
            )


def region_cases(lay: Layout) -> Iterator[Case]:
    data, s = lay.data, lay.offset(2)
    yield from counted_cases(lay, 2, 16)
    count = u32(data, s)
    sizes = []
    for i in range(count):
        entry = s + 8 + 16 * i
        kind, _, size = struct.unpack_from("<IIQ", data, entry)
        sizes.append((size, i, kind, entry))
        yield at_field(f"region-{i}-kind", "<I", entry, 4, f"region {i}: unknown kind 4")
        yield bad_string(entry + 4, "<I", f"region {i} memory", lay)
        if i:
            first = u32(data, s + 8)
            yield Case(
                f"region-{i}-twice",
                put("<I", entry, first),
                s,
                f"region '{REGION_KINDS[first]}' is declared twice",
            )
    largest = max(size for size, _, _, _ in sizes)
    size, i, kind, entry = next(r for r in sizes if r[0] == largest)
    yield Case(
        "region-over-the-limit",
        lambda d: None,
        entry + 8,
        f"region {i} ({REGION_KINDS[kind]}): {size} bytes exceed the loader's limit of {size - 1}",
        limit=size - 1,
    )
    gib = 1 << 30  # the loader's default limit (docs/binary-format.md, REGIONS)
    yield Case("region-of-1-gib", put("<Q", entry + 8, gib), -1, "")
    yield at_field(
        "region-over-1-gib",
        "<Q",
        entry + 8,
        gib + 1,
        f"region {i} ({REGION_KINDS[kind]}): {gib + 1} bytes exceed the loader's limit of {gib}",
    )


def tensor_cases(t: Tensor, what: str) -> Iterator[Case]:
    at = t.at
    yield at_field(f"{what}-region", "B", at, 4, f"{what}: unknown region 4")
    yield at_field(f"{what}-dtype", "B", at + 1, 8, f"{what}: unknown element type 8")
    for rank in (0, 9):
        yield at_field(
            f"{what}-rank-{rank}",
            "B",
            at + 2,
            rank,
            f"{what}: rank {rank} is outside [1, 8]",
        )
    for byte in (3, 4, 7):
        yield Case(f"{what}-reserved-{byte}", put("B", at + byte, 1), at + 3, "reserved fields")
    yield Case(f"{what}-dimension-0", put("<I", at + 16, 0), at, f"{what}: ")


def io_cases(lay: Layout) -> Iterator[Case]:
    data, s = lay.data, lay.offset(3)
    end = s + lay.entries[3][3]
    n_in, n_out = struct.unpack_from("<II", data, s + 4)
    yield at_field("io-reserved", "<I", s + 12, 1, "IO: reserved field must be zero")
    _, what, last = lay.io[-1]
    yield Case(
        "io-last-rank-past-the-end",
        put("B", last.at + 2, last.rank + 1),
        last.at + 16,
        f"{what}: {last.rank + 1} dimensions run past the end of their section",
    )
    yield at_field(
        "io-inputs-do-not-fit",
        "<I",
        s + 4,
        1 << 20,
        f"IO: {1 << 20} inputs and {n_out} outputs do not fit",
    )
    yield Case(
        "io-outputs-do-not-fit",
        put("<I", s + 8, 1 << 20),
        s + 4,
        f"IO: {n_in} inputs and {1 << 20} outputs do not fit",
    )
    yield bad_string(s, "<I", "program name", lay)
    if n_out:
        last, _, t = lay.io[-1]
        yield Case(
            "io-one-output-fewer",
            put("<I", s + 8, n_out - 1),
            last,
            f"IO: {end - last} bytes after the last descriptor",
        )
    for entry, what, t in lay.io:
        yield bad_string(entry, "<I", what, lay)
        yield from tensor_cases(t, what)
        yield Case(f"{what}-scale", put("<d", entry + 8, -1.0), entry, f"{what} '")
        yield Case(f"{what}-in-constants", put("B", t.at, 0), entry, f"{what} '")
    if n_in >= 2:
        name = u32(data, lay.io[0][0])
        yield Case("io-names-twice", put("<I", lay.io[1][0], name), s, "")


def layer_cases(lay: Layout) -> Iterator[Case]:
    data, s = lay.data, lay.offset(4)
    size = lay.entries[4][3]
    yield from counted_cases(lay, 4, 4)
    count = u32(data, s)
    more = count + 2
    yield at_field(
        "layers-two-more",
        "<I",
        s,
        more,
        f"LAYERS: {more} entries do not fit in {size} bytes"
        if 4 * more > size - 8
        else f"LAYERS: {size} bytes do not hold exactly {more} entries",
    )
    for i in range(count):
        yield bad_string(s + 8 + 4 * i, "<I", f"layer {i}", lay)
    if count % 2:
        yield at_field(
            "layers-padding",
            "B",
            s + 8 + 4 * count,
            1,
            "LAYERS padding must be zero",
        )


def debug_cases(lay: Layout) -> Iterator[Case]:
    if 7 not in lay.entries:
        return
    data, s = lay.data, lay.offset(7)
    yield from counted_cases(lay, 7, 8)
    count = u32(data, s)
    for i in range(count):
        yield bad_string(s + 8 + 8 * i, "<I", "debug key", lay)
        yield bad_string(s + 12 + 8 * i, "<I", "debug value", lay)
    if count >= 2:
        key = u32(data, s + 8)
        yield Case("debug-keys-twice", put("<I", s + 16, key), s, "debug keys must be unique")


def state_cases(lay: Layout) -> Iterator[Case]:
    if 8 not in lay.entries:
        return
    data, s = lay.data, lay.offset(8)
    yield from counted_cases(lay, 8, 24)
    count = u32(data, s)
    values = s + 8 + 24 * count
    end = s + lay.entries[8][3]
    if count == 2:  # one entry: the second entry's 24 bytes start the value data
        first = pad8(struct.unpack_from("<Q", data, s + 8 + 16)[0])
        after = s + 8 + 24 + first
        yield Case(
            "state-one-entry-fewer",
            put("<I", s, 1),
            after,
            f"STATE: {end - after} bytes after the last initial value",
        )
    for i in range(count):
        entry = s + 8 + 24 * i
        _, _, offset, size = struct.unpack_from("<IIQQ", data, entry)
        yield at_field(
            f"state-{i}-offset",
            "<Q",
            entry + 8,
            offset + 8,
            f"state {i}: initial value at offset {offset + 8}, expected {offset}",
        )
        past = end - values - offset + 1  # one byte more than the section has from there
        yield at_field(
            f"state-{i}-size",
            "<Q",
            entry + 16,
            past,
            f"state {i}: an initial value of {past} bytes runs past the STATE section",
        )
        if size % 8:
            yield at_field(
                f"state-{i}-padding",
                "B",
                values + offset + size,
                1,
                f"state {i}: initial value padding must be zero",
            )
        yield at_field(f"state-{i}-input", "<I", entry, 99, f"state {i}: ")
        yield Case(f"state-{i}-output", put("<I", entry + 4, 99), entry, f"state {i}: ")
        if size % 8:
            yield Case(
                f"state-{i}-one-byte-shorter",
                put("<Q", entry + 16, size - 1),
                values + offset + size - 1,
                f"state {i}: initial value padding must be zero",
            )
            yield Case(
                f"state-{i}-one-byte-longer", put("<Q", entry + 16, size + 1), entry, f"state {i}: "
            )
