"""Calibration's float runs, kept (float_runs.py) and replayed by the auto probe and the
accuracy report: the same values, choices and report as running the float graph again,
and a kept run never serves a call it did not run on."""

from __future__ import annotations

import numpy as np
import pytest

from npuc import graph_io
from npuc.passes.quantization import float_runs
from npuc.passes.quantization.auto_strategy import StrategyProbe
from npuc.passes.quantization.float_runs import FloatRuns
from npuc.passes.quantization.statistics import collect_statistics
from npuc.passes.quantize import QuantizeConfig
from npuc.quantize_flow import compare, quantize, search_mixed_precision
from npuc.runtime.nn_interpreter import FunctionRunner

CALLS = 12


def calibrated_with_runs(qm):
    """The conv model, its 12 calls, their kept runs, and the model quantized from them."""
    module, _ = qm.conv_model(1)
    data = qm.heavy_tailed_inputs(calls=CALLS)
    runs = FloatRuns()
    stats = collect_statistics(module, data, progress=False, float_runs=runs)
    quantized, _ = quantize(module, stats, QuantizeConfig(scheme="int8"))
    return module, data, runs, quantized


def test_replay_gives_the_values_steps_computes_without_evaluating(qm):
    module, _ = qm.conv_model(1)
    runner = FunctionRunner(graph_io.entry_function(module))
    call = [qm.heavy_tailed_inputs()[0]["x"]]
    expected = [
        (op, [env[v].copy() for v in (*op.operands, *op.results)]) for op, env in runner.steps(call)
    ]
    _, intermediates = runner.run(call, keep="all")
    evaluated = []
    runner.evaluate = lambda op, args: evaluated.append(op)  # constants are cached by now
    got = [
        (op, [env[v] for v in (*op.operands, *op.results)])
        for op, env in runner.steps(call, intermediates)
    ]
    assert not evaluated
    assert [op for op, _ in got] == [op for op, _ in expected]
    for (_, values), (_, want) in zip(got, expected, strict=True):
        assert all(np.array_equal(a, b) for a, b in zip(values, want, strict=True))


def test_the_probe_replays_kept_runs_and_chooses_as_it_would_running_them(qm, monkeypatch):
    module, _ = qm.conv_model(1)
    data = qm.heavy_tailed_inputs(calls=CALLS)
    plain = collect_statistics(module, data, progress=False)
    runs = FloatRuns()
    kept = collect_statistics(module, data, progress=False, float_runs=runs)
    assert len(runs.runs) == CALLS  # every call fits the default budget
    probe = kept["x"].probe
    assert probe is not None and all(r is not None for r in probe.replays)
    assert probe.selection is not None  # 12 batches: two are held out, with their own probe

    replay_only = FunctionRunner.steps

    def no_float_runs(self, inputs, intermediates=None):
        if intermediates is None:
            raise AssertionError("the probe ran the float graph again")
        return replay_only(self, inputs, intermediates)

    monkeypatch.setattr(FunctionRunner, "steps", no_float_runs)
    for grid in ((8, False), (8, True), (16, True)):
        kept["x"].probe.choose(*grid)
        kept["x"].probe.selection.train["x"].probe.choose(*grid)
    monkeypatch.undo()
    for grid in ((8, False), (8, True), (16, True)):
        plain["x"].probe.choose(*grid)
        plain["x"].probe.selection.train["x"].probe.choose(*grid)
    assert {k: s.auto for k, s in kept.items()} == {k: s.auto for k, s in plain.items()}
    assert len({s.auto["a8"] for s in kept.values()}) > 1  # a choice was made, not a default
    train = kept["x"].probe.selection.train
    assert {k: s.auto for k, s in train.items()} == {
        k: s.auto for k, s in plain["x"].probe.selection.train.items()
    }


def test_the_report_from_kept_runs_equals_the_one_from_running_float(qm):
    module, data, runs, quantized = calibrated_with_runs(qm)
    assert compare(module, quantized, data, float_runs=runs) == compare(module, quantized, data)


def test_a_kept_run_serves_only_its_own_arguments(qm):
    module, data, runs, quantized = calibrated_with_runs(qm)
    shifted = [data[1], *data[1:]]  # call 0 is another's, the rest their own
    assert compare(module, quantized, shifted, float_runs=runs) == compare(
        module, quantized, shifted
    )
    for run in runs.runs:  # poisoned: a report that used them would differ
        for array in run.intermediates.values():
            array[...] = 0
    poisoned = compare(module, quantized, data, float_runs=runs)
    assert poisoned != compare(module, quantized, data)  # kept runs are what it reads
    other = qm.heavy_tailed_inputs(5, calls=CALLS)
    other[3] = data[3]
    reports = compare(module, quantized, other, float_runs=runs)
    fresh = compare(module, quantized, other)
    assert reports != fresh  # call 3 was served from its (poisoned) run
    other[3] = {"x": data[3]["x"].astype(np.float64)}  # equal values, another dtype
    with pytest.raises(Exception, match="dtype"):  # run, not served: the runner refuses it
        compare(module, quantized, other, float_runs=runs)


def test_runs_are_kept_in_call_order_up_to_the_budget(qm):
    module, _ = qm.conv_model(1)
    data = qm.heavy_tailed_inputs(calls=CALLS)
    probe = FloatRuns()
    collect_statistics(module, data[:1], progress=False, float_runs=probe)
    one = probe.used
    assert one > 0
    runs = FloatRuns(budget=3 * one + one // 2)
    collect_statistics(module, data, progress=False, float_runs=runs)
    assert len(runs.runs) == 3 and runs.used == 3 * one and runs.full
    assert all(
        np.array_equal(r.arguments[0], b["x"]) for r, b in zip(runs.runs, data, strict=False)
    )
    stats = collect_statistics(module, data, progress=False, float_runs=FloatRuns(budget=0))
    probe_of: StrategyProbe = stats["x"].probe
    assert probe_of.replays == [None] * len(probe_of.calls)


def test_the_mixed_precision_search_compares_with_the_kept_runs(qm):
    module, _ = qm.conv_model(1)
    data = qm.heavy_tailed_inputs(calls=CALLS)
    runs = FloatRuns()
    stats = collect_statistics(module, data, progress=False, float_runs=runs)
    config = QuantizeConfig(scheme="int8")

    def history(float_runs):
        found = search_mixed_precision(
            module, stats, config, data, target_cosine=0.999999, float_runs=float_runs
        )
        return [(s.promoted, s.worst_cosine, s.kept) for s in found.history]

    assert len(history(None)) > 1  # the search promoted something
    assert history(runs) == history(None)
    for run in runs.runs:  # poisoned outputs: a search that read them would see other cosines
        for array in run.results:
            array[...] = 0
    assert history(runs) != history(None)


def test_the_whole_model_selection_reads_the_held_out_calls_from_kept_runs(qm):
    module, _ = qm.conv_model(1)
    data = qm.heavy_tailed_inputs(calls=CALLS)
    plain = collect_statistics(module, data, progress=False)
    kept = collect_statistics(module, data, progress=False, float_runs=FloatRuns())
    probe = kept["x"].probe
    assert len(probe.selection.replays) == 2 and all(probe.selection.replays)

    def no_float_runs(*args, **kwargs):
        raise AssertionError("the float model ran again")

    probe.runner.run = no_float_runs  # the float runner only: quantized models run apart
    config = QuantizeConfig(scheme="int8", activation_strategy="auto")
    quantize(module, kept, config)
    quantize(module, plain, config)
    assert probe.winner is not None
    assert (probe.winner, probe.errors, probe.call_errors) == (
        plain["x"].probe.winner,
        plain["x"].probe.errors,
        plain["x"].probe.call_errors,
    )


@pytest.mark.parametrize(
    ("memory", "budget"),
    [
        (4 << 30, float_runs.FLOAT_RUN_BYTES),
        (32 << 30, 1 << 30),
        (512 << 30, float_runs.FLOAT_RUN_MAX_BYTES),
        (None, float_runs.FLOAT_RUN_BYTES),
    ],
)
def test_the_default_budget_is_a_share_of_the_memory_within_its_floor_and_cap(
    monkeypatch, memory, budget
):
    def sysconf(name: str) -> int:
        if memory is None:
            raise ValueError(name)
        return {"SC_PHYS_PAGES": memory // 4096, "SC_PAGE_SIZE": 4096}[name]

    monkeypatch.setattr(float_runs.os, "sysconf", sysconf)
    assert float_runs.default_budget() == budget
    assert FloatRuns().budget == budget
