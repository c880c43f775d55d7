"""`ValueAliases.root`: the value whose bytes a view finally takes, remembered along the
way. Views only attach to roots, so chains grow at the top (a tile assembled in place of
a tile assembled in place ...); whatever the order of attaching and asking, the root
found is the end of the value's parent chain."""

from __future__ import annotations

import itertools
import random

from npuc.passes.memory.reuse import ValueAliases, ValueState
from npuc.passes.memory.rules import Rule


def _walk(aliases: ValueAliases, v):
    while aliases.vals[v].parent is not None:
        v = aliases.vals[v].parent
    return v


def test_roots_follow_chains_as_they_grow():
    rng = random.Random(7)
    for _ in range(20):
        aliases = ValueAliases(16)
        names = [f"v{i}" for i in range(rng.randint(2, 400))]
        for name in names:  # names stand for the SSA values: the planner only hashes them
            aliases.vals[name] = ValueState(name, name, 64, "activations", False, None)  # type: ignore[arg-type]
        roots = list(names)
        for _ in range(3 * len(names)):
            if rng.random() < 0.4 and len(roots) > 1:
                child, parent = rng.sample(roots, 2)  # a root becomes a view of another root
                aliases._attach(child, parent, 0, Rule.TILE)  # type: ignore[arg-type]
                roots.remove(child)
            v = rng.choice(names)
            assert aliases.root(v) == _walk(aliases, v)  # type: ignore[arg-type]
        assert all(aliases.root(v) == _walk(aliases, v) for v in names)  # type: ignore[arg-type]
        assert {aliases.root(v) for v in names} == set(roots)  # type: ignore[arg-type]


def test_a_long_chain_is_walked_once():
    """A chain of 2000 views, each attached on top of the last, then every value asked
    for its root from the bottom up: the roots found on the first walk are remembered
    (walking parent by parent took 2000 * 2001 / 2 steps)."""
    aliases = ValueAliases(16)
    names = [f"v{i}" for i in range(2000)]
    for name in names:
        aliases.vals[name] = ValueState(name, name, 64, "activations", False, None)  # type: ignore[arg-type]
    for below, above in itertools.pairwise(names):
        aliases._attach(below, above, 0, Rule.TILE)  # type: ignore[arg-type]
    steps = 0

    class Counting(dict):
        def __getitem__(self, key):
            nonlocal steps
            steps += 1
            return super().__getitem__(key)

    aliases.vals = Counting(aliases.vals)
    assert all(aliases.root(v) == names[-1] for v in names)  # type: ignore[arg-type]
    assert steps < 10 * len(names)
