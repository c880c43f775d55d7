"""Stateful TFLite models: resource variables become state pairs on `@main`.

LiteRT is the reference: one interpreter invoked repeatedly keeps its variables, and
npuc carries the state results of each call into the next. Quantized, a stateful model
is calibrated as one stream and must track the float model call after call.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tflite_builder import TFLiteModel, run_litert_sequence
from xdsl.dialects.builtin import StringAttr

from npuc.diagnostics import NpucError
from npuc.frontends.tflite import import_tflite
from npuc.frontends.tflite_state import run_sequence
from npuc.graph_io import (
    STATE_ATTR,
    STATE_INIT_ATTR,
    entry_function,
    initial_state,
    input_names,
    output_names,
    state_names,
)
from npuc.passes.quantization.datasets import model_inputs, random_dataset
from npuc.passes.quantize import QuantizeConfig, quantize_module
from npuc.quantize_flow import calibrate, quantize
from npuc.runtime.qnn_interpreter import dequantized_outputs

FRAME, WINDOW, CLASSES = 8, 4, 3


def _init_subgraph(name: str, value: np.ndarray) -> TFLiteModel:
    """A CALL_ONCE initialiser assigning the constant `value` to variable `name`."""
    init = TFLiteModel()
    handle = init.resource(f"{name}_handle")
    const = init.tensor(f"{name}_init", list(value.shape), data=value)
    init.op("VAR_HANDLE", [], [handle], "VarHandleOptions", SharedName=name)
    init.op("ASSIGN_VARIABLE", [handle, const], [])
    return init


def kws_model(window0: np.ndarray, gain: np.ndarray | None = None, seed: int = 0) -> bytes:
    """Keyword-spotting style: a window of the last frames, shifted each call, then a dense layer.

    With `gain`, a second variable (own CALL_ONCE subgraph) scales the scores and is only read.
    """
    rng = np.random.default_rng(seed)
    m = TFLiteModel()
    x = m.tensor("frame", [1, FRAME])
    h = m.resource("window_handle")
    win = m.tensor("window_in", [1, WINDOW, FRAME])
    shape3 = m.tensor("shape3", [3], np.int32, data=np.array([1, 1, FRAME], np.int32))
    x3 = m.tensor("frame3", [1, 1, FRAME])
    cat = m.tensor("cat", [1, WINDOW + 1, FRAME])
    begin = m.tensor("begin", [3], np.int32, data=np.array([0, 1, 0], np.int32))
    size = m.tensor("size", [3], np.int32, data=np.array([1, WINDOW, FRAME], np.int32))
    new = m.tensor("window_new", [1, WINDOW, FRAME])
    flat_shape = m.tensor("flat_shape", [2], np.int32, data=np.array([1, WINDOW * FRAME]))
    flat = m.tensor("flat", [1, WINDOW * FRAME])
    weights = rng.standard_normal([CLASSES, WINDOW * FRAME]).astype(np.float32)
    w = m.tensor("w", [CLASSES, WINDOW * FRAME], data=weights)
    bias = m.tensor("b", [CLASSES], data=rng.standard_normal([CLASSES]).astype(np.float32))
    scores = m.tensor("scores", [1, CLASSES])
    sub = m.add_subgraph(_init_subgraph("window", window0), [], [])
    m.op("CALL_ONCE", [], [], "CallOnceOptions", InitSubgraphIndex=sub)
    if gain is not None:
        sub = m.add_subgraph(_init_subgraph("gain", gain), [], [])
        m.op("CALL_ONCE", [], [], "CallOnceOptions", InitSubgraphIndex=sub)
    m.op("VAR_HANDLE", [], [h], "VarHandleOptions", SharedName="window")
    m.op("READ_VARIABLE", [h], [win])
    m.op("RESHAPE", [x, shape3], [x3])
    m.op("CONCATENATION", [win, x3], [cat], "ConcatenationOptions", Axis=1)
    m.op("SLICE", [cat, begin, size], [new])
    m.op("ASSIGN_VARIABLE", [h, new], [])
    m.op("RESHAPE", [new, flat_shape], [flat])
    out = scores
    if gain is not None:
        out = m.tensor("logits", [1, CLASSES])
    m.op("FULLY_CONNECTED", [flat, w, bias], [out], "FullyConnectedOptions")
    if gain is not None:
        g = m.resource("gain_handle")
        g_value = m.tensor("gain_value", [1, CLASSES])
        m.op("VAR_HANDLE", [], [g], "VarHandleOptions", SharedName="gain")
        m.op("READ_VARIABLE", [g], [g_value])
        m.op("MUL", [out, g_value], [scores], "MulOptions")
    return m.build([x], [scores])


def frames(steps: int, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal([1, FRAME]).astype(np.float32) for _ in range(steps)]


@pytest.mark.parametrize("init", ["zeros", "random"])
def test_streaming_window_matches_litert_per_step(init: str) -> None:
    window0 = np.zeros([1, WINDOW, FRAME], np.float32)
    if init == "random":
        window0 = np.random.default_rng(7).standard_normal(window0.shape).astype(np.float32)
    data = kws_model(window0)
    xs = frames(6)
    expected = run_litert_sequence(data, [[x] for x in xs])
    module = import_tflite(data)
    got, final = run_sequence(module, [{"frame": x} for x in xs])
    assert len(got) == 6
    for step, (want, have) in enumerate(zip(expected, got, strict=True)):
        np.testing.assert_allclose(have["scores"], want[0], rtol=1e-5, atol=1e-5, err_msg=step)
    # The final state is the last WINDOW frames.
    np.testing.assert_array_equal(final["window"], np.stack(xs[-WINDOW:], axis=1))
    # Without carrying the state the later steps differ: the test really exercises state.
    fresh = run_sequence(module, [{"frame": xs[-1]}])[0][0]["scores"]
    assert not np.allclose(fresh, expected[-1][0], atol=1e-3)


def test_two_initialisers_and_a_read_only_variable_match_litert() -> None:
    window0 = np.random.default_rng(3).standard_normal([1, WINDOW, FRAME]).astype(np.float32)
    gain = np.array([[0.5, -2.0, 3.0]], np.float32)
    data = kws_model(window0, gain)
    xs = frames(5, seed=2)
    expected = run_litert_sequence(data, [[x] for x in xs])
    module = import_tflite(data)
    func = entry_function(module)
    assert [name for _, _, name in state_names(func)] == ["window", "gain"]
    got, final = run_sequence(module, [{"frame": x} for x in xs])
    for want, have in zip(expected, got, strict=True):
        np.testing.assert_allclose(have["scores"], want[0], rtol=1e-5, atol=1e-5)
    # Never assigned: the state result is the state argument.
    np.testing.assert_array_equal(final["gain"], gain)
    ret = func.body.block.last_op
    assert ret is not None and ret.operands[2] is func.args[2]


def test_imported_ir_has_state_pairs_and_initial_values() -> None:
    module = import_tflite(kws_model(np.zeros([1, WINDOW, FRAME], np.float32)))
    func = entry_function(module)
    assert input_names(func) == ["frame", "window"]
    assert output_names(func) == ["scores", "window"]
    assert state_names(func) == [(1, 1, "window")]
    assert func.arg_attrs is not None and func.res_attrs is not None
    assert func.arg_attrs.data[1].data[STATE_ATTR] == StringAttr("window")
    assert func.res_attrs.data[1].data[STATE_ATTR] == StringAttr("window")
    assert STATE_ATTR not in func.arg_attrs.data[0].data
    assert STATE_INIT_ATTR in func.attributes
    state = initial_state(module)
    assert list(state) == ["window"]
    assert state["window"].shape == (1, WINDOW, FRAME) and state["window"].dtype == np.float32
    assert not state["window"].any()
    # No resource-variable ops are left: the state is plain SSA.
    assert not any("variable" in op.name for op in module.walk())


def _branch(op_type: str) -> TFLiteModel:
    sub = TFLiteModel()
    a, b = sub.tensor("a", [1, 4]), sub.tensor("b", [1, 4])
    sub.op(op_type, [a], [b])
    return sub


def test_if_and_while_are_reported_as_unsupported_control_flow() -> None:
    m = TFLiteModel()
    x = m.tensor("x", [1, 4])
    cond = m.tensor("cond", [1], np.bool_, data=np.array([True]))
    y, z = m.tensor("y", [1, 4]), m.tensor("z", [1, 4])
    then, other = (
        m.add_subgraph(_branch("RELU"), [0], [1]),
        m.add_subgraph(_branch("TANH"), [0], [1]),
    )
    m.op("IF", [cond, x], [y], "IfOptions", ThenSubgraphIndex=then, ElseSubgraphIndex=other)
    m.op("WHILE", [x], [z], "WhileOptions", CondSubgraphIndex=then, BodySubgraphIndex=other)
    with pytest.raises(NpucError) as info:
        import_tflite(m.build([x], [y, z]))
    text = info.value.message
    assert "unsupported TFLite operators (2)" in text
    assert "IF x1: y (control flow over subgraphs (1, 2) is not supported)" in text
    assert "WHILE x1: z (control flow over subgraphs (1, 2) is not supported)" in text


def test_several_signatures_import_the_first_subgraph_with_a_warning() -> None:
    m = TFLiteModel()
    x, y = m.tensor("x", [1, 4]), m.tensor("y", [1, 4])
    m.op("RELU", [x], [y])
    other = m.add_subgraph(_branch("TANH"), [0], [1])
    m.signatures = [("serving_default", 0), ("other", other)]
    with pytest.warns(UserWarning, match="2 signatures .* imports the first subgraph"):
        module = import_tflite(m.build([x], [y]))
    assert input_names(entry_function(module)) == ["x"]


def test_npu_run_sequence_carries_state(tmp_path: Path) -> None:
    window0 = np.zeros([1, WINDOW, FRAME], np.float32)
    data = kws_model(window0)
    model = tmp_path / "kws.tflite"
    model.write_bytes(data)
    xs = frames(4, seed=5)
    np.save(tmp_path / "frames.npy", np.stack(xs))
    out = tmp_path / "out.npz"
    bin_dir = Path(sys.executable).parent
    run = subprocess.run(
        [
            bin_dir / "npu-run",
            model,
            "--sequence",
            "4",
            "--input",
            f"frame={tmp_path / 'frames.npy'}",
            "-o",
            out,
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "step 3: scores: shape (1, 3)" in run.stdout
    saved = np.load(out)["scores"]
    assert saved.shape == (4, 1, CLASSES)
    expected = run_litert_sequence(data, [[x] for x in xs])
    np.testing.assert_allclose(saved, np.stack([e[0] for e in expected]), rtol=1e-5, atol=1e-5)
    feed = f"frame={tmp_path / 'frames.npy'}"
    bad = subprocess.run(
        [bin_dir / "npu-run", model, "--sequence", "3", "--input", feed],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1 and "leading axis of length 3" in bad.stderr


# --------------------------------------------------------------------------- quantizing


def ema_model(decay: float, init: np.ndarray, seed: int = 3) -> bytes:
    """A running average as state: acc = decay * acc + frame, scores = dense(acc)."""
    rng = np.random.default_rng(seed)
    m = TFLiteModel()
    x = m.tensor("frame", [1, FRAME])
    h = m.resource("acc_handle")
    acc = m.tensor("acc_in", [1, FRAME])
    k = m.tensor("decay", [1, FRAME], data=np.full([1, FRAME], decay, np.float32))
    decayed = m.tensor("decayed", [1, FRAME])
    new = m.tensor("acc_new", [1, FRAME])
    w = m.tensor(
        "w", [CLASSES, FRAME], data=rng.standard_normal([CLASSES, FRAME]).astype(np.float32)
    )
    b = m.tensor("b", [CLASSES], data=rng.standard_normal([CLASSES]).astype(np.float32))
    scores = m.tensor("scores", [1, CLASSES])
    sub = m.add_subgraph(_init_subgraph("acc", init), [], [])
    m.op("CALL_ONCE", [], [], "CallOnceOptions", InitSubgraphIndex=sub)
    m.op("VAR_HANDLE", [], [h], "VarHandleOptions", SharedName="acc")
    m.op("READ_VARIABLE", [h], [acc])
    m.op("MUL", [acc, k], [decayed], "MulOptions")
    m.op("ADD", [decayed, x], [new], "AddOptions")
    m.op("ASSIGN_VARIABLE", [h, new], [])
    m.op("FULLY_CONNECTED", [new, w, b], [scores], "FullyConnectedOptions")
    return m.build([x], [scores])


SQNR_DB = 20  # per step, over the 3 scores; a lost or reset state falls far below


def sqnr_db(reference: np.ndarray, candidate: np.ndarray) -> float:
    noise = float(np.sum((reference.astype(np.float64) - candidate) ** 2))
    return 10 * np.log10(float(np.sum(reference.astype(np.float64) ** 2)) / max(noise, 1e-30))


def quantized_ema(io: str, init: np.ndarray):

    module = import_tflite(ema_model(0.9, init))
    statistics = calibrate(module, random_dataset(module, 48), progress=False)
    quantized, _ = quantize(module, statistics, QuantizeConfig(scheme="int8", io=io))
    return module, quantized, statistics


@pytest.mark.parametrize("io", ["float", "quantized"])
def test_quantized_state_tracks_the_float_model_over_a_sequence(io: str) -> None:
    init = np.full([1, FRAME], 2.0, np.float32)  # a non-zero start: step 0 depends on it
    module, quantized, _ = quantized_ema(io, init)
    func = entry_function(quantized)
    ((arg, res, _),) = state_names(func)
    state_type = func.function_type.inputs.data[arg]
    assert func.function_type.outputs.data[res] == state_type  # carried without conversion
    xs = [{"frame": x} for x in frames(16, seed=11)]
    want, _ = run_sequence(module, xs)
    got, final = run_sequence(quantized, xs)
    steps = [
        sqnr_db(w["scores"], dequantized_outputs(quantized, g)["scores"])
        for w, g in zip(want, got, strict=True)
    ]
    assert min(steps) > SQNR_DB, steps
    # The state matters: restarting every call from the initial state loses the average.
    reset = [run_sequence(quantized, [x])[0][0] for x in xs]
    lost = [
        sqnr_db(w["scores"], dequantized_outputs(quantized, r)["scores"])
        for w, r in zip(want, reset, strict=True)
    ]
    assert max(lost[1:]) < SQNR_DB, lost  # every later step would fail the threshold
    if io == "quantized":  # the initial value is stored integers of the state type
        assert initial_state(quantized)["acc"].dtype == np.int8
        assert final["acc"].dtype == np.int8


def test_calibration_carries_the_state_from_its_initial_value() -> None:
    init = np.full([1, FRAME], 2.0, np.float32)
    module, _, statistics = quantized_ema("float", init)
    assert [spec.name for spec in model_inputs(module)] == ["frame"]  # data feeds no state
    # The calibrated state range is that of the float model's own running average over the
    # same 48 seeded frames as one stream (calls 0..47), not of random state samples.
    seen, current = [], initial_state(module)
    for feed in random_dataset(module, 48):
        seen.append(current["acc"])
        _, current = run_sequence(module, [feed], state=current)
    stats = statistics["acc"]
    assert (stats.min, stats.max) == pytest.approx((np.min(seen), np.max(seen)))
    assert np.max(seen) > 4.5  # beyond what random standard-normal state would show


def test_npu_run_quantizes_a_stateful_model_and_runs_a_sequence(tmp_path: Path) -> None:
    init = np.zeros([1, FRAME], np.float32)
    data = ema_model(0.9, init)
    model = tmp_path / "ema.tflite"
    model.write_bytes(data)
    xs = frames(10, seed=13)
    np.save(tmp_path / "frames.npy", np.stack(xs))
    out = tmp_path / "out.npz"
    bin_dir = Path(sys.executable).parent
    run = subprocess.run(
        [
            bin_dir / "npu-run",
            model,
            "--quantize",
            "int8",
            "--calib-random",
            "32",
            "--sequence",
            "10",
            "--input",
            f"frame={tmp_path / 'frames.npy'}",
            "-o",
            out,
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    got = np.load(out)["scores"]
    want = np.stack([w[0] for w in run_litert_sequence(data, [[x] for x in xs])])
    assert got.shape == want.shape == (10, 1, CLASSES)
    assert min(sqnr_db(w, g) for w, g in zip(want, got, strict=True)) > SQNR_DB


def test_quantize_module_gives_a_state_pair_one_type() -> None:
    """Ranges that differ for a state argument and its result are merged, so no rescale."""
    module = import_tflite(ema_model(0.9, np.full([1, FRAME], 2.0, np.float32)))
    ranges = {
        "frame": (-4.0, 4.0),
        "acc": (-8.0, 8.0),
        "decayed": (-8.0, 8.0),
        "acc_new": (-12.0, 12.0),
        "scores": (-20.0, 20.0),
    }
    quantize_module(module, ranges, QuantizeConfig(scheme="int8", io="quantized"))
    func = entry_function(module)
    state_type = func.function_type.inputs.data[1]
    assert func.function_type.outputs.data[1] == state_type
    q = state_type.element_type
    assert q.scale == pytest.approx(24.0 / 255)  # the union of -8..8 and -12..12
    stored = initial_state(module)["acc"]
    np.testing.assert_array_equal(stored, np.round(2.0 / q.scale) + q.zero_point)
    xs = [{"frame": x} for x in frames(12, seed=5)]
    want, _ = run_sequence(import_tflite(ema_model(0.9, np.full([1, FRAME], 2.0, np.float32))), xs)
    got, _ = run_sequence(module, xs)
    steps = [
        sqnr_db(w["scores"], dequantized_outputs(module, g)["scores"])
        for w, g in zip(want, got, strict=True)
    ]
    assert min(steps) > SQNR_DB, steps
