"""A decoder of Rice stream payloads written from docs/binary-format.md ("Rice streams")
with plain Python integers, bit by bit: it shares no code with dialects/constant_codec.py.
It returns None where the document says a payload is malformed."""

from __future__ import annotations

import struct

# element type: (struct format, bytes, min, max)
DOC_TYPES = {
    "i8": ("b", 1, -128, 127),
    "u8": ("B", 1, 0, 255),
    "i16": ("h", 2, -32768, 32767),
    "u16": ("H", 2, 0, 65535),
    "i32": ("i", 4, -(2**31), 2**31 - 1),
}


def doc_decode(payload: bytes, dtype: str, size: int) -> bytes | None:
    """The run a payload codes, or None when the document's rules refuse it."""
    fmt, item, low, high = DOC_TYPES[dtype]
    if len(payload) < 8 or any(payload[1:8]) or payload[0] == 0:
        return None
    lanes = payload[0]
    if size % (item * lanes):
        return None
    m = size // item // lanes
    at = 8 + 16 * lanes
    if at > len(payload):
        return None
    values = [0] * (m * lanes)
    for lane in range(lanes):
        head = 8 + 16 * lane
        base, k, flags = struct.unpack_from("<iBB", payload, head)
        unary_size, reserved = struct.unpack_from("<II", payload, head + 8)
        if any(payload[head + 6 : head + 8]) or reserved or flags not in (0, 1):
            return None
        if not low <= base <= high or k > 8 * item + 1:
            return None
        coded = list(range(m))  # the elements of the lane that are coded
        if flags == 1:  # a mask first: bit i set where element i differs from the base
            mask_size = (m + 7) // 8
            if at + mask_size > len(payload):
                return None
            mbits = [(payload[at + i // 8] >> (i % 8)) & 1 for i in range(8 * mask_size)]
            if any(mbits[m:]):
                return None
            coded = [i for i in range(m) if mbits[i]]
            for i in range(m):
                values[i * lanes + lane] = base
            at += mask_size
        n = len(coded)
        remainder_size = (n * k + 7) // 8
        if at + unary_size + remainder_size > len(payload):
            return None
        unary = payload[at : at + unary_size]
        bits = [(unary[i // 8] >> (i % 8)) & 1 for i in range(8 * unary_size)]
        quotients, run = [], 0
        for b in bits:
            if b:
                quotients.append(run)
                run = 0
            else:
                run += 1
        if len(quotients) != n:
            return None
        used = len(bits) - bits[::-1].index(1) if n else 0  # through the last one bit
        if (used + 7) // 8 != unary_size:  # the last byte holds the last one bit
            return None
        rem = payload[at + unary_size : at + unary_size + remainder_size]
        rbits = [(rem[i // 8] >> (i % 8)) & 1 for i in range(8 * remainder_size)]
        if any(rbits[n * k :]):
            return None
        for i, element in enumerate(coded):
            r = sum(rbits[i * k + j] << j for j in range(k))
            u = ((quotients[i] << k) | r) + flags
            d = (u >> 1) ^ -(u & 1)
            value = base + d
            if not low <= value <= high:
                return None
            values[element * lanes + lane] = value
        at += unary_size + remainder_size
    if at != len(payload):
        return None
    return struct.pack(f"<{len(values)}{fmt}", *values)
