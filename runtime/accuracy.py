"""Accuracy reports: a reference run (float) against a candidate run (quantized), tensor by tensor.

Statistics accumulate over every sample of a data set, so the figures are for
the whole set, not an average of per-sample figures:

- cosine similarity of the concatenated tensors,
- SQNR in dB: 10 log10(sum ref^2 / sum (ref - cand)^2) (inf when equal),
- max absolute error,
- for outputs of shape [N, classes]: top-1 agreement (same argmax) and top-5
  agreement (the reference's argmax is among the candidate's five best).

Metrics are pluggable: `register_metric` adds a function of the concatenated
(reference, candidate) arrays, and the `npuc.metrics` entry-point group is
loaded by `load_metric_plugins`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from npuc.blockwise import float64_blocks

Metric = Callable[[np.ndarray, np.ndarray], float]
CUSTOM_METRICS: dict[str, Metric] = {}


def register_metric(name: str) -> Callable[[Metric], Metric]:
    """Add a metric computed on the concatenated (reference, candidate) values of a tensor."""

    def add(fn: Metric) -> Metric:
        CUSTOM_METRICS[name] = fn
        return fn

    return add


def load_metric_plugins() -> list[str]:
    """Register the metrics advertised in the `npuc.metrics` entry-point group."""
    from npuc.entry_points import entry_points

    names = []
    for entry in entry_points("npuc.metrics"):
        CUSTOM_METRICS[entry.name] = entry.load()
        names.append(entry.name)
    return names


@dataclass
class _Accumulator:
    dot: float = 0.0
    ref_sq: float = 0.0
    cand_sq: float = 0.0
    err_sq: float = 0.0
    max_abs: float = 0.0
    samples: int = 0
    top1: int = 0
    top5: int = 0
    rows: int = 0
    kept: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)

    def update(self, ref: np.ndarray, cand: np.ndarray, keep: bool, classes: bool) -> None:
        ref, cand = np.asarray(ref), np.asarray(cand)
        if ref.size != cand.size:
            raise ValueError(f"shapes differ: {np.shape(ref)} vs {np.shape(cand)}")
        # in float64 a block at a time (npuc/blockwise.py), without tensor-sized copies
        for r, c in zip(float64_blocks(ref), float64_blocks(cand), strict=True):
            self.dot += float(r @ c)
            self.ref_sq += float(r @ r)
            self.cand_sq += float(c @ c)
            r -= c  # the difference, in r's buffer
            self.err_sq += float(r @ r)
            self.max_abs = max(self.max_abs, float(np.abs(r).max(initial=0.0)))
        self.samples += 1
        if classes:
            ref2 = np.asarray(ref).reshape(-1, np.shape(ref)[-1])
            cand2 = np.asarray(cand).reshape(-1, np.shape(cand)[-1])
            best = ref2.argmax(axis=1)
            self.top1 += int((cand2.argmax(axis=1) == best).sum())
            k = min(5, cand2.shape[1])
            top = np.argpartition(-cand2, k - 1, axis=1)[:, :k]
            self.top5 += int((top == best[:, None]).any(axis=1).sum())
            self.rows += len(best)
        if keep:
            self.kept.append(
                (np.asarray(ref, np.float64).ravel(), np.asarray(cand, np.float64).ravel())
            )


@dataclass(frozen=True)
class TensorReport:
    name: str
    cosine: float
    sqnr_db: float
    max_abs_error: float
    top1_agreement: float | None = None
    top5_agreement: float | None = None
    extra: Mapping[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        data = {
            "name": self.name,
            "cosine": self.cosine,
            "sqnr_db": self.sqnr_db,
            "max_abs_error": self.max_abs_error,
            "top1_agreement": self.top1_agreement,
            "top5_agreement": self.top5_agreement,
        }
        data.update(self.extra)
        return data


class Comparison:
    """Accumulates reference/candidate pairs per tensor over a data set."""

    def __init__(self, outputs: Iterable[str] = (), metrics: Iterable[str] = ()):
        self.outputs = list(outputs)
        self.metrics = list(metrics)
        unknown = [m for m in self.metrics if m not in CUSTOM_METRICS]
        if unknown:
            raise ValueError(f"unknown metrics {unknown}; registered: {sorted(CUSTOM_METRICS)}")
        self._acc: dict[str, _Accumulator] = {}

    def update(
        self, reference: Mapping[str, np.ndarray], candidate: Mapping[str, np.ndarray]
    ) -> None:
        """Add one sample (or batch): every tensor present in both mappings."""
        for name, ref in reference.items():
            if name not in candidate:
                continue
            is_output = name in self.outputs
            classes = is_output and np.ndim(ref) >= 1 and np.shape(ref)[-1] > 1
            self._acc.setdefault(name, _Accumulator()).update(
                ref, candidate[name], keep=bool(self.metrics), classes=classes
            )

    def _report(self, name: str) -> TensorReport:
        a = self._acc[name]
        denom = math.sqrt(a.ref_sq * a.cand_sq)
        cosine = a.dot / denom if denom > 0 else float(a.ref_sq == a.cand_sq)
        sqnr = math.inf if a.err_sq == 0 else 10 * math.log10(max(a.ref_sq, 1e-300) / a.err_sq)
        extra = {}
        if self.metrics:
            ref = np.concatenate([r for r, _ in a.kept])
            cand = np.concatenate([c for _, c in a.kept])
            extra = {m: float(CUSTOM_METRICS[m](ref, cand)) for m in self.metrics}
        top1 = a.top1 / a.rows if a.rows else None
        top5 = a.top5 / a.rows if a.rows else None
        return TensorReport(name, cosine, sqnr, a.max_abs, top1, top5, extra)

    def reports(self) -> tuple[list[TensorReport], list[TensorReport]]:
        """(outputs in model order, every tensor worst cosine first)."""
        outputs = [self._report(n) for n in self.outputs if n in self._acc]
        tensors = sorted((self._report(n) for n in self._acc), key=lambda r: (r.cosine, r.name))
        return outputs, tensors


def to_json(
    outputs: list[TensorReport], tensors: list[TensorReport], meta: Mapping | None = None
) -> str:
    def clean(value):
        return None if isinstance(value, float) and not math.isfinite(value) else value

    data = {
        "outputs": [{k: clean(v) for k, v in r.as_dict().items()} for r in outputs],
        "tensors": [{k: clean(v) for k, v in r.as_dict().items()} for r in tensors],
        "meta": dict(meta or {}),
    }
    return json.dumps(data, indent=2)


def to_table(outputs: list[TensorReport], tensors: list[TensorReport], limit: int = 20) -> str:
    """A readable summary: outputs first, then the worst tensors."""

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.1f}%"

    lines = [
        f"{'output':<28} {'cosine':>9} {'SQNR dB':>8} {'max err':>10} {'top-1':>7} {'top-5':>7}"
    ]
    for r in outputs:
        lines.append(
            f"{r.name[:28]:<28} {r.cosine:>9.5f} {r.sqnr_db:>8.2f} {r.max_abs_error:>10.4g} "
            f"{pct(r.top1_agreement):>7} {pct(r.top5_agreement):>7}"
        )
    lines += ["", f"worst {min(limit, len(tensors))} of {len(tensors)} tensors (by cosine):"]
    lines.append(f"{'tensor':<40} {'cosine':>9} {'SQNR dB':>8} {'max err':>10}")
    for r in tensors[:limit]:
        lines.append(
            f"{r.name[:40]:<40} {r.cosine:>9.5f} {r.sqnr_db:>8.2f} {r.max_abs_error:>10.4g}"
        )
    return "\n".join(lines)
