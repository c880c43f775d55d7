"""The statistics file: round trip, hand edits, malformed content."""

from __future__ import annotations

import json

import numpy as np
import pytest

from npuc.diagnostics import NpucError
from npuc.passes.quantization.ranges import ACTIVATION_STRATEGIES, activation_range
from npuc.passes.quantization.statistics import (
    TensorStatistics,
    load_statistics,
    save_statistics,
)

R = np.random.default_rng(2)


def sample_stats() -> dict[str, TensorStatistics]:
    a = TensorStatistics("conv1")
    for scale in (1.0, 2.0, 0.5):
        a.update(R.standard_normal(500) * scale + 0.3)
    a.update(np.array([np.nan, 1.0]))
    b = TensorStatistics("relu1:0")
    b.update(np.maximum(R.standard_normal(300), 0))
    empty = TensorStatistics("%7")
    return {"conv1": a, "relu1:0": b, "%7": empty}


def test_round_trip_keeps_every_field_and_range(tmp_path):
    stats = sample_stats()
    path = tmp_path / "stats.json"
    save_statistics(path, stats, {"model": "m.onnx", "batches": 4})
    loaded, meta = load_statistics(path)
    assert meta == {"model": "m.onnx", "batches": 4}
    assert list(loaded) == list(stats)
    for name, original in stats.items():
        again = loaded[name]
        assert again.to_dict() == original.to_dict()
        assert again.std == pytest.approx(original.std, rel=1e-12)
        for strategy in ACTIVATION_STRATEGIES:
            if original.count:
                assert activation_range(again, strategy) == pytest.approx(
                    activation_range(original, strategy), rel=1e-12
                )
    document = json.loads(path.read_text())
    assert document["version"] == 1
    assert set(document["tensors"]["conv1"]) >= {
        "count",
        "min",
        "max",
        "ema_min",
        "ema_max",
        "mean",
        "std",
        "batch_ranges",
        "histogram",
    }
    assert document["tensors"]["conv1"]["nonfinite"] == 1


def test_loaded_statistics_take_more_batches(tmp_path):
    stats = sample_stats()
    path = tmp_path / "stats.json"
    save_statistics(path, stats)
    loaded, _ = load_statistics(path)
    extra = R.standard_normal(100) * 10
    loaded["conv1"].update(extra)
    stats["conv1"].update(extra)
    assert loaded["conv1"].to_dict() == stats["conv1"].to_dict()


def test_hand_edited_max_changes_the_range(tmp_path):
    path = tmp_path / "stats.json"
    save_statistics(path, sample_stats())
    document = json.loads(path.read_text())
    document["tensors"]["conv1"]["max"] = 1.5
    document["tensors"]["conv1"]["min"] = -100.0
    path.write_text(json.dumps(document, indent=2))
    loaded, _ = load_statistics(path)
    assert activation_range(loaded["conv1"], "extrema") == (-100.0, 1.5)
    # Histogram-based strategies are clipped to the edited maximum too.
    for strategy in ("percentile", "kl", "mse", "mean_std"):
        assert activation_range(loaded["conv1"], strategy)[1] <= 1.5


MALFORMED = [
    ("not json", "invalid JSON at line 1"),
    ("[]", "must hold a JSON object"),
    ('{"version": 2, "tensors": {}}', "unsupported statistics file version 2"),
    ('{"version": 1}', "'tensors' must be an object"),
    ('{"version": 1, "tensors": {}, "meta": 3}', "'meta' must be an object"),
    ('{"version": 1, "tensors": {"t": []}}', "tensor 't': must be an object"),
]


@pytest.mark.parametrize(("text", "message"), MALFORMED)
def test_malformed_documents(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(NpucError, match=message) as e:
        load_statistics(path)
    assert str(path) in str(e.value)


EDITS = [
    ({"max": "big"}, "'max' must be a number"),
    ({"max": None}, "'max' must be a number"),
    ({"count": -1}, "'count' must be a non-negative integer"),
    ({"count": 2.5}, "'count' must be a non-negative integer"),
    ({"min": 10.0}, "'min' \\(10.0\\) is greater than 'max'"),
    ({"std": -1}, "'std' must not be negative"),
    ({"ema_min": None}, "'ema_min' and 'ema_max' must both"),
    ({"ema_min": 50.0}, "'ema_min' \\(50.0\\) is greater than 'ema_max'"),
    ({"batch_ranges": [[0, 1], [2]]}, "'batch_ranges' entry 1 must be a \\[min, max\\] pair"),
    ({"batch_ranges": [[3, 1]]}, "'batch_ranges' entry 0 has min 3.0 greater than max 1.0"),
    ({"batch_ranges": [[0, "x"]]}, "'batch_ranges\\[0\\]' must be a number"),
    ({"histogram": {"range": [1, 1], "counts": [1, 2]}}, "'histogram' range \\[1.0, 1.0\\] is"),
    ({"histogram": {"range": [0, 1], "counts": [1, -2]}}, "'histogram' 'counts' must hold non-"),
    ({"histogram": {"range": [0, 1], "counts": [1, 2.5]}}, "'histogram' 'counts' must hold non-"),
    ({"histogram": {"range": [0, 1], "counts": [1, 2**63]}}, "'histogram' 'counts' must hold non-"),
    ({"histogram": {"range": [0, 1]}}, "'histogram' must be an object with exactly 'range' and"),
    ({"maxx": 3}, "'maxx' is not a statistics key"),
]


@pytest.mark.parametrize(("edit", "message"), EDITS)
def test_malformed_tensor_entries_name_the_tensor_and_key(tmp_path, edit, message):
    path = tmp_path / "stats.json"
    save_statistics(path, sample_stats())
    document = json.loads(path.read_text())
    document["tensors"]["conv1"].update(edit)
    path.write_text(json.dumps(document))
    with pytest.raises(NpucError, match=f"tensor 'conv1': {message}"):
        load_statistics(path)


def test_the_largest_int64_count_is_read(tmp_path):
    """Counts are int64: 2**63 - 1 is the largest a file may hold (2**63 is refused above)."""
    path = tmp_path / "stats.json"
    save_statistics(path, sample_stats())
    document = json.loads(path.read_text())
    document["tensors"]["conv1"]["histogram"] = {"range": [0, 1], "counts": [1, 2**63 - 1]}
    path.write_text(json.dumps(document))
    counts = load_statistics(path)[0]["conv1"].histogram.counts
    assert counts.dtype == np.int64 and int(counts[1]) == 2**63 - 1


def test_nan_and_infinity_are_refused(tmp_path):
    path = tmp_path / "stats.json"
    save_statistics(path, sample_stats())
    text = path.read_text().replace('"outliers": 0', '"outliers": NaN', 1)
    path.write_text(text)
    with pytest.raises(NpucError, match="'NaN' is not allowed"):
        load_statistics(path)


def test_missing_file_and_unwritable_path(tmp_path):
    with pytest.raises(NpucError, match="No such file"):
        load_statistics(tmp_path / "nope.json")
    with pytest.raises(NpucError, match="No such file"):
        save_statistics(tmp_path / "no" / "dir.json", sample_stats())
    with pytest.raises(NpucError, match="cannot write statistics"):
        save_statistics(tmp_path / "s.json", sample_stats(), {"bad": object()})
