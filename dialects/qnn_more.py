"""More `qnn` ops (TFLite int8 MEAN, SUM, SQUARED_DIFFERENCE, PRELU, RESIZE_BILINEAR, DIV).

Integer semantics in each docstring.

They join the `qnn` dialect through `MORE_OPS` (dialects/qnn.py lists them).
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import I64, BoolAttr, IntegerAttr, StringAttr
from xdsl.irdl import irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from . import nn
from . import nn_shapes as shapes
from .nn_base import I64Array, NNOperation, shape_of
from .nn_shapes import ShapeError
from .qnn_base import PerTensorRequantizing, QNNOperation, QTensor, check_multipliers, qtype
from .qnn_ops import AlignedSumOperation


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
            raise VerifyException(f"'{self.name}': result shape must be {tuple(want)}")
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
            raise VerifyException(f"'{self.name}': result shape must be {tuple(want)}")


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
        check_multipliers(self.name, [self.alpha_multiplier.value.data],
                          [self.alpha_shift.value.data])  # fmt: skip
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
class ResizeBilinearOp(QNNOperation):
    """Bilinear resampling of stored integers, NCHW (TFLite's ResizeBilinearInteger).

    Per spatial axis of input size I and output size O: scale = (1024 I + O / 2) / O,
    or with `align_corners` and O > 1, (1024 (I - 1) + (O - 1) / 2) / (O - 1) (integer
    divisions); output index o samples v = o * scale (+ scale / 2 - 512 with
    `half_pixel_centers`), lo = max(trunc(v / 1024), 0), hi = min(trunc((v + 1023) / 1024),
    I - 1), weights 1024 - (v - 1024 lo) on lo and v - 1024 lo on hi. The four products
    q * w_y * w_x are summed exactly and divided by 2^20, rounded half away from zero
    (`rounding = "half_away_from_zero"`) or half up (`"half_up"`). The result keeps the
    input's quantization.
    """

    name = "qnn.resize_bilinear"
    input = operand_def(QTensor)
    output = result_def(QTensor)
    align_corners = opt_prop_def(BoolAttr, BoolAttr.from_bool(False))
    half_pixel_centers = opt_prop_def(BoolAttr, BoolAttr.from_bool(False))
    rounding = opt_prop_def(StringAttr, StringAttr("half_away_from_zero"))

    def verify_(self) -> None:
        super().verify_()
        x, y = shape_of(self.input), shape_of(self.output)
        if len(x) != 4 or len(y) != 4 or tuple(x[:2]) != tuple(y[:2]):
            raise VerifyException(f"'{self.name}': needs NCHW input and result of one N, C")
        if min(*x[2:], *y[2:]) < 1:
            raise VerifyException(f"'{self.name}': spatial sizes must be positive")
        if self.align_corners.value.data and self.half_pixel_centers.value.data:
            raise VerifyException(
                f"'{self.name}': align_corners and half_pixel_centers exclude each other"
            )
        if self.rounding.data not in ("half_away_from_zero", "half_up"):
            raise VerifyException(f"'{self.name}': rounding must be half_away_from_zero or half_up")
        self.same_type_as_input(self.output)


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
            raise VerifyException(f"'{self.name}': result shape must be {tuple(want)}")
        for value in (self.lhs, self.rhs, self.output):
            if qtype(value).storage_bits.data > 16:
                raise VerifyException(f"'{self.name}': operands must have at most 16 bits")


MORE_OPS = [ReduceSumOp, SquaredDifferenceOp, PReluOp, ResizeBilinearOp, DivOp]
