"""Profiler outputs of a cycle-model `Profile`: a text table, JSON, an HTML page and a trace.

- `table(profile)`: the per-layer table for stdout;
- `to_json(profile)`: `total_cycles`, `inference_ms`, `clock_mhz`, `layers` (`name`,
  `cycles`, `macs`, `utilization`, `bytes_read`, `bytes_written`, ...) and totals;
- `html(profile)`: one self-contained page: a sortable table, an SVG bar chart of the
  cycles per layer and a timeline of the bytes each memory moves;
- `chrome_trace(profile)`: Chrome / Perfetto trace events, one track per engine.
"""

from __future__ import annotations

import html as _html
import json
from pathlib import Path
from typing import Any

from npuc.dialects.npu_isa import ENGINES

from .cycle_model import Profile

TIMELINE_BUCKETS = 100


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


def chrome_trace(profile: Profile) -> dict[str, Any]:
    """Trace event format: "X" events in microseconds at the target clock, one tid per engine."""
    us = 1.0 / profile.clock_mhz  # microseconds per cycle
    tids = {engine: i + 1 for i, engine in enumerate(ENGINES)}
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": profile.target}}
    ]
    for engine, tid in tids.items():
        events.append(
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": engine}}
        )
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


# --------------------------------------------------------------------------- HTML

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #eee; cursor: pointer; user-select: none; }
td:first-child, th:first-child { text-align: left; }
svg text { font-size: 10px; }
"""

_SCRIPT = """
document.querySelectorAll("table.sortable th").forEach((th, col) => {
  th.addEventListener("click", () => {
    const body = th.closest("table").tBodies[0];
    const rows = Array.from(body.rows);
    const up = th.dataset.order !== "up";
    th.dataset.order = up ? "up" : "down";
    const key = r => { const v = r.cells[col].dataset.v ?? r.cells[col].textContent;
                       const n = parseFloat(v); return isNaN(n) ? v : n; };
    rows.sort((a, b) => { const x = key(a), y = key(b);
                          return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1); });
    rows.forEach(r => body.appendChild(r));
  });
});
"""


def _esc(value: object) -> str:
    return _html.escape(str(value))


def _layer_table(profile: Profile) -> str:
    memories = list(profile.memories)
    head = ["layer", "cycles", "share", "MACs", "utilization"]
    head += [f"read {m} (B)" for m in memories] + [f"written {m} (B)" for m in memories]
    head += [f"{e} busy" for e in ENGINES]
    out = ['<table class="sortable" id="layers"><thead><tr>']
    out += [f"<th>{_esc(h)}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for layer in profile.layers:
        cells = [
            (layer.name, layer.name),
            (layer.cycles, layer.cycles),
            (f"{layer.share:.1%}", layer.share),
            (layer.macs, layer.macs),
            (f"{layer.utilization:.1%}", layer.utilization),
        ]
        cells += [(layer.bytes_read.get(m, 0),) * 2 for m in memories]
        cells += [(layer.bytes_written.get(m, 0),) * 2 for m in memories]
        cells += [(layer.busy.get(e, 0),) * 2 for e in ENGINES]
        out.append('<tr class="layer">')
        out += [f'<td data-v="{_esc(v)}">{_esc(text)}</td>' for text, v in cells]
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _bar_chart(profile: Profile) -> str:
    """Horizontal bars: cycles per layer."""
    row, left, width = 16, 160, 520
    peak = max((layer.cycles for layer in profile.layers), default=0) or 1
    height = row * len(profile.layers) + 20
    out = [
        f'<svg id="cycles-chart" xmlns="http://www.w3.org/2000/svg" width="{left + width + 90}"'
        f' height="{height}">'
    ]
    for i, layer in enumerate(profile.layers):
        y = 10 + i * row
        w = width * layer.cycles / peak
        out.append(f'<text x="{left - 4}" y="{y + 11}" text-anchor="end">{_esc(layer.name)}</text>')
        out.append(
            f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{row - 4}" '
            f'fill="#4a7fb5"><title>{_esc(layer.name)}: {layer.cycles} cycles</title></rect>'
        )
        out.append(f'<text x="{left + w + 4:.1f}" y="{y + 11}">{layer.cycles}</text>')
    out.append("</svg>")
    return "".join(out)


def memory_timeline(profile: Profile, buckets: int = TIMELINE_BUCKETS) -> dict[str, list[float]]:
    """Bytes each memory moves per time bucket (an instruction's bytes spread over its span)."""
    total = profile.total_cycles or 1
    size = total / buckets
    series = {m: [0.0] * buckets for m in profile.memories}
    for c in profile.instructions:
        moved: dict[str, int] = {}
        for d in (c.bytes_read, c.bytes_written):
            for m, n in d.items():
                moved[m] = moved.get(m, 0) + n
        span = max(c.cycles, 1)
        for m, n in moved.items():
            line = series.setdefault(m, [0.0] * buckets)
            first = min(int(c.start / size), buckets - 1)
            last = min(int(max(c.end - 1, c.start) / size), buckets - 1)
            for b in range(first, last + 1):
                overlap = min(c.end, (b + 1) * size) - max(c.start, b * size)
                line[b] += n * max(overlap, 0 if c.cycles else 1) / span
    return series


def _timeline_svg(profile: Profile) -> str:
    series = memory_timeline(profile)
    left, width, band = 80, 600, 60
    out = [
        f'<svg id="memory-timeline" xmlns="http://www.w3.org/2000/svg" '
        f'width="{left + width + 20}" height="{band * len(series) + 30}">'
    ]
    for i, (memory, values) in enumerate(series.items()):
        top = 10 + i * band
        peak = max(values) or 1.0
        step = width / len(values)
        points = [f"{left},{top + band - 10}"]
        for b, v in enumerate(values):
            y = top + band - 10 - (band - 20) * v / peak
            points += [f"{left + b * step:.1f},{y:.1f}", f"{left + (b + 1) * step:.1f},{y:.1f}"]
        points.append(f"{left + width},{top + band - 10}")
        out.append(
            f'<text x="{left - 4}" y="{top + band / 2}" text-anchor="end">{_esc(memory)}</text>'
        )
        out.append(
            f'<polygon points="{" ".join(points)}" fill="#d9822b" fill-opacity="0.7">'
            f"<title>{_esc(memory)}: peak {peak:.0f} B per bucket</title></polygon>"
        )
    axis = 10 + band * len(series)
    out.append(f'<text x="{left}" y="{axis + 12}">0</text>')
    out.append(
        f'<text x="{left + width}" y="{axis + 12}" text-anchor="end">'
        f"{profile.total_cycles} cycles</text></svg>"
    )
    return "".join(out)


def html(profile: Profile, title: str = "npuc profile") -> str:
    """A self-contained HTML report (no external resources)."""
    summary = (
        f"{profile.total_cycles} cycles, {profile.inference_ms:.3f} ms at "
        f"{profile.clock_mhz:g} MHz ({profile.inferences_per_s:.1f} inferences/s), "
        f"{profile.total_macs} MACs, utilization {profile.utilization:.1%}; busy "
        + ", ".join(f"{e} {profile.busy.get(e, 0)}" for e in ENGINES)
    )
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{_esc(title)}</title>'
        f"<style>{_STYLE}</style></head><body>"
        f"<h1>{_esc(title)}</h1><p>Target <b>{_esc(profile.target)}</b>: {_esc(summary)}</p>"
        f"<h2>Layers</h2><p>Click a column to sort.</p>{_layer_table(profile)}"
        f"<h2>Cycles per layer</h2>{_bar_chart(profile)}"
        f"<h2>Memory timeline</h2><p>Bytes read and written per memory over the "
        f"inference.</p>{_timeline_svg(profile)}"
        f"<script>{_SCRIPT}</script></body></html>"
    )


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
