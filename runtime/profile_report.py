"""Profiler outputs of a cycle-model `Profile`: a text table, JSON, an HTML page and a trace.

- `table(profile)`: the per-layer table for stdout;
- `to_json(profile)`: `total_cycles`, `inference_ms`, `clock_mhz`, `layers` (`name`,
  `cycles`, `macs`, `utilization`, `bytes_read`, `bytes_written`, ...) and totals;
- `html(profile)` (profile_html.py): one self-contained page: a sortable table, stacked bars
  of the cycles per layer and a timeline of the bytes each memory moves;
- `chrome_trace(profile)`: Chrome / Perfetto trace events, one track per engine, a track of
  the layers and, where the memory plan is known, a counter of the SRAM in use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from npuc.dialects.npu_isa import ENGINES

from .cycle_model import Profile, owned_spans
from .profile_html import html, memory_timeline

__all__ = ["chrome_trace", "html", "memory_timeline", "table", "to_json", "write_reports"]


def _total(d: dict[str, int]) -> int:
    return sum(d.values())


# --------------------------------------------------------------------------- text and JSON


def table(profile: Profile) -> str:
    """A fixed-width table: one row per layer, then the totals."""
    memories = list(profile.memories)
    head = ["layer", "cycles", "share", "MACs", "util"]
    head += [f"rd {m}" for m in memories] + [f"wr {m}" for m in memories]
    head += [f"{e} busy" for e in ENGINES]
    rows = []
    for layer in profile.layers:
        row = [
            layer.name,
            f"{layer.cycles}",
            f"{layer.share:.1%}",
            f"{layer.macs}",
            f"{layer.utilization:.1%}",
        ]
        row += [f"{layer.bytes_read.get(m, 0)}" for m in memories]
        row += [f"{layer.bytes_written.get(m, 0)}" for m in memories]
        row += [f"{layer.busy.get(e, 0)}" for e in ENGINES]
        rows.append(row)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        return "  ".join([first, *(c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))])

    out = [line(head), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]
    out.append(
        f"total: {profile.total_cycles} cycles, {profile.total_macs} MACs, "
        f"utilization {profile.utilization:.1%}, {profile.inference_ms:.3f} ms at "
        f"{profile.clock_mhz:g} MHz ({profile.inferences_per_s:.1f} inferences/s) on "
        f"{profile.target}; busy: " + ", ".join(f"{e} {profile.busy.get(e, 0)}" for e in ENGINES)
    )
    out += profile.share.lines(profile.host)
    return "\n".join(out)


def to_json(profile: Profile) -> dict[str, Any]:
    """The profile as JSON-ready data (docs/cycle-model.md lists the fields)."""
    layers = [
        {
            "name": layer.name,
            "cycles": layer.cycles,
            "macs": layer.macs,
            "utilization": layer.utilization,
            "bytes_read": _total(layer.bytes_read),
            "bytes_written": _total(layer.bytes_written),
            "bytes_read_per_memory": dict(layer.bytes_read),
            "bytes_written_per_memory": dict(layer.bytes_written),
            "busy_cycles": {e: layer.busy.get(e, 0) for e in ENGINES},
            "share": layer.share,
            "instructions": layer.instructions,
            "start_cycle": layer.start,
            "end_cycle": layer.end,
            "timeline_cycles": {e: layer.timeline.get(e, 0) for e in ENGINES},
            **({"sram_in_use": profile.sram.get(layer.name)} if profile.sram else {}),
        }
        for layer in profile.layers
    ]
    return {
        "target": profile.target,
        "clock_mhz": profile.clock_mhz,
        "macs_per_cycle": profile.macs_per_cycle,
        "total_cycles": profile.total_cycles,
        "inference_ms": profile.inference_ms,
        "inferences_per_s": profile.inferences_per_s,
        "total_macs": profile.total_macs,
        "utilization": profile.utilization,
        "busy_cycles": {e: profile.busy.get(e, 0) for e in ENGINES},
        "memories_bytes_per_cycle": dict(profile.memories),
        "npu": {"layers": profile.share.npu_layers, "macs": profile.share.npu_macs},
        "host": {
            "cpu": profile.host,
            "layers": profile.share.host_layers,
            "macs": profile.share.host_macs,
            "ops": [
                {"layer": layer, "op": op.name, "macs": op.macs, "reason": op.reason}
                for layer, op in profile.share.host
            ],
        },
        "layers": layers,
    }


LAYERS_TRACK = "layers"


def _sram_counter(ts: float, used: int) -> dict[str, Any]:
    return {"name": "SRAM in use", "ph": "C", "pid": 1, "ts": ts, "args": {"bytes": used}}


def chrome_trace(profile: Profile) -> dict[str, Any]:
    """Trace event format: "X" events in microseconds at the target clock, one tid per engine,
    one for the layers' spans; "C" events count the SRAM in use where the plan is known."""
    us = 1.0 / profile.clock_mhz  # microseconds per cycle
    tids = {engine: i + 1 for i, engine in enumerate([LAYERS_TRACK, *ENGINES])}
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": profile.target}}
    ]
    for engine, tid in tids.items():
        events.append(
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": engine}}
        )
        events.append(
            {
                "name": "thread_sort_index",
                "ph": "M",
                "pid": 1,
                "tid": tid,
                "args": {"sort_index": tid},
            }
        )
    spans = owned_spans(profile.instructions)
    for layer, start, end in spans:
        events.append(
            {
                "name": layer,
                "cat": "layer",
                "ph": "X",
                "pid": 1,
                "tid": tids[LAYERS_TRACK],
                "ts": start * us,
                "dur": (end - start) * us,
                "args": {"cycles": end - start},
            }
        )
    if profile.sram:
        for layer, start, _ in spans:
            if layer in profile.sram:
                events.append(_sram_counter(start * us, profile.sram[layer]))
        events.append(_sram_counter(profile.total_cycles * us, 0))
    for c in profile.instructions:
        events.append(
            {
                "name": f"{c.op} #{c.index}",
                "cat": c.layer,
                "ph": "X",
                "pid": 1,
                "tid": tids[c.engine],
                "ts": c.start * us,
                "dur": c.cycles * us,
                "args": {
                    "layer": c.layer,
                    "cycles": c.cycles,
                    "macs": c.macs,
                    "compute_cycles": c.compute_cycles,
                    "memory_cycles": c.memory_cycles,
                    "bytes_read": c.bytes_read,
                    "bytes_written": c.bytes_written,
                },
            }
        )
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def write_reports(profile: Profile, outdir: str | Path, name: str = "profile") -> dict[str, Path]:
    """Writes NAME.json, NAME.html, NAME.txt and trace.json into outdir; returns the paths."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": out / f"{name}.json",
        "html": out / f"{name}.html",
        "table": out / f"{name}.txt",
        "trace": out / "trace.json",
    }
    from npuc.output_files import write_file

    write_file(paths["json"], json.dumps(to_json(profile), indent=2) + "\n")
    write_file(paths["html"], html(profile, f"{name}: npuc profile"))
    write_file(paths["table"], table(profile) + "\n")
    write_file(paths["trace"], json.dumps(chrome_trace(profile)) + "\n")
    return paths
