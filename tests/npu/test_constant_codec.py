"""The Rice stream codec of encoded constants (docs/binary-format.md, "Rice streams").

`doc_decode` (tests/rice_doc.py) is written from that section with plain Python integers,
bit by bit: it shares no code with dialects/constant_codec.py and returns None where the
document says a payload is malformed. The codec must agree with it on every payload,
valid or corrupted, and never fail but with a CodecError naming a byte of the payload.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from rice_doc import doc_decode

from npuc.dialects import constant_codec
from npuc.dialects.constant_codec import CodecError, decode, encode


def arrays(dtype: str, max_size: int = 300):
    np_type = np.dtype(constant_codec.ELEMENT_TYPES[dtype])
    return hnp.arrays(np_type, st.integers(1, max_size))


ENCODABLE = st.sampled_from(["i8", "u8", "i16", "u16", "i32"])


@st.composite
def runs(draw) -> tuple[str, bytes]:
    dtype = draw(ENCODABLE)
    shape = st.sampled_from(["any", "narrow", "constant", "sparse"])
    values = draw(arrays(dtype))
    kind = draw(shape)
    if kind == "narrow":  # weights of a trained layer: small values around a centre
        info = np.iinfo(values.dtype)
        centre = draw(st.integers(int(info.min) + 8, int(info.max) - 8))
        values = (centre + values.astype(np.int64) % 9 - 4).astype(values.dtype)
    elif kind == "constant":
        values = np.full_like(values, values[0])
    elif kind == "sparse":  # mostly one value (pruned or padded channels): masked lanes
        keep = np.arange(len(values)) % draw(st.integers(2, 6)) == 0
        values = np.where(keep, values, values[-1])
    return dtype, values.tobytes()


def test_the_documented_example():
    payload = bytes.fromhex("0100000000000000020000000100000001000000000000001e02")
    expected = np.array([3, 1, 2, 2], np.int8).tobytes()
    assert doc_decode(payload, "i8", 4) == expected
    assert decode(payload, "i8", 4) == expected
    masked = bytes.fromhex("0100000000000000020000000001000001000000000000000306")
    assert doc_decode(masked, "i8", 4) == expected
    assert decode(masked, "i8", 4) == expected


@settings(max_examples=300, deadline=None)
@given(runs())
def test_decode_of_encode_is_the_identity(run):
    dtype, data = run
    payload = encode(data, dtype)
    assert decode(payload, dtype, len(data)) == data
    assert doc_decode(payload, dtype, len(data)) == data
    assert constant_codec.encoded_size(data, dtype) == len(payload)


@settings(max_examples=200, deadline=None)
@given(runs())
def test_each_lane_takes_the_smallest_k_of_fewest_bits(run):
    """The encoder's choice within a lane, from the document alone: the lane's values
    (elements j with j mod L = l), its base and mask flag as the header states, and the
    bits each k would take (unary: sum of u >> k plus one per coded element; remainders:
    k per coded element). Its k is the smallest of those with the fewest bits."""
    dtype, data = run
    payload = encode(data, dtype)
    values = np.frombuffer(data, constant_codec.ELEMENT_TYPES[dtype]).astype(np.int64)
    lanes = payload[0]
    width = 8 * np.dtype(constant_codec.ELEMENT_TYPES[dtype]).itemsize + 1
    for lane in range(lanes):
        base, k, flags = struct.unpack_from("<iBB", payload, 8 + 16 * lane)
        mine = [int(v) for v in values[lane::lanes]]
        if flags & 1:
            coded = [
                2 * (v - base) - 1 if v > base else 2 * (base - v) - 2 for v in mine if v != base
            ]
        else:
            coded = [2 * (v - base) if v >= base else 2 * (base - v) - 1 for v in mine]
        bits = [sum(u >> j for u in coded) + len(coded) * (1 + j) for j in range(width + 1)]
        assert k == bits.index(min(bits)), (lane, k, bits)


def random_streams(count: int) -> list[np.ndarray]:
    """Streams of every encodable type: uniform, normal of any spread, mostly one value, all
    one value but one, a repeated [C, 4]-like row."""
    rng = np.random.default_rng(7)
    streams = []
    for t in range(count):
        np_type = np.dtype(constant_codec.ELEMENT_TYPES[["i8", "u8", "i16", "u16", "i32"][t % 5]])
        info = np.iinfo(np_type)
        n = int(rng.integers(1, 900)) * int(rng.choice([1, 2, 3, 4]))
        kind = t // 5 % 5
        if kind == 0:
            v = rng.integers(info.min, int(info.max) + 1, n)
        elif kind == 1:
            v = (rng.standard_normal(n) * rng.uniform(0.5, 3000)).round()
        elif kind == 2:
            v = np.where(rng.random(n) < 0.7, rng.integers(0, 3), rng.integers(0, 50, n))
        elif kind == 3:
            v = np.full(n, rng.integers(0, 5))
            v[rng.integers(0, n)] += 1
        else:
            v = np.tile(rng.integers(0, 100, 4), -(-n // 4))[:n] + rng.integers(0, 2, n)
        streams.append(np.clip(v, info.min, info.max).astype(np_type))
    return streams


def planned_lane_by_lane(values: np.ndarray) -> tuple:
    """The plan from `_lane` alone, one lane of one interleave at a time: the interleave of
    fewest bytes, the first of equals."""
    width = 8 * values.itemsize + 1
    best: tuple = ()
    for n in (n for n in constant_codec.LANE_CHOICES if len(values) % n == 0):
        plan = tuple(constant_codec._lane(values[i::n], width) for i in range(n))
        if not best or sum(x.size for x in plan) < sum(x.size for x in best):
            best = plan
    return best


STREAMS = random_streams(500)
TYPE_NAMES = {np.dtype(t): name for name, t in constant_codec.ELEMENT_TYPES.items()}


@pytest.mark.parametrize("values", STREAMS, ids=lambda v: f"{v.dtype}x{v.size}")
def test_a_stream_planned_from_one_histogram_is_planned_as_lane_by_lane(values: np.ndarray):
    """Every lane of every interleave of a stream is planned from one histogram row per
    lane, counted (each finest lane in one pass, coarser lanes summed from them) or sorted:
    the same bases (lower median, or the smallest most frequent value), masks and bits as
    `_lane` gives each lane alone (the test above checks the k of whichever ran)."""
    width = 8 * values.itemsize + 1
    want = [planned_lane_by_lane(values)]
    wide = values.astype(np.int64)
    low, span = int(wide.min()), int(wide.max() - wide.min()) + 1
    if span <= 1 << 16:
        assert (
            constant_codec._plans_of_rows(constant_codec._dense_rows([values], low, span), 1, width)
            == want
        )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(constant_codec, "DENSE_HISTOGRAM", 0)  # sorted
        assert (
            constant_codec._plans_of_rows(constant_codec._stream_rows([values]), 1, width) == want
        )


def test_streams_planned_together_are_planned_as_one_by_one(monkeypatch):
    """`plan_streams` plans the short streams of each type together (in batches, counted or
    sorted), long ones alone: every plan it returns and remembers is the one a stream gets
    lane by lane."""
    rng = np.random.default_rng(11)
    long = [
        np.clip(rng.standard_normal(n) * 40, -128, 127).astype(np.int8) for n in (4097, 6000)
    ] + [rng.integers(-(2**31), 2**31 - 1, 5000).astype("<i4")]
    streams = [*STREAMS, *long]
    monkeypatch.setattr(constant_codec, "_PLANS", {})
    monkeypatch.setattr(constant_codec, "JOINT_ELEMENTS", 9000)
    items = [(v.tobytes(), TYPE_NAMES[v.dtype]) for v in streams]
    planned = constant_codec.plan_streams(items)
    assert planned == [planned_lane_by_lane(values) for values in streams]
    # each distinct stream planned once and remembered, short or long
    assert len(constant_codec._PLANS) == len({(v.tobytes(), v.dtype) for v in streams})
    for values, (data, dtype) in zip(streams, items, strict=True):
        assert constant_codec.stream_plan(data, dtype) == planned_lane_by_lane(values)
    monkeypatch.setattr(constant_codec, "_PLANS", {})
    monkeypatch.setattr(constant_codec, "DENSE_HISTOGRAM", 0)  # every batch sorted
    constant_codec.plan_streams(items)
    for values, (data, dtype) in zip(streams, items, strict=True):
        assert constant_codec.stream_plan(data, dtype) == planned_lane_by_lane(values)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["i8", "u8", "i16"]), st.data())
def test_int8_uint8_int16_arrays_of_any_values_round_trip(dtype, data):
    values = data.draw(arrays(dtype, 2000))
    raw = values.tobytes()
    assert decode(encode(raw, dtype), dtype, len(raw)) == raw


@st.composite
def corrupted(draw) -> tuple[str, int, bytes]:
    dtype, data = draw(runs())
    payload = bytearray(encode(data, dtype))
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["flip", "byte", "truncate", "append", "field"]))
        if how == "flip" and payload:
            at = draw(st.integers(0, len(payload) - 1))
            payload[at] ^= 1 << draw(st.integers(0, 7))
        elif how == "byte" and payload:
            payload[draw(st.integers(0, len(payload) - 1))] = draw(st.integers(0, 255))
        elif how == "truncate":
            del payload[draw(st.integers(0, len(payload))) :]
        elif how == "append":
            payload += bytes(draw(st.lists(st.integers(0, 255), min_size=1, max_size=4)))
        elif how == "field" and len(payload) >= 24:  # a lane header's base, k or unary size
            at = draw(st.sampled_from([8, 12, 13, 16]))
            payload[at] = draw(st.integers(0, 255))
    return dtype, len(data), bytes(payload)


@settings(max_examples=500, deadline=2000)
@given(corrupted())
def test_corrupted_payloads_are_refused_at_a_byte_or_decoded_as_the_document_says(case):
    dtype, size, payload = case
    expected = doc_decode(payload, dtype, size)
    try:
        got = decode(payload, dtype, size)
    except CodecError as e:
        assert expected is None
        assert 0 <= e.offset <= len(payload)
        assert e.message
    else:
        assert got == expected


def test_a_huge_quotient_is_refused_without_expanding_it():
    """One unary code spanning a megabyte: the codec names where it exceeds the range."""
    payload = bytearray(encode(np.zeros(8, np.int8).tobytes(), "i8"))
    lanes = payload[0]
    at = 8 + 16 * lanes
    big = bytes(1 << 20) + b"\x01"
    unary_size = struct.unpack_from("<I", payload, 16)[0]
    struct.pack_into("<I", payload, 16, len(big) + unary_size)
    payload[at:at] = big
    with pytest.raises(CodecError) as e:
        decode(bytes(payload), "i8", 8)
    assert e.value.offset >= at


def order0_bytes(values: np.ndarray) -> float:
    """The order-0 entropy of the values, in bytes: what any per-tensor code of single
    values (a Huffman table without its cost) needs at least."""
    _, counts = np.unique(values, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum() * values.size / 8)


def test_per_channel_weights_compress_near_their_entropy():
    """Per-channel symmetric int8 weights (normal values scaled so each channel's largest
    is 127) come within 4% of the entropy bound, and a bias/scale table of four columns
    is split into lanes."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((32, 288))
    q = np.round(w / np.abs(w).max(axis=1, keepdims=True) * 127).astype(np.int8)
    assert len(encode(q.tobytes(), "i8")) < 1.04 * order0_bytes(q) < q.nbytes
    narrow = np.round(w / np.abs(w).max() * 40).astype(np.int8)  # a layer of small weights
    assert len(encode(narrow.tobytes(), "i8")) < 1.04 * order0_bytes(narrow) < 0.8 * w.size
    pruned = np.where(rng.random(q.shape) < 0.75, 0, q).astype(np.int8)  # 3 in 4 are zero
    payload = encode(pruned.tobytes(), "i8")
    assert payload[13] == 1  # a masked lane
    assert len(payload) < 1.15 * order0_bytes(pruned) < 0.5 * pruned.nbytes
    table = np.stack(
        [
            rng.integers(-500, 500, 64),
            rng.integers(2**30, 2**30 + 2**20, 64),
            np.full(64, 38),
            np.zeros(64, np.int64),
        ],
        axis=1,
    ).astype("<i4")
    payload = encode(table.tobytes(), "i32")
    assert payload[0] == 4
    assert len(payload) < 0.5 * table.nbytes


@pytest.mark.parametrize("joint", [1 << 16, 5000])
def test_streams_encoded_together_are_encoded_as_one_by_one(monkeypatch, joint):
    """`encode_streams` codes the lanes of many short streams from joined arrays: every
    payload is `encode`'s, byte for byte (lanes of every Rice parameter, masked lanes with
    nothing coded, long streams left to `encode`), whatever the batches."""
    from npuc.dialects import constant_codec_batch

    monkeypatch.setattr(constant_codec_batch, "JOINT_ELEMENTS", joint)
    rng = np.random.default_rng(5)
    items = [(v.tobytes(), TYPE_NAMES[v.dtype]) for v in STREAMS]
    items += [
        (np.full(100, 3, np.int8).tobytes(), "i8"),  # one value: masked, nothing coded
        (np.clip(rng.standard_normal(6000) * 30, -128, 127).astype(np.int8).tobytes(), "i8"),
        (rng.integers(-(2**31), 2**31 - 1, 64).astype("<i4").tobytes(), "i32"),  # k up to 33
    ]
    payloads = constant_codec_batch.encode_streams(items)
    assert payloads == [encode(data, dtype) for data, dtype in items]
    assert all(
        decode(p, dtype, len(data)) == data
        for p, (data, dtype) in zip(payloads, items, strict=True)
    )
