"""Corruptions of one field each of the COMMANDS and CONSTANTS sections of a valid
`.npubin` (instruction records, parameter blocks, dependencies, operand descriptors,
version 2.0 stream tables), with the byte the loader must name, from docs/binary-format.md."""

from __future__ import annotations

import struct
from collections.abc import Iterator

from npubin_corruptions import Case, at_field, bad_string, counted_cases, put, tensor_cases
from npubin_layout import ENGINE, ENUMS, FLAGS, PARAMS, Layout, u32


def command_cases(lay: Layout) -> Iterator[Case]:
    data, s = lay.data, lay.offset(5)
    yield from counted_cases(lay, 5, 16)
    layers = u32(data, lay.offset(4))
    if lay.records:
        last = lay.records[-1]
        yield Case(
            "commands-one-fewer",
            put("<I", s, len(lay.records) - 1),
            last.at,
            f"COMMANDS: {last.size} bytes after the last instruction",
        )
    for k, r in enumerate(lay.records):
        what = f"instruction {k} ({r.op})"
        engine = ENGINE.get(r.op, 1)
        yield at_field(f"{what}-opcode", "<H", r.at, 99, f"instruction {k}: unknown opcode")
        yield at_field(
            f"{what}-engine",
            "B",
            r.at + 2,
            (engine + 1) % 3,
            f"{what}: engine {(engine + 1) % 3}, expected {engine}",
        )
        if r.op != "host":
            yield at_field(
                f"{what}-operands",
                "B",
                r.at + 3,
                r.operands + 1,
                f"{what}: {r.operands + 1} operands, expected {r.operands}",
            )
        yield at_field(
            f"{what}-layer",
            "<I",
            r.at + 8,
            layers,
            f"{what}: layer {layers} is not among the {layers} layers",
        )
        yield at_field(
            f"{what}-size-8",
            "<I",
            r.at + 12,
            8,
            f"{what}: record size 8 runs past the COMMANDS section",
        )
        if r.params or r.deps:  # a record of its 16-byte head alone: the rest runs past it
            head_only = (r.deps_at, f"{what}: {r.deps} deps run past the record")
        else:
            head_only = (r.at + 16, f"{what} operand 0 needs 16 bytes, only 0 remain")
        yield Case(f"{what}-size-16", put("<I", r.at + 12, 16), *head_only)
        if k + 1 < len(lay.records):
            yield Case(
                f"{what}-size-longer",
                put("<I", r.at + 12, r.size + 8),
                r.at + r.size,
                f"{what}: record size {r.size + 8} does not match its contents",
            )
        yield Case(
            f"{what}-deps-past-the-record",
            put("<H", r.at + 4, 0xFFFF),
            r.deps_at,
            f"{what}: 65535 deps run past the record",
        )
        filling = (r.at + r.size - r.deps_at) // 4  # deps up to the record's end: read, not earlier
        yield Case(
            f"{what}-deps-fill-the-record",
            put("<H", r.at + 4, filling),
            r.deps_at,
            "must be distinct earlier instructions",
        )
        if r.deps:
            yield at_field(
                f"{what}-dep-on-itself",
                "<I",
                r.deps_at,
                k,
                "must be distinct earlier instructions",
            )
        if r.deps % 2:
            yield at_field(
                f"{what}-dep-padding",
                "B",
                r.deps_at + 4 * r.deps,
                1,
                f"{what}: dep padding must be zero",
            )
        size, used = PARAMS[r.op]
        params = r.at + 16
        if used < size:
            yield at_field(
                f"{what}-param-padding",
                "B",
                params + used,
                1,
                f"{what}: parameter padding must be zero",
            )
        for offset, name, codes in ENUMS.get(r.op, ()):
            yield Case(
                f"{what}-{name}",
                put("B", params + offset, codes),
                params,
                f"{what}: {name} {codes} is not one of 0..{codes - 1}",
            )
        for offset, name in FLAGS.get(r.op, ()):
            yield Case(
                f"{what}-{name}",
                put("B", params + offset, 2),
                params,
                f"{what}: {name} must be 0 or 1, got 2",
            )
        if r.op == "move":
            rank = r.descriptors[0].rank
            yield Case(f"{what}-perm", put("B", params + 4 + rank, 1), params, "perm entries past")
            out = r.descriptors[1].rank
            yield Case(
                f"{what}-pads", put("<I", params + 12 + 8 * out, 1), params, "pads entries past"
            )
        if r.op == "host":
            yield bad_string(params, "<I", f"{what} body", lay)
            yield Case(
                f"{what}-inputs",
                put("<I", params + 4, r.operands),
                params,
                f"{what}: {r.operands} inputs leave no output among {r.operands} operands",
            )
        for j, t in enumerate(r.descriptors):
            yield from tensor_cases(t, f"{what} operand {j}")
            yield Case(
                f"{what}-operand-{j}-outside",
                put("<Q", t.at + 8, 1 << 40),
                r.at,
                f"{what}: ",
            )


def constants_cases(lay: Layout) -> Iterator[Case]:
    if lay.major != 2:
        return
    data, s = lay.data, lay.offset(6)
    end = s + lay.entries[6][3]
    decoded, count = struct.unpack_from("<QI", data, s)
    yield at_field("constants-reserved", "<I", s + 12, 1, "CONSTANTS: reserved field")
    yield at_field(
        "constants-count",
        "<I",
        s + 8,
        count + 1000,
        f"CONSTANTS: {count + 1000} stream entries do not fit",
    )
    region = next(
        struct.unpack_from("<Q", data, at + 8)[0]
        for at in range(lay.offset(2) + 8, lay.offset(2) + 8 + 16 * u32(data, lay.offset(2)), 16)
        if u32(data, at) == 0
    )
    yield at_field(
        "constants-decoded-size",
        "<Q",
        s,
        region + 1,
        f"CONSTANTS: {region + 1} bytes exceed the constants region ({region})",
    )
    area = s + 16 + 32 * count
    read, position = area, 0
    for i in range(count):
        at = s + 16 + 32 * i
        offset, length, payload_at, payload, _, dtype, _ = struct.unpack_from("<QQQIBBH", data, at)
        read += offset - position
        item = (1, 1, 2, 2, 4)[dtype]
        yield at_field(f"stream-{i}-reserved", "<H", at + 30, 1, "reserved field")
        yield at_field(f"stream-{i}-codec", "B", at + 28, 2, f"stream {i}: unknown codec")
        for dtype in (5, 8):  # i64, and the first code no type has
            yield at_field(
                f"stream-{i}-dtype-{dtype}",
                "B",
                at + 29,
                dtype,
                f"stream {i}: element type {dtype} cannot be encoded",
            )
        yield Case(
            f"stream-{i}-past-the-decoded-size",
            put("<Q", at + 8, decoded - offset + 1),
            at,
            f"stream {i}: bytes [{offset}, {decoded + 1}) are not after the last stream "
            f"and inside the {decoded} constants bytes",
        )
        yield at_field(
            f"stream-{i}-payload-at",
            "<Q",
            at + 16,
            payload_at + 1,
            f"stream {i}: payload at {payload_at + 1}, expected {payload_at}",
        )
        yield at_field(
            f"stream-{i}-payload-size",
            "<I",
            at + 24,
            end - read + 1,
            f"stream {i}: its payload runs past the CONSTANTS section",
        )
        if item > 1:
            yield Case(
                f"stream-{i}-whole-elements",
                put("<Q", at + 8, length - 1),
                at,
                f"stream {i}: bytes [{offset}, {offset + length - 1}) are not whole",
            )
        read += payload
        position = offset + length
    yield Case(
        "constants-one-more-byte",
        put("<Q", s, decoded + 1),
        read,
        f"CONSTANTS: {end - read} bytes after the last stream, expected {decoded - position + 1}",
    )
