"""Accuracy-report metrics against their definitions, accumulated over several samples."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from npuc.runtime.accuracy import CUSTOM_METRICS, Comparison, register_metric, to_json, to_table

RNG = np.random.default_rng(11)


def test_identical_tensors_are_perfect():
    comparison = Comparison(outputs=["y"])
    x = RNG.standard_normal((4, 10))
    comparison.update({"y": x}, {"y": x.copy()})
    (out,), _ = comparison.reports()
    assert out.cosine == pytest.approx(1.0)
    assert math.isinf(out.sqnr_db) and out.max_abs_error == 0
    assert out.top1_agreement == 1.0 and out.top5_agreement == 1.0


# (4, 20001): float32 tensors of more than a block, accumulated a block at a time
@pytest.mark.parametrize("shape", [(3, 7), (4, 20001)])
def test_statistics_cover_the_whole_data_set(shape):
    refs = [RNG.standard_normal(shape).astype(np.float32) for _ in range(5)]
    cands = [(r + RNG.normal(0, 0.1, r.shape)).astype(np.float32) for r in refs]
    comparison = Comparison(outputs=["y"])
    for r, c in zip(refs, cands, strict=True):
        comparison.update({"y": r}, {"y": c})
    (out,), _ = comparison.reports()
    ref, cand = (np.concatenate(a).ravel().astype(np.float64) for a in (refs, cands))
    cosine = ref @ cand / np.linalg.norm(ref) / np.linalg.norm(cand)
    sqnr = 10 * np.log10((ref**2).sum() / ((ref - cand) ** 2).sum())
    assert out.cosine == pytest.approx(cosine, rel=1e-12)
    assert out.sqnr_db == pytest.approx(sqnr, rel=1e-12)
    assert out.max_abs_error == pytest.approx(np.abs(ref - cand).max())
    top1 = (np.concatenate(refs).argmax(1) == np.concatenate(cands).argmax(1)).mean()
    assert out.top1_agreement == pytest.approx(top1)


def test_top5_counts_the_reference_class_among_five_best():
    ref = np.eye(10)[[3, 3]]  # reference class 3 twice
    cand = np.zeros((2, 10))
    cand[0, [0, 1, 2, 4, 3]] = [9, 8, 7, 6, 5]  # class 3 fifth best
    cand[1, [0, 1, 2, 4, 5]] = [9, 8, 7, 6, 5]  # class 3 not among the five
    comparison = Comparison(outputs=["y"])
    comparison.update({"y": ref}, {"y": cand})
    (out,), _ = comparison.reports()
    assert out.top1_agreement == 0.0 and out.top5_agreement == 0.5


def test_tensors_are_sorted_worst_first_and_json_holds_the_contract_fields():
    comparison = Comparison(outputs=["out"])
    x = RNG.standard_normal((2, 5))
    comparison.update(
        {"good": x, "bad": x, "out": x},
        {"good": x + 1e-4, "bad": -x, "out": x},
    )
    outputs, tensors = comparison.reports()
    assert tensors[0].name == "bad"
    data = json.loads(to_json(outputs, tensors))
    assert {"name", "cosine", "sqnr_db", "top1_agreement"} <= data["outputs"][0].keys()
    assert {"name", "cosine", "sqnr_db", "top1_agreement"} <= data["tensors"][0].keys()
    assert data["outputs"][0]["sqnr_db"] is None  # infinite SQNR is null in JSON
    assert "bad" in to_table(outputs, tensors)


def test_custom_metric_plugs_in():
    @register_metric("mean_error")
    def mean_error(ref, cand):
        return float(np.mean(cand - ref))

    try:
        comparison = Comparison(outputs=["y"], metrics=["mean_error"])
        comparison.update({"y": np.zeros(4)}, {"y": np.full(4, 0.5)})
        comparison.update({"y": np.zeros(4)}, {"y": np.full(4, 1.5)})
        (out,), _ = comparison.reports()
        assert out.extra["mean_error"] == pytest.approx(1.0)
    finally:
        CUSTOM_METRICS.pop("mean_error")


def test_unknown_metric_is_an_error():
    with pytest.raises(ValueError, match="unknown metrics"):
        Comparison(metrics=["nope"])
