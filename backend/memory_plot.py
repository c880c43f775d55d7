"""A PNG of a planned module's live memory per step, drawn with Pillow.

One filled step curve per liveness region (activations first), with dashed
horizontal lines at the activations region's planned size and lower bound.
"""

from __future__ import annotations

import io

from PIL import Image, ImageDraw, ImageFont

from npuc.passes.memory.ir import ACTIVATIONS, PlannedModule
from npuc.passes.memory.report import liveness_regions

WIDTH, HEIGHT = 960, 480
LEFT, RIGHT, TOP, BOTTOM = 90, 20, 40, 50
COLOURS = [(70, 130, 180), (230, 140, 40), (90, 170, 90), (170, 80, 160)]


def _dashed(draw: ImageDraw.ImageDraw, y: float, x0: int, x1: int, fill: tuple) -> None:
    for x in range(x0, x1, 12):
        draw.line([(x, y), (min(x + 7, x1), y)], fill=fill, width=2)


def plot_profile(planned: PlannedModule, title: str = "") -> bytes:
    """PNG bytes of live bytes (KiB) against schedule steps."""
    image = Image.new("RGB", (WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    regions = liveness_regions(planned)
    profiles = {r: planned.live_profile(r) for r in regions}
    act = planned.regions.get(ACTIVATIONS)
    marks = [act.size, act.lower_bound or 0] if act is not None else []
    top = max([1, *marks, *(max(p, default=0) for p in profiles.values())])
    steps = max(len(planned.steps), 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x_of(step: float) -> float:
        return LEFT + plot_w * step / steps

    def y_of(n: float) -> float:
        return TOP + plot_h * (1 - n / (top * 1.08))

    for k in range(6):
        n = top * 1.08 * k / 5
        y = y_of(n)
        draw.line([(LEFT, y), (WIDTH - RIGHT, y)], fill=(225, 225, 225))
        draw.text((4, y - 6), f"{n / 1024:.1f} KiB", fill="black", font=font)
    for k in range(0, steps + 1, max(1, steps // 10)):
        draw.text((x_of(k) - 6, HEIGHT - BOTTOM + 6), str(k), fill="black", font=font)
    for i, region in enumerate(regions):
        colour = COLOURS[i % len(COLOURS)]
        points = [(x_of(0), y_of(0))]
        for s, n in enumerate(profiles[region]):
            points += [(x_of(s), y_of(n)), (x_of(s + 1), y_of(n))]
        points.append((x_of(len(profiles[region])), y_of(0)))
        light = tuple(c + (255 - c) * 2 // 3 for c in colour)
        if len(points) > 2:
            draw.polygon(points, fill=light, outline=colour)
        draw.text((LEFT + 10 + 160 * i, 8), f"live bytes: {region}", fill=colour, font=font)
    if act is not None:
        _dashed(draw, y_of(act.size), LEFT, WIDTH - RIGHT, (200, 30, 30))
        draw.text(
            (WIDTH - RIGHT - 220, y_of(act.size) - 14),
            f"planned {act.size / 1024:.1f} KiB",
            fill=(200, 30, 30),
            font=font,
        )
        if act.lower_bound is not None:
            _dashed(draw, y_of(act.lower_bound), LEFT, WIDTH - RIGHT, (40, 40, 40))
            draw.text(
                (WIDTH - RIGHT - 220, y_of(act.lower_bound) + 4),
                f"lower bound {act.lower_bound / 1024:.1f} KiB",
                fill=(40, 40, 40),
                font=font,
            )
    draw.line(
        [(LEFT, TOP), (LEFT, HEIGHT - BOTTOM), (WIDTH - RIGHT, HEIGHT - BOTTOM)],
        fill="black",
        width=1,
    )
    draw.text((WIDTH // 2 - 20, HEIGHT - 18), "step", fill="black", font=font)
    if title:
        draw.text((WIDTH // 2 - 4 * len(title), 24), title, fill="black", font=font)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False)
    return out.getvalue()
