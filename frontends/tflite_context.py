"""What a TFLite operator converter sees: `OpContext` (the operator, its tensors, and how to
emit IR), the tensor-to-type rules, and `Unsupported`.

The converters (tflite_float.py, tflite_int8.py, tflite_int16.py, tflite_int16_luts.py) depend
on this module; the importer (tflite.py) drives them through the table in
tflite_converters.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
from xdsl.dialects.builtin import TensorType, f32, i32, i64
from xdsl.ir import Attribute, Block, SSAValue

from npuc.dialects import nn, qnn
from npuc.dialects.arrays import ints
from npuc.dialects.nn_base import NNOperation, build, shape_of
from npuc.dialects.quant_types import UniformQuantizedType

from .tflite_model import Graph, Operator, Tensor


class Importer(Protocol):
    """The importer as its converters and the variable state see it (frontends/tflite.py)."""

    graph: Graph
    graphs: Sequence[Graph]
    location: str
    block: Block
    state: Any

    def __init__(
        self,
        graph: Graph,
        location: str,
        graphs: Sequence[Graph] | None = None,
        visiting: frozenset[int] = frozenset({0}),
    ) -> None: ...

    def run(
        self,
        input_shapes: Mapping[str, Sequence[int]],
        inputs: Sequence[str] | None,
        outputs: Sequence[str] | None,
    ) -> Any: ...

    def value(self, t: Tensor) -> SSAValue: ...

    def constant(self, array: np.ndarray, name: str, ty: Attribute | None) -> SSAValue: ...


# Operators that run other subgraphs, with the options naming them.
CONTROL_FLOW = {
    "IF": ("ThenSubgraphIndex", "ElseSubgraphIndex"),
    "WHILE": ("CondSubgraphIndex", "BodySubgraphIndex"),
    "CALL": ("Subgraph",),
}


NCHW = (0, 3, 1, 2)


NHWC = (0, 2, 3, 1)


STORAGE = {np.dtype(np.int8): "i8", np.dtype(np.uint8): "u8", np.dtype(np.int16): "i16"}


class Unsupported(Exception):
    """An operator npuc cannot import, with the reason."""


Converter = Callable[["OpContext"], "SSAValue | Sequence[SSAValue]"]


def tensor_type(t: Tensor, shape: Sequence[int] | None = None) -> TensorType:
    """The IR type of a TFLite tensor: f32, a quantized type, or i32/i64 for indices."""
    dims = list(t.shape if shape is None else shape)
    return TensorType(element_type(t), dims)


def element_type(t: Tensor) -> Attribute:
    if t.dtype == np.float32:
        return f32
    if t.dtype in STORAGE and t.quant is not None:
        return quantized_type(t)
    if t.dtype == np.int32:
        return i32
    if t.dtype == np.int64:
        return i64
    raise Unsupported(f"tensor '{t.name}' of type {t.type_name} not supported")


def quantized_type(t: Tensor, axis: int | None = None) -> UniformQuantizedType:
    """The tensor's own scales and zero points; per-axis types may move their axis."""
    q = t.quant
    if q is None or t.dtype not in STORAGE:
        raise Unsupported(
            f"tensor '{t.name}' of type {t.type_name} is not a quantized "
            "int8, uint8 or int16 tensor"
        )
    scales = [float(s) for s in q.scales]
    if (wrong := scale_error(t)) is not None:
        raise Unsupported(wrong)
    if q.axis is None or len(scales) == 1:
        return UniformQuantizedType(STORAGE[t.dtype], scales[0], int(q.zero_points[0]))
    return UniformQuantizedType(
        STORAGE[t.dtype],
        scales,
        [int(z) for z in q.zero_points],
        axis=q.axis if axis is None else axis,
    )


def scale_error(t: Tensor) -> str | None:
    """Why a quantized tensor's scales cannot be used (None if they can: positive, finite)."""
    if t.quant is None or t.dtype not in STORAGE:
        return None
    scales = np.asarray(t.quant.scales, np.float64)
    bad = np.flatnonzero(~((scales > 0) & np.isfinite(scales)))
    if not len(bad):
        return None
    return (
        f"tensor '{t.name}' has scale {float(scales[bad[0]])}; a quantized tensor's scales "
        "must be positive and finite"
    )


def check_bias(t: Tensor) -> None:
    """A bias's zero point must be 0 (LiteRT's delegates refuse others; its reference
    kernels ignore them, so no result would be right)."""
    if t.quant is not None and np.any(t.quant.zero_points != 0):
        zp = int(t.quant.zero_points[np.flatnonzero(t.quant.zero_points)[0]])
        raise ValueError(f"bias '{t.name}' has zero point {zp}; a bias's zero point must be 0")


def is_quantized(t: Tensor) -> bool:
    return t.dtype in STORAGE and t.quant is not None


class OpContext:
    """What a converter sees of one operator, and how it emits IR."""

    def __init__(self, importer: Importer, op: Operator):
        self.importer = importer
        self.op = op
        self.graph = importer.graph
        self.name = self.out().name if op.outputs else f"op_{op.index}"
        self.options: dict[str, Any] = op.options

    # ------------------------------------------------------------------ reading

    def opt(self, key: str, default: Any = None) -> Any:
        return self.options.get(key, default)

    def has(self, i: int) -> bool:
        return i < len(self.op.inputs) and self.op.inputs[i] >= 0

    def tensor(self, i: int) -> Tensor:
        if not self.has(i):
            raise Unsupported(f"input {i} is missing")
        return self.graph.tensors[self.op.inputs[i]]

    def out(self, i: int = 0) -> Tensor:
        return self.graph.tensors[self.op.outputs[i]]

    def const(self, i: int) -> np.ndarray | None:
        return self.tensor(i).data if self.has(i) else None

    def need_const(self, i: int, what: str) -> np.ndarray:
        data = self.const(i)
        if data is None:
            raise Unsupported(f"{what} must be a constant")
        return data

    def value(self, i: int) -> SSAValue:
        return self.importer.value(self.tensor(i))

    def shape(self, i: int) -> tuple[int, ...]:
        return shape_of(self.value(i)) if self.tensor(i).data is None else self.tensor(i).shape

    # ------------------------------------------------------------------ emitting

    def emit(
        self,
        op_type: type[NNOperation],
        operands: Sequence[SSAValue | None],
        props: Mapping[str, Attribute] | None = None,
        *,
        result_types: Sequence[Attribute] | None = None,
        element_type: Attribute = f32,
    ) -> SSAValue:
        op = build(
            op_type,
            operands,
            props,
            name=self.name,
            result_types=result_types,
            element_type=element_type,
        )
        self.importer.block.add_op(op)
        return op.results[0]

    def emit_multi(
        self,
        op_type: type[NNOperation],
        operands: Sequence[SSAValue],
        props: Mapping[str, Attribute],
        result_types: Sequence[Attribute],
    ) -> list[SSAValue]:
        op = build(op_type, operands, props, name=self.name, result_types=result_types)
        self.importer.block.add_op(op)
        return list(op.results)

    def constant(
        self, array: np.ndarray, ty: Attribute | None = None, name: str | None = None
    ) -> SSAValue:
        """An nn.constant (f32/i32/i64 data) or qnn.constant (with a quantized type `ty`)."""
        return self.importer.constant(array, name or self.name, ty)

    def transpose(self, value: SSAValue, perm: Sequence[int]) -> SSAValue:
        """transpose(value), folding a transpose that undoes the one producing `value`."""
        perm = [int(p) for p in perm]
        if perm == list(range(len(perm))):
            return value
        owner = value.owner
        if isinstance(owner, nn.TransposeOp | qnn.TransposeOp):
            inner = [int(p) for p in owner.perm.get_values()]
            if [inner[p] for p in perm] == list(range(len(perm))):
                return owner.input
        ty = value.type
        assert isinstance(ty, TensorType)
        op_type = qnn.TransposeOp if is_qvalue(value) else nn.TransposeOp
        return self.emit(op_type, [value], {"perm": ints(perm)}, element_type=ty.element_type)

    def hoisted(self, values: Sequence[SSAValue]) -> list[SSAValue] | None:
        """The NCHW values behind operands that are all NCHW -> NHWC transposes of one shape.

        Element-wise ops then run in NCHW, so the transposes around them cancel too.
        """
        inner = []
        for v in values:
            owner = v.owner
            if not isinstance(owner, nn.TransposeOp | qnn.TransposeOp):
                return None
            if tuple(int(p) for p in owner.perm.get_values()) != NHWC:
                return None
            inner.append(owner.input)
        return inner if len({shape_of(v) for v in inner}) == 1 else None

    def nchw(self, value: SSAValue) -> SSAValue:
        return self.transpose(value, NCHW)

    def nhwc(self, value: SSAValue) -> SSAValue:
        return self.transpose(value, NHWC)

    def reshape(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        shape = [int(d) for d in shape]
        if list(shape_of(value)) == shape:
            return value
        ty = value.type
        assert isinstance(ty, TensorType)
        op_type = qnn.ReshapeOp if is_qvalue(value) else nn.ReshapeOp
        return self.emit(op_type, [value], result_types=[TensorType(ty.element_type, shape)])


def is_qvalue(value: SSAValue) -> bool:
    ty = value.type
    return isinstance(ty, TensorType) and isinstance(ty.element_type, UniformQuantizedType)
