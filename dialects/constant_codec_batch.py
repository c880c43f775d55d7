"""Encoding many constant streams at once: the payloads `constant_codec.encode` gives.

A short stream (a bias/scale table, a small weight tensor) costs its encoder numpy calls,
not elements: about 15 a lane. Here the lanes of many streams are coded together, from
flat arrays of their elements in lane order, and each payload is cut from the joined bit
strings: every lane's mask, unary and remainder blocks start on a byte, so each block is
laid out where a byte starts (remainders padded to whole groups of 8 fields, which fill
k bytes).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .constant_codec import (
    ELEMENT_TYPES,
    HEAD,
    JOINT_ELEMENTS,
    LANE,
    MASKED,
    MAX_JOINT_ELEMENTS,
    encode,
    pack_fields,
    stream_plan,
    zigzag,
)


def encode_streams(streams: Sequence[tuple[bytes, str]]) -> list[bytes]:
    """`encode(data, dtype)` of each stream (data, dtype), the short ones together."""
    payloads: list[bytes | None] = [None] * len(streams)
    batch: list[int] = []
    elements = 0
    for index, (data, dtype) in enumerate(streams):
        count = len(data) // np.dtype(ELEMENT_TYPES[dtype]).itemsize
        if not 0 < count <= MAX_JOINT_ELEMENTS:
            payloads[index] = encode(data, dtype)
            continue
        if batch and elements + count > JOINT_ELEMENTS:
            _encode_batch(streams, batch, payloads)
            batch, elements = [], 0
        batch.append(index)
        elements += count
    if batch:
        _encode_batch(streams, batch, payloads)
    return [p for p in payloads if p is not None]


def _encode_batch(
    streams: Sequence[tuple[bytes, str]], batch: list[int], payloads: list[bytes | None]
) -> None:
    plans = [stream_plan(*streams[i]) for i in batch]
    parts, base, k, masked, count = [], [], [], [], []
    for i, plan in zip(batch, plans, strict=True):
        data, dtype = streams[i]
        values = np.frombuffer(data, ELEMENT_TYPES[dtype]).astype(np.int64)
        parts.append(values.reshape(-1, len(plan)).T.ravel())  # lane by lane
        for info in plan:
            base.append(info.base)
            k.append(info.k)
            masked.append(info.masked)
            count.append(info.count)
    lanes = len(count)
    counts = np.array(count, np.int64)
    lane_of = np.repeat(np.arange(lanes), counts)
    diff = np.concatenate(parts) - np.array(base, np.int64)[lane_of]
    is_masked = np.array(masked, bool)
    differs = diff != 0
    coded = ~is_masked[lane_of] | differs
    u = zigzag(diff[coded]) - is_masked[lane_of[coded]].astype(np.uint64)
    coded_lane = lane_of[coded]
    coded_counts = np.bincount(coded_lane, minlength=lanes)
    shift = np.array(k, np.uint64)

    # masks: a bit per element of a masked lane, set where it differs from the base
    mask_bytes = np.where(is_masked, -(-counts // 8), 0)
    mask_start = np.cumsum(mask_bytes) - mask_bytes
    in_masked = is_masked[lane_of]
    first = np.cumsum(counts) - counts  # each lane's first element
    position = np.arange(len(lane_of)) - first[lane_of]
    bits = np.zeros(8 * int(mask_bytes.sum()), np.uint8)
    bits[(8 * mask_start[lane_of] + position)[in_masked]] = differs[in_masked]
    masks = np.packbits(bits, bitorder="little").tobytes()

    # unary quotients: each a run of zeros ended by a one
    q = (u >> shift[coded_lane]).astype(np.int64) + 1
    total = np.cumsum(q)
    coded_first = np.cumsum(coded_counts) - coded_counts
    before = np.concatenate(([0], total))[coded_first]  # the lane's quotients before it
    unary_bits = np.bincount(coded_lane, weights=q, minlength=lanes).astype(np.int64)
    unary_bytes = -(-unary_bits // 8)
    unary_start = np.cumsum(unary_bytes) - unary_bytes
    bits = np.zeros(8 * int(unary_bytes.sum()), np.uint8)
    bits[8 * unary_start[coded_lane] + total - before[coded_lane] - 1] = 1
    unary = np.packbits(bits, bitorder="little").tobytes()

    # remainders: the low k bits of each coded value, lanes of one k together, each lane
    # padded to whole groups of 8 fields (k bytes) so that it starts on a byte
    remainder_at = np.zeros(lanes, np.int64)
    remainder_blocks: dict[int, bytes] = {}
    coded_position = np.arange(len(coded_lane)) - coded_first[coded_lane]
    for width in sorted(set(k) - {0}):
        members = (shift == width) & (coded_counts > 0)
        groups = np.where(members, -(-coded_counts // 8), 0)
        group_start = np.cumsum(groups) - groups
        remainder_at[members] = (group_start * width)[members]
        chosen = members[coded_lane]
        fields = np.zeros(8 * int(groups.sum()), np.uint64)
        fields[(8 * group_start[coded_lane] + coded_position)[chosen]] = u[chosen] & np.uint64(
            (1 << width) - 1
        )
        remainder_blocks[width] = pack_fields(fields, width)

    lane = 0
    for i, plan in zip(batch, plans, strict=True):
        heads, bodies = [], []
        for info in plan:
            size = int(unary_bytes[lane])
            heads.append(LANE.pack(info.base, info.k, MASKED if info.masked else 0, size, 0))
            if info.masked:
                at = int(mask_start[lane])
                bodies.append(masks[at : at + int(mask_bytes[lane])])
            at = int(unary_start[lane])
            bodies.append(unary[at : at + size])
            if info.k:
                at = int(remainder_at[lane])
                length = -(-int(coded_counts[lane]) * info.k // 8)
                bodies.append(remainder_blocks.get(info.k, b"")[at : at + length])
            lane += 1
        payloads[i] = HEAD.pack(len(plan)) + b"".join(heads) + b"".join(bodies)
