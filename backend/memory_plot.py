"""NAME.memory.png: a planned module's live memory over its schedule, drawn with Pillow.

One filled step curve per liveness region (activations first), dashed lines at the
activations region's planned size and lower bound, and an x axis labelled by layer: a
tick where each layer's first step is, named where the name has room. (Drawn with Pillow
rather than matplotlib: importing matplotlib alone took longer than Vela's whole
compilation of MobileNetV2.)
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Sequence

from npuc.passes.memory.ir import ACTIVATIONS, PlannedModule
from npuc.passes.memory.usage import liveness_regions

WIDTH, HEIGHT = 1200, 600  # pixels
MAX_LABELS = 60  # layer names on the x axis; more would overlap
LABEL_CHARS = 24  # longer names are cut, to leave the plot its height
COLOURS = ["#4682b4", "#e68c28", "#5aaa5a", "#aa50a0"]
FILL_ALPHA = 90  # of 255: overlapping regions stay visible
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 34, 150  # margins around the axes
PLANNED, BOUND, GRID, INK = "#c81e1e", "#282828", "#e1e1e1", "#000000"
Y_TICKS = 6  # about this many labelled KiB levels


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


def nice_step(top: float, count: int = Y_TICKS) -> float:
    """A 1, 2 or 5 times a power of ten step that cuts 0..top into about `count` parts."""
    if top <= 0:
        return 1.0
    rough = top / count
    power = 10 ** math.floor(math.log10(rough))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= rough)


def plot_profile(planned: PlannedModule, title: str = "") -> bytes:
    """PNG bytes of the live bytes (KiB) of each liveness region against the layers."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=12)
    small = ImageFont.load_default(size=9)
    steps = max(len(planned.steps), 1)
    curves = [
        (region, [n / 1024 for n in planned.live_profile(region)])
        for region in liveness_regions(planned)
    ]
    act = planned.regions.get(ACTIVATIONS)
    levels = [k for _, kib in curves for k in kib]
    if act is not None:
        levels.append(act.size / 1024)
    top = max(levels, default=0.0) * 1.05 or 1.0
    x0, x1, y0, y1 = LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM

    def px(step: float) -> float:
        return x0 + (x1 - x0) * step / steps

    def py(kib: float) -> float:
        return y1 - (y1 - y0) * kib / top

    image = Image.new("RGBA", (WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(image)
    step = nice_step(top)
    for i in range(int(top / step) + 1):
        y = py(i * step)
        draw.line([(x0, y), (x1, y)], fill=GRID)
        label = f"{i * step:g}"
        draw.text((x0 - 6, y), label, fill=INK, font=font, anchor="rm")
    for i, (_, kib) in enumerate(curves):
        if not kib:
            continue
        colour = COLOURS[i % len(COLOURS)]
        outline = _stairs(kib, px, py)
        layer = Image.new("RGBA", image.size, (0, 0, 0, 0))
        fill = (*Image.new("RGB", (1, 1), colour).getpixel((0, 0)), FILL_ALPHA)
        ImageDraw.Draw(layer).polygon([(px(0), py(0)), *outline, (px(len(kib)), py(0))], fill=fill)
        image.alpha_composite(layer)
        draw.line(outline, fill=colour, width=2)
    if act is not None:
        tight = act.lower_bound is not None and act.size - act.lower_bound < 0.03 * act.size
        _dashed(draw, py(act.size / 1024), x0, x1, PLANNED, 8)
        text = f"planned {act.size / 1024:.1f} KiB"
        if tight and act.lower_bound is not None:
            text += f" (lower bound {act.lower_bound / 1024:.1f} KiB)"
        draw.text((x1 - 4, py(act.size / 1024) - 3), text, fill=PLANNED, font=font, anchor="rd")
        if act.lower_bound is not None and not tight:
            y = py(act.lower_bound / 1024)
            _dashed(draw, y, x0, x1, BOUND, 2)
            text = f"lower bound {act.lower_bound / 1024:.1f} KiB"
            draw.text((x1 - 4, y + 3), text, fill=BOUND, font=font, anchor="ra")
    draw.rectangle([x0, y0, x1, y1], outline=INK)
    ticks = layer_ticks(planned)
    named = sum(1 for _, name in ticks if name)
    label_font = small if named > 30 else font
    for s, name in ticks:
        x = px(s + 0.5)
        draw.line([(x, y1), (x, y1 + 4)], fill=INK)
        if name:
            _vertical_text(image, name, x, y1 + 6, label_font)
    draw.text(
        ((x0 + x1) / 2, HEIGHT - 6), "layer (in schedule order)", fill=INK, font=font, anchor="md"
    )
    _vertical_text(image, "KiB", 10, (y0 + y1) / 2, font, centred=True)
    _legend(
        draw,
        [(region, COLOURS[i % len(COLOURS)]) for i, (region, kib) in enumerate(curves) if kib],
        x0 + 8,
        y0 + 8,
        font,
    )
    if title:
        draw.text((WIDTH / 2, TOP / 2), title, fill=INK, font=font, anchor="mm")
    rgb = image.convert("RGB")
    return png_bytes(rgb.width, rgb.height, rgb.tobytes())


def png_bytes(width: int, height: int, rgb: bytes) -> bytes:
    """An 8-bit RGB PNG of `rgb` (rows top to bottom, unfiltered). Pillow's own writer
    first imports every image plugin it ships, which took longer than drawing the plot."""
    row = 3 * width
    scanlines = b"".join(b"\0" + rgb[y * row : (y + 1) * row] for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # depth 8, RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(scanlines, 6))
        + chunk(b"IEND", b"")
    )


def _stairs(kib: Sequence[float], px, py) -> list[tuple[float, float]]:
    """The outline of a step curve: level kib[i] over steps i..i+1."""
    points = []
    for i, k in enumerate(kib):
        points += [(px(i), py(k)), (px(i + 1), py(k))]
    return points


def _dashed(draw, y: float, x0: float, x1: float, colour: str, dash: int) -> None:
    x = float(x0)
    while x < x1:
        draw.line([(x, y), (min(x + dash, x1), y)], fill=colour, width=2)
        x += 2 * dash


def _vertical_text(image, text: str, x: float, y: float, font, centred: bool = False) -> None:
    """`text` read bottom to top, its top end at (x, y) (or its middle, `centred`)."""
    from PIL import Image, ImageDraw

    left, upper, right, lower = font.getbbox(text)
    label = Image.new("RGBA", (right - left + 2, lower - upper + 2), (0, 0, 0, 0))
    ImageDraw.Draw(label).text((1 - left, 1 - upper), text, fill=INK, font=font)
    label = label.rotate(90, expand=True)
    top = y - label.height / 2 if centred else y
    image.alpha_composite(label, (int(x - label.width / 2), int(top)))


def _legend(draw, entries: list[tuple[str, str]], x: float, y: float, font) -> None:
    if entries:
        wide = max(font.getlength(f"live bytes: {region}") for region, _ in entries)
        draw.rectangle([x - 4, y - 4, x + 28 + wide, y + 18 * len(entries)], "white", "#cccccc")
    for region, colour in entries:
        draw.rectangle([x, y + 2, x + 18, y + 12], fill=colour)
        draw.text((x + 24, y), f"live bytes: {region}", fill=INK, font=font)
        y += 18
