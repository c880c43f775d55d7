"""The placement verifier refuses a root outside the arena or off its alignment (its
docstring's checks), each case built by hand against a placement that is sound."""

from __future__ import annotations

import pytest

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
