"""AdaRound (learned weight rounding): the Gram matrices of a layer's input patches against an
im2col written here with loops, the learned rounding's output error against numpy's direct
computation of it, and the quantizer storing and reporting what was learned."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from npuc import graph_io
from npuc.diagnostics import NpucError
from npuc.dialects import qnn
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.frontends.onnx import import_onnx
from npuc.passes.quantization.adaround import layer_grams, learn_rounding
from npuc.passes.quantization.statistics import (
    collect_statistics,
    load_statistics,
    save_statistics,
)
from npuc.passes.quantize import QuantizeConfig, quantize_module, ranges_from_statistics
from npuc.tensors import from_dense


def im2col(x: np.ndarray, kernel, strides, pads, dilations, groups) -> np.ndarray:
    """Patches [groups, Cg * kh * kw, N * OH * OW] by explicit loops over output positions."""
    n, c, h, w = x.shape
    kh, kw = kernel
    top, left, bottom, right = pads
    xp = np.zeros((n, c, h + top + bottom, w + left + right))
    xp[:, :, top : top + h, left : left + w] = x
    oh = (h + top + bottom - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (w + left + right - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    cg = c // groups
    cols = np.zeros((groups, cg * kh * kw, n * oh * ow))
    for g in range(groups):
        for b in range(n):
            for i in range(oh):
                for j in range(ow):
                    patch = [
                        xp[
                            b,
                            g * cg + ch,
                            i * strides[0] + di * dilations[0],
                            j * strides[1] + dj * dilations[1],
                        ]
                        for ch in range(cg)
                        for di in range(kh)
                        for dj in range(kw)
                    ]
                    cols[g, :, (b * oh + i) * ow + j] = patch
    return cols


def conv_model(groups: int, seed: int = 0, batch: int = 1):
    """x [batch, 4, 7, 6] -> conv (3x3, stride 2x1, dilation 1x2, asymmetric pads) -> relu."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((8, 4 // groups, 3, 3)) * 0.3).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32) * 0.1
    nodes = [
        helper.make_node(
            "Conv",
            ["x", "w", "b"],
            ["c"],
            name="conv",
            group=groups,
            strides=[2, 1],
            dilations=[1, 2],
            pads=[1, 2, 0, 1],
        ),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "adaround",
        [helper.make_tensor_value_info("x", 1, [batch, 4, 7, 6])],
        [helper.make_tensor_value_info("y", 1, None)],
        initializer=[
            helper.make_tensor("w", 1, w.shape, w.ravel()),
            helper.make_tensor("b", 1, b.shape, b.ravel()),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return import_onnx(model), w


def correlated_inputs(seed: int = 1, calls: int = 12) -> list[dict[str, np.ndarray]]:
    """Inputs whose channels are correlated and off-centre, where rounding choices matter."""
    rng = np.random.default_rng(seed)
    mix = rng.standard_normal((4, 4))
    batches = []
    for _ in range(calls):
        x = np.einsum("dc,nchw->ndhw", mix, rng.standard_normal((1, 4, 7, 6))) + 0.7
        batches.append({"x": x.astype(np.float32)})
    return batches


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_the_grams_are_those_of_the_input_patches_over_the_probe_calls(groups):
    module, _ = conv_model(groups)
    batches = correlated_inputs()
    stats = collect_statistics(module, batches, progress=False)
    probe = stats["x"].probe
    grams = layer_grams(probe)
    cols = np.concatenate(
        [
            im2col(np.asarray(c[0], np.float64), (3, 3), (2, 1), (1, 2, 0, 1), (1, 2), groups)
            for c in probe.calls
        ],
        axis=2,
    )
    expected = np.einsum("gkr,glr->gkl", cols, cols) / cols.shape[2]
    np.testing.assert_allclose(grams["conv"], expected, rtol=1e-12, atol=1e-12)


def weight_type(w: np.ndarray, bits: int) -> UniformQuantizedType:
    qmax = 2 ** (bits - 1) - 1
    scales = np.abs(w.reshape(len(w), -1)).max(axis=1) / qmax
    return UniformQuantizedType("i8", list(scales), 0, axis=0, storage_min=-qmax, storage_max=qmax)


def output_error(stored: np.ndarray, q: UniformQuantizedType, w: np.ndarray, x: np.ndarray):
    """Mean squared difference of x @ W_deq^T and x @ W^T over rows and output channels."""
    scales = np.array(q.scale_values())[:, None]
    deq = stored.reshape(len(w), -1) * scales
    return float((((x @ deq.T) - (x @ w.reshape(len(w), -1).T)) ** 2).mean())


@pytest.mark.parametrize("bits", [8, 4])
def test_learned_rounding_moves_the_outputs_less_than_nearest(bits):
    rng = np.random.default_rng(3)
    w = rng.standard_normal((16, 40)) * 0.2
    x = rng.standard_normal((3000, 40)) @ rng.standard_normal((40, 40)) * 0.3 + 0.5
    q = weight_type(w, bits)
    rounding = learn_rounding(w, q, (x.T @ x / len(x))[None], iterations=500)
    scaled = w / np.array(q.scale_values())[:, None]
    stored = rounding.stored.astype(np.float64)
    assert np.all((stored == np.floor(scaled)) | (stored == np.ceil(scaled)))  # up or down
    nearest = np.clip(np.sign(scaled) * np.floor(np.abs(scaled) + 0.5), q.qmin, q.qmax)
    assert np.count_nonzero(stored != nearest) > w.size // 20
    learned_error, nearest_error = output_error(stored, q, w, x), output_error(nearest, q, w, x)
    assert learned_error < 0.8 * nearest_error
    assert rounding.learned_error == pytest.approx(learned_error, rel=1e-9)
    assert rounding.nearest_error == pytest.approx(nearest_error, rel=1e-9)


def test_a_channel_is_never_worse_than_nearest_on_the_calibration_data():
    """With too few iterations to learn anything, every channel falls back to nearest."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((8, 12))
    x = rng.standard_normal((500, 12))
    q = weight_type(w, 8)
    rounding = learn_rounding(w, q, (x.T @ x / len(x))[None], iterations=1)
    scales = np.array(q.scale_values())[:, None]
    nearest = np.clip(np.sign(w / scales) * np.floor(np.abs(w / scales) + 0.5), -127, 127)
    got = rounding.stored.astype(np.float64)

    def errors(stored: np.ndarray) -> np.ndarray:
        return ((x @ (stored * scales - w).T) ** 2).mean(axis=0)

    assert np.all(errors(got) <= errors(nearest) * (1 + 1e-12))


def stored_weights(module) -> np.ndarray:
    func = graph_io.entry_function(module)
    conv = next(op for op in func.walk() if isinstance(op, qnn.Conv2dOp))
    return np.asarray(from_dense(conv.operands[1].owner.value))


@pytest.mark.parametrize("scheme", ["int8-per-channel", "int8"])
def test_the_quantizer_stores_the_learned_weights_and_reports_them(scheme):
    module, w = conv_model(2)
    batches = correlated_inputs()
    stats = collect_statistics(module, batches, progress=False)
    nearest = module.clone()
    quantize_module(nearest, ranges_from_statistics(stats), QuantizeConfig(scheme=scheme))
    learned = module.clone()
    config = QuantizeConfig(scheme=scheme, adaround=True, adaround_iterations=300)
    report = quantize_module(learned, ranges_from_statistics(stats), config)
    assert report.layers["conv"].weight["rounding"] == "adaround"
    a, b = stored_weights(learned), stored_weights(nearest)
    assert a.shape == b.shape == w.shape
    assert np.abs(a.astype(np.int64) - b).max() == 1  # some weights rounded the other way
    # The stored integers are learn_rounding's for the layer's weight type.
    func = graph_io.entry_function(learned)
    conv = next(op for op in func.walk() if isinstance(op, qnn.Conv2dOp))
    weight_q = conv.operands[1].type.element_type
    assert isinstance(weight_q, UniformQuantizedType)
    grams = layer_grams(stats["x"].probe)
    np.testing.assert_array_equal(a, learn_rounding(w, weight_q, grams["conv"], 300).stored)


def test_adaround_needs_calibration_samples(tmp_path):
    module, _ = conv_model(1)
    stats = collect_statistics(module, correlated_inputs(), progress=False)
    save_statistics(tmp_path / "s.json", stats, {})
    loaded, _ = load_statistics(tmp_path / "s.json")
    with pytest.raises(NpucError, match="adaround needs calibration samples"):
        quantize_module(module, ranges_from_statistics(loaded), QuantizeConfig(adaround=True))


def test_adaround_iterations_are_checked():
    with pytest.raises(NpucError, match=r"adaround_iterations must be in \[1, 100000\], got 0"):
        QuantizeConfig(adaround=True, adaround_iterations=0).check()
