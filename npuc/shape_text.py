"""Shapes in messages, written one way everywhere: `1x3x224x224`, `scalar` for rank 0."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def shape_text(dims: Sequence[int]) -> str:
    return "x".join(map(str, dims)) or "scalar"


def shapes_text(shapes: Iterable[Sequence[int]]) -> str:
    """Several shapes, comma-separated: `1x4, 1x5`."""
    return ", ".join(shape_text(s) for s in shapes)
