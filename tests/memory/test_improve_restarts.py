"""When the hill climber of `improve` restarts, as docs/memory-planning.md states it: a
rejected move after more than max(50, 4n) moves without a new best (or since the last
restart). The placer is replaced by a scripted one, so the moves' outcomes are known."""

from __future__ import annotations

import math

import pytest

from npuc.passes.memory import plan as plan_module
from npuc.passes.memory.plan import Buffer, Placement, improve

SIZE = 64


def _disjoint(n: int) -> list[Buffer]:
    """Buffers that never live at once: the lower bound is one buffer, far below a stack."""
    return [Buffer(f"b{i}", SIZE, 2 * i, 2 * i + 1) for i in range(n)]


def _stacked(bufs: list[Buffer]) -> Placement:
    return Placement({b.name: i * SIZE for i, b in enumerate(bufs)}, len(bufs) * SIZE)


def _restarts(monkeypatch, n: int, better_at: dict[int, int], iterations: int) -> list[int]:
    """The move numbers (1-based) after which `improve` re-placed a perturbed order from
    scratch. Every move is rejected except those in `better_at` (move -> arena it gives)."""
    restarts: list[int] = []
    moves = 0

    class Scripted(plan_module._Problem):
        def place(self, order, *, best_fit=True, cutoff=math.inf):
            nonlocal moves
            stacked = ([i * SIZE for i in range(self.n)], self.n * SIZE)
            if cutoff == math.inf:  # the start, or a restart
                if moves:
                    restarts.append(moves)
                return stacked
            moves += 1
            return (stacked[0], better_at[moves]) if moves in better_at else None

    monkeypatch.setattr(plan_module, "_Problem", Scripted)
    bufs = _disjoint(n)
    improve(_stacked(bufs), bufs, 16, max_iterations=iterations, seed=5, exhaustive_limit=0)
    assert moves == iterations
    return restarts


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
