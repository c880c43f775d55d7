"""NAME.profile.html: one self-contained page (no external resources) of a cycle-model profile.

- a table of the layers (runs on, cycles, what bounds them, MACs, SRAM in use, bytes per
  memory) that sorts by any column: numbers by value, largest first; names in natural order;
- a bar per layer, its cycles stacked by the engine that owns them: compute, DMA that no
  compute hides, host;
- a timeline of the bytes each memory moves and of the SRAM in use, over bands naming the
  layer that runs then.
"""

from __future__ import annotations

import html as _html

from npuc.dialects.npu_isa import ENGINES

from .cycle_model import Profile
from .layer_table import LayerRow, layer_rows

TIMELINE_BUCKETS = 100
PARTS = (("compute", "compute_cycles", "#4a7fb5"), ("exposed DMA", "dma_cycles", "#d9822b"))
PARTS += (("host", "host_cycles", "#5a9e5a"),)

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #eee; cursor: pointer; user-select: none; }
th[data-order="up"]::after { content: " \\25B2"; }
th[data-order="down"]::after { content: " \\25BC"; }
td.text, th.text { text-align: left; }
svg text { font-size: 10px; }
.legend span { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; }
"""

# A numeric column sorts largest first on the first click, a text column A to Z (numbers
# inside names in numeric order: b2 before b10); a second click reverses.
_SCRIPT = """
const collator = new Intl.Collator(undefined, {numeric: true});
document.querySelectorAll("table.sortable th").forEach((th, col) => {
  th.addEventListener("click", () => {
    const body = th.closest("table").tBodies[0];
    const rows = Array.from(body.rows);
    const numeric = th.dataset.type === "number";
    const first = numeric ? "down" : "up";
    const order = th.dataset.order ? (th.dataset.order === "up" ? "down" : "up") : first;
    th.closest("tr").querySelectorAll("th").forEach(h => delete h.dataset.order);
    th.dataset.order = order;
    const sign = order === "up" ? 1 : -1;
    const key = r => r.cells[col].dataset.v ?? r.cells[col].textContent;
    rows.sort((a, b) => sign * (numeric ? Number(key(a)) - Number(key(b))
                                          : collator.compare(key(a), key(b))));
    rows.forEach(r => body.appendChild(r));
  });
});
"""


def _esc(value: object) -> str:
    return _html.escape(str(value))


def _layer_table(profile: Profile, rows: list[LayerRow]) -> str:
    memories = list(profile.memories)
    sram = any(r.sram_in_use is not None for r in rows)
    head: list[tuple[str, str]] = [("#", "number"), ("layer", "text"), ("op", "text")]
    head += [("runs on", "text"), ("cycles", "number"), ("share", "number")]
    head += [("compute", "number"), ("exposed DMA", "number"), ("host", "number")]
    head += [("bound", "text"), ("MACs", "number"), ("utilization", "number")]
    head += [("SRAM in use (B)", "number")] if sram else []
    head += [(f"read {m} (B)", "number") for m in memories]
    head += [(f"written {m} (B)", "number") for m in memories]
    out = ['<table class="sortable" id="layers"><thead><tr>']
    out += [f'<th data-type="{kind}" class="{kind}">{_esc(h)}</th>' for h, kind in head]
    out.append("</tr></thead><tbody>")
    for r in rows:
        plain = (r.index, r.name, r.op, r.runs_on, r.cycles)
        cells: list[tuple[object, object]] = [(v, v) for v in plain]
        cells.append((f"{r.cycles_share:.1%}", r.cycles_share))
        cells += [(v, v) for v in (r.compute_cycles, r.dma_cycles, r.host_cycles, r.bound, r.macs)]
        cells.append((f"{r.utilization:.1%}", r.utilization))
        cells += [(r.sram_in_use, r.sram_in_use or 0)] if sram else []
        cells += [(r.bytes_read.get(m, 0),) * 2 for m in memories]
        cells += [(r.bytes_written.get(m, 0),) * 2 for m in memories]
        out.append('<tr class="layer">')
        out += [
            f'<td class="{kind}" data-v="{_esc(v)}">{_esc(text)}</td>'
            for (text, v), (_, kind) in zip(cells, head, strict=True)
        ]
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _legend(parts: tuple[tuple[str, str, str], ...]) -> str:
    items = "".join(f'<span style="background:{c}"></span>{_esc(n)}' for n, _, c in parts)
    return f'<p class="legend">{items}</p>'


def _bar_chart(rows: list[LayerRow]) -> str:
    """Horizontal bars: each layer's cycles, stacked by the engine that owns them."""
    row, left, width = 16, 160, 520
    peak = max((r.cycles for r in rows), default=0) or 1
    height = row * len(rows) + 20
    out = [
        f'<svg id="cycles-chart" xmlns="http://www.w3.org/2000/svg" width="{left + width + 90}"'
        f' height="{height}">'
    ]
    for i, r in enumerate(rows):
        y = 10 + i * row
        out.append(f'<text x="{left - 4}" y="{y + 11}" text-anchor="end">{_esc(r.name)}</text>')
        x = float(left)
        for label, attr, colour in PARTS:
            cycles = getattr(r, attr)
            if not cycles:
                continue
            w = width * cycles / peak
            out.append(
                f'<rect class="{attr}" x="{x:.1f}" y="{y + 2}" width="{w:.1f}" '
                f'height="{row - 4}" fill="{colour}"><title>{_esc(r.name)}: {cycles} cycles '
                f"{label}</title></rect>"
            )
            x += w
        out.append(f'<text x="{x + 4:.1f}" y="{y + 11}">{r.cycles}</text>')
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


def _band(values: list[float], left: float, top: float, width: float, band: float) -> str:
    """The polygon points of a step curve of `values` in a band (its peak at the top)."""
    peak = max(values, default=0.0) or 1.0
    step = width / max(len(values), 1)
    base = top + band - 10
    points = [f"{left},{base}"]
    for b, v in enumerate(values):
        y = base - (band - 20) * v / peak
        points += [f"{left + b * step:.1f},{y:.1f}", f"{left + (b + 1) * step:.1f},{y:.1f}"]
    points.append(f"{left + width},{base}")
    return " ".join(points)


def _timeline_svg(profile: Profile) -> str:
    series: dict[str, list[float]] = memory_timeline(profile)
    titles = {m: f"{m}: bytes moved" for m in series}
    if profile.sram:  # SRAM in use, per layer over its span of the timeline
        total = profile.total_cycles or 1
        in_use = [0.0] * TIMELINE_BUCKETS
        for layer in profile.layers:
            used = profile.sram.get(layer.name)
            first = int(layer.start * TIMELINE_BUCKETS / total)
            last = int(max(layer.end - 1, layer.start) * TIMELINE_BUCKETS / total)
            for b in range(first, min(last, TIMELINE_BUCKETS - 1) + 1):
                in_use[b] = max(in_use[b], float(used or 0))
        series["SRAM in use"] = in_use
        titles["SRAM in use"] = "SRAM in use: bytes"
    left, width, band, names = 110, 900, 60, 120
    lanes = len(series)
    height = band * lanes + names + 30
    out = [
        f'<svg id="memory-timeline" xmlns="http://www.w3.org/2000/svg" '
        f'width="{left + width + 20}" height="{height}">'
    ]
    total = profile.total_cycles or 1
    bottom = 10 + band * lanes
    for i, layer in enumerate(profile.layers):  # a band per layer, with its name below
        if layer.end <= layer.start:
            continue
        x0, x1 = left + width * layer.start / total, left + width * layer.end / total
        shade = "#f2f2f2" if i % 2 else "#fafafa"
        out.append(
            f'<rect class="layer-band" x="{x0:.1f}" y="10" width="{max(x1 - x0, 0.5):.1f}" '
            f'height="{band * lanes}" fill="{shade}"><title>{_esc(layer.name)}: cycles '
            f"{layer.start}-{layer.end}</title></rect>"
        )
        if x1 - x0 >= 6:  # room for a label
            x = (x0 + x1) / 2 + 3
            out.append(
                f'<text class="layer-name" x="{x:.1f}" y="{bottom + 4}" '
                f'transform="rotate(90 {x:.1f} {bottom + 4})">{_esc(layer.name[:20])}</text>'
            )
    for i, (memory, values) in enumerate(series.items()):
        top = 10 + i * band
        colour = "#4a7fb5" if memory == "SRAM in use" else "#d9822b"
        out.append(
            f'<text x="{left - 4}" y="{top + band / 2}" text-anchor="end">{_esc(memory)}</text>'
            f'<polygon points="{_band(values, left, top, width, band)}" fill="{colour}" '
            f'fill-opacity="0.7"><title>{_esc(titles[memory])}, peak '
            f"{max(values, default=0):.0f}</title></polygon>"
        )
    axis = bottom + names
    out.append(f'<text x="{left}" y="{axis + 12}">0</text>')
    out.append(
        f'<text x="{left + width}" y="{axis + 12}" text-anchor="end">'
        f"{profile.total_cycles} cycles</text></svg>"
    )
    return "".join(out)


def html(profile: Profile, title: str = "npuc profile", rows: list[LayerRow] | None = None) -> str:
    """The page; `rows` (layer_table.layer_rows with the program) add what each layer does."""
    rows = rows if rows is not None else layer_rows(profile)
    summary = (
        f"{profile.total_cycles} cycles, {profile.inference_ms:.3f} ms at "
        f"{profile.clock_mhz:g} MHz ({profile.inferences_per_s:.1f} inferences/s), "
        f"{profile.total_macs} MACs, utilization {profile.utilization:.1%}; busy "
        + ", ".join(f"{e} {profile.busy.get(e, 0)}" for e in ENGINES)
    )
    if profile.sram:
        summary += f"; peak SRAM in use {max(profile.sram.values())} bytes"
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{_esc(title)}</title>'
        f"<style>{_STYLE}</style></head><body>"
        f"<h1>{_esc(title)}</h1><p>Target <b>{_esc(profile.target)}</b>: {_esc(summary)}</p>"
        f"<h2>Layers</h2><p>Click a column to sort (numbers largest first), again to "
        f"reverse; # is the order of execution.</p>{_layer_table(profile, rows)}"
        f"<h2>Cycles per layer</h2>{_legend(PARTS)}{_bar_chart(rows)}"
        f"<h2>Memory timeline</h2><p>Bytes each memory moves over the inference"
        f"{' and the SRAM in use' if profile.sram else ''}; the bands below name the layer "
        f"running then.</p>{_timeline_svg(profile)}"
        f"<script>{_SCRIPT}</script></body></html>"
    )
