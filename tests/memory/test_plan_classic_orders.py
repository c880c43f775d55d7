"""`plan` keeps the best of its five classic orders (docs/memory-planning.md, "Placement"),
shown with the improvement switched off (`max_iterations=0`, `exhaustive_limit=0`) on an
instance where largest-first misses the lower bound and first-use order reaches it. The
figures are worked out by hand below from the document's rules."""

from __future__ import annotations

from npuc.passes.memory.plan import Buffer, greedy_by_size, plan

# name, bytes, first and last step (inclusive): multiples of the 64-byte alignment
BUFFERS = [
    Buffer("a", 64, 4, 7),
    Buffer("b", 128, 1, 4),
    Buffer("c", 256, 1, 3),
    Buffer("d", 256, 5, 7),
]
# live bytes per step: 1-3 b + c = 384, 4 a + b = 192, 5-7 a + d = 320
LOWER_BOUND = 384
# largest first (ties: earlier first use): c at 0, d at 0 (apart in time), b on c at 256;
# a meets b (step 4) and d (5-7), which fill [0, 384) with no gap: a at 384
LARGEST_FIRST = 448
# first use (c, b at step 1, then a, d): c at 0, b at 256; a meets only b, and the gap
# [0, 256) below it is the best fit: a at 0; d meets only a: at 64, up to 320


def disjoint_where_live_together(buffers: list[Buffer], offsets: dict[str, int]) -> bool:
    for i, x in enumerate(buffers):
        for y in buffers[i + 1 :]:
            live_together = x.start <= y.end and y.start <= x.end
            ox, oy = offsets[x.name], offsets[y.name]
            if live_together and ox < oy + y.size and oy < ox + x.size:
                return False
    return True


def test_plan_without_improvement_keeps_the_best_classic_order() -> None:
    assert greedy_by_size(BUFFERS).total_size == LARGEST_FIRST  # the instance is a real test
    placed = plan(BUFFERS, max_iterations=0, exhaustive_limit=0)
    assert placed.total_size == LOWER_BOUND
    assert disjoint_where_live_together(BUFFERS, dict(placed.offsets))
    assert all(placed.offsets[b.name] + b.size <= LOWER_BOUND for b in BUFFERS)
