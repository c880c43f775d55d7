"""Layer ops of the `qnn` dialect: weighted (convolutions, matrix products), pooling, reductions.

Each accumulates centred stored integers exactly and rescales once (docs/quantization.md).
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import I64, BoolAttr, IntegerAttr, StringAttr
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

from npuc.shape_text import shape_text

from . import nn
from . import nn_shapes as shapes
from .arrays import I64Array
from .nn_base import NNOperation, shape_of
from .qnn_base import I32Tensor, PerTensorRequantizing, QTensor, Requantizing, qtype


class WeightedOperation(Requantizing):
    """acc = sum (x - zp_x)(w - zp_w) + bias in i32; w may be per-channel on axis 0.

    Subclasses define the operands input, weight (and an optional bias) and the result.
    """

    def output_channels(self) -> int:
        return shape_of(self.operands[1])[0]

    def verify_(self) -> None:
        super().verify_()
        w = qtype(self.operands[1])
        if w.per_axis and w.axis.data != 0:
            raise VerifyException(f"'{self.name}': per-channel weights must be quantized on axis 0")
        if qtype(self.operands[0]).per_axis or qtype(self.results[0]).per_axis:
            raise VerifyException(f"'{self.name}': activations must be quantized per tensor")


@irdl_op_definition
class Conv2dOp(WeightedOperation):
    """Quantized 2-D convolution (NCHW, OIHW weights, i32 bias)."""

    name = "qnn.conv2d"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.Conv2dOp
    input = operand_def(QTensor)
    weight = operand_def(QTensor)
    bias = opt_operand_def(I32Tensor)
    output = result_def(QTensor)
    strides = prop_def(I64Array)
    pads = prop_def(I64Array)
    dilations = prop_def(I64Array)
    groups = prop_def(IntegerAttr[I64])


@irdl_op_definition
class FullyConnectedOp(WeightedOperation):
    """Quantized x @ weight^T + bias, x [N, K], weight [O, K], bias i32 [O]."""

    name = "qnn.fully_connected"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.FullyConnectedOp
    input = operand_def(QTensor)
    weight = operand_def(QTensor)
    bias = opt_operand_def(I32Tensor)
    output = result_def(QTensor)


@irdl_op_definition
class MatMulOp(PerTensorRequantizing):
    """Quantized matmul of two per-tensor activations (numpy matmul shapes)."""

    name = "qnn.matmul"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.MatMulOp
    lhs = operand_def(QTensor)
    rhs = operand_def(QTensor)
    output = result_def(QTensor)


class AveragingOperation(PerTensorRequantizing):
    """Average pooling; with `tflite` rounding the output keeps the input's type, as in TFLite."""

    def verify_(self) -> None:
        super().verify_()
        if self.rounding.data == "tflite" and qtype(self.operands[0]) != qtype(self.results[0]):
            raise VerifyException(
                f"'{self.name}': tflite rounding needs the output type to equal the input type"
            )


@irdl_op_definition
class AvgPool2dOp(AveragingOperation):
    """Window mean rescaled to the output with one rounding: zp_out + round(sum * M / count)."""

    name = "qnn.avg_pool2d"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.AvgPool2dOp
    input = operand_def(QTensor)
    output = result_def(QTensor)
    kernel = prop_def(I64Array)
    strides = prop_def(I64Array)
    pads = prop_def(I64Array)
    ceil_mode = opt_prop_def(BoolAttr, BoolAttr.from_bool(False))
    count_include_pad = opt_prop_def(BoolAttr, BoolAttr.from_bool(False))


@irdl_op_definition
class GlobalAvgPoolOp(AveragingOperation):
    """Mean over all spatial positions, like avg_pool2d with one window."""

    name = "qnn.global_avg_pool"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.GlobalAvgPoolOp
    input = operand_def(QTensor)
    output = result_def(QTensor)


@irdl_op_definition
class ConvTranspose2dOp(Requantizing):
    """Quantized 2-D transposed convolution: NCHW input, weight [C, O, kH, kW], i32 bias [O].

    Every centred input value scatters into an i32 accumulator at stride spacing:
    acc[n, o, y, x] = sum of (q_x[n, c, i, j] - zp_x) (q_w[c, o, ky, kx] - zp_w) over
    y = i * strides[0] + ky * dilations[0] - pads[0] (x likewise), + bias[o];
    `pads` = [top, left, bottom, right] crop the full result and `output_padding` extends
    its bottom/right edge with zeros (nn.conv_transpose2d's geometry, one group).
    out = clamp(zp_out + requantize(acc, multiplier[o], shift[o], rounding)).
    Per-channel weights are quantized on axis 1 (output channels).
    """

    name = "qnn.conv_transpose2d"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.ConvTranspose2dOp
    input = operand_def(QTensor)
    weight = operand_def(QTensor)
    bias = opt_operand_def(I32Tensor)
    output = result_def(QTensor)
    strides = prop_def(I64Array)
    pads = prop_def(I64Array)
    dilations = prop_def(I64Array)
    output_padding = prop_def(I64Array)

    def output_channels(self) -> int:
        return shape_of(self.weight)[1]

    def verify_(self) -> None:
        super().verify_()
        w = qtype(self.weight)
        if w.per_axis and w.axis.data != 1:
            raise VerifyException(f"'{self.name}': per-channel weights must be quantized on axis 1")
        if qtype(self.input).per_axis or qtype(self.output).per_axis:
            raise VerifyException(f"'{self.name}': activations must be quantized per tensor")


@irdl_op_definition
class ReduceSumOp(PerTensorRequantizing):
    """Requantized sum of centred values over `axes` (TFLite's int8 MEAN and SUM).

    acc = sum over `axes` (all axes when empty) of (q - zp_in), exactly;
    out = clamp(zp_out + requantize(acc, multiplier, shift, rounding), clamp_min, clamp_max).
    A mean folds 1/count into the multiplier, as TFLite's QuantizedMeanOrSum does.
    `keepdims` keeps the reduced axes with size 1.

    `storage_view = "uint8"` (i8 input and result, no clamp) reproduces LiteRT's reference
    int8 SUM, which runs its uint8 kernel on the int8 buffers: every stored value is read
    as its byte, q + 256 where q < 0, before centring; the result is saturated to
    [0, 255] and stored as its byte, r - 256 where r > 127. The default "native" reads
    and writes the storage type itself.
    """

    name = "qnn.reduce_sum"
    input = operand_def(QTensor)
    output = result_def(QTensor)
    axes = prop_def(I64Array)
    keepdims = opt_prop_def(BoolAttr, BoolAttr.from_bool(True))
    storage_view = opt_prop_def(StringAttr, StringAttr("native"))

    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.ReduceSumOp

    def verify_(self) -> None:
        super().verify_()
        rank = len(shape_of(self.input))
        axes = list(self.axes.get_values())
        if any(not 0 <= a < rank for a in axes) or len(set(axes)) != len(axes):
            raise VerifyException(f"'{self.name}': axes must be distinct and in [0, {rank})")
        want = shapes.reduce(shape_of(self.input), axes, bool(self.keepdims.value.data))
        if tuple(want) != tuple(shape_of(self.output)):
            raise VerifyException(f"'{self.name}': result shape must be {shape_text(want)}")
        view = self.storage_view.data
        if view not in ("native", "uint8"):
            raise VerifyException(f"'{self.name}': storage_view must be native or uint8")
        if view == "uint8":
            q_in, q_out = qtype(self.input), qtype(self.output)
            if any((q.storage, q.qmin, q.qmax) != ("i8", -128, 127) for q in (q_in, q_out)):
                raise VerifyException(
                    f"'{self.name}': storage_view uint8 needs full-range i8 input and result"
                )
            if self.clamp_bounds() != (-128, 127):
                raise VerifyException(f"'{self.name}': storage_view uint8 takes no clamp")
