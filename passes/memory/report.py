"""Checking a placement and reporting it next to its bounds (see docs/memory-planning.md).

`verify_placement` and `plan_with_report` work on `Buffer`s; `format_memory_report`
and `memory_json` describe a planned module (read back with `memory_ir.read_plan`).
"""

from __future__ import annotations

import bisect
import heapq
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _json_str
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target as OutputTarget

from npuc.passes.memory.ir import PlannedModule, PlannedValue
from npuc.passes.memory.plan import (
    Buffer,
    Placement,
    PlacementError,
    Resolved,
    aligned_size,
    check_alignment,
    effective_alignment,
    naive_size,
    peak_of_roots,
    plan_resolved,
    resolve_aliases,
)
from npuc.target import Target

from .usage import liveness_regions, region_contents


def verify_placement(buffers: Sequence[Buffer], placement: Placement, alignment: int = 64) -> None:
    """Raise PlacementError unless the placement is sound.

    Checks: every buffer has an offset; placed (root) offsets are aligned;
    views sit at their root's offset plus their offset and inside it; no two
    roots live at a common step share a byte; everything fits in total_size.
    """
    check_alignment(alignment)
    verify_resolved(buffers, resolve_aliases(buffers), placement, alignment)


def verify_resolved(
    buffers: Sequence[Buffer], res: Resolved, placement: Placement, alignment: int
) -> None:
    """`verify_placement` with the buffers' `resolve_aliases` already computed."""
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
    for view, (root, off) in res.views.items():
        if offs[view] != offs[root] + off:
            raise PlacementError(f"{view}: offset {offs[view]} != {root} at {offs[root]} + {off}")
    # A view lies inside its root: resolve_aliases refuses one that leaves its parent.
    _check_disjoint(res.roots, offs, alignment)


def _check_disjoint(roots: Sequence[Buffer], offs: Mapping[str, int], alignment: int) -> None:
    """No two roots live at a common step share a byte: a sweep over start steps keeps the
    live roots' byte ranges (pairwise disjoint so far) sorted by offset, and checks each
    new root against its neighbours there: O(n log n) plus list moves, where comparing
    every pair of live roots is quadratic in long-lived buffers."""
    rs = sorted(roots, key=lambda b: b.start)
    lows: list[int] = []  # live roots by offset: their offsets, ends and positions in rs
    highs: list[int] = []
    which: list[int] = []
    expiry: list[tuple[int, int]] = []  # (end step, offset) of the live roots
    for j, second in enumerate(rs):
        size = aligned_size(second, alignment)
        if not size:
            continue
        while expiry and expiry[0][0] < second.start:
            _, low = heapq.heappop(expiry)
            at = bisect.bisect_left(lows, low)  # live roots are disjoint: offsets distinct
            del lows[at], highs[at], which[at]
        low, high = offs[second.name], offs[second.name] + size
        at = bisect.bisect_left(lows, low)
        clash = [
            k for k in (at - 1, at) if 0 <= k < len(lows) and lows[k] < high and low < highs[k]
        ]
        if clash:
            first = rs[which[clash[0]]]
            raise PlacementError(
                f"{first.name} [{first.start},{first.end}] and "
                f"{second.name} [{second.start},{second.end}] "
                "overlap in bytes"
            )
        lows.insert(at, low)
        highs.insert(at, high)
        which.insert(at, j)
        heapq.heappush(expiry, (second.end, low))


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
    check_alignment(alignment)
    res = resolve_aliases(buffers)
    placement = plan_resolved(res, alignment, **kwargs)  # type: ignore[arg-type]
    seconds = time.perf_counter() - t0
    verify_resolved(buffers, res, placement, alignment)
    report = MemoryReport(
        region,
        placement.total_size,
        peak_of_roots(res.roots, alignment),
        naive_size(buffers, alignment),
        len(res.roots),
        len(res.views),
        placement.method,
        seconds,
    )
    return placement, report


# --------------------------------------------------------------------------- planned modules


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB"


def memory_usage(planned: PlannedModule, target: Target) -> list[tuple[str, int, int]]:
    """(memory, bytes used by the regions placed there, capacity) for each memory used."""
    used: dict[str, int] = {}
    for r in planned.regions.values():
        used[r.memory] = used.get(r.memory, 0) + r.size
    return [(m, n, target.memory(m).size) for m, n in used.items()]


def format_memory_report(
    planned: PlannedModule, target: Target | None = None, contents: Mapping[str, str] = {}
) -> str:
    """Regions next to their bounds and what they hold, memory use, and the per-step
    live-memory profile. `contents`: region -> what it holds (default: `region_contents`)."""
    contents = contents or region_contents(planned)
    lines = [f"{'region':<12} {'memory':<10} {'planned':>12} {'lower bound':>12} {'naive':>12}"]
    for r in planned.regions.values():
        lb = "" if r.lower_bound is None else _kib(r.lower_bound)
        naive = "" if r.naive is None else _kib(r.naive)
        lines.append(f"{r.name:<12} {r.memory:<10} {_kib(r.size):>12} {lb:>12} {naive:>12}")
    lines += ["", "what each region holds:"]
    lines += [f"  {name}: {text}" for name, text in contents.items()]
    if target is not None:
        lines.append("")
        for memory, used, capacity in memory_usage(planned, target):
            verdict = "fits" if used <= capacity else "DOES NOT FIT"
            lines.append(
                f"memory {memory}: {_kib(used)} of {_kib(capacity)} ({used} of {capacity} bytes)"
                f": {verdict}"
            )
    regions = liveness_regions(planned)
    profiles = {r: planned.live_profile(r) for r in regions}
    lines += ["", "live bytes per step:"]
    width = max([len(s.op) for s in planned.steps] + [2])
    lwidth = max([len(s.layer) for s in planned.steps] + [5])
    lines.append(
        f"{'step':>5}  {'op':<{width}}  {'layer':<{lwidth}}  "
        + "  ".join(f"{r:>12}" for r in regions)
    )
    for s in planned.steps:
        cells = "  ".join(f"{profiles[r][s.index]:>12}" for r in regions)
        lines.append(f"{s.index:>5}  {s.op:<{width}}  {s.layer:<{lwidth}}  {cells}")
    return "\n".join(lines) + "\n"


def memory_json(
    planned: PlannedModule, target: Target | None = None, contents: Mapping[str, str] = {}
) -> dict[str, object]:
    """The report as JSON-ready data (fields: docs/memory-planning.md, "Reports")."""
    contents = contents or region_contents(planned)
    regions = liveness_regions(planned)
    profiles = {r: planned.live_profile(r) for r in regions}

    def value(v: PlannedValue) -> dict[str, object]:
        return {
            "name": v.label,
            "kind": v.kind,
            "op": v.op,
            "region": v.region,
            "offset": v.offset,
            "size": v.size,
            "live": list(v.live) if v.live is not None else None,
        }

    data: dict[str, object] = {
        "format": "npuc-memory-report",
        "version": 1,
        "regions": [
            {
                "name": r.name,
                "memory": r.memory,
                "size": r.size,
                "alignment": r.alignment,
                "lower_bound": r.lower_bound,
                "naive": r.naive,
                "holds": contents.get(r.name, ""),
            }
            for r in planned.regions.values()
        ],
        "inputs": [value(v) for v in planned.inputs],
        "outputs": [value(v) for v in planned.outputs],
        "buffers": [value(v) for v in planned.values],
        "profile": [
            {
                "step": s.index,
                "op": s.op,
                "layer": s.layer,
                "live_bytes": {r: profiles[r][s.index] for r in regions},
            }
            for s in planned.steps
        ],
    }
    if target is not None:
        data["target"] = target.name
        data["memories"] = [
            {"name": m, "used": used, "capacity": cap, "fits": used <= cap}
            for m, used, cap in memory_usage(planned, target)
        ]
    return data


def memory_json_text(
    planned: PlannedModule, target: Target | None = None, contents: Mapping[str, str] = {}
) -> str:
    """`memory_json` as text: exactly `json.dumps(..., indent=1) + "\\n"`, several times faster."""
    parts: list[str] = []
    data = memory_json(planned, target, contents)
    try:
        _json_parts(data, "\n", parts)
    except TypeError:  # a value the fast writer does not know: let json decide
        return json.dumps(data, indent=1) + "\n"
    return "".join(parts) + "\n"


def _json_parts(obj: object, newline: str, out: list[str]) -> None:
    """Append `obj` as `json.dumps(obj, indent=1)` writes it; `newline` is "\\n" + indent."""
    if isinstance(obj, str):
        out.append(_json_str(obj))
    elif obj is None or isinstance(obj, bool):
        out.append("null" if obj is None else "true" if obj else "false")
    elif isinstance(obj, int):
        out.append(int.__repr__(obj))
    elif isinstance(obj, dict):
        if not obj:
            out.append("{}")
            return
        inner, sep = newline + " ", "{"
        for key, value in obj.items():
            if not isinstance(key, str):
                raise TypeError(key)
            _json_item(f"{sep}{inner}{_json_str(key)}: ", value, inner, out)
            sep = ","
        out.append(newline + "}")
    elif isinstance(obj, list | tuple):
        if not obj:
            out.append("[]")
            return
        inner, sep = newline + " ", "["
        for value in obj:
            _json_item(sep + inner, value, inner, out)
            sep = ","
        out.append(newline + "]")
    else:
        raise TypeError(obj)


def _json_item(head: str, value: object, newline: str, out: list[str]) -> None:
    kind = type(value)  # strings and ints are most items: no call for them
    if isinstance(value, str) and kind is str:
        out.append(head + _json_str(value))
    elif isinstance(value, int) and kind is int:
        out.append(head + int.__repr__(value))
    else:
        out.append(head)
        _json_parts(value, newline, out)


# --------------------------------------------------------------------------- npu-opt targets


@dataclass(frozen=True)
class MemoryReportTarget(OutputTarget):
    """`npu-opt -t memory-report{target=T}`: the text report of a planned module."""

    name = "memory-report"
    target: str = ""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from npuc.passes.memory.ir import read_plan
        from npuc.target import load_target

        hw = load_target(self.target) if self.target else None
        output.write(format_memory_report(read_plan(module), hw))


@dataclass(frozen=True)
class MemoryJsonTarget(OutputTarget):
    """`npu-opt -t memory-json{target=T}`: the JSON report of a planned module."""

    name = "memory-json"
    target: str = ""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from npuc.passes.memory.ir import read_plan
        from npuc.target import load_target

        hw = load_target(self.target) if self.target else None
        output.write(memory_json_text(read_plan(module), hw))
