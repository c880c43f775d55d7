"""Per-buffer alignments survive every placer: random buffers, checked from the definition.

A buffer's offset must be a multiple of its own alignment and of the global one, wherever
the placer puts it (at 0, in a gap, or stacked on top of others), and two buffers live at a
common step must not share a byte. The checks below use only the buffers and the offsets,
not the planner's `verify_placement`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from npuc.passes.memory.plan import (
    Buffer,
    Placement,
    greedy_by_conflicts,
    greedy_by_size,
    improve,
    plan,
)

Placer = Callable[[Sequence[Buffer], int], Placement]
PLACERS: dict[str, Placer] = {
    "plan": lambda bufs, a: plan(bufs, a, max_iterations=200),
    "size/best-fit": lambda bufs, a: greedy_by_size(bufs, a),
    "size/first-fit": lambda bufs, a: greedy_by_size(bufs, a, best_fit=False),
    "conflicts/best-fit": lambda bufs, a: greedy_by_conflicts(bufs, a),
    "conflicts/first-fit": lambda bufs, a: greedy_by_conflicts(bufs, a, best_fit=False),
    "improve": lambda bufs, a: improve(greedy_by_size(bufs, a), bufs, a, max_iterations=200),
}

# a: 1000 bytes over steps 0-3 is placed first, at 0; b (256-aligned) lives inside a's
# range, so it goes on top of a, at 1024 and not at a's end, 1000.
STACKED_ON_TOP = ([Buffer("a", 1000, 0, 3), Buffer("b", 100, 1, 2, alignment=256)], 16)
# Largest first: a at 0, b at 0 (not live with a), c on top at 512; d (64-aligned) is live
# with b and c only, so the gap [400, 512) between them is free: d fits at 448, not at 400.
IN_A_GAP = (
    [Buffer("a", 500, 0, 0), Buffer("b", 400, 1, 1), Buffer("c", 100, 0, 1),
     Buffer("d", 50, 1, 2, alignment=64)],
    16,
)  # fmt: skip


@st.composite
def aligned_instances(draw) -> tuple[list[Buffer], int]:
    n = draw(st.integers(1, 14))
    bufs = []
    for i in range(n):
        start = draw(st.integers(0, 11))
        end = draw(st.integers(start, 11))
        alignment = draw(st.none() | st.sampled_from([1, 2, 8, 32, 128, 256, 1024]))
        bufs.append(Buffer(f"b{i}", draw(st.integers(1, 3000)), start, end, alignment))
    return bufs, draw(st.sampled_from([1, 4, 16, 64]))


def check_placement(bufs: Sequence[Buffer], alignment: int, placement: Placement) -> None:
    offsets = np.array([placement.offsets[b.name] for b in bufs], np.int64)
    sizes = np.array([b.size for b in bufs], np.int64)
    own = np.array([b.alignment or 1 for b in bufs], np.int64)
    assert (offsets >= 0).all()
    assert (offsets % alignment == 0).all(), offsets
    misaligned = [(b.name, int(o), b.alignment) for b, o, a in zip(bufs, offsets, own,
                  strict=True) if o % a]  # fmt: skip
    assert not misaligned, misaligned
    assert (offsets + sizes <= placement.total_size).all()
    starts = np.array([b.start for b in bufs])
    ends = np.array([b.end for b in bufs])
    live_together = (starts[:, None] <= ends[None, :]) & (starts[None, :] <= ends[:, None])
    share_bytes = (offsets[:, None] < (offsets + sizes)[None, :]) & (
        offsets[None, :] < (offsets + sizes)[:, None]
    )
    clash = live_together & share_bytes
    np.fill_diagonal(clash, False)
    pairs = [(bufs[i].name, bufs[j].name) for i, j in zip(*np.nonzero(clash), strict=True)]
    assert not pairs, pairs


@pytest.mark.parametrize("placer", sorted(PLACERS))
def test_aligned_buffer_stacked_on_top_of_another(placer: str):
    bufs, alignment = STACKED_ON_TOP
    placement = PLACERS[placer](bufs, alignment)
    check_placement(bufs, alignment, placement)
    assert placement.offsets["b"] in (0, 1024)


def test_aligned_buffer_in_a_gap_between_others():
    bufs, alignment = IN_A_GAP
    placement = greedy_by_size(bufs, alignment)
    check_placement(bufs, alignment, placement)
    assert placement.offsets == {"a": 0, "b": 0, "c": 512, "d": 448}


@settings(max_examples=300, deadline=None)
@given(aligned_instances(), st.sampled_from(sorted(PLACERS)))
@example(STACKED_ON_TOP, "size/best-fit")
@example(IN_A_GAP, "size/best-fit")
def test_every_placer_keeps_per_buffer_alignments(instance, placer: str):
    bufs, alignment = instance
    check_placement(bufs, alignment, PLACERS[placer](bufs, alignment))


DEFAULTED: dict[str, Callable[[Sequence[Buffer]], Placement]] = {
    "plan": lambda bufs: plan(bufs, max_iterations=50),
    "size": lambda bufs: greedy_by_size(bufs),
    "conflicts": lambda bufs: greedy_by_conflicts(bufs),
    "improve": lambda bufs: improve(greedy_by_size(bufs), bufs, max_iterations=50),
}


@pytest.mark.parametrize("placer", sorted(DEFAULTED))
def test_every_placer_aligns_to_64_bytes_when_not_told(placer: str):
    # Odd sizes, all live together: each buffer sits on top of the previous ones, so
    # every offset but the first depends on the default alignment.
    bufs = [Buffer(f"b{i}", size, 0, 1) for i, size in enumerate((100, 70, 30, 1))]
    placement = DEFAULTED[placer](bufs)
    check_placement(bufs, 64, placement)
    assert sorted(placement.offsets.values()) == [0, 128, 256, 320]
    assert placement.total_size == 384
