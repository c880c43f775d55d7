"""When the hill climber of `improve` restarts, as docs/memory-planning.md states it: a
rejected move after more than max(50, 4n) moves without a new best (or since the last
restart). The placer is replaced by a scripted one, so the moves' outcomes are known."""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable

import pytest

from npuc.passes.memory import plan as plan_module
from npuc.passes.memory.plan import Buffer, Placement, improve

SIZE = 64


def _disjoint(n: int) -> list[Buffer]:
    """Buffers that never live at once: the lower bound is one buffer, far below a stack."""
    return [Buffer(f"b{i}", SIZE, 2 * i, 2 * i + 1) for i in range(n)]


def _stacked(bufs: list[Buffer]) -> Placement:
    return Placement({b.name: i * SIZE for i, b in enumerate(bufs)}, len(bufs) * SIZE)


def _script(monkeypatch, move: Callable[[list[int], list[int]], int | None]) -> list[int]:
    """Replace the placer: a full placement (the start or a restart) stacks the buffers; a
    move's candidate order gets `move(order, stacked offsets)`'s arena, or is rejected
    (None). Returns the move counts at which full placements happened."""
    full: list[int] = []
    moves = 0

    class Scripted(plan_module._Problem):
        def placed(self, order):
            offsets = [i * SIZE for i in range(self.n)]
            full.append(moves)
            return plan_module.Placed(offsets, self.n * SIZE, [self.n * SIZE] * self.n)

        def place_after(self, order, kept, base, *, cutoff=math.inf, same_from=None):
            nonlocal moves
            offsets = [i * SIZE for i in range(self.n)]
            moves += 1
            arena = move(list(order), offsets)
            return None if arena is None else plan_module.Placed(offsets, arena, base.totals)

    monkeypatch.setattr(plan_module, "_Problem", Scripted)
    return full


def _restarts(monkeypatch, n: int, better_at: dict[int, int], iterations: int) -> list[int]:
    """The move numbers (1-based) after which `improve` re-placed a perturbed order from
    scratch. Every move is rejected except those in `better_at` (move -> arena it gives)."""
    count = iter(range(1, iterations + 1))
    full = _script(monkeypatch, lambda order, offsets: better_at.get(next(count)))
    bufs = _disjoint(n)
    improve(_stacked(bufs), bufs, 16, max_iterations=iterations, seed=5, exhaustive_limit=0)
    assert next(count, None) is None  # every iteration made one move
    return full[1:]  # the first is the start


@pytest.mark.parametrize(("n", "patience"), [(4, 50), (20, 80)])
def test_restarts_after_patience_rejected_moves(monkeypatch, n, patience):
    got = _restarts(monkeypatch, n, {}, 3 * (patience + 1) + 10)
    assert got == [patience + 1, 2 * (patience + 1), 3 * (patience + 1)]


def test_a_new_best_restarts_the_count(monkeypatch):
    n, patience = 4, 50
    got = _restarts(monkeypatch, n, {10: (n - 1) * SIZE}, 200)
    assert got == [10 + patience + 1, 10 + 2 * (patience + 1), 10 + 3 * (patience + 1)]


def test_a_sideways_move_does_not_restart_the_count(monkeypatch):
    n, patience = 4, 50
    got = _restarts(monkeypatch, n, {10: n * SIZE}, 120)
    assert got == [patience + 1, 2 * (patience + 1)]


def _one_swap(a: list[int], b: list[int]) -> bool:
    diff = [k for k in range(len(a)) if a[k] != b[k]]
    return len(diff) == 2 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]


def _one_move(a: list[int], b: list[int]) -> bool:
    return any(
        a[:i] + a[i + 1 :] == b[:j] + b[j + 1 :] and a[i] == b[j]
        for i in range(len(a))
        for j in range(len(b))
        if i != j
    )


def test_a_move_swaps_two_buffers_or_moves_one(monkeypatch):
    n, patience = 8, 50
    candidates: list[list[int]] = []
    _script(monkeypatch, lambda order, offsets: candidates.append(order))
    bufs = _disjoint(n)
    improve(_stacked(bufs), bufs, 16, max_iterations=patience, seed=1, exhaustive_limit=0)
    start = list(range(n))  # the stacked incumbent's offset order
    assert len(candidates) == patience
    swaps = [c for c in candidates if _one_swap(start, c)]
    moves = [c for c in candidates if _one_move(start, c)]
    assert all(c in swaps or c in moves for c in candidates)
    assert [c for c in swaps if c not in moves] and [c for c in moves if c not in swaps]


def _random_problem(rng: random.Random, aligned: bool) -> plan_module._Problem:
    """2-40 buffers of mixed sizes and short overlapping lives (some 256-byte aligned)."""
    bufs = []
    for i in range(rng.randint(2, 40)):
        start, size = rng.randint(0, 30), rng.choice([8, 64, 100, 640, 4096])
        bufs.append(Buffer(f"b{i}", size, start, start + rng.randint(0, 8)))
        if aligned and rng.random() < 0.3:
            bufs[-1] = dataclasses.replace(bufs[-1], alignment=256)
    return plan_module._Problem(bufs, 64)


def test_placing_after_a_kept_prefix_is_placing_the_whole_order():
    rng = random.Random(3)
    for case in range(150):
        problem = _random_problem(rng, aligned=case % 3 == 0)
        n = problem.n
        first = rng.sample(range(n), n)
        kept = rng.randint(0, n)
        second = first[:kept] + rng.sample(first[kept:], n - kept)
        whole = problem.placed(second)
        resumed = problem.place_after(second, kept, problem.placed(first))
        assert resumed == whole
        assert (whole.offsets, whole.total) == problem.place(second)
        cutoff = rng.randint(whole.total // 2, whole.total)
        got = problem.place_after(second, kept, problem.placed(first), cutoff=cutoff)
        expected = problem.place(second, cutoff=cutoff)
        assert (got is None) == (expected is None)
        assert got is None or (got.offsets, got.total) == expected


def test_placing_a_changed_window_is_placing_the_whole_order():
    """`place_after` with `same_from`: the roots after the changed positions keep base's
    offsets unless a conflict placed before them moved; the result is still exactly the
    whole order's placement, with or without a cutoff."""
    rng = random.Random(11)
    shortcuts = 0
    for case in range(300):
        problem = _random_problem(rng, aligned=case % 3 == 0)
        n = problem.n
        first = rng.sample(range(n), n)
        i, j = sorted(rng.sample(range(n), 2))
        second = list(first)
        if case % 2:
            second[i], second[j] = second[j], second[i]
        else:
            second.insert(j, second.pop(i))
        base = problem.placed(first)
        whole = problem.placed(second)
        got = problem.place_after(second, i, base, same_from=j + 1)
        assert got == whole
        shortcuts += got is not None and got.offsets is base.offsets
        cutoff = rng.randint(whole.total // 2, whole.total)
        got = problem.place_after(second, i, base, cutoff=cutoff, same_from=j + 1)
        expected = problem.place(second, cutoff=cutoff)
        assert (got is None) == (expected is None)
        assert got is None or (got.offsets, got.total) == expected
    assert shortcuts  # some windows moved nothing: base's placement was the answer


def test_search_work_is_bounded_by_placements(monkeypatch):
    """`max_placements` bounds the roots the search re-places, whatever the time: moves stop
    once it is reached, well before `max_iterations`."""
    rng = random.Random(0)  # an instance whose search does not reach the lower bound
    sizes, starts = [64, 640, 4096, 100, 2000], [rng.randint(0, 60) for _ in range(120)]
    bufs = [
        Buffer(f"b{i}", rng.choice(sizes), s, s + rng.randint(0, 20)) for i, s in enumerate(starts)
    ]
    placed_roots = []
    original = plan_module._Problem.place_after

    def counting(self, order, kept, base, **kwargs):
        placed_roots.append(self.n - kept)
        return original(self, order, kept, base, **kwargs)

    monkeypatch.setattr(plan_module._Problem, "place_after", counting)
    start = Placement({b.name: i * 4096 for i, b in enumerate(bufs)}, len(bufs) * 4096)
    improve(start, bufs, 16, max_iterations=5000, max_placements=3000, seed=4, exhaustive_limit=0)
    limited = list(placed_roots)
    assert 3000 <= sum(limited) < 3000 + len(bufs)
    placed_roots.clear()
    improve(start, bufs, 16, max_iterations=5000, max_placements=10**9, seed=4, exhaustive_limit=0)
    assert len(placed_roots) > len(limited)
    assert placed_roots[: len(limited)] == limited  # the same moves, up to the bound
