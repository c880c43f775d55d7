"""The greedy placers' exact offsets against a reference written from their documentation.

`greedy_by_size` (TFLite's ArenaPlanner): buffers largest first (ties: earlier start, then
input order); each goes into the smallest gap, between the already placed buffers whose
lifetimes overlap its own, that holds it at its alignment, the lowest of equal gaps; if
none does, above all of them. `best_fit=False` (TVM USMP's first fit): the lowest gap that
holds it. `plan` improves on these orders, so a placer that wastes bytes can stay unseen
by the optimality tests; these tests pin each placement.
"""

from __future__ import annotations

import random

import pytest

from npuc.passes.memory.plan import Buffer, greedy_by_size


def reference_greedy(bufs: list[Buffer], alignment: int, best_fit: bool) -> dict[str, int]:
    def align(b: Buffer) -> int:
        return max(alignment, b.alignment or 1)

    def size(b: Buffer) -> int:
        return -(-b.size // align(b)) * align(b)

    order = sorted(range(len(bufs)), key=lambda i: (-size(bufs[i]), bufs[i].start, i))
    offsets: dict[str, int] = {}
    for i in order:
        b, a = bufs[i], align(bufs[i])
        busy = sorted(
            (offsets[o.name], offsets[o.name] + size(o))
            for o in bufs
            if o.name in offsets and not (o.end < b.start or b.end < o.start)
        )
        gaps, top = [], 0  # the free stretches below the last busy byte
        for lo, hi in busy:
            if lo > top:
                gaps.append((top, lo))
            top = max(top, hi)
        fitting = []
        for lo, hi in gaps:
            start = -(-lo // a) * a
            if start + size(b) <= hi:
                fitting.append((hi - start if best_fit else 0, start))
        offsets[b.name] = min(fitting)[1] if fitting else -(-top // a) * a
    return offsets


def random_buffers(rng: random.Random, n: int) -> list[Buffer]:
    bufs = []
    for i in range(n):
        start = rng.randrange(12)
        end = rng.randrange(start, 12)
        size = rng.choice([rng.randint(1, 600), 64 * rng.randint(1, 8)])
        alignment = rng.choice([None, None, None, 128, 256])
        bufs.append(Buffer(f"b{i}", size, start, end, alignment))
    return bufs


@pytest.mark.parametrize("best_fit", [True, False])
@pytest.mark.parametrize("alignment", [1, 16, 64])
def test_greedy_by_size_places_every_buffer_where_the_reference_does(alignment, best_fit):
    rng = random.Random(alignment * 2 + best_fit)
    for _ in range(150):
        bufs = random_buffers(rng, rng.randint(1, 14))
        placement = greedy_by_size(bufs, alignment, best_fit=best_fit)
        want = reference_greedy(bufs, alignment, best_fit)
        assert placement.offsets == want, bufs
