"""Conversion and compute ops of the `qnn` dialect (data movement: qnn_movement.py).

Integer semantics: docs/quantization.md.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    BoolAttr,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
)
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

from . import nn
from .nn_base import F32Tensor, I64Array, NNOperation, shape_of
from .qnn_base import (
    I32Tensor,
    PerTensorRequantizing,
    QNNOperation,
    QTensor,
    Requantizing,
    check_multipliers,
    qtype,
)
from .quant_types import UniformQuantizedType

QUANTIZE_ROUNDING = ("half_away_from_zero", "half_to_even")

# --------------------------------------------------------------------------- conversions


@irdl_op_definition
class ConstantOp(QNNOperation):
    """A constant of quantized (or i32 bias) type; `value` holds the storage integers."""

    name = "qnn.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    output = result_def(TensorType)
    assembly_format = "attr-dict `:` type($output)"

    def verify_(self) -> None:
        super().verify_()
        out = self.output.type
        assert isinstance(out, TensorType)
        stored = self.value.get_type()
        if tuple(stored.get_shape()) != tuple(out.get_shape()):
            raise VerifyException("'qnn.constant': value and result shapes differ")
        element = out.element_type
        storage = stored.get_element_type()
        if isinstance(element, UniformQuantizedType):
            wrong_sign = (
                Signedness.SIGNED if not element.storage_signed.data else Signedness.UNSIGNED
            )
            if (
                not isinstance(storage, IntegerType)
                or storage.width.data != max(8, element.storage_bits.data)
                or storage.signedness.data == wrong_sign
            ):
                raise VerifyException(
                    f"'qnn.constant': value must hold {element.storage} storage integers"
                )
            from npuc.tensors import from_dense

            # Signless storage is reinterpreted bit for bit (i8 bytes hold u8 values).
            values = from_dense(self.value).view(element.storage_dtype())
            if values.size and (values.min() < element.qmin or values.max() > element.qmax):
                raise VerifyException(
                    f"'qnn.constant': values must lie in the storage range "
                    f"[{element.qmin}, {element.qmax}]"
                )
        elif element != storage:
            raise VerifyException("'qnn.constant': value type must equal the result type")


@irdl_op_definition
class QuantizeOp(QNNOperation):
    """f32 -> quantized: saturate(round(x / scale) + zero_point)."""

    name = "qnn.quantize"
    input = operand_def(F32Tensor)
    output = result_def(QTensor)
    rounding = opt_prop_def(StringAttr, StringAttr("half_away_from_zero"))

    def verify_(self) -> None:
        super().verify_()
        if shape_of(self.input) != shape_of(self.output):
            raise VerifyException("'qnn.quantize': input and result shapes differ")
        if self.rounding.data not in QUANTIZE_ROUNDING:
            raise VerifyException(
                f"'qnn.quantize': rounding must be one of {', '.join(QUANTIZE_ROUNDING)}"
            )


@irdl_op_definition
class DequantizeOp(QNNOperation):
    """quantized -> f32: scale * (q - zero_point)."""

    name = "qnn.dequantize"
    input = operand_def(QTensor)
    output = result_def(F32Tensor)

    def verify_(self) -> None:
        super().verify_()
        if shape_of(self.input) != shape_of(self.output):
            raise VerifyException("'qnn.dequantize': input and result shapes differ")


@irdl_op_definition
class RequantizeOp(Requantizing):
    """Change quantization (scale, zero point or storage): zp_out + M * (q - zp_in)."""

    name = "qnn.requantize"
    input = operand_def(QTensor)
    output = result_def(QTensor)

    def _quantized_axis(self) -> int | None:
        for q in (qtype(self.output), qtype(self.input)):
            if q.per_axis:
                return q.axis.data
        return None

    def output_channels(self) -> int:
        axis = self._quantized_axis()
        return 1 if axis is None else shape_of(self.output)[axis]

    def channel_axis(self) -> int:
        """Per-channel multipliers follow the axis of a per-axis result (else input) type."""
        axis = self._quantized_axis()
        return 0 if axis is None else axis

    def verify_(self) -> None:
        if shape_of(self.input) != shape_of(self.output):
            raise VerifyException("'qnn.requantize': input and result shapes differ")
        super().verify_()
        q_in, q_out = qtype(self.input), qtype(self.output)
        if q_in.per_axis and q_out.per_axis and q_in.axis != q_out.axis:
            raise VerifyException("'qnn.requantize': input and result must share their axis")


@irdl_op_definition
class LutOp(QNNOperation):
    """y = table[q - storage_min(input)]: a table with one entry per input storage value."""

    name = "qnn.lut"
    input = operand_def(QTensor)
    output = result_def(QTensor)
    table = prop_def(DenseIntOrFPElementsAttr)

    def verify_(self) -> None:
        super().verify_()
        q_in, q_out = qtype(self.input), qtype(self.output)
        if q_in.storage_bits.data > 16:
            raise VerifyException("'qnn.lut': the input storage must have at most 16 bits")
        if not isinstance(self.table.get_element_type(), IntegerType):
            raise VerifyException("'qnn.lut': the table must hold integers")
        entries = 1 << q_in.storage_bits.data
        if tuple(self.table.get_shape()) != (entries,):
            raise VerifyException(f"'qnn.lut': the table must have {entries} entries")
        if shape_of(self.input) != shape_of(self.output):
            raise VerifyException("'qnn.lut': input and result shapes differ")
        from npuc.tensors import from_dense

        values = from_dense(self.table)
        if values.min() < q_out.qmin or values.max() > q_out.qmax:
            raise VerifyException("'qnn.lut': table entries must lie in the output storage range")


@irdl_op_definition
class SoftmaxOp(QNNOperation):
    """int8 softmax over the last axis: TFLite's reference fixed-point algorithm.

    The input is i8 (per tensor; its scale and zero point only enter through the
    properties); the result is i8 with scale 1/256 (within TFLite's tolerance of
    0.1%) and zero point -128, as TFLite requires. Per row, with `d = q - max(row)`
    and only elements with `d >= diff_min` taking part (the others output -128):

    - `r = SaturatingRoundingDoublingHighMul(d * 2^input_left_shift, input_multiplier)`,
      `d * beta * scale_in` in Q5.26 (`input_multiplier`, `input_left_shift`: TFLite's
      PreprocessSoftmaxScaling(beta, scale_in, 5); `diff_min = -CalculateInputRadius(5,
      input_left_shift)`, so `-diff_min * 2^input_left_shift` fits in int32);
    - `e = exp_on_negative_values(r)` (gemmlowp, Q0.31), summed as `RoundingDivideByPOT(e, 12)`
      (Q12.19) into `sum`;
    - `out = -128 + RoundingDivideByPOT(SRDHM(GetReciprocal(sum, 12), e),
      num_bits_over_unit + 23)`, saturated to i8.

    Rows whose exponentials add up to 512 or more make TFLite's shift exceed 31 (its
    gemmlowp asserts); the kernel rejects them. See docs/quantization.md.
    """

    name = "qnn.softmax"
    input = operand_def(QTensor)
    output = result_def(QTensor)
    input_multiplier = prop_def(IntegerAttr[I64])
    input_left_shift = prop_def(IntegerAttr[I64])
    diff_min = prop_def(IntegerAttr[I64])

    OUTPUT_SCALE: ClassVar[float] = 1 / 256
    OUTPUT_ZERO_POINT: ClassVar[int] = -128

    @classmethod
    def infer_shapes(cls, operand_shapes, props):
        return [tuple(operand_shapes[0])]

    def verify_(self) -> None:
        super().verify_()
        self.verify_per_tensor()
        q_in, q_out = qtype(self.input), qtype(self.output)
        if not shape_of(self.input):
            raise VerifyException("'qnn.softmax': the input must have rank >= 1")
        if (q_in.storage, q_in.qmin, q_in.qmax) != ("i8", -128, 127):
            raise VerifyException("'qnn.softmax': the input must be i8 with the full range")
        if (
            (q_out.storage, q_out.qmin, q_out.qmax) != ("i8", -128, 127)
            or q_out.zero_point != self.OUTPUT_ZERO_POINT
            # TFLite's Prepare: TF_LITE_ENSURE_NEAR(scale, 1/256, 0.001/256).
            or abs(q_out.scale - self.OUTPUT_SCALE) > 0.001 * self.OUTPUT_SCALE
        ):
            raise VerifyException(
                "'qnn.softmax': the result must be i8 with scale 1/256 and zero point -128"
            )
        multiplier = self.input_multiplier.value.data
        left_shift = self.input_left_shift.value.data
        diff_min = self.diff_min.value.data
        if not 0 <= multiplier < 2**31:
            raise VerifyException("'qnn.softmax': input_multiplier must be in [0, 2^31)")
        if not 0 <= left_shift <= 31:
            raise VerifyException("'qnn.softmax': input_left_shift must be in [0, 31]")
        if diff_min > 0 or (-diff_min) << left_shift >= 2**31:
            raise VerifyException(
                "'qnn.softmax': diff_min must be <= 0 with -diff_min * 2^input_left_shift < 2^31"
            )


# --------------------------------------------------------------------------- compute


class WeightedOperation(Requantizing):
    """acc = sum (x - zp_x)(w - zp_w) + bias in i32; w may be per-channel on axis 0."""

    def output_channels(self) -> int:
        return shape_of(self.weight)[0]

    def verify_(self) -> None:
        super().verify_()
        w = qtype(self.weight)
        if w.per_axis and w.axis.data != 0:
            raise VerifyException(f"'{self.name}': per-channel weights must be quantized on axis 0")
        if qtype(self.input).per_axis or qtype(self.output).per_axis:
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


class AlignedSumOperation(PerTensorRequantizing):
    """Both operands rescaled to a common fixed-point scale before they are combined."""

    lhs = operand_def(QTensor)
    rhs = operand_def(QTensor)
    output = result_def(QTensor)
    left_shift = prop_def(IntegerAttr[I64])
    lhs_multiplier = prop_def(IntegerAttr[I64])
    lhs_shift = prop_def(IntegerAttr[I64])
    rhs_multiplier = prop_def(IntegerAttr[I64])
    rhs_shift = prop_def(IntegerAttr[I64])

    def verify_(self) -> None:
        super().verify_()
        if not 0 <= self.left_shift.value.data <= 31:
            raise VerifyException(f"'{self.name}': left_shift must be in [0, 31]")
        check_multipliers(
            self.name,
            [self.lhs_multiplier.value.data, self.rhs_multiplier.value.data],
            [self.lhs_shift.value.data, self.rhs_shift.value.data],
        )


@irdl_op_definition
class AddOp(AlignedSumOperation):
    """lhs + rhs with both rescaled to a common fixed-point scale first (TFLite's scheme).

    a' = requantize((a - zp_a) << left_shift, lhs_multiplier, lhs_shift), b' likewise;
    out = zp_out + requantize(a' + b', multiplier, shift).
    """

    name = "qnn.add"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.AddOp


@irdl_op_definition
class SubOp(AlignedSumOperation):
    """lhs - rhs: qnn.add's scheme with the rescaled rhs negated."""

    name = "qnn.sub"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.SubOp


@irdl_op_definition
class MulOp(PerTensorRequantizing):
    """out = zp_out + requantize((a - zp_a) * (b - zp_b), multiplier, shift)."""

    name = "qnn.mul"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.MulOp
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
