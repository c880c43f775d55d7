"""Bias correction (`bias_correction`): each weighted layer's stored bias is its float bias
minus the mean output shift its quantized weights cause on the calibration probe's samples,
recomputed here with onnxruntime's tensors and numpy; the mean output error drops on held-out
data; and it needs calibration samples."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view
from onnx import helper
from onnxruntime_reference import reference_session

from npuc.api import apply_pipeline
from npuc.diagnostics import NpucError
from npuc.dialects import qnn
from npuc.dialects.qnn import qtype
from npuc.frontends.onnx import import_onnx
from npuc.graph_io import entry_function
from npuc.passes.quantization.auto_strategy import PROBE_CALLS
from npuc.passes.quantization.bias_correction import weighted_input_means
from npuc.passes.quantization.statistics import (
    collect_statistics,
    load_statistics,
    save_statistics,
)
from npuc.passes.quantize import QuantizeConfig, quantize_module, ranges_from_statistics
from npuc.runtime.nn_interpreter import FunctionRunner
from npuc.runtime.qnn_interpreter import dequantized_outputs, run_module
from npuc.tensors import from_dense

SHAPE = (1, 3, 6, 5)


def inputs(seed: int, count: int, shape=SHAPE) -> list[np.ndarray]:
    """Inputs with a non-zero mean, so that weight errors shift the outputs' means."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * 0.5 + 0.5).astype(np.float32) for _ in range(count)]


def calibrate(module, xs):
    return collect_statistics(module, [{"x": x} for x in xs], progress=False)


def quantized(module, stats, **options):
    copy = module.clone()
    quantize_module(copy, ranges_from_statistics(stats), QuantizeConfig(**options))
    return copy


def layers(module) -> dict[str, qnn.Conv2dOp]:
    return {op.properties["name"].data: op for op in module.walk() if isinstance(op, qnn.Conv2dOp)}


def stored(value) -> np.ndarray:
    """The integers of a qnn.constant operand, as its type stores them."""
    data = np.asarray(from_dense(value.owner.value))
    element = value.type.element_type
    return data.view(element.storage_dtype()) if hasattr(element, "storage_dtype") else data


def dequantized_weight(op) -> np.ndarray:
    q = qtype(op.operands[1])
    scales, zps = np.array(q.scale_values()), np.array(q.zero_point_values())
    if q.per_axis:
        scales, zps = scales[:, None, None, None], zps[:, None, None, None]
    return (stored(op.operands[1]).astype(np.float64) - zps) * scales


def conv(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """NCHW x OIHW, stride 1, written out with windows (no npuc kernel)."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = sliding_window_view(xp, w.shape[2:], axis=(2, 3))
    return np.einsum("ncyxij,ocij->noyx", windows, w)


def conv_inputs(qm, xs) -> list[dict[str, np.ndarray]]:
    """The float inputs of conv1 (x) and conv2 (r1) by onnxruntime."""
    _, weights = qm.conv_model(1)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
    ]
    session = reference_session(qm.make_model(nodes, [("x", SHAPE)], ["r1"], weights))
    return [{"x": x, "r1": session.run(None, {"x": x})[0]} for x in xs]


@pytest.mark.parametrize("scheme", ["int8-per-channel", "int8"])
def test_stored_bias_is_the_bias_minus_the_mean_shift(qm, scheme):
    """Per channel: stored bias x its step = bias - mean over the probe's calls and the output
    positions of conv(x, W_deq - W), W_deq read back from the quantized module; conv2 has no
    bias and gets one. Within one bias step (the step is the input scale x the weight's)."""
    module, weights = qm.conv_model(1)
    xs = inputs(0, 12)
    stats = calibrate(module, xs)
    ops = layers(quantized(module, stats, scheme=scheme, weight_bits=4, bias_correction=True))
    probe = stats["x"].probe  # its calls are the calibration samples the correction uses
    assert len(probe.calls) == PROBE_CALLS
    tensors = conv_inputs(qm, [call[0] for call in probe.calls])
    cases = {"conv1": ("x", "w1", 1, weights["b1"]), "conv2": ("r1", "w2", 0, np.zeros(5))}
    for name, (source, w, pad, bias) in cases.items():
        op = ops[name]
        dw = dequantized_weight(op) - weights[w]
        shift = np.mean([conv(t[source], dw, pad).mean(axis=(0, 2, 3)) for t in tensors], axis=0)
        step = qtype(op.operands[0]).scale * np.array(qtype(op.operands[1]).scale_values())
        got = stored(op.operands[2]) * step
        assert np.all(np.abs(got - (bias - shift)) <= step), name
        assert np.max(np.abs(shift) / step) > 4  # the correction is many steps: a real test
    assert set(weighted_input_means(probe)) == {"x", "relu1"}


def test_the_correction_does_not_depend_on_the_batch_size(qm):
    """Statistics of the batch-1 import quantize a batch-2 import to the same biases."""
    module, _ = qm.conv_model(1)
    stats = calibrate(module, inputs(0, 12))
    one = layers(quantized(module, stats, weight_bits=4, bias_correction=True))
    two = layers(quantized(qm.conv_model(2)[0], stats, weight_bits=4, bias_correction=True))
    for name in ("conv1", "conv2"):
        assert np.array_equal(stored(one[name].operands[2]), stored(two[name].operands[2]))


def conv_transpose_model(qm):
    """x -> ConvTranspose (stride 2, with bias) -> y: per-channel weights on axis 1."""
    rng = np.random.default_rng(3)
    weights = {
        "w": rng.standard_normal((3, 4, 3, 3)).astype(np.float32),
        "b": rng.standard_normal(4).astype(np.float32),
    }
    node = helper.make_node(
        "ConvTranspose", ["x", "w", "b"], ["y"], name="up", strides=[2, 2], pads=[1, 1, 1, 1]
    )
    return import_onnx(qm.make_model([node], [("x", SHAPE)], ["y"], weights))


def error_and_cosine(module, float_module, xs) -> tuple[float, float]:
    """(norm of the mean output error per channel, mean per-sample cosine)."""
    runner = FunctionRunner(entry_function(float_module))
    ref = np.stack([runner.run([x])[0][0] for x in xs]).astype(np.float64)
    out = np.stack(
        [next(iter(dequantized_outputs(module, run_module(module, {"x": x})).values())) for x in xs]
    ).astype(np.float64)
    r, o = ref.reshape(len(xs), -1), out.reshape(len(xs), -1)
    cosine = (r * o).sum(1) / np.linalg.norm(r, axis=1) / np.linalg.norm(o, axis=1)
    channels = np.moveaxis(out - ref, 2, 0).reshape(out.shape[2], -1)  # axis 1 of an output
    return float(np.linalg.norm(channels.mean(axis=1))), float(cosine.mean())


@pytest.mark.parametrize(
    "model, scheme",
    [("conv", "int8"), ("conv", "int8-per-channel"), ("conv_transpose", "int8-per-channel")],
)
def test_the_mean_output_error_drops_on_held_out_inputs(qm, model, scheme):
    """4-bit weights shift the outputs' means a lot: with the correction the mean error over
    held-out inputs is under a quarter of what it was, and the cosine is no worse."""
    module = qm.conv_model(1)[0] if model == "conv" else conv_transpose_model(qm)
    stats = calibrate(module, inputs(0, 16))
    test = inputs(1, 48)
    plain = error_and_cosine(quantized(module, stats, scheme=scheme, weight_bits=4), module, test)
    corrected = error_and_cosine(
        quantized(module, stats, scheme=scheme, weight_bits=4, bias_correction=True), module, test
    )
    assert corrected[0] < 0.25 * plain[0]
    assert corrected[1] >= plain[1] - 1e-4


def test_the_calibrated_module_itself_can_be_quantized(qm):
    """The probe runs the calibrated module while `auto` ranges are chosen during emission:
    the corrected biases go into a copy, so quantizing that very module in place works."""
    module, _ = qm.conv_model(1)
    stats = calibrate(module, inputs(0, 12))
    expected = layers(quantized(module, calibrate(module, inputs(0, 12)), bias_correction=True))
    quantize_module(module, ranges_from_statistics(stats), QuantizeConfig(bias_correction=True))
    for name, op in layers(module).items():
        assert np.array_equal(stored(op.operands[2]), stored(expected[name].operands[2]))


def test_it_needs_calibration_samples(qm, tmp_path):
    """Fixed ranges and a statistics file carry no samples; samples=N does."""
    module, _ = qm.conv_model(1)
    stats = calibrate(module, inputs(0, 4))
    message = "bias_correction needs calibration samples"
    config = QuantizeConfig(bias_correction=True)
    ranges = {name: (s.min, s.max) for name, s in stats.items()}
    with pytest.raises(NpucError, match=message):
        quantize_module(module.clone(), ranges, config)
    path = tmp_path / "stats.json"
    save_statistics(path, stats)
    loaded, _ = load_statistics(path)
    with pytest.raises(NpucError, match=message):
        quantize_module(module.clone(), ranges_from_statistics(loaded), config)
    with pytest.raises(NpucError, match=message):
        apply_pipeline(module.clone(), f'quantize{{stats="{path}" bias_correction=true}}')
    by_samples = module.clone()
    apply_pipeline(by_samples, "quantize{samples=4 weight_bits=4 bias_correction=true}")
    assert len(layers(by_samples)["conv2"].operands) == 3  # conv2 got a bias
