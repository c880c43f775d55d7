"""collect_statistics on ONNX-imported models, against onnxruntime's tensors; the progress line."""

from __future__ import annotations

import io

import numpy as np
import pytest
from onnx import helper, numpy_helper
from onnxruntime_reference import reference_session

from npuc.diagnostics import NpucError
from npuc.frontends.onnx import import_onnx
from npuc.passes.quantization.datasets import random_dataset
from npuc.passes.quantization.ranges import activation_range
from npuc.passes.quantization.statistics import OutlierPolicy, collect_statistics
from npuc.progress import progress, quiet

# Layer (node) name -> the ONNX tensor it produces in conftest.conv_model.
LAYERS = {"conv1": "c1", "relu1": "r1", "conv2": "c2", "gap": "g", "flat": "logits"}


def onnxruntime_tensors(qm, batch: int, samples: np.ndarray) -> dict[str, list[np.ndarray]]:
    """Every layer's output for each model call, computed by onnxruntime."""
    _, weights = qm.conv_model(batch)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"]),
        helper.make_node("GlobalAveragePool", ["c2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["logits"]),
    ]
    model = qm.make_model(nodes, [("x", (batch, 3, 6, 5))], list(LAYERS.values()), weights)
    session = reference_session(model)
    out: dict[str, list[np.ndarray]] = {name: [] for name in LAYERS}
    out["x"] = []
    for start in range(0, len(samples), batch):
        x = samples[start : start + batch]
        results = session.run(list(LAYERS.values()), {"x": x})
        out["x"].append(x)
        for name, value in zip(LAYERS, results, strict=True):
            out[name].append(value)
    return out


@pytest.mark.parametrize(("model_batch", "batch_size", "count"), [(1, 3, 7), (2, 4, 9)])
def test_statistics_of_every_layer_match_onnxruntime(qm, model_batch, batch_size, count):
    module, _ = qm.conv_model(model_batch)
    dataset = random_dataset(module, count, seed=1, batch_size=batch_size)
    stats = collect_statistics(module, dataset, progress=False)
    assert set(stats) == {"x", *LAYERS, "logits"}
    assert stats["logits"] is stats["flat"]

    used = count - count % model_batch
    samples = np.concatenate([b["x"] for b in random_dataset(module, count, seed=1)])
    calls_per_batch = batch_size // model_batch
    for name, calls in onnxruntime_tensors(qm, model_batch, samples[:used]).items():
        x = np.concatenate([c.ravel() for c in calls]).astype(np.float64)
        s = stats[name]
        assert s.count == x.size
        assert s.min == pytest.approx(x.min(), abs=1e-5)
        assert s.max == pytest.approx(x.max(), abs=1e-5)
        assert s.mean == pytest.approx(x.mean(), rel=1e-5, abs=1e-6)
        assert s.std == pytest.approx(x.std(), rel=1e-5)
        groups = [
            np.concatenate([c.ravel() for c in calls[i : i + calls_per_batch]])
            for i in range(0, len(calls), calls_per_batch)
        ]
        assert len(s.batch_ranges) == len(groups) == len(dataset)
        for (lo, hi), g in zip(s.batch_ranges, groups, strict=True):
            assert (lo, hi) == pytest.approx((g.min(), g.max()), abs=1e-5)
        assert s.histogram.total == s.count
    relu = stats["relu1"]
    assert relu.min == 0.0 and activation_range(relu, "kl")[0] == 0.0


def test_plain_list_of_feeds_and_outlier_policy(qm):
    module = qm.relu_model((1, 4))
    feeds = [{"x": np.array([[2, 2, 3, 400]], np.float32)}, {"x": np.ones((1, 4), np.float32)}]
    stats = collect_statistics(
        module, feeds, outlier_policy=OutlierPolicy(percentile=80), progress=False
    )
    assert set(stats) == {"x", "relu", "y"}
    assert stats["x"].max == 3.0 and stats["x"].outliers == 1
    assert stats["relu"].batch_ranges == [(2.0, 3.0), (1.0, 1.0)]


def test_float64_batches_are_converted(qm):
    module = qm.relu_model((1, 2))
    stats = collect_statistics(module, [{"x": np.array([[-1.0, 2.0]])}], progress=False)
    assert (stats["y"].min, stats["y"].max) == (0.0, 2.0)


def test_constant_output_is_recorded_under_its_name(qm):
    nodes = [
        helper.make_node("Relu", ["x"], ["y"], name="relu"),
        helper.make_node(
            "Constant",
            [],
            ["k"],
            name="const",
            value=numpy_helper.from_array(np.array([5.0, -1.0], np.float32)),
        ),
    ]
    module = import_onnx(qm.make_model(nodes, [("x", (1, 2))], ["y", "k"]))
    stats = collect_statistics(module, [{"x": np.ones((1, 2), np.float32)}], progress=False)
    assert (stats["k"].min, stats["k"].max) == (-1.0, 5.0)


def test_batch_errors(qm):
    module = qm.add_model((2, 3), (2, 3))
    ok = np.zeros((2, 3), np.float32)
    with pytest.raises(NpucError, match="batch 0 lacks input\\(s\\) b"):
        collect_statistics(module, [{"a": ok}], progress=False)
    with pytest.raises(NpucError, match="input 'b' has shape \\(3, 3\\), expected k x 2"):
        collect_statistics(module, [{"a": ok, "b": np.zeros((3, 3))}], progress=False)
    with pytest.raises(NpucError, match="different sample counts"):
        collect_statistics(module, [{"a": ok, "b": np.zeros((4, 3))}], progress=False)
    with pytest.raises(NpucError, match="data set is empty"):
        collect_statistics(module, [], progress=False)


def test_collect_draws_no_progress_when_not_a_terminal(qm, capsys):
    module = qm.relu_model((1, 3))
    collect_statistics(module, random_dataset(module, 4, batch_size=2))
    assert capsys.readouterr().err == ""


# ----------------------------------------------------------------------------- progress bars


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_on_a_terminal_counts_and_is_cleared_at_the_end():
    out = Terminal()
    with progress(desc="work", total=4, unit="batch", stream=out, delay=0) as bar:
        for _ in range(4):
            bar.update()
    text = out.getvalue()
    assert "work:" in text and "0/4" in text and "batch" in text
    assert "\n" not in text  # drawn in place on one line
    assert text.split("\r")[-1].strip() == ""  # leave=False: cleared at the end


def test_a_bar_waits_for_its_delay_and_iterates():
    out = Terminal()
    assert list(progress(range(3), desc="quick", stream=out)) == [0, 1, 2]
    assert out.getvalue() == ""  # done before DELAY: never drawn


def test_no_bar_when_disabled_quiet_or_piped():
    silent = Terminal()
    with progress(desc="x", total=2, stream=silent, enabled=False, delay=0) as bar:
        bar.update(2)
    with quiet(), progress(desc="x", total=2, stream=silent, delay=0) as bar:
        bar.update(2)
    assert silent.getvalue() == ""
    piped = io.StringIO()
    with progress(desc="x", total=2, stream=piped, delay=0) as bar:
        bar.update(2)
    assert list(progress(range(3), desc="x", stream=piped, delay=0)) == [0, 1, 2]
    assert list(progress(desc="x", stream=piped)) == []
    assert piped.getvalue() == ""
