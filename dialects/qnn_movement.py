"""Data-movement `qnn` ops: stored integers move (or are compared) without rescaling.

Every op here keeps its input's quantization on its results (integer indices for the
arg-reductions), so no multiplier enters. Integer semantics: docs/quantization.md.
"""

from __future__ import annotations

import math
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    BoolAttr,
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    TensorType,
    f32,
    i32,
    i64,
)
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
    var_result_def,
)
from xdsl.utils.exceptions import VerifyException

from npuc.shape_text import shape_text

from . import nn
from . import nn_shapes as shapes
from .arrays import I64Array
from .nn_base import NNOperation, shape_of
from .nn_movement import COORDINATE_MODES, NEAREST_MODES
from .nn_shapes import ShapeError
from .qnn_base import QNNOperation, QTensor, qtype


class MovementOperation(QNNOperation):
    """Moves stored integers without arithmetic: every result keeps the input's type."""

    def verify_(self) -> None:
        super().verify_()
        self.same_type_as_input(*self.results, *self.operands[1:])


@irdl_op_definition
class MaxPool2dOp(MovementOperation):
    """Max over windows of stored integers (order-preserving, so no rescaling)."""

    name = "qnn.max_pool2d"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.MaxPool2dOp
    input = operand_def(QTensor)
    output = result_def(QTensor)
    kernel = prop_def(I64Array)
    strides = prop_def(I64Array)
    pads = prop_def(I64Array)
    dilations = prop_def(I64Array)
    ceil_mode = opt_prop_def(BoolAttr, BoolAttr.from_bool(False))


@irdl_op_definition
class GlobalMaxPoolOp(MovementOperation):
    """Max over all spatial positions."""

    name = "qnn.global_max_pool"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.GlobalMaxPoolOp
    input = operand_def(QTensor)
    output = result_def(QTensor)


@irdl_op_definition
class ReshapeOp(MovementOperation):
    """Same integers under the result's shape."""

    name = "qnn.reshape"
    input = operand_def(QTensor)
    output = result_def(QTensor)

    def verify_(self) -> None:
        super().verify_()
        a, b = shape_of(self.input), shape_of(self.output)
        if math.prod(a) != math.prod(b):
            raise VerifyException(
                f"'qnn.reshape': cannot reshape {shape_text(a)} into {shape_text(b)}"
            )


@irdl_op_definition
class TransposeOp(MovementOperation):
    """Permute dimensions."""

    name = "qnn.transpose"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.TransposeOp
    input = operand_def(QTensor)
    output = result_def(QTensor)
    perm = prop_def(I64Array)


@irdl_op_definition
class ConcatOp(MovementOperation):
    """Join along `axis`; all operands share the result's quantization."""

    name = "qnn.concat"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.ConcatOp
    inputs = var_operand_def(QTensor)
    output = result_def(QTensor)
    axis = prop_def(IntegerAttr[I64])


@irdl_op_definition
class SplitOp(MovementOperation):
    """Cut along `axis` into pieces sized by the result types."""

    name = "qnn.split"
    input = operand_def(QTensor)
    outputs = var_result_def(QTensor)
    axis = prop_def(IntegerAttr[I64])

    def verify_(self) -> None:
        super().verify_()
        pieces = [shape_of(r) for r in self.outputs]
        try:
            shapes.check_split(shape_of(self.input), pieces, self.axis.value.data)
        except ShapeError as e:
            raise VerifyException(f"'{self.name}': {e}") from e


@irdl_op_definition
class SliceOp(MovementOperation):
    """Strided slice with nn.slice's normalised (start, end, step) per dimension."""

    name = "qnn.slice"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.SliceOp
    input = operand_def(QTensor)
    output = result_def(QTensor)
    starts = prop_def(I64Array)
    ends = prop_def(I64Array)
    steps = prop_def(I64Array)


@irdl_op_definition
class PadOp(MovementOperation):
    """Pad with the stored value `value` (the zero point when padding with real 0)."""

    name = "qnn.pad"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.PadOp
    input = operand_def(QTensor)
    output = result_def(QTensor)
    pads = prop_def(I64Array)
    mode = opt_prop_def(StringAttr, StringAttr("constant"))
    value = opt_prop_def(IntegerAttr[I64])

    def verify_(self) -> None:
        super().verify_()
        q = qtype(self.input)
        if self.value is not None and not q.qmin <= self.value.value.data <= q.qmax:
            raise VerifyException(
                f"'qnn.pad': value {self.value.value.data} is outside the storage range "
                f"[{q.qmin}, {q.qmax}]"
            )


@irdl_op_definition
class ResizeOp(MovementOperation):
    """Nearest-neighbour resampling with nn.resize's coordinate semantics."""

    name = "qnn.resize"
    input = operand_def(QTensor)
    output = result_def(QTensor)
    scales = prop_def(DenseArrayBase.constr(f32))
    coordinate_mode = opt_prop_def(StringAttr, StringAttr("half_pixel"))
    nearest_mode = opt_prop_def(StringAttr, StringAttr("round_prefer_floor"))

    def verify_(self) -> None:
        super().verify_()
        x, y = shape_of(self.input), shape_of(self.output)
        checks = [
            (self.coordinate_mode.data in COORDINATE_MODES, "unknown coordinate_mode"),
            (self.nearest_mode.data in NEAREST_MODES, "unknown nearest_mode"),
            (len(x) == len(y) == len(self.scales), "input, result and scales must have one rank"),
            (all(s > 0 for s in self.scales.get_values()), "scales must be positive"),
        ]
        for ok, message in checks:
            if not ok:
                raise VerifyException(f"'qnn.resize': {message}")


@irdl_op_definition
class DepthToSpaceOp(MovementOperation):
    """nn.depth_to_space on stored integers."""

    name = "qnn.depth_to_space"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.DepthToSpaceOp
    input = operand_def(QTensor)
    output = result_def(QTensor)
    block_size = prop_def(IntegerAttr[I64])
    mode = opt_prop_def(StringAttr, StringAttr("DCR"))


@irdl_op_definition
class SpaceToDepthOp(MovementOperation):
    """nn.space_to_depth on stored integers."""

    name = "qnn.space_to_depth"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.SpaceToDepthOp
    input = operand_def(QTensor)
    output = result_def(QTensor)
    block_size = prop_def(IntegerAttr[I64])


@irdl_op_definition
class MaximumOp(MovementOperation):
    """Elementwise max of stored integers with numpy broadcasting.

    Both operands and the result share one quantized type, so the max of the stored
    values is the max of the reals (TFLite's int8 MAXIMUM).
    """

    name = "qnn.maximum"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.MaximumOp
    lhs = operand_def(QTensor)
    rhs = operand_def(QTensor)
    output = result_def(QTensor)


@irdl_op_definition
class MinimumOp(MovementOperation):
    """Elementwise min of stored integers with numpy broadcasting (one type throughout)."""

    name = "qnn.minimum"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.MinimumOp
    lhs = operand_def(QTensor)
    rhs = operand_def(QTensor)
    output = result_def(QTensor)


@irdl_op_definition
class GatherOp(MovementOperation):
    """nn.gather on stored integers: slices along `axis` at i64 `indices` (negative from the end).

    The result keeps the input's type; out-of-range indices are an error at run time.
    """

    name = "qnn.gather"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.GatherOp
    input = operand_def(QTensor)
    indices = operand_def(TensorType.constr(i64))
    output = result_def(QTensor)
    axis = prop_def(IntegerAttr[I64])

    def verify_(self) -> None:
        QNNOperation.verify_(self)
        self.same_type_as_input(self.output)
        rank = len(shape_of(self.input))
        if not -rank <= self.axis.value.data < rank:
            raise VerifyException(f"'qnn.gather': axis {self.axis.value.data} is out of range")
        if qtype(self.input).per_axis:
            raise VerifyException("'qnn.gather': the input must be quantized per tensor")


@irdl_op_definition
class ReduceMaxOp(MovementOperation):
    """Max of stored integers over `axes` (all axes when empty); the result keeps the type."""

    name = "qnn.reduce_max"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.ReduceMaxOp
    input = operand_def(QTensor)
    output = result_def(QTensor)
    axes = prop_def(I64Array)
    keepdims = opt_prop_def(BoolAttr, BoolAttr.from_bool(True))

    def verify_(self) -> None:
        super().verify_()
        if qtype(self.input).per_axis:
            raise VerifyException("'qnn.reduce_max': the input must be quantized per tensor")


IndexTensor = TensorType.constr(i64) | TensorType.constr(i32)


class ArgReduceOperation(QNNOperation):
    """Index (i32 or i64, the result's type) of an extreme stored integer along `axis`.

    Ties pick the first index. The order of stored values is the order of the reals
    (positive scale), so no parameters enter. The input must be quantized per tensor.
    """

    input = operand_def(QTensor)
    output = result_def(IndexTensor)
    axis = prop_def(IntegerAttr[I64])
    keepdims = opt_prop_def(BoolAttr, BoolAttr.from_bool(True))

    def verify_(self) -> None:
        super().verify_()
        if qtype(self.input).per_axis:
            raise VerifyException(f"'{self.name}': the input must be quantized per tensor")


@irdl_op_definition
class ArgMaxOp(ArgReduceOperation):
    """Index of the largest stored integer along `axis` (TFLite's int8 ARG_MAX)."""

    name = "qnn.argmax"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.ArgMaxOp


@irdl_op_definition
class ArgMinOp(ArgReduceOperation):
    """Index of the smallest stored integer along `axis` (TFLite's int8 ARG_MIN)."""

    name = "qnn.argmin"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.ArgMinOp


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
