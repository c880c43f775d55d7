"""Tokens: which earlier instructions each instruction waits for.

An instruction waits for the latest earlier writer of bytes it reads or writes
(RAW, WAW) and for the earlier readers of bytes it writes since then (WAR). Waits
already implied (same engine: in order; or through another wait) are dropped, so
DMA and compute overlap wherever the bytes allow (double buffering stays visible).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from npuc.dialects.npu_isa import ENGINES, Instruction, TensorRef
from npuc.dialects.npu_rules import overlaps, runs

MAX_SPANS = 1 << 10  # runs of a view that may cover earlier accesses


@dataclass
class _Access:
    index: int
    ref: TensorRef
    write: bool
    lo: int
    hi: int
    engine: int
    seq: int  # position on its engine
    contiguous: bool


def _covers(w: _Access, r: TensorRef, lo: int, hi: int) -> bool:
    """`w` writes every byte of `r` (checked cheaply: the same view, or a contiguous writer)."""
    if w.contiguous:
        return w.lo <= lo and hi <= w.hi
    return w.lo == lo and w.hi == hi and w.ref == r


class _Log:
    """One region's accesses in program order, with their byte ranges as arrays for search."""

    def __init__(self) -> None:
        self.entries: list[_Access] = []
        self.los = np.zeros(256, np.int64)
        self.his = np.zeros(256, np.int64)
        self.writes = np.zeros(256, bool)
        self.engines = np.zeros(256, np.int64)
        self.seqs = np.zeros(256, np.int64)
        self.contiguous = np.zeros(256, bool)
        self.compacted = 0

    def append(self, a: _Access) -> None:
        n = len(self.entries)
        if n == len(self.los):
            for name in ("los", "his", "writes", "engines", "seqs", "contiguous"):
                setattr(self, name, np.resize(getattr(self, name), 2 * n))
        self.los[n], self.his[n], self.writes[n] = a.lo, a.hi, a.write
        self.engines[n], self.seqs[n], self.contiguous[n] = a.engine, a.seq, a.contiguous
        self.entries.append(a)
        if n + 1 > 2 * self.compacted + 256:
            self.entries = _compact(self.entries)
            self.compacted = k = len(self.entries)
            self.los[:k] = [x.lo for x in self.entries]
            self.his[:k] = [x.hi for x in self.entries]
            self.writes[:k] = [x.write for x in self.entries]
            self.engines[:k] = [x.engine for x in self.entries]
            self.seqs[:k] = [x.seq for x in self.entries]
            self.contiguous[:k] = [x.contiguous for x in self.entries]

    def conflicts(self, ref: TensorRef, write: bool, clock: list[int]) -> set[int]:
        """Earlier instructions `ref` must wait for, newest first until a writer covers it.

        Accesses that already happen before (`clock`) are not checked: everything they
        conflict with happened before them. A covering writer still ends the search.
        """
        found: set[int] = set()
        lo, hi = ref.offset, ref.end
        n = len(self.entries)
        writes, los, his = self.writes[:n], self.los[:n], self.his[:n]
        # the accesses that can matter: overlapping ranges, not two reads, and either not
        # already happened before or a write that may cover `ref` (and end the search:
        # `_covers` of a contiguous writer, or of the same view); the others are skipped
        candidates = (los < hi) & (his > lo)
        if not write:
            candidates &= writes
        contiguous = self.contiguous[:n]
        may_cover = writes & np.where(
            contiguous, (los <= lo) & (his >= hi), (los == lo) & (his == hi)
        )
        candidates &= may_cover | (np.asarray(clock)[self.engines[:n]] <= self.seqs[:n])
        for i in np.flatnonzero(candidates)[::-1]:
            a = self.entries[i]
            if clock[a.engine] > a.seq:
                if a.write and _covers(a, ref, lo, hi):
                    break
                continue
            if not overlaps(a.ref, ref):
                continue
            found.add(a.index)
            if a.write and _covers(a, ref, lo, hi):
                break
        return found


class _Covered:
    """Disjoint sorted byte intervals [lo, hi)."""

    def __init__(self) -> None:
        self.los: list[int] = []
        self.his: list[int] = []

    def contains(self, lo: int, hi: int) -> bool:
        i = bisect_right(self.los, lo) - 1
        return i >= 0 and hi <= self.his[i]

    def add(self, lo: int, hi: int) -> None:
        i = bisect_left(self.his, lo)  # the first interval ending at or after lo
        j = bisect_right(self.los, hi)  # past the last interval starting at or before hi
        if i < j:
            lo, hi = min(lo, self.los[i]), max(hi, self.his[j - 1])
        self.los[i:j], self.his[i:j] = [lo], [hi]


def _spans(t: TensorRef) -> list[tuple[int, int]] | None:
    """The view's bytes as intervals (None: too many to list)."""
    r = runs(t)
    if r is None or len(r[0]) > MAX_SPANS:
        return None
    starts, length = r
    return [(s, s + length) for s in starts.tolist()]


def _compact(log: list[_Access]) -> list[_Access]:
    """The log without accesses whose every byte a later write wrote: whoever conflicts with
    one conflicts with that write, which waited for it."""
    covered = _Covered()
    keep = []
    for a in reversed(log):
        if covered.contains(a.lo, a.hi):
            continue  # its whole byte range written later: dropped, and it adds no bytes
        spans = [(a.lo, a.hi)] if a.contiguous else _spans(a.ref)
        if spans is None or not all(covered.contains(lo, hi) for lo, hi in spans):
            keep.append(a)
        if a.write and spans is not None:
            for lo, hi in spans:
                covered.add(lo, hi)
    keep.reverse()
    return keep


def with_deps(instructions: Sequence[Instruction]) -> list[Instruction]:
    """The instructions with minimal `deps` (constants are never written: no waits)."""
    engines = {e: i for i, e in enumerate(ENGINES)}
    logs: defaultdict[str, _Log] = defaultdict(_Log)
    clocks: list[list[int]] = []
    seq: list[int] = []
    last_on: dict[int, int] = {}
    issued = [0] * len(ENGINES)
    out = []
    for index, inst in enumerate(instructions):
        e = engines[inst.engine]
        candidates: set[int] = set()
        accesses = [(t, False) for t in inst.read()] + [(t, True) for t in inst.written()]
        clock = list(clocks[last_on[e]]) if e in last_on else [0] * len(ENGINES)
        for t, write in accesses:
            if t.region != "constants":
                candidates |= logs[t.region].conflicts(t, write, clock)
        deps = []
        for d in sorted(candidates, reverse=True):
            de = engines[instructions[d].engine]
            if clock[de] > seq[d]:
                continue  # already happens before
            deps.append(d)
            clock = [max(x, y) for x, y in zip(clock, clocks[d], strict=True)]
        seq.append(issued[e])
        issued[e] += 1
        clock[e] = issued[e]
        clocks.append(clock)
        last_on[e] = index
        for t, write in accesses:
            if t.region == "constants":
                continue
            access = _Access(index, t, write, t.offset, t.end, e, seq[index], t.is_contiguous())
            logs[t.region].append(access)
        out.append(
            Instruction(inst.op, inst.operands, inst.params, tuple(sorted(deps)), inst.layer)
        )
    return out
