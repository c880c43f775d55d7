"""The scheduler's greedy orders against a reference written from their documentation.

Kahn's algorithm picks, among the ready nodes, the least score, recomputed at every step:
"net" is (bytes allocated - bytes freed now, bytes allocated, file position) and "alloc"
is (allocated, net, position). A node frees its outputs nobody reads (not graph outputs)
and every input it is the last unscheduled reader of (not a graph output). `schedule`
keeps the best of several orders, so a greedy order that lost its way can stay unseen by
the peak tests; these tests pin each order.
"""

from __future__ import annotations

import random

import pytest

from npuc.passes.memory import schedule as scheduling
from npuc.passes.memory.schedule import Node


def reference_order(nodes: list[Node], sizes: dict[str, int], outs: list[str], key: str):
    producer = {t: i for i, n in enumerate(nodes) for t in n.outputs}
    readers: dict[str, set[int]] = {}
    for i, n in enumerate(nodes):
        for t in n.inputs:
            readers.setdefault(t, set()).add(i)
    done: set[int] = set()
    order: list[int] = []

    def score(i: int) -> tuple[int, int, int]:
        n = nodes[i]
        alloc = sum(sizes.get(t, 0) for t in n.outputs)
        freed = sum(sizes.get(t, 0) for t in n.outputs if t not in readers and t not in outs)
        freed += sum(
            sizes.get(t, 0) for t in set(n.inputs) if t not in outs and readers[t] - done == {i}
        )
        net = alloc - freed
        return (net, alloc, i) if key == "net" else (alloc, net, i)

    while len(order) < len(nodes):
        ready = [
            i
            for i in range(len(nodes))
            if i not in done and all(producer.get(t, -1) in done | {-1} for t in nodes[i].inputs)
        ]
        pick = min(ready, key=score)
        done.add(pick)
        order.append(pick)
    return order


def random_graph(rng: random.Random) -> tuple[list[Node], dict[str, int], list[str]]:
    nodes, sizes, tensors = [], {"in": rng.randint(1, 4000)}, ["in"]
    for i in range(rng.randint(1, 16)):
        k = rng.randint(1, min(3, len(tensors)))
        inputs = tuple(rng.sample(tensors, k))
        outputs = tuple(f"t{i}_{j}" for j in range(rng.randint(1, 2)))
        for t in outputs:
            sizes[t] = rng.randint(1, 4000)
        nodes.append(Node(f"n{i}", inputs, outputs))
        tensors += outputs
    rng.shuffle(nodes)  # file order need not be topological
    return nodes, sizes, [rng.choice(tensors[1:])]


@pytest.mark.parametrize("key", ["net", "alloc"])
def test_greedy_orders_pick_what_the_reference_picks(key):
    rng = random.Random(len(key))
    for _ in range(400):
        nodes, sizes, outs = random_graph(rng)
        got = scheduling._greedy_order(nodes, sizes, outs, key)
        assert got == reference_order(nodes, sizes, outs, key), (nodes, sizes, outs)
