"""NAME.memory.png: a planned module's live memory over its schedule, drawn with matplotlib.

One filled step curve per liveness region (activations first), dashed lines at the
activations region's planned size and lower bound, and an x axis labelled by layer: a
tick where each layer's first step is, named where the name has room.
"""

from __future__ import annotations

import io

from npuc.passes.memory.ir import ACTIVATIONS, PlannedModule
from npuc.passes.memory.usage import liveness_regions

WIDTH, HEIGHT, DPI = 12.0, 6.0, 100
MAX_LABELS = 60  # layer names on the x axis; more would overlap
LABEL_CHARS = 24  # longer names are cut, to leave the plot its height
COLOURS = ["#4682b4", "#e68c28", "#5aaa5a", "#aa50a0"]


def layer_ticks(planned: PlannedModule, max_labels: int = MAX_LABELS) -> list[tuple[int, str]]:
    """(first step, layer name) of each layer; the name is "" where it would crowd the one
    before it (fewer than steps / max_labels steps apart)."""
    gap = len(planned.steps) / max_labels
    ticks: list[tuple[int, str]] = []
    seen: set[str] = set()
    last = -gap
    for step in planned.steps:
        if step.layer and step.layer not in seen:
            seen.add(step.layer)
            named = step.index - last >= gap
            label = step.layer if len(step.layer) <= LABEL_CHARS else step.layer[:LABEL_CHARS] + "…"
            ticks.append((step.index, label if named else ""))
            last = step.index if named else last
    return ticks


def plot_profile(planned: PlannedModule, title: str = "") -> bytes:
    """PNG bytes of the live bytes (KiB) of each liveness region against the layers."""
    import matplotlib

    matplotlib.use("Agg")  # no display: draw to memory
    from matplotlib.figure import Figure

    figure = Figure(figsize=(WIDTH, HEIGHT), dpi=DPI)
    axes = figure.add_subplot()
    steps = len(planned.steps)
    for i, region in enumerate(liveness_regions(planned)):
        kib = [n / 1024 for n in planned.live_profile(region)]
        colour = COLOURS[i % len(COLOURS)]
        if kib:
            xs = list(range(len(kib) + 1))
            axes.stairs(kib, xs, fill=True, color=colour, alpha=0.35)
            axes.stairs(kib, xs, color=colour, label=f"live bytes: {region}")
    act = planned.regions.get(ACTIVATIONS)
    if act is not None:
        tight = act.lower_bound is not None and act.size - act.lower_bound < 0.03 * act.size
        axes.axhline(act.size / 1024, color="#c81e1e", linestyle="--", linewidth=1.2)
        axes.annotate(
            f"planned {act.size / 1024:.1f} KiB"
            + (f" (lower bound {act.lower_bound / 1024:.1f} KiB)" if tight else ""),
            (1.0, act.size / 1024),
            xycoords=("axes fraction", "data"),
            ha="right",
            va="bottom",
            color="#c81e1e",
        )
        if act.lower_bound is not None and not tight:
            axes.axhline(act.lower_bound / 1024, color="#282828", linestyle=":", linewidth=1.2)
            axes.annotate(
                f"lower bound {act.lower_bound / 1024:.1f} KiB",
                (1.0, act.lower_bound / 1024),
                xycoords=("axes fraction", "data"),
                ha="right",
                va="top",
                color="#282828",
            )
    ticks = layer_ticks(planned)
    axes.set_xticks([s + 0.5 for s, _ in ticks], [name for _, name in ticks])
    named = sum(1 for _, name in ticks if name)
    axes.tick_params(axis="x", labelrotation=90, labelsize=6 if named > 30 else 8)
    axes.set_xlim(0, max(steps, 1))
    axes.set_ylim(bottom=0)
    axes.set_xlabel("layer (in schedule order)")
    axes.set_ylabel("KiB")
    axes.grid(axis="y", color="#e1e1e1")
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="upper left")
    if title:
        axes.set_title(title)
    figure.tight_layout()
    out = io.BytesIO()
    figure.savefig(out, format="png", metadata={"Software": None})
    return out.getvalue()
