"""Elementwise ops of the `qnn` dialect: conversions, tables, softmax and arithmetic.

Layers (convolutions, pooling, reductions) are in qnn_layers.py, data movement in
qnn_movement.py.

Integer semantics: docs/quantization.md.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

from npuc.shape_text import shape_text

from . import nn
from . import nn_shapes as shapes
from .nn_base import F32Tensor, NNOperation, shape_of
from .nn_shapes import Props, Shape, ShapeError, Shapes
from .qnn_base import (
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
        stored = self.value.type
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


class TableOperation(QNNOperation):
    """y = table[q - storage_min(input)]: a table with one entry per input storage value
    (the base of qnn.lut and of plugins' table ops)."""

    input = operand_def(QTensor)
    output = result_def(QTensor)
    table = prop_def(DenseIntOrFPElementsAttr)

    def verify_(self) -> None:
        super().verify_()
        q_in, q_out = qtype(self.input), qtype(self.output)
        if q_in.storage_bits.data > 16:
            raise VerifyException(f"'{self.name}': the input storage must have at most 16 bits")
        if not isinstance(self.table.get_element_type(), IntegerType):
            raise VerifyException(f"'{self.name}': the table must hold integers")
        entries = 1 << q_in.storage_bits.data
        if tuple(self.table.get_shape()) != (entries,):
            raise VerifyException(f"'{self.name}': the table must have {entries} entries")
        if shape_of(self.input) != shape_of(self.output):
            raise VerifyException(f"'{self.name}': input and result shapes differ")
        from npuc.tensors import from_dense

        values = from_dense(self.table)
        if values.min() < q_out.qmin or values.max() > q_out.qmax:
            raise VerifyException(
                f"'{self.name}': table entries must lie in the output storage range"
            )


@irdl_op_definition
class LutOp(TableOperation):
    """y = table[q - storage_min(input)]: a table with one entry per input storage value."""

    name = "qnn.lut"


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
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
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


# --------------------------------------------------------------------------- arithmetic


def aligned_inputs(
    left_shift: int, lhs: tuple[int, int], rhs: tuple[int, int]
) -> dict[str, Attribute]:
    """The input properties of an aligned sum: the left shift and each input's
    (multiplier, shift)."""
    return {
        "left_shift": IntegerAttr(left_shift, i64),
        "lhs_multiplier": IntegerAttr(lhs[0], i64),
        "lhs_shift": IntegerAttr(lhs[1], i64),
        "rhs_multiplier": IntegerAttr(rhs[0], i64),
        "rhs_shift": IntegerAttr(rhs[1], i64),
    }


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


@irdl_op_definition
class SquaredDifferenceOp(AlignedSumOperation):
    """(lhs - rhs)^2 on TFLite's aligned fixed-point scale (TFLite's int8 SQUARED_DIFFERENCE).

    a' = requantize((a - zp_a) << left_shift, lhs_multiplier, lhs_shift), b' likewise;
    out = clamp(zp_out + requantize((a' - b')^2, multiplier, shift)). Operands broadcast.
    """

    name = "qnn.squared_difference"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.SubOp

    def verify_(self) -> None:
        super().verify_()
        try:
            want = shapes.broadcast(shape_of(self.lhs), shape_of(self.rhs))
        except ShapeError as e:
            raise VerifyException(f"'{self.name}': {e}") from e
        if tuple(want) != tuple(shape_of(self.output)):
            raise VerifyException(f"'{self.name}': result shape must be {shape_text(want)}")


@irdl_op_definition
class PReluOp(PerTensorRequantizing):
    """x >= 0 ? x : alpha * x with two rescalings (TFLite's int8 PRELU); alpha broadcasts to x.

    xc = q - zp_in; where xc >= 0: r = requantize(xc, multiplier, shift, rounding), else
    r = requantize(xc * (alpha - zp_alpha), alpha_multiplier, alpha_shift, rounding);
    out = clamp(zp_out + r, clamp_min, clamp_max).
    """

    name = "qnn.prelu"
    input = operand_def(QTensor)
    alpha = operand_def(QTensor)
    output = result_def(QTensor)
    alpha_multiplier = prop_def(IntegerAttr[I64])
    alpha_shift = prop_def(IntegerAttr[I64])

    def verify_(self) -> None:
        super().verify_()
        check_multipliers(
            self.name, [self.alpha_multiplier.value.data], [self.alpha_shift.value.data]
        )
        x, slope = shape_of(self.input), shape_of(self.alpha)
        try:
            fits = tuple(shapes.broadcast(x, slope)) == tuple(x)
        except ShapeError:
            fits = False
        if not fits:
            raise VerifyException(f"'{self.name}': alpha {slope} does not broadcast to {x}")
        if tuple(shape_of(self.output)) != tuple(x):
            raise VerifyException(f"'{self.name}': result shape must equal the input's")


@irdl_op_definition
class DivOp(PerTensorRequantizing):
    """lhs / rhs via a fixed-point reciprocal (TFLite's int8 DIV, reference DivElementwise).

    Per element a = q_lhs - zp_lhs, b = q_rhs - zp_rhs (both negated when b < 0; b = 0,
    which TFLite leaves undefined, saturates: clamp_max for a > 0, clamp_min for a < 0, zp_out
    for a = 0):
    with k = bit_length(b) - 1, inv = one_over_one_plus_x_for_x_in_0_1((b << (31 - k)) - 2^31)
    (gemmlowp's Newton-Raphson reciprocal, Q0.31) and h = leading sign bits of a (31 for 0),
    u = SaturatingRoundingDoublingHighMul(a << h, inv);
    out = clamp(zp_out + MultiplyByQuantizedMultiplier(u, multiplier, shift + k + h)), where
    `multiplier`/`shift` encode s_lhs / (s_rhs s_out) and rounding must be "tflite".
    Operands broadcast.

    The final rounding right shift is e = shift + k + h - 31. TFLite's RoundingDivideByPOT is
    undefined for e >= 32 (a numerator near zero, e.g. at the zero point). `overshift`
    "exact" rounds exactly there too; "x86" reproduces LiteRT's x86-64 build, which computes
    (x >> (e mod 32)) + (x >= 0) on x = SaturatingRoundingDoublingHighMul(u, multiplier)
    (its int32 mask (2^e - 1) is -1).
    """

    name = "qnn.div"
    lhs = operand_def(QTensor)
    rhs = operand_def(QTensor)
    output = result_def(QTensor)
    overshift = opt_prop_def(StringAttr, StringAttr("exact"))
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.SubOp

    def verify_(self) -> None:
        super().verify_()
        if self.rounding.data != "tflite":
            raise VerifyException(f"'{self.name}': rounding must be tflite")
        if self.overshift.data not in ("exact", "x86"):
            raise VerifyException(f"'{self.name}': overshift must be exact or x86")
        try:
            want = shapes.broadcast(shape_of(self.lhs), shape_of(self.rhs))
        except ShapeError as e:
            raise VerifyException(f"'{self.name}': {e}") from e
        if tuple(want) != tuple(shape_of(self.output)):
            raise VerifyException(f"'{self.name}': result shape must be {shape_text(want)}")
        for value in (self.lhs, self.rhs, self.output):
            if qtype(value).storage_bits.data > 16:
                raise VerifyException(f"'{self.name}': operands must have at most 16 bits")
