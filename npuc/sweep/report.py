"""`npu-sweep report RESULTS_DIR`: an HTML page of a sweep's results: a Pareto plot for each
pair of objectives and, for each axis, the effect of its values on every metric."""

from __future__ import annotations

import base64
import html
import io
from itertools import combinations
from pathlib import Path
from typing import Any

from .metrics import METRICS
from .results import load

REPORT = "report.html"


def pareto_plot(frame: Any, x: str, y: str, colour_by: str = "target") -> bytes:
    """A PNG: every compiled point of x against y, coloured by `colour_by`, the Pareto front
    (over all the sweep's objectives) ringed."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 4.4), dpi=100)
    axes = figure.add_subplot()
    ok = frame[frame["status"] == "ok"]
    for name, group in ok.groupby(colour_by, sort=True):
        axes.scatter(group[x], group[y], s=22, alpha=0.75, label=str(name))
    front = ok[ok["pareto"]].sort_values(x)
    axes.scatter(
        front[x], front[y], s=90, facecolors="none", edgecolors="black", label="Pareto front"
    )
    axes.set_xlabel(f"{x} ({METRICS[x].goal}imise)")
    axes.set_ylabel(f"{y} ({METRICS[y].goal}imise)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    out = io.BytesIO()
    figure.savefig(out, format="png")
    return out.getvalue()


def effect_table(frame: Any, axis: str, metrics: list[str]) -> Any:
    """Per value of `axis`: points, points that compiled, and each metric's mean over them."""
    ok = frame[frame["status"] == "ok"]
    table = frame.groupby(axis, sort=True).size().to_frame("points")
    table["ok"] = ok.groupby(axis, sort=True).size().reindex(table.index).fillna(0).astype(int)
    means = ok.groupby(axis, sort=True)[metrics].mean()
    return table.join(means.add_prefix("mean "))


def write_report(folder: str | Path) -> Path:
    """RESULTS_DIR/report.html from results.csv and sweep.json."""
    folder = Path(folder)
    frame, meta = load(folder)
    metrics = [m for m in meta["metrics"] if m in frame.columns]
    objectives = meta["objectives"]
    parts = [
        "<!doctype html><meta charset='utf-8'>",
        f"<title>npu-sweep: {html.escape(meta['sweep'])}</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}</style>",
        f"<h1>npu-sweep: {html.escape(meta['sweep'])}</h1>",
        f"<p>{len(frame)} points ({meta['search']} search), "
        f"{int((frame['status'] == 'ok').sum())} compiled, "
        f"{int(frame['pareto'].sum())} on the Pareto front of "
        f"{', '.join(html.escape(o) for o in objectives)}.</p>",
        "<h2>Pareto plots</h2>",
    ]
    for x, y in combinations(objectives, 2):
        png = base64.b64encode(pareto_plot(frame, x, y)).decode("ascii")
        parts.append(f"<img alt='{x} against {y}' src='data:image/png;base64,{png}'>")
    parts.append("<h2>Pareto front</h2>")
    shown = [*meta["axes"], *metrics]
    parts.append(frame[frame["pareto"]][shown].to_html(index=False, float_format="{:.4g}".format))
    parts.append("<h2>Effect of each axis</h2>")
    for axis in meta["axes"]:
        if frame[axis].nunique() > 1:
            parts.append(f"<h3>{html.escape(axis)}</h3>")
            table = effect_table(frame, axis, metrics)
            parts.append(table.to_html(float_format="{:.4g}".format))
    failed = frame[frame["status"] != "ok"]
    if len(failed):
        parts.append("<h2>Points that failed</h2>")
        parts.append(failed[[*meta["axes"], "status", "error"]].to_html(index=False))
    path = folder / REPORT
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path
