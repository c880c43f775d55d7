"""DEQUANTIZE (and DENSIFY) of constants fold into float32 constants at import.

MediaPipe's float16 weights and weight-only int8 models dequantize their filters; the
layers must see constant filters, and the results must equal LiteRT's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from tflite_builder import TFLiteModel, run_litert

from npuc.dialects import nn, qnn
from npuc.frontends.tflite import import_tflite
from npuc.frontends.tflite_constants import dequantized
from npuc.frontends.tflite_model import decode_all
from npuc.graph_io import entry_function, input_names
from npuc.runtime.qnn_interpreter import run_module

RNG = np.random.default_rng(2026)
SAME = 0
CONV = {"Padding": SAME, "StrideH": 1, "StrideW": 1, "DilationHFactor": 1, "DilationWFactor": 1}

# A stored filter: (dtype, data, scale, zero_point, axis) -> its float32 value in the model.
Stored = Callable[[TFLiteModel, str, np.ndarray], int]


def fp16(m: TFLiteModel, name: str, w: np.ndarray, sparse: bool = False) -> int:
    return m.tensor(name, w.shape, np.float16, data=w.astype(np.float16), sparse=sparse)


def int8_per_tensor(m: TFLiteModel, name: str, w: np.ndarray) -> int:
    scale = float(np.abs(w).max() / 127)
    q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return m.tensor(name, w.shape, np.int8, data=q, scale=scale)


def int8_per_axis(m: TFLiteModel, name: str, w: np.ndarray) -> int:
    flat = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
    scales = (flat / 127).astype(np.float32)
    view = (-1,) + (1,) * (w.ndim - 1)
    q = np.clip(np.round(w / scales.reshape(view)), -127, 127).astype(np.int8)
    return m.tensor(name, w.shape, np.int8, data=q, scale=scales, axis=0)


def uint8_affine(m: TFLiteModel, name: str, w: np.ndarray) -> int:
    lo, hi = float(w.min()), float(w.max())
    scale, zp = (hi - lo) / 255, 131
    q = np.clip(np.round(w / scale) + zp, 0, 255).astype(np.uint8)
    return m.tensor(name, w.shape, np.uint8, data=q, scale=scale, zero_point=zp)


def layer_model(op: str, stored: Stored, densify: bool = False) -> tuple[bytes, np.ndarray]:
    """x -> op(x, DEQUANTIZE(stored filter), bias); optionally DENSIFY first (sparse fp16)."""
    m = TFLiteModel()
    if op == "FULLY_CONNECTED":
        x_shape, w_shape, y_shape, options = [2, 12], [5, 12], [2, 5], {}
        kind = "FullyConnectedOptions"
    elif op == "CONV_2D":
        x_shape, w_shape, y_shape, options = [1, 6, 6, 3], [4, 3, 3, 3], [1, 6, 6, 4], CONV
        kind = "Conv2DOptions"
    else:
        x_shape, w_shape, y_shape = [1, 6, 6, 4], [1, 3, 3, 4], [1, 6, 6, 4]
        options, kind = {**CONV, "DepthMultiplier": 1}, "DepthwiseConv2DOptions"
    w = RNG.standard_normal(w_shape).astype(np.float32)
    if densify:
        w[RNG.random(w_shape) < 0.6] = 0
        src = fp16(m, "w_sparse", w, sparse=True)
        dense = m.tensor("w_fp16", w_shape, np.float16)
        m.op("DENSIFY", [src], [dense])
    else:
        dense = stored(m, "w_stored", w)
    filt = m.tensor("w", w_shape)
    m.op("DEQUANTIZE", [dense], [filt])
    bias = m.tensor("b", [y_shape[-1]], data=RNG.standard_normal(y_shape[-1]).astype(np.float32))
    x, y = m.tensor("x", x_shape), m.tensor("y", y_shape)
    m.op(op, [x, filt, bias], [y], kind, **options)
    return m.build([x], [y]), RNG.standard_normal(x_shape).astype(np.float32)


def run_npuc(data: bytes, feed: np.ndarray) -> np.ndarray:
    module = import_tflite(data)
    names = input_names(entry_function(module))
    return next(iter(run_module(module, {names[0]: feed}).values()))


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"])
@pytest.mark.parametrize("stored", [fp16, int8_per_tensor, int8_per_axis, uint8_affine])
def test_dequantized_filter_is_a_constant_and_matches_litert(op: str, stored: Stored) -> None:
    data, x = layer_model(op, stored)
    module = import_tflite(data)
    ops = list(entry_function(module).body.ops)
    assert not any(o.name.startswith("qnn.") for o in ops)
    layer = next(o for o in ops if o.name in ("nn.conv2d", "nn.fully_connected"))
    assert all(isinstance(v.owner, nn.ConstantOp) for v in layer.operands[1:])
    np.testing.assert_allclose(run_npuc(data, x), run_litert(data, [x])[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["CONV_2D", "FULLY_CONNECTED"])
def test_sparse_float16_filter_behind_densify_matches_litert(op: str) -> None:
    data, x = layer_model(op, fp16, densify=True)
    graph = decode_all(data, "<test>")[0]
    assert [o.op_type for o in graph.operators] == ["DENSIFY", "DEQUANTIZE", op]
    sparse = graph.tensors[graph.operators[0].inputs[0]]
    assert sparse.data is not None and sparse.data.shape == sparse.shape
    np.testing.assert_allclose(run_npuc(data, x), run_litert(data, [x])[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("dtype", "scale", "zero_point", "axis"),
    [
        (np.int8, [0.0123], [3], None),
        (np.uint8, [0.5], [128], None),
        (np.int8, [0.1, 0.003, 7.5], [0, 0, 0], 1),
        (np.int16, [1e-4], [0], None),
    ],
)
def test_folded_values_equal_litert_dequantize_of_every_stored_value(
    dtype: type, scale: list[float], zero_point: list[int], axis: int | None
) -> None:
    info = np.iinfo(dtype)
    values = np.arange(info.min, info.max + 1, max(1, (info.max - info.min) // 255))
    shape = [values.size, len(scale)] if axis is not None else [values.size]
    stored = np.broadcast_to(values.reshape(-1, *([1] * (len(shape) - 1))), shape).astype(dtype)
    m = TFLiteModel()
    src = m.tensor(
        "q", shape, dtype, data=stored, scale=scale, zero_point=zero_point, axis=axis or 0
    )
    zero = m.tensor("zero", shape, data=np.zeros(shape, np.float32))
    deq, y = m.tensor("deq", shape), m.tensor("y", shape)
    m.op("DEQUANTIZE", [src], [deq])
    m.op("ADD", [deq, zero], [y], "AddOptions")
    data = m.build([], [y])
    expected = run_litert(data, [])[0]
    graph = decode_all(data, "<test>")[0]
    folded = dequantized(graph.tensors[src])
    assert folded is not None and folded.dtype == np.float32
    np.testing.assert_array_equal(folded, expected)
    np.testing.assert_array_equal(
        next(iter(run_module(import_tflite(data), {}).values())), expected
    )


def test_dequantize_of_a_run_time_tensor_stays_an_op() -> None:
    m = TFLiteModel()
    x = m.tensor("x", [2, 16], np.int8, scale=0.05, zero_point=-7)
    y = m.tensor("y", [2, 16])
    m.op("DEQUANTIZE", [x], [y])
    data = m.build([x], [y])
    module = import_tflite(data)
    assert any(isinstance(o, qnn.DequantizeOp) for o in entry_function(module).walk())
    feed = np.arange(-128, 128, dtype=np.int8).reshape(8, 32)[:2, :16]
    np.testing.assert_array_equal(run_npuc(data, feed), run_litert(data, [feed])[0])
