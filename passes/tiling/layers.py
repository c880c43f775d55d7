"""The layers the `tile` pass numbers and plans, and how each one may be split.

Layers are the entry function's ops in block order, except constants
(`nn.constant`, `qnn.constant`, `arith.constant`), zero-cost movement
(`nn/qnn.reshape`, `nn/qnn.transpose`) and `func.return`; they are numbered
from 0. Kinds:

- WINDOW: 2-D convolutions (constant weights) and max/avg pools on NCHW tensors:
  split along H and W (windows need halos), convolutions also along output channels;
- ELEMENTWISE: elementwise ops with a 4-D result: split along H and W;
- DENSE: fully connected layers with constant weights: split along output features;
- WHOLE: everything else (softmax, global pools, concat, ...) stays whole.

A transpose whose only user is a WINDOW or ELEMENTWISE layer is folded into that
layer's tiles (each tile transposes its own slice), so its full result never exists.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from enum import Enum

from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from npuc.diagnostics import NpucError
from npuc.dialects import nn, qnn
from npuc.dialects.nn_elementwise import AxisOperation, BinaryOperation, UnaryOperation
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.tensors import numpy_dtype

CONSTANT_OPS = (nn.ConstantOp, qnn.ConstantOp, arith.ConstantOp)
MOVEMENT_OPS = (nn.ReshapeOp, qnn.ReshapeOp, nn.TransposeOp, qnn.TransposeOp)
TRANSPOSE_OPS = (nn.TransposeOp, qnn.TransposeOp)
CONV_OPS = (nn.Conv2dOp, qnn.Conv2dOp)
POOL_OPS = (nn.MaxPool2dOp, qnn.MaxPool2dOp, nn.AvgPool2dOp, qnn.AvgPool2dOp)
DENSE_OPS = (nn.FullyConnectedOp, qnn.FullyConnectedOp)
QNN_ELEMENTWISE = (
    qnn.AddOp,
    qnn.SubOp,
    qnn.MulOp,
    qnn.MaximumOp,
    qnn.MinimumOp,
    qnn.LutOp,
    qnn.RequantizeOp,
    qnn.QuantizeOp,
    qnn.DequantizeOp,
)


class Kind(Enum):
    WINDOW = "window"
    ELEMENTWISE = "elementwise"
    DENSE = "dense"
    WHOLE = "whole"


@dataclass(frozen=True)
class Window:
    """Sliding-window geometry along H and W: kernel, stride, dilation, pads (t, l, b, r)."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    pads: tuple[int, int, int, int]

    def extent(self, axis: int) -> int:
        return self.dilations[axis] * (self.kernel[axis] - 1) + 1


@dataclass(eq=False)
class Layer:
    """One numbered layer: its op, kind, and which operands are activations or constants."""

    index: int
    op: Operation
    name: str
    kind: Kind
    activations: tuple[int, ...]
    constants: tuple[int, ...]
    window: Window | None = None
    groups: int = 1
    transposes: dict[int, Operation] = field(default_factory=dict)

    @property
    def result(self) -> SSAValue:
        return self.op.results[0]

    @functools.cached_property
    def out_shape(self) -> tuple[int, ...]:
        return shape(self.result)

    @functools.cached_property
    def in_shape(self) -> tuple[int, ...]:
        """The shape of operand 0 (a window layer's input)."""
        return shape(self.op.operands[0])

    @property
    def spatial(self) -> bool:
        """Split along H and W (and so may join a cascade)."""
        return self.kind in (Kind.WINDOW, Kind.ELEMENTWISE)

    @property
    def is_conv(self) -> bool:
        return isinstance(self.op, CONV_OPS)

    @property
    def has_accumulators(self) -> bool:
        """Convolutions and dense layers accumulate in 32-bit before requantizing."""
        return isinstance(self.op, CONV_OPS + DENSE_OPS)

    @functools.cached_property
    def channel_units(self) -> int:
        """How many pieces the output channels may be cut into (1: no channel split)."""
        if isinstance(self.op, DENSE_OPS):
            return self.out_shape[1]
        if self.is_conv:
            return self.out_shape[1] if self.groups == 1 else self.groups
        return 1

    def source(self, index: int) -> SSAValue:
        """Where operand `index` comes from: through a folded transpose to its input."""
        transpose = self.transposes.get(index)
        return transpose.operands[0] if transpose is not None else self.op.operands[index]

    def describe(self) -> str:
        return f"layer {self.index} '{self.name}' ({self.op.name})"


def shape(value: SSAValue) -> tuple[int, ...]:
    ty = value.type
    assert isinstance(ty, TensorType)
    return tuple(ty.get_shape())


def itemsize(value: SSAValue) -> int:
    """Bytes per element of a tensor value (quantized: its storage type)."""
    ty = value.type
    assert isinstance(ty, TensorType)
    element = ty.element_type
    if isinstance(element, UniformQuantizedType):
        return element.storage_dtype().itemsize
    return numpy_dtype(element).itemsize


def nbytes(value: SSAValue) -> int:
    return math.prod(shape(value)) * itemsize(value)


def is_constant(value: SSAValue) -> bool:
    return isinstance(value.owner, CONSTANT_OPS)


def _ints(attr) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


def _window(op: Operation) -> Window | None:
    """The geometry of a convolution or pool whose every window touches the input."""
    kernel = shape(op.operands[1])[2:] if isinstance(op, CONV_OPS) else _ints(op.kernel)
    dilations = getattr(op, "dilations", None)
    window = Window(
        (kernel[0], kernel[1]),
        _ints(op.strides),
        _ints(dilations) if dilations is not None else (1, 1),
        _ints(op.pads),
    )
    # A window lying wholly in the padding would need an empty slice: such layers stay whole.
    for axis in range(2):
        if max(window.pads[axis], window.pads[axis + 2]) >= window.extent(axis):
            return None
    return window


def _ceil_mode(op: Operation) -> bool:
    attr = op.properties.get("ceil_mode")
    return attr is not None and bool(attr.value.data)


def _classify(op: Operation) -> tuple[Kind, Window | None]:
    out = op.results
    if len(out) != 1 or not all(isinstance(v.type, TensorType) for v in (*op.operands, *out)):
        return Kind.WHOLE, None
    rank = len(shape(out[0]))
    if isinstance(op, CONV_OPS + POOL_OPS):
        if rank != 4 or (isinstance(op, CONV_OPS) and not is_constant(op.operands[1])):
            return Kind.WHOLE, None
        include_pad = op.properties.get("count_include_pad")
        if _ceil_mode(op) and include_pad is not None and include_pad.value.data:
            return Kind.WHOLE, None  # the ceil-mode overhang is not counted, tile pads would be
        window = _window(op)
        return (Kind.WINDOW, window) if window is not None else (Kind.WHOLE, None)
    if isinstance(op, DENSE_OPS):
        return (Kind.DENSE, None) if is_constant(op.operands[1]) else (Kind.WHOLE, None)
    elementwise = isinstance(op, QNN_ELEMENTWISE) or (
        isinstance(op, UnaryOperation | BinaryOperation) and not isinstance(op, AxisOperation)
    )
    if not elementwise or rank != 4:
        return Kind.WHOLE, None
    for value in (*op.operands, *out):
        ty = value.type
        assert isinstance(ty, TensorType)
        element = ty.element_type
        # Tiles split H and W only: a per-axis type must be quantized on N or C.
        offset = rank - len(shape(value))
        if isinstance(element, UniformQuantizedType) and element.axis.data + offset > 1:
            return Kind.WHOLE, None
    return Kind.ELEMENTWISE, None


def find_layers(func: FuncOp) -> list[Layer]:
    """Number the function's layers and classify them (see the module docstring)."""
    layers: list[Layer] = []
    for op in func.body.block.ops:
        if op.name.startswith("tile."):
            raise NpucError(f"tile: @{func.sym_name.data} is already tiled (it has {op.name})")
        if isinstance(op, CONSTANT_OPS + MOVEMENT_OPS + (ReturnOp,)):
            continue
        kind, window = _classify(op)
        activations = tuple(i for i, v in enumerate(op.operands) if not is_constant(v))
        constants = tuple(i for i, v in enumerate(op.operands) if is_constant(v))
        name_attr = op.properties.get("name")
        name = getattr(name_attr, "data", None) or op.name
        groups_attr = op.properties.get("groups")
        groups = groups_attr.value.data if groups_attr is not None else 1
        layers.append(Layer(len(layers), op, name, kind, activations, constants, window, groups))
    for layer in layers:
        if not layer.spatial:
            continue
        for i in layer.activations:
            producer = layer.op.operands[i].owner
            if (
                isinstance(producer, TRANSPOSE_OPS)
                and producer.results[0].has_one_use()
                and len(shape(producer.operands[0])) == 4
                and not is_constant(producer.operands[0])
            ):
                layer.transposes[i] = producer
    return layers


def chain_link(producer: Layer, consumer: Layer) -> str | None:
    """Why `producer` -> `consumer` cannot be a cascade link (None if it can)."""
    for layer in (producer, consumer):
        if not layer.spatial:
            return f"{layer.describe()} cannot be split along H and W"
    uses = list(producer.result.uses)
    users = {use.operation for use in uses}
    if users != {consumer.op} or len(uses) != 1:
        others = sorted({_user_name(u) for u in users if u is not consumer.op})
        extra = f" (also used by {', '.join(others)})" if others else " (used twice)"
        return (
            f"the result of {producer.describe()} is not used by {consumer.describe()} alone{extra}"
        )
    index = uses[0].index
    if index not in consumer.activations or index in consumer.transposes:
        return f"{consumer.describe()} does not read {producer.describe()} as an activation"
    if consumer.kind is Kind.ELEMENTWISE and producer.out_shape != consumer.out_shape:
        return f"{consumer.describe()} broadcasts the result of {producer.describe()}"
    return None


def _user_name(op: Operation) -> str:
    name_attr = op.properties.get("name")
    return f"'{name_attr.data}'" if name_attr is not None else op.name


def chain_operand(producer: Layer, consumer: Layer) -> int:
    """The operand of `consumer` that reads `producer`'s result (a valid chain link)."""
    return next(iter(producer.result.uses)).index
