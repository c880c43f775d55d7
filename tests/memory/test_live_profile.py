"""The live profile (bytes of a region reserved at each step: the union of the byte spans
live there) against a brute-force union, one step and one byte at a time."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from npuc.passes.memory.ir import _union_per_step

STEPS = 6

span = st.tuples(
    st.integers(0, 40),  # lo
    st.integers(0, 24),  # length
    st.integers(-2, STEPS + 3),  # first step: some before 0, some after the last
    st.integers(-3, STEPS + 3),  # last step: some before the first
)


def brute_force(spans: list[tuple[int, int, int, int]], steps: int) -> list[int]:
    live = [np.zeros(64, bool) for _ in range(steps)]
    for lo, hi, first, last in spans:
        for s in range(max(first, 0), min(last, steps - 1) + 1):
            live[s][lo:hi] = True
    return [int(x.sum()) for x in live]


@settings(max_examples=300, deadline=None)
@given(st.lists(span, max_size=8), st.integers(0, STEPS))
@example([(0, 4, 9, 2), (8, 4, 1, 3)], STEPS)  # a span that starts after the last step
@example([(0, 4, 3, 0)], STEPS)  # one that ends before it starts, and nothing else
@example([(3, 5, 0, 0), (6, 2, 0, 4)], 1)  # a plan of one step
def test_union_per_step_matches_brute_force(
    raw: list[tuple[int, int, int, int]], steps: int
) -> None:
    spans = [(lo, lo + n, first, last) for lo, n, first, last in raw]
    array = np.array(spans, dtype=np.int64).reshape(-1, 4)
    assert _union_per_step(array, steps) == brute_force(spans, steps)
