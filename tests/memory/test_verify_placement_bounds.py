"""The placement verifier refuses a root outside the arena or off its alignment (its
docstring's checks), each case built by hand against a placement that is sound."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npuc.passes.memory.plan import Buffer, Placement, PlacementError
from npuc.passes.memory.report import verify_placement

BUFFERS = [Buffer("a", 64, 0, 2), Buffer("b", 40, 1, 3, alignment=128)]
SOUND = {"a": 0, "b": 128}  # b rounds up to 128 bytes: the arena is 256


@pytest.mark.parametrize(
    ("offsets", "total", "message"),
    [
        ({"a": 0, "b": 128}, 255, "b: ends past the arena"),
        ({"a": 192, "b": 0}, 255, "a: ends past the arena"),
        ({"a": 0, "b": 64}, 256, "b: offset 64 not 128-aligned"),
        ({"a": -64, "b": 128}, 256, "a: offset -64 not 16-aligned"),
    ],
)
def test_verify_refuses_roots_past_the_arena_or_off_their_alignment(offsets, total, message):
    verify_placement(BUFFERS, Placement(SOUND, 256), 16)
    with pytest.raises(PlacementError, match=message):
        verify_placement(BUFFERS, Placement(offsets, total), 16)


@st.composite
def _placements(draw) -> tuple[list[Buffer], dict[str, int]]:
    """Roots with random lives, sizes (zero too) and aligned offsets in a small arena, so
    that overlaps in time and bytes are common."""
    n = draw(st.integers(1, 14))
    bufs, offsets = [], {}
    for i in range(n):
        start = draw(st.integers(0, 8))
        end = draw(st.integers(start, 9))
        bufs.append(Buffer(f"b{i}", draw(st.sampled_from([0, 8, 16, 24, 40])), start, end))
        offsets[f"b{i}"] = 16 * draw(st.integers(0, 8))
    return bufs, offsets


@settings(max_examples=400, deadline=None)
@given(_placements())
def test_verify_finds_an_overlap_exactly_when_two_live_roots_share_a_byte(case):
    bufs, offsets = case

    def span(b: Buffer) -> tuple[int, int]:
        return offsets[b.name], offsets[b.name] + -(-b.size // 16) * 16

    clashing = [
        (a.name, b.name)
        for i, a in enumerate(bufs)
        for b in bufs[i + 1 :]
        if a.size
        and b.size
        and a.start <= b.end
        and b.start <= a.end
        and span(a)[0] < span(b)[1]
        and span(b)[0] < span(a)[1]
    ]
    placement = Placement(offsets, 16 * 8 + 48)
    if not clashing:
        verify_placement(bufs, placement, 16)
        return
    with pytest.raises(PlacementError, match="overlap in bytes") as raised:
        verify_placement(bufs, placement, 16)
    named = re.findall(r"(b\d+) \[", str(raised.value))
    assert tuple(sorted(named)) in {tuple(sorted(pair)) for pair in clashing}
