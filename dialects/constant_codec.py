"""Lossless encoding of constant streams (docs/binary-format.md, "Rice streams").

A stream is a run of the constants region holding integers of one element type (a weight
tensor, a bias/scale table). Its elements are split into `lanes` interleaved lanes (element
j in lane j mod lanes: the columns of a `[C, 4]` table); each lane stores its values as
zigzag-mapped differences from a base, Golomb-Rice coded with its own parameter k, the
unary quotients in one bit string and the k-bit remainders in another. Splitting the two
makes decoding vectorised: the quotients are the gaps between the set bits of the first
string, the remainders fixed-width fields of the second. A lane may also carry a mask of
the elements that differ from its base (then only those are Rice coded): weights that are
mostly one value (pruned or padded channels) cost a bit each.

`encode` chooses lanes, bases and parameters (deterministically: a function of the bytes);
`decode` accepts any valid choice and raises `CodecError` (with the byte offset in the
payload) on a malformed one. Pure numpy: shared by the encoder, the loader and the cycle
model.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

#: Codec codes of the format; 0 is not used (raw bytes are not a stream).
CODECS = {1: "rice"}
CODEC_IDS = {name: code for code, name in CODECS.items()}
#: Element types a stream may hold: numpy dtype (little-endian) per ISA type name.
ELEMENT_TYPES = {"i8": "<i1", "u8": "<u1", "i16": "<i2", "u16": "<u2", "i32": "<i4"}
#: Interleave factors the encoder tries (the decoder accepts 1 to 255).
LANE_CHOICES = (1, 2, 4)

HEAD = struct.Struct("<B7x")  # lanes, reserved
LANE = struct.Struct("<iBB2xII")  # base, k, flags, reserved, unary bytes, reserved
MASKED = 1  # lane flag: a mask of the elements that differ from the base comes first
MAX_PLANS = 8192  # streams whose plans are remembered (a few hundred bytes each)
MAX_JOINT_ELEMENTS = 4096  # streams up to this long have their lanes planned jointly
JOINT_ELEMENTS = 1 << 16  # and streams of one type together up to this many elements
DENSE_HISTOGRAM = 1 << 22  # lanes x value span up to this: histogram by counting


class CodecError(ValueError):
    """A malformed stream: `offset` is the byte in the payload where it shows."""

    def __init__(self, offset: int, message: str):
        super().__init__(message)
        self.offset, self.message = offset, message


@dataclass(frozen=True)
class _Lane:
    base: int
    k: int
    masked: bool  # MASKED: only the elements that differ from `base` are coded
    count: int  # elements in the lane
    coded: int  # elements Rice coded (all of them unless masked)
    unary_bits: int

    @property
    def size(self) -> int:
        mask = -(-self.count // 8) if self.masked else 0
        return LANE.size + mask + -(-self.unary_bits // 8) + -(-self.coded * self.k // 8)

    def coded_values(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The Rice-coded values of the lane's elements `values` (zigzag differences from
        the base, minus 1 when masked), and the mask when masked."""
        if not self.masked:
            return zigzag(values.astype(np.int64) - self.base), None
        mask = values != self.base
        return zigzag(values[mask].astype(np.int64) - self.base) - np.uint64(1), mask


def zigzag(d: np.ndarray) -> np.ndarray:
    """0, -1, 1, -2, ... to 0, 1, 2, 3, ... (int64 in, uint64 out)."""
    return ((d << 1) ^ (d >> 63)).view(np.uint64)


def _histogram(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values (ascending, int64) and how often each occurs; by counting for 8
    and 16-bit values."""
    if values.itemsize <= 2 and len(values):
        low = int(values.min())
        counts = np.bincount(values.astype(np.int64) - low)
        found = np.flatnonzero(counts)
        return found + low, counts[found]
    found, counts = np.unique(values.astype(np.int64), return_counts=True)
    return found, counts


def _lane(values: np.ndarray, width: int) -> _Lane:
    """The smaller of: every element coded from the (lower) median, or the elements that
    differ from the most frequent value coded from it, behind a mask. Sizes come from the
    value histogram: each distinct value's code length times its count."""
    found, counts = _histogram(values)
    n = len(values)
    median = int(found[np.searchsorted(np.cumsum(counts), (n - 1) // 2 + 1)]) if n else 0
    plain = _rice(median, False, n, zigzag(found - median), counts, width)
    if not n:
        return plain
    at = int(np.argmax(counts))  # the first of the most frequent: the smallest value
    mode = int(found[at])
    others = np.arange(len(found)) != at
    u = zigzag(found[others] - mode) - np.uint64(1)
    masked = _rice(mode, True, n, u, counts[others], width)
    return masked if masked.size < plain.size else plain


def _rice(base: int, masked: bool, n: int, u: np.ndarray, counts: np.ndarray, width: int) -> _Lane:
    """The lane coding values `u` (each `counts` times) with the Rice parameter that takes
    the fewest bits, the smallest such (the bit count is convex in k)."""
    coded = int(counts.sum())
    shifts = np.arange(width + 1, dtype=np.uint64)
    quotients = (u[None, :] >> shifts[:, None]).astype(np.int64) @ counts.astype(np.int64)
    bits = quotients + coded * (1 + np.arange(width + 1))
    k = int(np.argmin(bits))
    return _Lane(base, k, masked, n, coded, int(quotients[k]) + coded)


def stream_plan(data: bytes, dtype: str) -> tuple[_Lane, ...]:
    """The lanes `encode` codes a stream with (remembered: compress-constants, the encoder,
    the flash image and the cycle model each ask for the same streams; keyed by a digest,
    so no model data is kept alive)."""
    key = _key(data, dtype)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _new_plan(data, dtype)
        _remember(key, plan)
    return plan


def plan_streams(streams: Sequence[tuple[bytes, str]]) -> list[tuple[_Lane, ...]]:
    """`stream_plan` of every stream (bytes, element type): the short ones not planned yet
    are planned together, per element type (and remembered, as `stream_plan` does)."""
    keys = [_key(data, dtype) for data, dtype in streams]
    plans: list[tuple[_Lane, ...] | None] = [_PLANS.get(key) for key in keys]
    short: dict[str, dict[tuple[bytes, str], tuple[list[int], np.ndarray]]] = {}
    for index, ((data, dtype), key) in enumerate(zip(streams, keys, strict=True)):
        if plans[index] is not None:
            continue
        values = np.frombuffer(data, ELEMENT_TYPES[dtype])
        if 0 < len(values) <= MAX_JOINT_ELEMENTS:
            short.setdefault(dtype, {}).setdefault(key, ([], values))[0].append(index)
        else:
            plan = _new_plan(data, dtype)
            _remember(key, plan)
            plans[index] = plan
    for dtype, found in short.items():
        width = 8 * np.dtype(ELEMENT_TYPES[dtype]).itemsize + 1
        for batch in _batches([(key, values) for key, (_, values) in found.items()]):
            arrays = [values for _, values in batch]
            for (key, _), plan in zip(
                batch, _plans_of_rows(_stream_rows(arrays), len(arrays), width), strict=True
            ):
                _remember(key, plan)
                for index in found[key][0]:
                    plans[index] = plan
    return [plan for plan in plans if plan is not None]


def payload_size(plan: tuple[_Lane, ...]) -> int:
    """The size of the payload `encode` gives with `plan`."""
    return HEAD.size + sum(lane.size for lane in plan)


def _batches(
    streams: list[tuple[tuple[bytes, str], np.ndarray]],
) -> Iterator[list[tuple[tuple[bytes, str], np.ndarray]]]:
    """Consecutive runs of `streams` of at most JOINT_ELEMENTS elements in all (one stream
    at least): planning takes up to about 280 bytes an element (sorted; 64 counted)."""
    batch: list[tuple[tuple[bytes, str], np.ndarray]] = []
    elements = 0
    for item in streams:
        if batch and elements + len(item[1]) > JOINT_ELEMENTS:
            yield batch
            batch, elements = [], 0
        batch.append(item)
        elements += len(item[1])
    if batch:
        yield batch


def _key(data: bytes, dtype: str) -> tuple[bytes, str]:
    return hashlib.blake2b(data, digest_size=20).digest(), dtype


def _remember(key: tuple[bytes, str], plan: tuple[_Lane, ...]) -> None:
    _PLANS[key] = plan
    if len(_PLANS) > MAX_PLANS:
        del _PLANS[next(iter(_PLANS))]  # the oldest


def _new_plan(data: bytes, dtype: str) -> tuple[_Lane, ...]:
    """The lanes of the interleave of fewest bytes (the first of equals), each planned as
    `_lane` plans it: from histogram rows when the stream is short (it costs numpy calls,
    not elements) or of 8 or 16-bit elements, else one lane at a time."""
    values = np.frombuffer(data, ELEMENT_TYPES[dtype])
    width = 8 * values.itemsize + 1  # a zigzag difference needs at most one bit more
    if len(values) and (len(values) <= MAX_JOINT_ELEMENTS or values.itemsize <= 2):
        return _plans_of_rows(_stream_rows([values]), 1, width)[0]
    best: tuple[_Lane, ...] = ()
    for n in (lanes for lanes in LANE_CHOICES if len(values) % lanes == 0):
        plan = tuple(_lane(values[i::n], width) for i in range(n))
        if not best or sum(x.size for x in plan) < sum(x.size for x in best):
            best = plan
    return best


@dataclass(frozen=True)
class _Rows:
    """A histogram with a row per lane of every interleave of some streams: each row's
    distinct values in ascending order (`found`, by `row`) with their `counts`."""

    first: dict[int, np.ndarray]  # by interleave: each stream's first row, -1 if it has none
    rows: int
    row: np.ndarray
    found: np.ndarray
    counts: np.ndarray


def _stream_rows(streams: Sequence[np.ndarray]) -> _Rows:
    """The rows of non-empty streams: counted densely when lanes x value span allow
    (`_dense_rows`), else sorted; here the rows of one interleave come after another, each
    interleave's in order of streams, then lanes."""
    joined = np.concatenate(streams)
    low = int(joined.min())
    span = int(joined.max()) - low + 1
    sizes = np.array([len(v) for v in streams])
    rows = sum(int((sizes % lanes == 0).sum()) * lanes for lanes in LANE_CHOICES)
    if rows * span <= DENSE_HISTOGRAM:
        return _dense_rows(streams, low, span)
    values = joined.astype(np.int64)
    stream = np.repeat(np.arange(len(streams)), sizes)
    position = np.arange(len(values)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    first, keys = {}, []
    rows = 0
    for lanes in LANE_CHOICES:
        fits = sizes % lanes == 0
        first[lanes] = np.where(fits, rows + np.cumsum(fits * lanes) - lanes, -1)
        chosen = fits[stream]
        row = first[lanes][stream[chosen]] + position[chosen] % lanes
        keys.append(row * span + (values[chosen] - low))
        rows += int(fits.sum()) * lanes
    entries, counts = np.unique(np.concatenate(keys), return_counts=True)
    entry_row, found = np.divmod(entries, span)
    return _Rows(first, rows, entry_row, found + low, counts)


def _dense_rows(streams: Sequence[np.ndarray], low: int, span: int) -> _Rows:
    """The rows of non-empty streams of values in [low, low + span), by counting: each
    stream's finest interleave's lanes in one pass over its elements (streams of one finest
    interleave together), each coarser lane the sum of the finest lanes it holds."""
    finest = [max(lanes for lanes in LANE_CHOICES if len(v) % lanes == 0) for v in streams]
    first = {lanes: np.full(len(streams), -1) for lanes in LANE_CHOICES}
    blocks = []
    rows = 0
    for size in sorted(set(finest)):
        members = [s for s, f in enumerate(finest) if f == size]
        values = np.concatenate([streams[s] for s in members]).reshape(-1, size)
        owner = np.repeat(np.arange(len(members)), [len(streams[s]) // size for s in members])
        key = (owner * (size * span))[:, None] + (np.arange(size) * span - low)[None, :]
        key += values  # lane j of a stream: j mod size, as every stream starts at a multiple
        counts = np.bincount(key.ravel(), minlength=len(members) * size * span)
        counts = counts.reshape(len(members), size, span)
        for lanes in LANE_CHOICES:
            if size % lanes == 0:  # lane i sums the finest lanes j with j mod lanes = i
                block = counts.reshape(len(members), size // lanes, lanes, span).sum(axis=1)
                first[lanes][members] = rows + lanes * np.arange(len(members))
                blocks.append(block.reshape(-1, span))
                rows += len(members) * lanes
    table = np.concatenate(blocks)
    entries = np.flatnonzero(table)
    entry_row, found = np.divmod(entries, span)
    return _Rows(first, rows, entry_row, found + low, table.ravel()[entries])


def _plans_of_rows(histogram: _Rows, streams: int, width: int) -> list[tuple[_Lane, ...]]:
    """Each stream's plan from its rows: every lane as `_lane` plans it (medians, modes and
    the bits of every k as per-row reductions), then the interleave `_new_plan` keeps."""
    rows, counts, found, entry_row = (
        histogram.rows,
        histogram.counts,
        histogram.found,
        histogram.row,
    )
    starts = np.searchsorted(entry_row, np.arange(rows))
    n = np.add.reduceat(counts, starts)
    total = np.cumsum(counts)
    median = found[np.searchsorted(total, total[starts] - counts[starts] + (n - 1) // 2 + 1)]
    most = np.maximum.reduceat(counts, starts)
    at = np.minimum.reduceat(  # the first of the most frequent: the smallest value
        np.where(counts == most[entry_row], np.arange(len(counts)), len(counts)), starts
    )
    masked_counts = counts.copy()
    masked_counts[at] = 0
    masked_u = zigzag(found - found[at][entry_row]) - np.uint64(1)
    masked_u[at] = 0
    sizes_of: dict[bool, np.ndarray] = {}
    fields: dict[bool, tuple[np.ndarray, ...]] = {}
    for masked, u, weights, bases, coded in (
        (False, zigzag(found - median[entry_row]), counts, median, n),
        (True, masked_u, masked_counts, found[at], n - most),
    ):
        quotients = np.empty((rows, width + 1), np.int64)
        for shift in range(width + 1):
            shifted = (u >> np.uint64(shift)).astype(np.int64)
            quotients[:, shift] = np.add.reduceat(shifted * weights, starts)
        k = (quotients + coded[:, None] * np.arange(1, width + 2)).argmin(axis=1)
        unary = quotients[np.arange(rows), k] + coded
        mask = -(-n // 8) if masked else 0
        sizes_of[masked] = LANE.size + mask + -(-unary // 8) + -(-coded * k // 8)
        fields[masked] = (bases, k, coded, unary)
    use_masked = sizes_of[True] < sizes_of[False]
    lane_size = np.where(use_masked, sizes_of[True], sizes_of[False])
    plans = []
    for s in range(streams):
        best = None
        for lanes in LANE_CHOICES:
            first = int(histogram.first[lanes][s])
            if first >= 0:
                size = int(lane_size[first : first + lanes].sum())
                if best is None or size < best[0]:
                    best = (size, first, lanes)
        assert best is not None  # every stream has one lane at least
        _, first, lanes = best
        plan = []
        for r in range(first, first + lanes):
            masked = bool(use_masked[r])
            bases, k, coded, unary = fields[masked]
            plan.append(
                _Lane(int(bases[r]), int(k[r]), masked, int(n[r]), int(coded[r]), int(unary[r]))
            )
        plans.append(tuple(plan))
    return plans


_PLANS: dict[tuple[bytes, str], tuple[_Lane, ...]] = {}


def encoded_size(data: bytes, dtype: str) -> int:
    """The payload size `encode` gives, without building it."""
    return payload_size(stream_plan(data, dtype))


def encode(data: bytes, dtype: str) -> bytes:
    """The payload of a stream of `dtype` elements (little-endian `data`)."""
    plan = stream_plan(data, dtype)
    heads, bodies = [], []
    values = np.frombuffer(data, ELEMENT_TYPES[dtype])
    for i, lane in enumerate(plan):
        u, mask = lane.coded_values(values[i :: len(plan)])
        q = u >> np.uint64(lane.k)
        ones = np.cumsum(q + np.uint64(1)) - np.uint64(1)
        bits = np.zeros(int(ones[-1]) + 1 if len(ones) else 0, np.uint8)
        bits[ones.astype(np.int64)] = 1
        unary = np.packbits(bits, bitorder="little").tobytes()
        remainder = _remainders(u, lane.k)
        flags = MASKED if lane.masked else 0
        heads.append(LANE.pack(lane.base, lane.k, flags, len(unary), 0))
        if mask is not None:
            bodies.append(np.packbits(mask, bitorder="little").tobytes())
        bodies += [unary, remainder]
    return HEAD.pack(len(plan)) + b"".join(heads) + b"".join(bodies)


def _remainders(u: np.ndarray, k: int) -> bytes:
    """The low k bits of each of `u`, one field after another, least significant bit first."""
    if not k:
        return b""
    fields = np.zeros(-(-len(u) // 8) * 8, np.uint64)
    fields[: len(u)] = u & np.uint64((1 << k) - 1)
    return pack_fields(fields, k)[: -(-len(u) * k // 8)]


def pack_fields(fields: np.ndarray, k: int) -> bytes:
    """k-bit fields (a multiple of 8 of them, uint64 below 2^k), one after another, least
    significant bit first: 8 fields fill k bytes."""
    if k <= 8:  # 8 fields in one 64-bit word, its low k bytes kept
        groups = fields.reshape(-1, 8) << (np.arange(8, dtype=np.uint64) * np.uint64(k))
        words = np.bitwise_or.reduce(groups, axis=1).astype("<u8")
        return words.view(np.uint8).reshape(-1, 8)[:, :k].tobytes()
    bits = (fields[:, None] >> np.arange(k, dtype=np.uint64)) & np.uint64(1)
    return np.packbits(bits.astype(np.uint8).ravel(), bitorder="little").tobytes()


def decode(payload: bytes, dtype: str, size: int) -> bytes:
    """The `size` bytes a payload encodes (CodecError on a malformed payload)."""
    np_type = np.dtype(ELEMENT_TYPES[dtype])
    info = np.iinfo(np_type)
    if len(payload) < HEAD.size:
        raise CodecError(0, f"a stream needs {HEAD.size} bytes, it has {len(payload)}")
    (lanes,) = HEAD.unpack_from(payload, 0)
    if any(payload[1 : HEAD.size]):
        raise CodecError(1, "reserved bytes of the stream head must be zero")
    if lanes == 0:
        raise CodecError(0, "a stream has at least one lane")
    count, rest = divmod(size, np_type.itemsize * lanes)
    if rest:
        raise CodecError(0, f"{size} bytes are not a whole number of {dtype} elements per lane")
    if count * lanes > 8 * len(payload):  # each element takes a bit at least
        raise CodecError(0, f"{len(payload)} bytes cannot hold {count * lanes} elements")
    at = HEAD.size + lanes * LANE.size
    if at > len(payload):
        raise CodecError(
            HEAD.size, f"{lanes} lane headers need {at} bytes, the stream has {len(payload)}"
        )
    out = np.empty(count * lanes, np_type)
    umax = 2 * (int(info.max) - int(info.min)) + 1
    for i in range(lanes):
        where = HEAD.size + i * LANE.size
        base, k, flags, unary_size, reserved = LANE.unpack_from(payload, where)
        if any(payload[where + 6 : where + 8]) or reserved:
            raise CodecError(where + 6, f"lane {i}: reserved fields must be zero")
        if flags & ~MASKED:
            raise CodecError(where + 5, f"lane {i}: unknown flags {flags:#x}")
        if not info.min <= base <= info.max:
            raise CodecError(where, f"lane {i}: base {base} is outside the {dtype} range")
        if k > 8 * np_type.itemsize + 1:
            raise CodecError(where + 4, f"lane {i}: Rice parameter {k} is too large for {dtype}")
        mask, coded = None, count
        if flags & MASKED:
            mask = _mask(payload, at, count, i)
            at += -(-count // 8)
            coded = int(np.count_nonzero(mask))
        remainder_size = -(-coded * k // 8)
        if at + unary_size + remainder_size > len(payload):
            raise CodecError(where + 8, f"lane {i}: its bits run past the end of the stream")
        q = _quotients(payload, at, unary_size, coded, umax >> k, i)
        r = _fields(payload, at + unary_size, remainder_size, coded, k, i)
        u = (q << k) | r  # below 2^42: a quotient is at most umax >> k, umax < 2^34
        if mask is not None:
            u += 1
        values = (u >> 1) ^ -(u & 1)
        values += base
        if coded and (values.min() < info.min or values.max() > info.max):
            bad = np.flatnonzero((values < info.min) | (values > info.max))
            raise CodecError(at, f"lane {i}: element {bad[0]} decodes outside the {dtype} range")
        if mask is None:
            out[i::lanes] = values
        else:
            whole = np.full(count, base, np.int64)
            whole[mask] = values
            out[i::lanes] = whole
        at += unary_size + remainder_size
    if at != len(payload):
        raise CodecError(at, f"{len(payload) - at} bytes after the last lane")
    return out.tobytes()


def _mask(payload: bytes, at: int, count: int, lane: int) -> np.ndarray:
    """The mask of a MASKED lane: a bit per element, set where it is coded, then zeros."""
    size = -(-count // 8)
    if at + size > len(payload):
        raise CodecError(at, f"lane {lane}: its mask runs past the end of the stream")
    bits = np.unpackbits(np.frombuffer(payload, np.uint8, size, at), bitorder="little")
    if bits[count:].any():
        raise CodecError(at + size - 1, f"lane {lane}: padding bits after the mask must be zero")
    return bits[:count].astype(bool)


def _quotients(payload: bytes, at: int, size: int, count: int, limit: int, lane: int) -> np.ndarray:
    """The unary quotients: each a run of zero bits ended by a one, least significant bit
    first; the last byte holds the last one and zeros above it."""
    bits = np.unpackbits(np.frombuffer(payload, np.uint8, size, at), bitorder="little")
    ones = np.flatnonzero(bits)
    if len(ones) < count:
        raise CodecError(at, f"lane {lane}: {len(ones)} unary codes for {count} elements")
    if len(ones) > count:
        extra = int(ones[count]) // 8
        raise CodecError(at + extra, f"lane {lane}: more unary codes than its {count} elements")
    if count and int(ones[-1]) // 8 != size - 1:
        raise CodecError(at + int(ones[-1]) // 8 + 1, f"lane {lane}: bytes after the last code")
    if not count and size:
        raise CodecError(at, f"lane {lane}: unary bytes for no element")
    q = np.diff(ones, prepend=-1) - 1
    if count and q.max() > limit:
        first = int(np.flatnonzero(q > limit)[0])
        raise CodecError(
            at + int(ones[first]) // 8, f"lane {lane}: a quotient exceeds the element range"
        )
    return q


def _fields(payload: bytes, at: int, size: int, count: int, k: int, lane: int) -> np.ndarray:
    """`count` k-bit remainders packed least significant bit first, then zero bits: field
    i is bits [i k, i k + k), read from the word at its first bit's byte (k <= 33 and a
    shift below 8: 4 bytes hold it up to k = 25, else 8)."""
    if not k:
        return np.zeros(count, np.int64)
    raw = np.frombuffer(payload, np.uint8, size, at)
    spare = 8 * size - count * k
    if spare and raw[-1] >> (8 - spare):
        raise CodecError(
            at + size - 1, f"lane {lane}: padding bits after the remainders must be zero"
        )
    width = 4 if k <= 25 else 8  # bytes a field and its shift need
    padded = np.concatenate([raw, np.zeros(width, np.uint8)])
    first = np.arange(count, dtype=np.int64) * k
    windows = np.lib.stride_tricks.sliding_window_view(padded, width)[first >> 3]
    words = np.ascontiguousarray(windows).view(f"<u{width}").ravel().astype(np.int64)
    return (words >> (first & 7)) & ((1 << k) - 1)
