"""The points of a sweep: one value of every axis, and the key that names a point's result."""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..version import __version__
from .spec import Axis, SweepSpec


@dataclass(frozen=True)
class Point:
    """What one compilation of a sweep needs (picklable: it travels to workers)."""

    key: str  # a hash of the model's bytes, the values, the data folder and npuc's version
    model: str
    target: str
    options: dict[str, Any] = field(default_factory=dict)  # npu-compile options, pipeline
    fields: dict[str, Any] = field(default_factory=dict)  # target fields overridden
    data: str | None = None  # samples for the fidelity metrics

    def values(self) -> dict[str, Any]:
        """The point's axis values, by column."""
        return {"model": self.model, "target": self.target, **self.options, **self.fields}


class Points:
    """Makes the points of a sweep from choices of axis values."""

    def __init__(self, spec: SweepSpec):
        self.spec = spec
        self._digests: dict[str, str] = {}

    def _digest(self, model: str) -> str:
        if model not in self._digests:
            self._digests[model] = hashlib.sha256(Path(model).read_bytes()).hexdigest()
        return self._digests[model]

    def at(self, choice: tuple[int, ...]) -> Point:
        """The point taking value `choice[i]` of axis i."""
        chosen = {a.name: a.values[i] for a, i in zip(self.spec.axes, choice, strict=True)}

        def of(kind: str) -> dict[str, Any]:
            return {a.name: chosen[a.name] for a in self.spec.axis(kind)}

        model, target = chosen["model"], chosen["target"]
        options, fields = of("option"), of("field")
        identity = {
            "model": self._digest(model),
            "target": target,
            "options": options,
            "fields": fields,
            "data": self.spec.data,
            "npuc": __version__,
        }
        text = json.dumps(identity, sort_keys=True, default=str)
        key = hashlib.sha256(text.encode()).hexdigest()[:16]
        return Point(key, model, target, options, fields, self.spec.data)

    def grid(self) -> Iterator[Point]:
        ranges = [range(len(a.values)) for a in self.spec.axes]
        for choice in itertools.product(*ranges):
            yield self.at(choice)

    def sample(self, count: int, seed: int) -> list[Point]:
        """`count` distinct points of the grid drawn at random (all of it if smaller)."""
        size = self.spec.grid_size
        indices = random.Random(seed).sample(range(size), min(count, size))
        return [self.at(_digits(i, self.spec.axes)) for i in indices]


def _digits(index: int, axes: tuple[Axis, ...]) -> tuple[int, ...]:
    """Grid index -> one value index per axis (the last axis varying fastest)."""
    out = []
    for axis in reversed(axes):
        index, digit = divmod(index, len(axis.values))
        out.append(digit)
    return tuple(reversed(out))
