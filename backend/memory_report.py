"""Checking a placement and reporting it next to its bounds (see docs/memory-planning.md)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from npuc.backend.memory_plan import (
    Buffer,
    Placement,
    PlacementError,
    aligned_size,
    check_alignment,
    effective_alignment,
    lower_bound,
    naive_size,
    plan,
    resolve_aliases,
)


def verify_placement(buffers: Sequence[Buffer], placement: Placement, alignment: int = 64) -> None:
    """Raise PlacementError unless the placement is sound.

    Checks: every buffer has an offset; placed (root) offsets are aligned;
    views sit at their root's offset plus their offset and inside it; no two
    roots live at a common step share a byte; everything fits in total_size.
    """
    check_alignment(alignment)
    res = resolve_aliases(buffers)
    offs = placement.offsets
    for b in buffers:
        if b.name not in offs:
            raise PlacementError(f"{b.name}: no offset")
    for b in res.roots:
        a = effective_alignment(b, alignment)
        if offs[b.name] < 0 or offs[b.name] % a:
            raise PlacementError(f"{b.name}: offset {offs[b.name]} not {a}-aligned")
        if offs[b.name] + aligned_size(b, alignment) > placement.total_size:
            raise PlacementError(f"{b.name}: ends past the arena ({placement.total_size} bytes)")
    roots = {b.name: b for b in res.roots}
    for view, (root, off) in res.views.items():
        if offs[view] != offs[root] + off:
            raise PlacementError(f"{view}: offset {offs[view]} != {root} at {offs[root]} + {off}")
    by_name = {b.name: b for b in buffers}
    for view, (root, _off) in res.views.items():
        v = by_name[view]
        if not offs[root] <= offs[view] <= offs[view] + v.size <= offs[root] + roots[root].size:
            raise PlacementError(f"{view}: outside its root {root}")
    rs = sorted(res.roots, key=lambda b: b.start)
    for i, a in enumerate(rs):
        sa = aligned_size(a, alignment)
        for b in rs[i + 1 :]:
            if b.start > a.end:
                break
            sb = aligned_size(b, alignment)
            if sa and sb and offs[a.name] < offs[b.name] + sb and offs[b.name] < offs[a.name] + sa:
                raise PlacementError(
                    f"{a.name} [{a.start},{a.end}] and {b.name} [{b.start},{b.end}] "
                    "overlap in bytes"
                )


@dataclass(frozen=True)
class MemoryReport:
    """Planned size next to the lower bound and the naive sum, for one region."""

    region: str
    planned: int
    lower_bound: int
    naive: int
    buffers: int
    views: int
    method: str
    seconds: float

    def format(self) -> str:
        def kib(n: int) -> str:
            return f"{n / 1024:.1f} KiB"

        gap = (
            100.0 * (self.planned - self.lower_bound) / self.lower_bound
            if self.lower_bound
            else 0.0
        )
        return (
            f"{self.region}: planned {kib(self.planned)} (lower bound {kib(self.lower_bound)}, "
            f"+{gap:.1f}%; naive {kib(self.naive)}); {self.buffers} buffers, {self.views} views; "
            f"{self.method}, {self.seconds * 1000:.1f} ms"
        )


def plan_with_report(
    buffers: Sequence[Buffer], alignment: int = 64, *, region: str = "activations", **kwargs: object
) -> tuple[Placement, MemoryReport]:
    """`plan` plus its report; the placement is verified before returning."""
    t0 = time.perf_counter()
    placement = plan(buffers, alignment, **kwargs)  # type: ignore[arg-type]
    seconds = time.perf_counter() - t0
    verify_placement(buffers, placement, alignment)
    res = resolve_aliases(buffers)
    report = MemoryReport(
        region,
        placement.total_size,
        lower_bound(buffers, alignment),
        naive_size(buffers, alignment),
        len(res.roots),
        len(res.views),
        placement.method,
        seconds,
    )
    return placement, report
