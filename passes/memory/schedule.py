"""Memory-aware scheduling of an op DAG and the live ranges it induces.

A graph is a list of `Node`s naming the tensors they read and write; `sizes`
gives each tensor's bytes (tensors absent from `sizes`, e.g. weights in
another region, are ignored). A tensor is live from the step of its producer
(step 0 for graph inputs) to the step of its last reader, inclusive; graph
outputs stay live to the last step. The peak of live bytes in an order is the
lower bound that order imposes on the arena, so the scheduler picks the
order with the lowest peak among a few candidates, the given order included.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from npuc.passes.memory.plan import (
    Buffer,
    PlacementError,
    align_up,
    check_alignment,
    lower_bound,
    peak_of_intervals,
)


@dataclass(frozen=True)
class Node:
    """One op: reads `inputs`, writes `outputs` (tensor names)."""

    name: str
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()


def _producers(nodes: Sequence[Node]) -> dict[str, int]:
    prod: dict[str, int] = {}
    for i, n in enumerate(nodes):
        for t in n.outputs:
            if t in prod:
                raise PlacementError(f"tensor {t!r} written by {nodes[prod[t]].name} and {n.name}")
            prod[t] = i
    return prod


def is_topological(nodes: Sequence[Node], order: Sequence[int]) -> bool:
    """True if `order` is a permutation of the nodes with producers before readers."""
    if sorted(order) != list(range(len(nodes))):
        return False
    prod = _producers(nodes)
    pos = {n: k for k, n in enumerate(order)}
    return all(pos[prod[t]] < pos[i] for i, n in enumerate(nodes) for t in n.inputs if t in prod)


def live_ranges(
    nodes: Sequence[Node],
    order: Sequence[int],
    sizes: Mapping[str, int],
    graph_outputs: Sequence[str] = (),
) -> list[Buffer]:
    """One `Buffer` per sized tensor with its live interval in `order`."""
    if not is_topological(nodes, order):
        raise PlacementError("order is not a topological order of the graph")
    start, end = _intervals(nodes, order, sizes, graph_outputs)
    return [Buffer(t, sizes[t], start[t], end[t]) for t in start]


def _intervals(
    nodes: Sequence[Node],
    order: Sequence[int],
    sizes: Mapping[str, int],
    graph_outputs: Sequence[str],
) -> tuple[dict[str, int], dict[str, int]]:
    """(first step, last step) of each sized tensor in `order`."""
    last = max(len(order) - 1, 0)
    start: dict[str, int] = {}
    end: dict[str, int] = {}
    for step, i in enumerate(order):
        n = nodes[i]
        for t in n.inputs:
            if t in sizes:
                start.setdefault(t, 0)  # graph input: live from the beginning
                end[t] = max(end.get(t, 0), step)
        for t in n.outputs:
            if t in sizes:
                start[t] = step
                end[t] = max(end.get(t, step), step)
    for t in graph_outputs:
        if t in sizes:
            start.setdefault(t, 0)
            end[t] = last
    return start, end


def peak_bytes(
    nodes: Sequence[Node],
    order: Sequence[int],
    sizes: Mapping[str, int],
    graph_outputs: Sequence[str] = (),
    alignment: int = 1,
) -> int:
    """Peak of live bytes over the steps of `order` (the arena lower bound)."""
    return lower_bound(live_ranges(nodes, order, sizes, graph_outputs), alignment)


class _Graph:
    """What the greedy orders share: readers, dependencies and static score parts."""

    def __init__(
        self, nodes: Sequence[Node], sizes: Mapping[str, int], graph_outputs: Sequence[str]
    ) -> None:
        prod = _producers(nodes)
        outs = set(graph_outputs)
        self.readers: dict[str, int] = {}
        self.readers_of: dict[str, list[int]] = {}
        self.deps = [0] * len(nodes)
        self.users: list[list[int]] = [[] for _ in nodes]
        self.inputs: list[tuple[str, ...]] = []
        for i, n in enumerate(nodes):
            uniq = tuple(set(n.inputs))
            self.inputs.append(uniq)
            for t in uniq:
                self.readers[t] = self.readers.get(t, 0) + 1
                self.readers_of.setdefault(t, []).append(i)
                if t in prod:
                    self.deps[i] += 1
                    self.users[prod[t]].append(i)
        # Bytes an input frees once its reader is its last one (0 for graph outputs).
        self.frees = {t: 0 if t in outs else sizes.get(t, 0) for t in self.readers}
        self.alloc = [sum(sizes.get(t, 0) for t in n.outputs) for n in nodes]
        # Outputs nobody reads are dead right after their step.
        self.freed = [
            sum(sizes.get(t, 0) for t in n.outputs if t not in self.readers and t not in outs)
            + sum(self.frees[t] for t in self.inputs[i] if self.readers[t] == 1)
            for i, n in enumerate(nodes)
        ]


def _greedy_order(
    nodes: Sequence[Node],
    sizes: Mapping[str, int],
    graph_outputs: Sequence[str],
    key: str,
    graph: _Graph | None = None,
) -> list[int]:
    """Kahn's algorithm choosing among ready nodes by a memory score.

    key "net": the smallest (allocated - freed) bytes, ties by smallest
    allocation; "alloc": smallest allocation (the step's transient peak), ties
    by net; "lifo": the most recently readied node (finishes a branch before
    starting another). Remaining ties go to file order.
    """
    g = graph or _Graph(nodes, sizes, graph_outputs)
    readers, deps = dict(g.readers), list(g.deps)
    readers_of, users, inputs, frees, alloc = g.readers_of, g.users, g.inputs, g.frees, g.alloc
    # freed[i]: bytes node i frees now (its inputs down to their last reader count)
    freed = list(g.freed)
    by_net = key == "net"

    def score(i: int) -> tuple[int, int, int]:
        net = alloc[i] - freed[i]
        return (net, alloc[i], i) if by_net else (alloc[i], net, i)

    ready = [i for i in range(len(nodes)) if deps[i] == 0]
    order: list[int] = []
    if key == "lifo":
        while ready:
            pick = ready.pop()
            order.append(pick)
            for t in inputs[pick]:
                readers[t] -= 1
            for u in users[pick]:
                deps[u] -= 1
                if deps[u] == 0:
                    ready.append(u)
        if len(order) != len(nodes):
            raise PlacementError("graph has a cycle")
        return order
    # Scores only fall (when a tensor is down to its last reader), so a heap with
    # a fresh entry pushed at every change, and stale entries skipped, gives the
    # same pick as a minimum over the ready nodes.
    is_ready = [False] * len(nodes)
    heap: list[tuple[tuple[int, int, int], int]] = []
    for i in ready:
        is_ready[i] = True
        heap.append((score(i), i))
    heapq.heapify(heap)
    push, pop = heapq.heappush, heapq.heappop
    while heap:
        entry, pick = pop(heap)
        if not is_ready[pick] or entry != score(pick):
            continue
        is_ready[pick] = False
        order.append(pick)
        for t in inputs[pick]:
            left = readers[t] = readers[t] - 1
            if left == 1:
                rs = readers_of[t]
                for r in rs:
                    freed[r] += frees[t]
                for r in rs:
                    if is_ready[r]:
                        push(heap, (score(r), r))
        for u in users[pick]:
            deps[u] -= 1
            if deps[u] == 0:
                is_ready[u] = True
                push(heap, (score(u), u))
    if len(order) != len(nodes):
        raise PlacementError("graph has a cycle")
    return order


def _peak(
    nodes: Sequence[Node],
    order: Sequence[int],
    sizes: Mapping[str, int],
    graph_outputs: Sequence[str],
    alignment: int,
) -> int:
    """`peak_bytes` of a topological `order`, without building buffers."""
    check_alignment(alignment)
    start, end = _intervals(nodes, order, sizes, graph_outputs)
    if any(sizes[t] < 0 or start[t] > end[t] for t in start):  # let live_ranges raise
        return peak_bytes(nodes, order, sizes, graph_outputs, alignment)
    return peak_of_intervals((start[t], end[t], align_up(sizes[t], alignment)) for t in start)


def schedule(
    nodes: Sequence[Node],
    sizes: Mapping[str, int],
    graph_outputs: Sequence[str] = (),
    alignment: int = 1,
) -> list[int]:
    """A topological order (node indices) with a low peak of live bytes.

    Tries the given order and three greedy orders and returns the one with the
    lowest peak (ties keep the given order), so it is never worse than the
    given order.
    """
    graph = _Graph(nodes, sizes, graph_outputs)
    given = list(range(len(nodes)))
    if not is_topological(nodes, given):
        given = _greedy_order(nodes, sizes, graph_outputs, "lifo", graph)
    best, best_peak = given, _peak(nodes, given, sizes, graph_outputs, alignment)
    for key in ("net", "alloc", "lifo"):
        order = _greedy_order(nodes, sizes, graph_outputs, key, graph)
        peak = _peak(nodes, order, sizes, graph_outputs, alignment)
        if peak < best_peak:
            best, best_peak = order, peak
    return best
