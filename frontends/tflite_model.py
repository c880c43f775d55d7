"""Decoding a .tflite flatbuffer (with the `tflite` package) into plain Python records.

Flatbuffer accessors read lazily, so a corrupt or truncated file fails wherever a
field is first touched. Everything the importer needs is therefore read here, up
front, inside one guard that turns any decoding failure into an NpucError.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tflite

from npuc.diagnostics import NpucError

from .tflite_sparse import densify

# TensorType enum -> numpy dtype.
DTYPES: dict[int, np.dtype] = {
    tflite.TensorType.FLOAT32: np.dtype(np.float32),
    tflite.TensorType.FLOAT16: np.dtype(np.float16),
    tflite.TensorType.INT32: np.dtype(np.int32),
    tflite.TensorType.UINT8: np.dtype(np.uint8),
    tflite.TensorType.INT64: np.dtype(np.int64),
    tflite.TensorType.INT16: np.dtype(np.int16),
    tflite.TensorType.INT8: np.dtype(np.int8),
    tflite.TensorType.BOOL: np.dtype(np.bool_),
    tflite.TensorType.UINT16: np.dtype(np.uint16),
}
TYPE_NAMES = {v: k.lower() for k, v in vars(tflite.TensorType).items() if not k.startswith("_")}
BUILTIN_NAMES = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
OPTION_NAMES = {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}


@dataclass
class Quant:
    """A tensor's affine quantization: real = scale * (q - zero_point), per `axis` if set."""

    scales: np.ndarray  # float32 values as TFLite stores them
    zero_points: np.ndarray
    axis: int | None


@dataclass
class Tensor:
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype | None
    type_name: str
    data: np.ndarray | None  # constant contents, None for activations
    quant: Quant | None
    signature: tuple[int, ...] | None = None


@dataclass
class Operator:
    index: int
    op_type: str  # builtin name (e.g. CONV_2D) or "custom:NAME"
    inputs: list[int]
    outputs: list[int]
    options: dict[str, Any] = field(default_factory=dict)
    custom: bool = False


@dataclass
class Graph:
    tensors: list[Tensor]
    operators: list[Operator]
    inputs: list[int]
    outputs: list[int]


def decode_all(data: bytes, location: str) -> list[Graph]:
    """Every subgraph of a .tflite file (the first is the main one); NpucError if not valid."""
    if len(data) < 8:
        raise NpucError("not a TFLite model: the file is too short", location)
    if data[4:8] != b"TFL3":
        raise NpucError("not a TFLite model: missing the 'TFL3' flatbuffer identifier", location)
    try:
        return _decode(data)
    except NpucError as e:
        raise NpucError(e.message, location) from None
    except (IndexError, struct.error, ValueError, TypeError, AttributeError, OverflowError) as e:
        raise NpucError(
            f"corrupt or truncated TFLite model ({type(e).__name__}: {e})", location
        ) from None


def _decode(data: bytes) -> list[Graph]:
    model = tflite.Model.GetRootAsModel(data, 0)
    if model.SubgraphsLength() < 1:
        raise NpucError("invalid TFLite model: it has no subgraphs")
    buffers = [_buffer(model.Buffers(i), data) for i in range(model.BuffersLength())]
    codes = [_op_code(model.OperatorCodes(i)) for i in range(model.OperatorCodesLength())]
    return [_subgraph(model.Subgraphs(i), buffers, codes) for i in range(model.SubgraphsLength())]


def _subgraph(sub, buffers: list, codes: list[tuple[str, bool]]) -> Graph:
    tensors = [_tensor(i, sub.Tensors(i), buffers) for i in range(sub.TensorsLength())]
    operators = []
    for i in range(sub.OperatorsLength()):
        op = sub.Operators(i)
        code = op.OpcodeIndex()
        if not 0 <= code < len(codes):
            raise NpucError(f"invalid TFLite model: operator {i} has opcode index {code}")
        op_type, custom = codes[code]
        inputs = [int(t) for t in _ints(op.InputsAsNumpy())]
        outputs = [int(t) for t in _ints(op.OutputsAsNumpy())]
        for t in (*inputs, *outputs):
            if not -1 <= t < len(tensors):
                raise NpucError(f"invalid TFLite model: operator {i} names tensor {t}")
        options = _options(op) if not custom else {"custom_options": _custom_options(op)}
        operators.append(Operator(i, op_type, inputs, outputs, options, custom))
    inputs = [int(t) for t in _ints(sub.InputsAsNumpy())]
    outputs = [int(t) for t in _ints(sub.OutputsAsNumpy())]
    for t in (*inputs, *outputs):
        if not 0 <= t < len(tensors):
            raise NpucError(f"invalid TFLite model: subgraph input/output tensor {t} is unknown")
    return Graph(tensors, operators, inputs, outputs)


def _ints(array: Any) -> np.ndarray:
    """flatbuffers returns 0 instead of an empty array for a missing vector."""
    return np.zeros(0, np.int64) if isinstance(array, int) else np.asarray(array, np.int64)


def _buffer(buf: Any, data: bytes) -> bytes:
    offset = buf.Offset()
    if offset > 1:  # large models keep buffers after the flatbuffer, addressed by offset
        size = buf.Size()
        if offset + size > len(data):
            raise NpucError("truncated TFLite model: a buffer lies beyond the end of the file")
        return data[offset : offset + size]
    raw = buf.DataAsNumpy()
    return b"" if isinstance(raw, int) else raw.tobytes()


def _custom_options(op: Any) -> bytes:
    """A custom operator's options as stored (flexbuffer or, for MediaPipe's ops, a C struct)."""
    raw = op.CustomOptionsAsNumpy()
    return b"" if isinstance(raw, int) else raw.tobytes()


def _op_code(code: Any) -> tuple[str, bool]:
    builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
    if builtin == tflite.BuiltinOperator.CUSTOM:
        custom = code.CustomCode()
        return f"custom:{custom.decode(errors='replace') if custom else '?'}", True
    return BUILTIN_NAMES.get(builtin, f"builtin_{builtin}"), False


def _tensor(index: int, t: Any, buffers: list[bytes]) -> Tensor:
    name = (t.Name() or b"").decode(errors="replace") or f"tensor_{index}"
    shape = tuple(int(d) for d in _ints(t.ShapeAsNumpy()))
    signature = tuple(int(d) for d in _ints(t.ShapeSignatureAsNumpy())) or None
    ttype = t.Type()
    dtype = DTYPES.get(ttype)
    data = None
    b = t.Buffer()
    if not 0 <= b < max(len(buffers), 1):
        raise NpucError(f"invalid TFLite model: tensor '{name}' names buffer {b}")
    raw = buffers[b] if b < len(buffers) else b""
    if raw:
        if dtype is None:
            raise NpucError(f"constant tensor '{name}' has unsupported type {_type_name(ttype)}")
        count = int(np.prod(shape)) if shape else 1
        if (sparsity := t.Sparsity()) is not None:
            if len(raw) % dtype.itemsize:
                raise NpucError(
                    f"invalid TFLite model: sparse tensor '{name}' holds "
                    f"{len(raw)} bytes of {_type_name(ttype)}"
                )
            data = densify(sparsity, np.frombuffer(raw, dtype), shape, name)
        elif len(raw) != count * dtype.itemsize:
            raise NpucError(
                f"invalid TFLite model: tensor '{name}' holds {len(raw)} bytes, "
                f"its shape {list(shape)} needs {count * dtype.itemsize}"
            )
        else:
            data = np.frombuffer(raw, dtype).reshape(shape).copy()
    return Tensor(
        index, name, shape, dtype, _type_name(ttype), data, _quant(t, name, shape), signature
    )


def _type_name(ttype: int) -> str:
    return TYPE_NAMES.get(ttype, f"type {ttype}")


def _quant(t: Any, name: str, shape: tuple[int, ...]) -> Quant | None:
    """The quantization, checked as LiteRT checks it: per-axis scales name a dimension of
    the tensor and give one scale (and zero point) per index along it."""
    q = t.Quantization()
    if q is None or q.ScaleLength() == 0:
        return None
    scales = np.asarray(q.ScaleAsNumpy(), np.float32).reshape(-1)
    zps = _ints(q.ZeroPointAsNumpy()).reshape(-1)
    if zps.size == 0:
        zps = np.zeros(scales.size, np.int64)
    if zps.size == 1 and scales.size > 1:
        zps = np.repeat(zps, scales.size)
    if zps.size != scales.size:
        raise NpucError(
            f"invalid TFLite model: tensor '{name}' has {scales.size} scales "
            f"but {zps.size} zero points"
        )
    axis = int(q.QuantizedDimension()) if scales.size > 1 else None
    if axis is not None:
        if not 0 <= axis < len(shape):
            raise NpucError(
                f"invalid TFLite model: tensor '{name}' is quantized along "
                f"dimension {axis}, but its shape {list(shape)} has rank "
                f"{len(shape)}"
            )
        if shape[axis] != scales.size:
            raise NpucError(
                f"invalid TFLite model: tensor '{name}' has {scales.size} scales "
                f"for dimension {axis} of size {shape[axis]}"
            )
    return Quant(scales, zps, axis)


def _options(op: Any) -> dict[str, Any]:
    """Every scalar and vector field of the operator's builtin options table, by name."""
    kind = op.BuiltinOptionsType()
    table = op.BuiltinOptions()
    if kind == 0 or table is None:
        return {}
    cls = getattr(tflite, OPTION_NAMES.get(kind, ""), None)
    if cls is None:
        return {}
    options = cls()
    options.Init(table.Bytes, table.Pos)
    values: dict[str, Any] = {}
    for name in dir(cls):
        if name.startswith("_") or name in ("Init",) or name.startswith("GetRootAs"):
            continue
        if name.endswith(("IsNone", "Length", "AsNumpy")) or "BufferHasIdentifier" in name:
            continue
        method = getattr(options, name)
        if hasattr(options, name + "AsNumpy"):
            values[name] = _ints(getattr(options, name + "AsNumpy")())
            continue
        try:
            values[name] = method()
        except TypeError:  # accessors that take an index (other vectors)
            continue
    return values
