"""Constant operators folded before import: DEQUANTIZE and DENSIFY of constants.

MediaPipe ships float16 weights behind DEQUANTIZE (some with DENSIFY of a sparse
constant first); weight-only and dynamic-range models dequantize int8 constants. Folding
them into float32 constants lets CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED see a
constant filter. Values are LiteRT's: float16 widens exactly; an affine constant is
`float32(scale * (q - zero_point))` per tensor or per `quantized_dimension`, one rounding
of the exact product, as its Dequantize and PerChannelDequantize compute.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .tflite_model import Graph, Operator, Tensor

FOLDABLE = frozenset({"DEQUANTIZE", "DENSIFY"})
AFFINE = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))


def dequantized(t: Tensor) -> np.ndarray | None:
    """The float32 value of a constant DEQUANTIZE input, None where LiteRT would not fold it."""
    data = t.data
    if data is None:
        return None
    if data.dtype == np.float16:
        return data.astype(np.float32)
    if data.dtype not in AFFINE or t.quant is None:
        return None
    scales = np.asarray(t.quant.scales, np.float64)
    zps = np.asarray(t.quant.zero_points, np.int64)
    if t.quant.axis is not None and scales.size > 1:
        axis = t.quant.axis
        if not 0 <= axis < data.ndim or data.shape[axis] != scales.size:
            return None
        view = [1] * data.ndim
        view[axis] = scales.size
        scales, zps = scales.reshape(view), zps.reshape(view)
    else:
        scales, zps = scales.reshape(-1)[:1], zps.reshape(-1)[:1]
    return (scales * (data.astype(np.int64) - zps)).astype(np.float32)


def _folded(op: Operator, tensors: list[Tensor]) -> np.ndarray | None:
    if op.custom or op.op_type not in FOLDABLE or len(op.inputs) != 1 or len(op.outputs) != 1:
        return None
    src, out = tensors[op.inputs[0]], tensors[op.outputs[0]]
    if src.data is None or out.data is not None:
        return None
    if op.op_type == "DENSIFY":
        return src.data if src.dtype == out.dtype else None
    value = dequantized(src)
    return value if value is not None and out.dtype == np.float32 else None


def fold_constants(graph: Graph) -> Graph:
    """`graph` with DEQUANTIZE/DENSIFY of constants replaced by their constant results."""
    tensors = list(graph.tensors)
    operators = []
    for op in graph.operators:  # in execution order, so chains fold through
        value = _folded(op, tensors)
        if value is None or value.shape != tensors[op.outputs[0]].shape:
            operators.append(op)
            continue
        t = op.outputs[0]
        tensors[t] = dataclasses.replace(tensors[t], data=value)
    if len(operators) == len(graph.operators):
        return graph
    return dataclasses.replace(graph, tensors=tensors, operators=operators)
