"""Decoding a .tflite flatbuffer (with the `tflite` package) into plain Python records.

Flatbuffer accessors read lazily, so a corrupt or truncated file fails wherever a
field is first touched. Everything the importer needs is therefore read here, up
front, each table inside a guard (`_reading`) that turns a decoding failure into an
NpucError naming the table (a subgraph's tensor or operator, a buffer, an operator
code), the byte offset it starts at, and what went wrong there.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from npuc.diagnostics import NpucError

from .tflite_schema import tflite
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
    except _Corrupt as e:
        raise NpucError(f"corrupt or truncated TFLite model: {e}", location) from None


#: What flatbuffers' accessors raise on offsets and lengths that point outside the file.
_DECODE_ERRORS = (IndexError, struct.error, ValueError, TypeError, AttributeError, OverflowError)


class _Corrupt(Exception):
    """A table of the flatbuffer that cannot be read."""


@contextmanager
def _reading(what: str, table: Any = None) -> Iterator[None]:
    """A decoding failure inside the block is a _Corrupt naming `what` and where its
    `table` starts, if it was found (the innermost guard names it)."""
    try:
        yield
    except _DECODE_ERRORS as e:
        position = getattr(getattr(table, "_tab", None), "Pos", None)
        at = f" (its table at byte {position})" if isinstance(position, int) else ""
        raise _Corrupt(f"{what}{at} {_decode_failure(e)}") from None


def _decode_failure(e: Exception) -> str:
    """What a flatbuffers accessor's exception means, in the file's terms."""
    text = str(e)
    if isinstance(e, struct.error) and (
        m := re.search(
            r"unpacking (\d+) bytes at offset (-?\d+) \(actual buffer size is (\d+)", text
        )
    ):
        return (
            f"has a field of {m[1]} bytes at byte {m[2]}, past the end of the file ({m[3]} bytes)"
        )
    if isinstance(e, TypeError) and (m := re.search(r"bad number (-?\d+)", text)):
        return f"has an offset or length out of range ({m[1]})"
    if isinstance(e, ValueError) and "buffer is smaller" in text:
        return "has a vector that runs past the end of the file"
    if isinstance(e, IndexError | struct.error):
        return "has an offset that points outside the file"
    return "has a field that cannot be decoded"


def _decode(data: bytes) -> list[Graph]:
    model = tflite.Model.GetRootAsModel(data, 0)
    with _reading("the model table", model):
        n_subgraphs, n_buffers = model.SubgraphsLength(), model.BuffersLength()
        n_codes = model.OperatorCodesLength()
    if n_subgraphs < 1:
        raise NpucError("invalid TFLite model: it has no subgraphs")
    buffers = []
    for i in range(n_buffers):
        with _reading(f"buffer {i}"):
            buffer = model.Buffers(i)
        with _reading(f"buffer {i}", buffer):
            buffers.append(_buffer(buffer, data))
    codes = []
    for i in range(n_codes):
        with _reading(f"operator code {i}"):
            code = model.OperatorCodes(i)
        with _reading(f"operator code {i}", code):
            codes.append(_op_code(code))
    graphs = []
    for i in range(n_subgraphs):
        with _reading(f"subgraph {i}"):
            sub = model.Subgraphs(i)
        graphs.append(_subgraph(i, sub, buffers, codes))
    return graphs


def _subgraph(index: int, sub: Any, buffers: list, codes: list[tuple[str, bool]]) -> Graph:
    where = f"subgraph {index}"
    with _reading(where, sub):
        n_tensors, n_operators = sub.TensorsLength(), sub.OperatorsLength()
        inputs = [int(t) for t in _ints(sub.InputsAsNumpy())]
        outputs = [int(t) for t in _ints(sub.OutputsAsNumpy())]
    tensors = []
    for i in range(n_tensors):
        with _reading(f"tensor {i} of {where}"):
            tensor = sub.Tensors(i)
        with _reading(f"tensor {i} of {where}", tensor):
            tensors.append(_tensor(i, tensor, buffers))
    operators = []
    for i in range(n_operators):
        with _reading(f"operator {i} of {where}"):
            op = sub.Operators(i)
        with _reading(f"operator {i} of {where}", op):
            operators.append(_operator(i, op, codes, len(tensors)))
    for t in (*inputs, *outputs):
        if not 0 <= t < len(tensors):
            raise NpucError(f"invalid TFLite model: subgraph input/output tensor {t} is unknown")
    return Graph(tensors, operators, inputs, outputs)


def _operator(i: int, op: Any, codes: list[tuple[str, bool]], n_tensors: int) -> Operator:
    code = op.OpcodeIndex()
    if not 0 <= code < len(codes):
        raise NpucError(f"invalid TFLite model: operator {i} has opcode index {code}")
    op_type, custom = codes[code]
    inputs = [int(t) for t in _ints(op.InputsAsNumpy())]
    outputs = [int(t) for t in _ints(op.OutputsAsNumpy())]
    for t in (*inputs, *outputs):
        if not -1 <= t < n_tensors:
            raise NpucError(f"invalid TFLite model: operator {i} names tensor {t}")
    options = _options(op) if not custom else {"custom_options": _custom_options(op)}
    return Operator(i, op_type, inputs, outputs, options, custom)


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
