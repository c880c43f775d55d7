"""Compute, pooling, normalisation and reduction ops of the `nn` dialect.

Spatial ops are NCHW with OIHW weights. Padding lists are ONNX-ordered:
`pads = [top, left, bottom, right]` for 2-D windows, and all begins then all
ends for `nn.pad`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import (
    I64,
    BoolAttr,
    IntegerAttr,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, OpResult
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)

from npuc.shape_text import shape_text

from . import nn_shapes as shapes
from .arrays import I64Array
from .nn_base import (
    ANY_ELEMENT,
    NUMERIC_ELEMENT,
    ActivationFusable,
    F32Attr,
    F32Tensor,
    I64Tensor,
    NNOperation,
    prop_bool,
    prop_int,
    prop_ints,
    same_element,
)
from .nn_shapes import Props, Shape, ShapeError, Shapes


def _check_window(
    props: Mapping[str, Attribute], key: str, length: int, minimum: int
) -> tuple[int, ...]:
    values = prop_ints(props, key, (1,) * length if minimum == 1 else (0,) * length)
    if len(values) != length:
        raise ShapeError(f"{key} must have {length} values, got {len(values)}")
    if any(v < minimum for v in values):
        raise ShapeError(f"{key} must be >= {minimum}, got {list(values)}")
    return values


# --------------------------------------------------------------------------- compute layers


@irdl_op_definition
class Conv2dOp(ActivationFusable):
    """2-D convolution: NCHW input, OIHW weight (I = C / groups), optional bias [O]."""

    name = "nn.conv2d"
    input = operand_def(F32Tensor)
    weight = operand_def(F32Tensor)
    bias = opt_operand_def(F32Tensor)
    output = result_def(F32Tensor)
    strides = prop_def(I64Array)
    pads = prop_def(I64Array)
    dilations = prop_def(I64Array)
    groups = prop_def(IntegerAttr[I64])

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        x, w = operand_shapes[0], operand_shapes[1]
        if len(operand_shapes) == 3 and operand_shapes[2] != (w[0],):
            raise ShapeError(f"bias must have shape {w[0]}, got {shape_text(operand_shapes[2])}")
        return [
            shapes.conv2d(
                x,
                w,
                _check_window(props, "strides", 2, 1),
                _check_window(props, "pads", 4, 0),
                _check_window(props, "dilations", 2, 1),
                prop_int(props, "groups", 1),
            )
        ]


@irdl_op_definition
class ConvTranspose2dOp(ActivationFusable):
    """2-D transposed convolution: weight is [C, O / groups, kH, kW]."""

    name = "nn.conv_transpose2d"
    input = operand_def(F32Tensor)
    weight = operand_def(F32Tensor)
    bias = opt_operand_def(F32Tensor)
    output = result_def(F32Tensor)
    strides = prop_def(I64Array)
    pads = prop_def(I64Array)
    dilations = prop_def(I64Array)
    output_padding = prop_def(I64Array)
    groups = prop_def(IntegerAttr[I64])

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        x, w = operand_shapes[0], operand_shapes[1]
        groups = prop_int(props, "groups", 1)
        if len(operand_shapes) == 3 and operand_shapes[2] != (w[1] * groups,):
            raise ShapeError(
                f"bias must have shape {w[1] * groups}, got {shape_text(operand_shapes[2])}"
            )
        return [
            shapes.conv_transpose2d(
                x,
                w,
                _check_window(props, "strides", 2, 1),
                _check_window(props, "pads", 4, 0),
                _check_window(props, "dilations", 2, 1),
                _check_window(props, "output_padding", 2, 0),
                groups,
            )
        ]


@irdl_op_definition
class FullyConnectedOp(ActivationFusable):
    """y = x @ weight^T + bias, with x [N, K], weight [O, K], bias [O]."""

    name = "nn.fully_connected"
    input = operand_def(F32Tensor)
    weight = operand_def(F32Tensor)
    bias = opt_operand_def(F32Tensor)
    output = result_def(F32Tensor)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        x, w = operand_shapes[0], operand_shapes[1]
        if len(x) != 2 or len(w) != 2 or x[1] != w[1]:
            raise ShapeError(
                f"expects x NxK and weight OxK, got {shape_text(x)} and {shape_text(w)}"
            )
        if len(operand_shapes) == 3 and operand_shapes[2] != (w[0],):
            raise ShapeError(f"bias must have shape {w[0]}, got {shape_text(operand_shapes[2])}")
        return [(x[0], w[0])]


@irdl_op_definition
class MatMulOp(ActivationFusable):
    """Matrix product with numpy `matmul` semantics (batch broadcasting, 1-D promotion)."""

    name = "nn.matmul"
    lhs = operand_def(F32Tensor)
    rhs = operand_def(F32Tensor)
    output = result_def(F32Tensor)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [shapes.matmul(*operand_shapes)]


# --------------------------------------------------------------------------- pooling


@irdl_op_definition
class MaxPool2dOp(NNOperation):
    """Max over kH x kW windows; padding never wins. f32 or integer data."""

    name = "nn.max_pool2d"
    input = operand_def(same_element(NUMERIC_ELEMENT))
    output = result_def(same_element(NUMERIC_ELEMENT))
    kernel = prop_def(I64Array)
    strides = prop_def(I64Array)
    pads = prop_def(I64Array)
    dilations = prop_def(I64Array)
    ceil_mode = opt_prop_def(BoolAttr, BoolAttr.from_bool(False))

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [
            shapes.pool2d(
                operand_shapes[0],
                _check_window(props, "kernel", 2, 1),
                _check_window(props, "strides", 2, 1),
                _check_window(props, "pads", 4, 0),
                _check_window(props, "dilations", 2, 1),
                prop_bool(props, "ceil_mode"),
            )
        ]


@irdl_op_definition
class AvgPool2dOp(ActivationFusable):
    """Mean over (dilated) kH x kW windows; `count_include_pad` counts explicit padding in
    the divisor. `dilations` is optional (default 1, 1)."""

    name = "nn.avg_pool2d"
    input = operand_def(F32Tensor)
    output = result_def(F32Tensor)
    kernel = prop_def(I64Array)
    strides = prop_def(I64Array)
    pads = prop_def(I64Array)
    dilations = opt_prop_def(I64Array)
    ceil_mode = opt_prop_def(BoolAttr, BoolAttr.from_bool(False))
    count_include_pad = opt_prop_def(BoolAttr, BoolAttr.from_bool(False))

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [
            shapes.pool2d(
                operand_shapes[0],
                _check_window(props, "kernel", 2, 1),
                _check_window(props, "strides", 2, 1),
                _check_window(props, "pads", 4, 0),
                _check_window(props, "dilations", 2, 1),
                prop_bool(props, "ceil_mode"),
            )
        ]


class GlobalPoolOperation(NNOperation):
    """Reduces every spatial dimension (2 and up) to 1."""

    input = operand_def(F32Tensor)
    output = result_def(F32Tensor)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        x = operand_shapes[0]
        if len(x) < 3:
            raise ShapeError(f"expects an input of rank >= 3, got {shape_text(x)}")
        return [(*x[:2], *(1 for _ in x[2:]))]


@irdl_op_definition
class GlobalAvgPoolOp(GlobalPoolOperation):
    """Mean over all spatial positions, keeping dims."""

    name = "nn.global_avg_pool"


@irdl_op_definition
class GlobalMaxPoolOp(GlobalPoolOperation):
    """Max over all spatial positions, keeping dims."""

    name = "nn.global_max_pool"


# --------------------------------------------------------------------------- normalisation


def _channel_params(operand_shapes: Sequence[Shape], channels: int, what: str) -> None:
    for s in operand_shapes[1:]:
        if s != (channels,):
            raise ShapeError(f"{what} parameters must have shape {channels}, got {shape_text(s)}")


@irdl_op_definition
class BatchNormOp(NNOperation):
    """Inference batch norm: scale * (x - mean) / sqrt(var + epsilon) + bias over channel 1."""

    name = "nn.batch_norm"
    input = operand_def(F32Tensor)
    scale = operand_def(F32Tensor)
    bias = operand_def(F32Tensor)
    mean = operand_def(F32Tensor)
    var = operand_def(F32Tensor)
    output = result_def(F32Tensor)
    epsilon = prop_def(F32Attr)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        x = operand_shapes[0]
        if len(x) < 2:
            raise ShapeError(f"expects an input of rank >= 2, got {shape_text(x)}")
        _channel_params(operand_shapes, x[1], "batch_norm")
        return [x]


@irdl_op_definition
class InstanceNormOp(NNOperation):
    """Normalise each (n, c) plane over its spatial positions, then scale and shift per channel."""

    name = "nn.instance_norm"
    input = operand_def(F32Tensor)
    scale = operand_def(F32Tensor)
    bias = operand_def(F32Tensor)
    output = result_def(F32Tensor)
    epsilon = prop_def(F32Attr)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        x = operand_shapes[0]
        if len(x) < 3:
            raise ShapeError(f"expects an input of rank >= 3, got {shape_text(x)}")
        _channel_params(operand_shapes, x[1], "instance_norm")
        return [x]


@irdl_op_definition
class LayerNormOp(NNOperation):
    """Normalise over dims [axis, rank), then scale and optionally shift (right-aligned)."""

    name = "nn.layer_norm"
    input = operand_def(F32Tensor)
    scale = operand_def(F32Tensor)
    bias = opt_operand_def(F32Tensor)
    output = result_def(F32Tensor)
    axis = prop_def(IntegerAttr[I64])
    epsilon = prop_def(F32Attr)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        x = operand_shapes[0]
        axis = shapes.normalize_axis(prop_int(props, "axis", -1), len(x))
        for s in operand_shapes[1:]:
            if shapes.broadcast(x[axis:], s) != x[axis:]:
                raise ShapeError(
                    f"parameter shape {shape_text(s)} does not broadcast to {shape_text(x[axis:])}"
                )
        return [x]


@irdl_op_definition
class LrnOp(NNOperation):
    """Local response normalisation across `size` (odd) neighbouring channels.

    y = x / (bias + alpha / size * sum of x^2 over channels c - (size-1)/2 .. c + (size-1)/2)^beta
    """

    name = "nn.lrn"
    input = operand_def(F32Tensor)
    output = result_def(F32Tensor)
    size = prop_def(IntegerAttr[I64])
    alpha = prop_def(F32Attr)
    beta = prop_def(F32Attr)
    bias = prop_def(F32Attr)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        size = prop_int(props, "size", 1)
        if size < 1 or size % 2 == 0:
            raise ShapeError(f"size must be a positive odd number, got {size}")
        if len(operand_shapes[0]) < 3:
            raise ShapeError(f"expects an input of rank >= 3, got {shape_text(operand_shapes[0])}")
        return [operand_shapes[0]]


# --------------------------------------------------------------------------- reductions


class ReduceOperation(NNOperation):
    """Reduction over `axes` (all axes when empty)."""

    input = operand_def(F32Tensor)
    output: OpResult[TensorType[Attribute]] = result_def(F32Tensor)
    axes = prop_def(I64Array)
    keepdims = opt_prop_def(BoolAttr, BoolAttr.from_bool(True))

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        keep = props.get("keepdims")
        keepdims = True if keep is None else prop_bool(props, "keepdims")
        return [shapes.reduce(operand_shapes[0], prop_ints(props, "axes"), keepdims)]


@irdl_op_definition
class ReduceMeanOp(ReduceOperation):
    """Mean over axes."""

    name = "nn.reduce_mean"


class NumericReduceOperation(ReduceOperation):
    """A reduction on f32 or integer tensors (integers wrap around); the result keeps the type."""

    input = operand_def(same_element(NUMERIC_ELEMENT))
    output = result_def(same_element(NUMERIC_ELEMENT))


class OrderReduceOperation(ReduceOperation):
    """A reduction by order (max, min) on any element type, i1 included."""

    input = operand_def(same_element(ANY_ELEMENT))
    output = result_def(same_element(ANY_ELEMENT))


@irdl_op_definition
class ReduceSumOp(NumericReduceOperation):
    """Sum over axes."""

    name = "nn.reduce_sum"


@irdl_op_definition
class ReduceMaxOp(OrderReduceOperation):
    """Maximum over axes."""

    name = "nn.reduce_max"


@irdl_op_definition
class ReduceMinOp(OrderReduceOperation):
    """Minimum over axes."""

    name = "nn.reduce_min"


@irdl_op_definition
class ReduceProdOp(NumericReduceOperation):
    """Product over axes."""

    name = "nn.reduce_prod"


class ArgReduceOperation(NNOperation):
    """Index (i32 or i64, the result's type) of the extreme along `axis`.

    Ties pick the first index unless select_last_index. The input is f32 or integer.
    """

    input = operand_def(TensorType.constr(NUMERIC_ELEMENT))
    output = result_def(I64Tensor | TensorType.constr(i32))
    axis = prop_def(IntegerAttr[I64])
    keepdims = opt_prop_def(BoolAttr, BoolAttr.from_bool(True))
    select_last_index = opt_prop_def(BoolAttr, BoolAttr.from_bool(False))

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        keep = props.get("keepdims")
        keepdims = True if keep is None else prop_bool(props, "keepdims")
        x = operand_shapes[0]
        axis = shapes.normalize_axis(prop_int(props, "axis", 0), len(x))
        return [shapes.reduce(x, [axis], keepdims)]


@irdl_op_definition
class ArgMaxOp(ArgReduceOperation):
    """Index of the maximum along axis."""

    name = "nn.argmax"


@irdl_op_definition
class ArgMinOp(ArgReduceOperation):
    """Index of the minimum along axis."""

    name = "nn.argmin"
