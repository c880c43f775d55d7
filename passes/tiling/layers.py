"""The layers the `tile` pass numbers and plans, and how each one may be split.

Layers are the entry function's ops in block order, except constants
(`nn.constant`, `qnn.constant`, `arith.constant`), zero-cost movement
(`nn/qnn.reshape`, `nn/qnn.transpose`) and `func.return`; they are numbered
from 0. Kinds:

- WINDOW: 2-D convolutions (constant weights) and max/avg pools on NCHW tensors:
  split along H and W (windows need halos), convolutions also along output channels;
- ELEMENTWISE: elementwise ops (comparisons and casts included) and softmax with a 3-D or
  4-D result: split along H and W, the result's last two axes (rank 3: (N, H, W), no
  channels), except a softmax's own axis;
- DENSE: fully connected layers with constant weights: split along output features;
- WHOLE: everything else (global pools, concat, resize, matmul, ...) stays whole.

A transpose whose only user is a WINDOW or ELEMENTWISE layer is folded into that
layer's tiles (each tile transposes its own slice), so its full result never exists.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from xdsl.dialects.builtin import Float32Type, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from npuc.diagnostics import NpucError
from npuc.dialects import nn, qnn
from npuc.dialects.nn_base import prop_bool, prop_int, prop_ints
from npuc.dialects.nn_elementwise import (
    AxisOperation,
    BinaryOperation,
    LogSoftmaxOp,
    SoftmaxOp,
    UnaryOperation,
)
from npuc.dialects.nn_logic import CastOp, CompareOperation
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.tensors import numpy_dtype

CONSTANT_OPS = (nn.ConstantOp, qnn.ConstantOp)  # and arith.constant, by name (is_constant_op)
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
SOFTMAX_OPS = (SoftmaxOp, LogSoftmaxOp, qnn.SoftmaxOp)
NCHW = (2, 3)


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
    hw: tuple[int, int] = NCHW  # the result's axes split as H and W (spatial layers)
    fixed: tuple[bool, bool] = (False, False)  # H, W that may not be split (a softmax axis)

    @property
    def cdim(self) -> int | None:
        """The result's channel axis (1 in NCHW; none for 3-D layers)."""
        return 1 if len(self.out_shape) == 4 else None

    @property
    def nchw(self) -> bool:
        return len(self.out_shape) == 4

    def extent(self, axis: int) -> int:
        """The result's length along H (axis 0) or W (axis 1)."""
        return self.out_shape[self.hw[axis]]

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


def float_value(value: SSAValue) -> bool:
    """A 32-bit float tensor (its tiles are moved by the host: no NPU instruction)."""
    ty = value.type
    return isinstance(ty, TensorType) and isinstance(ty.element_type, Float32Type)


def nbytes(value: SSAValue) -> int:
    return math.prod(shape(value)) * itemsize(value)


def is_constant_op(op: Operation) -> bool:
    """`nn.constant`, `qnn.constant` or `arith.constant` (by name: xDSL's arith dialect is
    imported only by IR that has it)."""
    return isinstance(op, CONSTANT_OPS) or op.name == "arith.constant"


def is_constant(value: SSAValue) -> bool:
    return isinstance(value.owner, Operation) and is_constant_op(value.owner)


def _window(op: Operation) -> Window | None:
    """The geometry of a convolution or pool whose every window touches the input."""
    props = op.properties
    kernel = shape(op.operands[1])[2:] if isinstance(op, CONV_OPS) else prop_ints(props, "kernel")
    (sh, sw), (dh, dw) = prop_ints(props, "strides"), prop_ints(props, "dilations", (1, 1))
    top, left, bottom, right = prop_ints(props, "pads")
    window = Window((kernel[0], kernel[1]), (sh, sw), (dh, dw), (top, left, bottom, right))
    # A window lying wholly in the padding would need an empty slice: such layers stay whole.
    for axis in range(2):
        if max(window.pads[axis], window.pads[axis + 2]) >= window.extent(axis):
            return None
    return window


def _ceil_mode(op: Operation) -> bool:
    return prop_bool(op.properties, "ceil_mode")


Classified = tuple[Kind, Window | None, tuple[int, int], tuple[bool, bool]]


def _softmax_axis(op: Operation, rank: int) -> int:
    return prop_int(op.properties, "axis", -1) % rank  # qnn.softmax has none: the last


def _classify(op: Operation) -> Classified:
    kind, window = _classify_kind(op)
    if kind is not Kind.ELEMENTWISE:
        return kind, window, NCHW, (False, False)
    rank = len(shape(op.results[0]))
    hw = (rank - 2, rank - 1)
    fixed = (False, False)
    if isinstance(op, SOFTMAX_OPS):
        axis = _softmax_axis(op, rank)
        fixed = (axis == hw[0], axis == hw[1])
    return kind, window, hw, fixed


def _classify_kind(op: Operation) -> tuple[Kind, Window | None]:
    out = op.results
    if len(out) != 1 or not all(isinstance(v.type, TensorType) for v in (*op.operands, *out)):
        return Kind.WHOLE, None
    rank = len(shape(out[0]))
    if isinstance(op, CONV_OPS + POOL_OPS):
        if rank != 4 or (isinstance(op, CONV_OPS) and not is_constant(op.operands[1])):
            return Kind.WHOLE, None
        if _ceil_mode(op) and prop_bool(op.properties, "count_include_pad"):
            return Kind.WHOLE, None  # the ceil-mode overhang is not counted, tile pads would be
        window = _window(op)
        return (Kind.WINDOW, window) if window is not None else (Kind.WHOLE, None)
    if isinstance(op, DENSE_OPS):
        return (Kind.DENSE, None) if is_constant(op.operands[1]) else (Kind.WHOLE, None)
    elementwise = isinstance(op, (*QNN_ELEMENTWISE, CastOp, CompareOperation)) or (
        isinstance(op, UnaryOperation | BinaryOperation) and not isinstance(op, AxisOperation)
    )
    if isinstance(op, SOFTMAX_OPS):
        # Row by row: the same box in and out, never split along its own axis; the batch
        # axis of a 3-D result is not split, so a softmax over it stays whole.
        elementwise = rank in (3, 4) and _softmax_axis(op, rank) != 0
    if not elementwise or rank not in (3, 4):
        return Kind.WHOLE, None
    for value in (*op.operands, *out):
        ty = value.type
        assert isinstance(ty, TensorType)
        element = ty.element_type
        # Tiles split H and W only: a per-axis type must be quantized on another axis.
        offset = rank - len(shape(value))
        if (
            isinstance(element, UniformQuantizedType)
            and element.per_axis
            and element.axis.data + offset >= rank - 2
        ):
            return Kind.WHOLE, None
    return Kind.ELEMENTWISE, None


def find_layers(func: FuncOp) -> list[Layer]:
    """Number the function's layers and classify them (see the module docstring)."""
    layers: list[Layer] = []
    for op in func.body.block.ops:
        if op.name.startswith("tile."):
            raise NpucError(f"tile: @{func.sym_name.data} is already tiled (it has {op.name})")
        if is_constant_op(op) or isinstance(op, (*MOVEMENT_OPS, ReturnOp)):
            continue
        kind, window, hw, fixed = _classify(op)
        activations = tuple(i for i, v in enumerate(op.operands) if not is_constant(v))
        constants = tuple(i for i, v in enumerate(op.operands) if is_constant(v))
        name_attr = op.properties.get("name")
        name = getattr(name_attr, "data", None) or op.name
        groups_attr = op.properties.get("groups")
        groups = groups_attr.value.data if groups_attr is not None else 1
        layers.append(
            Layer(
                len(layers),
                op,
                name,
                kind,
                activations,
                constants,
                window,
                groups,
                hw=hw,
                fixed=fixed,
            )
        )
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
    return f"'{name_attr.data}'" if isinstance(name_attr, StringAttr) else op.name


NEVER_JOINS = 1 << 62


@dataclass(frozen=True)
class Graph:
    """How layers feed each other inside runs (cascades generalised to sub-graphs).

    `reach[k]` is the last layer that reads layer k's result, or NEVER_JOINS if some
    reader cannot take it tile by tile (an op that is not a layer, the function's
    result, a layer not split along H and W, a broadcast, a folded transpose); a run
    `first..last` whose every layer but the last has `reach <= last` keeps all of its
    links inside (a cascade: each layer computes what its readers in the run need).
    `inputs[k]` lists `(operand index, producer layer)` of layer k's linkable operands.
    """

    reach: tuple[int, ...]
    inputs: tuple[tuple[tuple[int, int], ...], ...]
    readers: tuple[tuple[tuple[int, int], ...], ...]  # (consumer layer, operand index)

    @classmethod
    def of(cls, layers: Sequence[Layer]) -> Graph:
        index = {layer.op: layer.index for layer in layers}
        reach = []
        inputs: list[list[tuple[int, int]]] = [[] for _ in layers]
        readers: list[list[tuple[int, int]]] = [[] for _ in layers]
        for layer in layers:
            last = layer.index
            for use in layer.result.uses:
                j = index.get(use.operation)
                if j is None or _link_problem(layer, layers[j], use.index) is not None:
                    last = NEVER_JOINS
                    continue
                last = max(last, j)
                inputs[j].append((use.index, layer.index))
                readers[layer.index].append((j, use.index))
            if not layer.result.uses:
                last = NEVER_JOINS  # unused: nothing to cascade into
            reach.append(last)
        return cls(
            tuple(reach),
            tuple(tuple(sorted(x)) for x in inputs),
            tuple(tuple(x) for x in readers),
        )

    def joins(self, k: int, last: int) -> bool:
        """Whether layer k may be an inner layer of a run ending at `last`."""
        return self.reach[k] <= last

    def run_inputs(self, k: int, first: int) -> tuple[tuple[int, int], ...]:
        """Layer k's operands produced inside a run starting at `first`."""
        return tuple(p for p in self.inputs[k] if p[1] >= first)

    def is_chain(self, first: int, last: int) -> bool:
        """Each layer of first..last feeds the next one alone, through one operand."""
        return all(self.reach[k] == k + 1 and len(self.readers[k]) == 1 for k in range(first, last))


def _link_problem(producer: Layer, consumer: Layer, index: int) -> str | None:
    for layer in (producer, consumer):
        if not layer.spatial:
            return f"{layer.describe()} cannot be split along H and W"
    if index not in consumer.activations or index in consumer.transposes:
        return f"{consumer.describe()} does not read {producer.describe()} as an activation"
    if consumer.kind is Kind.ELEMENTWISE and producer.out_shape != consumer.out_shape:
        return f"{consumer.describe()} broadcasts the result of {producer.describe()}"
    if producer.hw != consumer.hw and consumer.kind is Kind.ELEMENTWISE:
        return f"{consumer.describe()} does not read {producer.describe()} along the same axes"
    return None


def run_problem(layers: Sequence[Layer], first: int, last: int) -> str | None:
    """Why first..last cannot run as one cascade (None if it can)."""
    index = {layer.op: layer.index for layer in layers}
    for k in range(first, last + 1):
        if first < last and not layers[k].spatial:
            return f"{layers[k].describe()} cannot be split along H and W"
    for k in range(first, last):
        layer = layers[k]
        for use in layer.result.uses:
            j = index.get(use.operation)
            if j is None or j > last:
                who = _user_name(use.operation)
                return f"the result of {layer.describe()} is also used by {who}, outside the range"
            problem = _link_problem(layer, layers[j], use.index)
            if problem is not None:
                return problem
        if not layer.result.uses:
            return f"the result of {layer.describe()} is not used"
    return None
