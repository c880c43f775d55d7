"""ONNX LSTM, GRU and RNN: imported by unrolling into `nn` ops, run by the float interpreter,
compared with onnxruntime on seeded random weights and inputs.

onnxruntime runs only layout 0; a layout-1 node is checked against its layout-0 twin on
transposed inputs and outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import onnx
import pytest

from npuc.diagnostics import NpucError
from npuc.frontends.onnx import import_onnx
from npuc.runtime.nn_interpreter import run_module

F = onnx.TensorProto.FLOAT
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
OUTPUTS = {"LSTM": ("Y", "Y_h", "Y_c"), "GRU": ("Y", "Y_h"), "RNN": ("Y", "Y_h")}
DIRECTIONS = ("forward", "reverse", "bidirectional")


@dataclass(frozen=True)
class Case:
    """One recurrent node: its sizes, optional inputs, outputs and attributes."""

    op: str = "LSTM"
    seq: int = 3
    batch: int = 2
    size: int = 3
    hidden: int = 4
    direction: str = "forward"
    bias: bool = True
    initial: bool = True
    peepholes: bool = False
    layout: int = 0
    outputs: tuple[str, ...] | None = None  # None: all of the op's outputs
    runtime_weights: bool = False
    opset: int = 14
    attrs: dict = field(default_factory=dict)

    @property
    def dirs(self) -> int:
        return 2 if self.direction == "bidirectional" else 1


def parameters(case: Case, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded W, R and the optional B, P, initial_h, initial_c (layout 0) and X (layout 0)."""
    rng = np.random.default_rng(seed)
    g, h, d = GATES[case.op], case.hidden, case.dirs

    def normal(*shape: int, scale: float = 0.5) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    values = {
        "W": normal(d, g * h, case.size),
        "R": normal(d, g * h, h),
        "X": normal(case.seq, case.batch, case.size, scale=1.0),
    }
    if case.bias:
        values["B"] = normal(d, 2 * g * h)
    if case.peepholes:
        values["P"] = normal(d, 3 * h)
    if case.initial:
        values["initial_h"] = normal(d, case.batch, h, scale=1.0)
        if case.op == "LSTM":
            values["initial_c"] = normal(d, case.batch, h, scale=1.0)
    return values


def model(ox, case: Case, values: dict[str, np.ndarray]) -> onnx.ModelProto:
    """The one-node model; weights are initializers unless `runtime_weights`."""
    slots = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    slots = slots[: 8 if case.op == "LSTM" else 6]
    names = [s if s in values else "" for s in slots]
    while not names[-1]:
        names.pop()
    wanted = case.outputs or OUTPUTS[case.op]
    outs = [o if o in wanted else "" for o in OUTPUTS[case.op]]
    while not outs[-1]:
        outs.pop()
    attrs = dict(case.attrs, hidden_size=case.hidden, direction=case.direction)
    if case.layout:
        attrs["layout"] = 1
    node = ox.node(case.op, names, outs, "rnn", **attrs)
    weights = {"W", "R", "B", "P"}
    inputs, inits = [], []
    for name in (n for n in names if n):
        value = values[name]
        if (name in weights and not case.runtime_weights) or name == "sequence_lens":
            inits.append(ox.init(name, value))
        else:
            inputs.append(ox.tensor(name, list(value.shape)))
    return ox.make_model([node], inputs, [o for o in outs if o], inits, opset=case.opset)


def to_layout_1(name: str, value: np.ndarray) -> np.ndarray:
    """A layout-0 tensor in layout 1 (X, the states and Y have the batch first)."""
    if name in ("X", "initial_h", "initial_c", "Y_h", "Y_c"):
        return np.ascontiguousarray(value.transpose(1, 0, 2))
    if name == "Y":
        return np.ascontiguousarray(value.transpose(2, 0, 1, 3))
    return value


def check(ox, case: Case, seed: int = 0) -> dict[str, np.ndarray]:
    """Import and run `case` with npuc and compare every output with onnxruntime."""
    values = parameters(case, seed)
    reference_case = replace(case, layout=0)
    reference_model = model(ox, reference_case, values)
    feeds = {i.name: values[i.name] for i in reference_model.graph.input}
    want = ox.run_onnxruntime(reference_model, feeds)
    if case.layout:
        values = {k: to_layout_1(k, v) for k, v in values.items()}
        want = {k: to_layout_1(k, v) for k, v in want.items()}
    ours = model(ox, case, values)
    got = run_module(import_onnx(ours), {i.name: values[i.name] for i in ours.graph.input})
    assert sorted(got) == sorted(want)
    for name, expected in want.items():
        assert got[name].shape == expected.shape, name
        np.testing.assert_allclose(got[name], expected, rtol=1e-5, atol=1e-6, err_msg=name)
    return got


# ----------------------------------------------------------------------------- LSTM


@pytest.mark.parametrize("seq", [1, 4])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("initial", [True, False], ids=["initial", "zero-state"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_lstm_matches_onnxruntime(ox, seq, direction, initial, bias):
    check(ox, Case("LSTM", seq=seq, direction=direction, initial=initial, bias=bias))


@pytest.mark.parametrize(
    "outputs", [("Y",), ("Y_h",), ("Y_c",), ("Y", "Y_c"), ("Y_h", "Y_c")], ids="+".join
)
def test_lstm_with_outputs_omitted(ox, outputs):
    got = check(ox, Case("LSTM", direction="bidirectional", outputs=outputs))
    assert sorted(got) == sorted(outputs)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_lstm_peepholes(ox, direction):
    check(ox, Case("LSTM", direction=direction, peepholes=True))


@pytest.mark.parametrize("peepholes", [True, False])
def test_lstm_clip_bounds_the_gate_inputs(ox, peepholes):
    check(ox, Case("LSTM", seq=4, peepholes=peepholes, attrs={"clip": 0.5}))


def test_lstm_input_forget_couples_the_forget_gate(ox):
    check(ox, Case("LSTM", peepholes=True, attrs={"input_forget": 1}))


def test_lstm_opset_7(ox):
    check(ox, Case("LSTM", direction="bidirectional", opset=7))


def test_lstm_weights_given_at_run_time(ox):
    check(ox, Case("LSTM", direction="bidirectional", peepholes=True, runtime_weights=True))


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("batch", [1, 2])
def test_lstm_layout_1(ox, direction, batch):
    check(ox, Case("LSTM", direction=direction, batch=batch, layout=1))


def test_lstm_activations_and_their_alphas(ox):
    attrs = {
        "activations": ["HardSigmoid", "Affine", "ScaledTanh", "LeakyRelu", "Softsign", "Elu"],
        # consumed in order by HardSigmoid, Affine, ScaledTanh, LeakyRelu (Elu keeps 1.0)
        "activation_alpha": [0.3, 0.8, 1.2, 0.05],
        "activation_beta": [0.45, 0.1, 0.7],
    }
    check(ox, Case("LSTM", direction="bidirectional", attrs=attrs))


def test_lstm_activations_must_be_listed_for_each_direction(ox):
    case = Case(
        "LSTM", direction="bidirectional", attrs={"activations": ["Sigmoid", "Relu", "Tanh"]}
    )
    assert "(invalid node: activations lists 3 functions, expected 6)" in import_error(
        ox, case, parameters(case)
    )


def test_lstm_full_sequence_lens_is_accepted(ox):
    case = Case("LSTM", seq=3, batch=2)
    values = parameters(case) | {"sequence_lens": np.array([3, 3], np.int32)}
    m = model(ox, case, values)
    feeds = {i.name: values[i.name] for i in m.graph.input}
    want = ox.run_onnxruntime(m, feeds)
    got = run_module(import_onnx(m), feeds)
    for name, expected in want.items():
        np.testing.assert_allclose(got[name], expected, rtol=1e-5, atol=1e-6)


def test_lstm_is_unrolled_into_fully_connected_layers_with_constant_weights(ox):
    case = Case("LSTM", seq=3, direction="bidirectional")
    module = import_onnx(model(ox, case, parameters(case)))
    ops = ox.nn_ops(module)
    names = [op.name for op in ops]
    # per direction: one projection of every step's input, one recurrent product per step
    assert names.count("nn.fully_connected") == 2 * (1 + 3)
    assert "nn.matmul" not in names
    for op in ops:
        if op.name == "nn.fully_connected":
            assert op.operands[1].owner.name == "nn.constant"
    assert {ox.layer(op) for op in ops} == {"rnn"}


def test_zero_initial_state_drops_the_recurrent_product_of_the_first_step(ox):
    case = Case("LSTM", seq=2)
    values = parameters(case)
    zeros = {name: np.zeros_like(values[name]) for name in ("initial_h", "initial_c")}
    module = import_onnx(model(ox, case, values), constants=zeros)
    assert ox.op_names(module).count("nn.fully_connected") == 2
    check(ox, Case("LSTM", seq=2, initial=False))  # what a zero state computes


# ----------------------------------------------------------------------------- GRU


@pytest.mark.parametrize("seq", [1, 4])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("initial", [True, False], ids=["initial", "zero-state"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("before_reset", [0, 1], ids=["lbr0", "lbr1"])
def test_gru_matches_onnxruntime(ox, seq, direction, initial, bias, before_reset):
    attrs = {"linear_before_reset": before_reset}
    check(ox, Case("GRU", seq=seq, direction=direction, initial=initial, bias=bias, attrs=attrs))


@pytest.mark.parametrize("before_reset", [0, 1])
def test_gru_clip_layout_and_run_time_weights(ox, before_reset):
    attrs = {"linear_before_reset": before_reset, "clip": 0.6}
    check(ox, Case("GRU", direction="bidirectional", attrs=attrs))
    check(ox, Case("GRU", direction="bidirectional", layout=1, attrs=attrs))
    check(ox, Case("GRU", direction="reverse", runtime_weights=True, attrs=attrs))


@pytest.mark.parametrize("outputs", [("Y",), ("Y_h",)], ids="+".join)
def test_gru_with_an_output_omitted(ox, outputs):
    assert sorted(check(ox, Case("GRU", outputs=outputs))) == sorted(outputs)


def test_gru_activations(ox):
    attrs = {"activations": ["HardSigmoid", "ThresholdedRelu"], "activation_alpha": [0.3, 0.1]}
    check(ox, Case("GRU", attrs=attrs, opset=7))


# ----------------------------------------------------------------------------- RNN


@pytest.mark.parametrize("seq", [1, 4])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("initial", [True, False], ids=["initial", "zero-state"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_rnn_matches_onnxruntime(ox, seq, direction, initial, bias):
    check(ox, Case("RNN", seq=seq, direction=direction, initial=initial, bias=bias))


def test_rnn_clip_activations_and_layout(ox):
    attrs = {"activations": ["Relu", "LeakyRelu"], "activation_alpha": [0.2], "clip": 0.8}
    check(ox, Case("RNN", direction="bidirectional", attrs=attrs))
    check(ox, Case("RNN", direction="bidirectional", layout=1, attrs=attrs))


# ----------------------------------------------------------------------------- diagnostics


def import_error(ox, case: Case, values: dict[str, np.ndarray]) -> str:
    with pytest.raises(NpucError) as err:
        import_onnx(model(ox, case, values), location="m.onnx")
    return str(err.value)


def test_partial_sequence_lens_is_reported(ox):
    case = Case("LSTM", seq=3, batch=2)
    values = parameters(case) | {"sequence_lens": np.array([3, 2], np.int32)}
    assert import_error(ox, case, values) == (
        "m.onnx: error: unsupported ONNX constructs (1 node): "
        "LSTM x1: rnn (sequence_lens [3, 2] other than the full length 3)"
    )


def test_run_time_sequence_lens_is_reported(ox):
    case = Case("GRU", seq=3, batch=2)
    values = parameters(case) | {"sequence_lens": np.array([3, 3], np.int32)}
    m = model(ox, case, values)
    del m.graph.initializer[[t.name for t in m.graph.initializer].index("sequence_lens")]
    m.graph.input.append(ox.tensor("sequence_lens", [2], onnx.TensorProto.INT32))
    with pytest.raises(NpucError, match=r"GRU x1: rnn \(non-constant sequence_lens\)"):
        import_onnx(m)


def test_unknown_activation_is_reported(ox):
    case = Case("RNN", attrs={"activations": ["Gelu"]})
    assert "RNN x1: rnn (activation 'Gelu' not supported)" in import_error(
        ox, case, parameters(case)
    )


def test_mismatched_weight_shape_is_an_invalid_node(ox):
    case = Case("LSTM", hidden=4)
    values = parameters(case) | {"W": np.zeros((1, 12, 3), np.float32)}
    assert "invalid ONNX nodes (1 node): LSTM x1: rnn (invalid node: W must have shape" in (
        import_error(ox, case, values)
    )
