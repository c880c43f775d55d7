"""Data-movement ops of the `nn` dialect: reshape, transpose, concat, split, slice, pad,
resize, gather, depth/space rearrangements. They move values without arithmetic
(resize interpolates)."""

from __future__ import annotations

import math

from xdsl.dialects.builtin import (
    I64,
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    f32,
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

from . import nn_shapes as shapes
from .arrays import I64Array
from .nn_base import (
    ANY_ELEMENT,
    F32Attr,
    F32Tensor,
    IndexTensor,
    NNOperation,
    prop_int,
    prop_ints,
    same_element,
    shape_of,
)
from .nn_shapes import Props, Shape, ShapeError, Shapes

# Data movement works on every element type; input and result types agree.
AnyT = same_element(ANY_ELEMENT)

# --------------------------------------------------------------------------- data movement


@irdl_op_definition
class ReshapeOp(NNOperation):
    """Reinterpret the row-major elements under the result type's shape (zero-copy)."""

    name = "nn.reshape"
    input = operand_def(AnyT)
    output = result_def(AnyT)

    def verify_(self) -> None:
        super().verify_()
        a, b = shape_of(self.input), shape_of(self.output)
        if math.prod(a) != math.prod(b):
            raise VerifyException(
                f"'nn.reshape': cannot reshape {shape_text(a)} into {shape_text(b)}"
            )


@irdl_op_definition
class BroadcastOp(NNOperation):
    """Broadcast the input to the result type's shape (numpy rules, like ONNX Expand)."""

    name = "nn.broadcast"
    input = operand_def(AnyT)
    output = result_def(AnyT)

    def verify_(self) -> None:
        super().verify_()
        a, b = shape_of(self.input), shape_of(self.output)
        try:
            ok = shapes.broadcast(a, b) == b
        except ShapeError:
            ok = False
        if not ok:
            raise VerifyException(f"'nn.broadcast': {a} does not broadcast to {b}")


@irdl_op_definition
class TransposeOp(NNOperation):
    """Permute dimensions: result dim i is input dim perm[i]."""

    name = "nn.transpose"
    input = operand_def(AnyT)
    output = result_def(AnyT)
    perm = prop_def(I64Array)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [shapes.transpose(operand_shapes[0], prop_ints(props, "perm"))]


@irdl_op_definition
class ConcatOp(NNOperation):
    """Join tensors along `axis`."""

    name = "nn.concat"
    inputs = var_operand_def(AnyT)
    output = result_def(AnyT)
    axis = prop_def(IntegerAttr[I64])

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [shapes.concat(operand_shapes, prop_int(props, "axis", 0))]


@irdl_op_definition
class SplitOp(NNOperation):
    """Cut a tensor along `axis` into consecutive pieces sized by the result types."""

    name = "nn.split"
    input = operand_def(AnyT)
    outputs = var_result_def(AnyT)
    axis = prop_def(IntegerAttr[I64])

    def verify_(self) -> None:
        super().verify_()
        pieces = [shape_of(r) for r in self.outputs]
        try:
            shapes.check_split(shape_of(self.input), pieces, self.axis.value.data)
        except ShapeError as e:
            raise VerifyException(f"'{self.name}': {e}") from e


@irdl_op_definition
class SliceOp(NNOperation):
    """Strided slice with one normalised (start, end, step) per dimension.

    Starts are in range and ends are clamped to [-1, dim]; an end of -1 always
    means "before index 0" (so with a negative step the slice runs through index 0).
    """

    name = "nn.slice"
    input = operand_def(AnyT)
    output = result_def(AnyT)
    starts = prop_def(I64Array)
    ends = prop_def(I64Array)
    steps = prop_def(I64Array)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [
            shapes.slice_(
                operand_shapes[0],
                prop_ints(props, "starts"),
                prop_ints(props, "ends"),
                prop_ints(props, "steps"),
            )
        ]


PAD_MODES = ("constant", "reflect", "edge", "wrap")


@irdl_op_definition
class PadOp(NNOperation):
    """Pad (or, with negative values, crop) each dimension; pads = begins then ends.

    Cropping happens first; "reflect", "edge" and "wrap" read the cropped tensor.
    "reflect" pads at most dim - 1 per side, as ONNX requires.
    """

    name = "nn.pad"
    input = operand_def(AnyT)
    output = result_def(AnyT)
    pads = prop_def(I64Array)
    mode = opt_prop_def(StringAttr, StringAttr("constant"))
    value = opt_prop_def(F32Attr, FloatAttr(0.0, f32))

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        mode = props.get("mode")
        if isinstance(mode, StringAttr) and mode.data not in PAD_MODES:
            raise ShapeError(f'mode must be one of {", ".join(PAD_MODES)}, got "{mode.data}"')
        x, pads = operand_shapes[0], prop_ints(props, "pads")
        out = shapes.pad(x, pads)
        if isinstance(mode, StringAttr) and mode.data == "reflect":
            rank = len(x)
            for i, d in enumerate(x):
                cropped = d + min(pads[i], 0) + min(pads[i + rank], 0)
                if max(pads[i], pads[i + rank]) > cropped - 1:
                    raise ShapeError(f"reflect padding of dim {i} must be at most {cropped - 1}")
        return [out]


RESIZE_MODES = ("nearest", "linear", "cubic")
COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
)
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@irdl_op_definition
class ResizeOp(NNOperation):
    """Resample to the result type's shape with ONNX Resize semantics.

    `scales` (one per dimension) drive the coordinate transform, as in ONNX,
    so a non-integral scale maps coordinates exactly as the source model did.
    """

    name = "nn.resize"
    input = operand_def(F32Tensor)
    output = result_def(F32Tensor)
    scales = prop_def(DenseArrayBase.constr(f32))
    mode = prop_def(StringAttr)
    coordinate_mode = opt_prop_def(StringAttr, StringAttr("half_pixel"))
    nearest_mode = opt_prop_def(StringAttr, StringAttr("round_prefer_floor"))
    cubic_coeff_a = opt_prop_def(F32Attr, FloatAttr(-0.75, f32))
    exclude_outside = opt_prop_def(BoolAttr, BoolAttr.from_bool(False))

    def verify_(self) -> None:
        super().verify_()
        x, y = shape_of(self.input), shape_of(self.output)
        checks = [
            (self.mode.data in RESIZE_MODES, f"mode must be one of {', '.join(RESIZE_MODES)}"),
            (self.coordinate_mode.data in COORDINATE_MODES, "unknown coordinate_mode"),
            (self.nearest_mode.data in NEAREST_MODES, "unknown nearest_mode"),
            (len(x) == len(y) == len(self.scales), "input, result and scales must have one rank"),
            (all(s > 0 for s in self.scales.get_values()), "scales must be positive"),
        ]
        for ok, message in checks:
            if not ok:
                raise VerifyException(f"'nn.resize': {message}")


@irdl_op_definition
class GatherOp(NNOperation):
    """Slices of the input along `axis` at i32 or i64 indices (negative counts from the end)."""

    name = "nn.gather"
    input = operand_def(AnyT)
    indices = operand_def(IndexTensor)
    output = result_def(AnyT)
    axis = prop_def(IntegerAttr[I64])

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [shapes.gather(operand_shapes[0], operand_shapes[1], prop_int(props, "axis", 0))]


@irdl_op_definition
class DepthToSpaceOp(NNOperation):
    """Move channel blocks into block x block spatial tiles; mode "DCR" or "CRD" as in ONNX."""

    name = "nn.depth_to_space"
    input = operand_def(AnyT)
    output = result_def(AnyT)
    block_size = prop_def(IntegerAttr[I64])
    mode = opt_prop_def(StringAttr, StringAttr("DCR"))

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        mode = props.get("mode")
        if isinstance(mode, StringAttr) and mode.data not in ("DCR", "CRD"):
            raise ShapeError('mode must be "DCR" or "CRD"')
        return [shapes.depth_to_space(operand_shapes[0], prop_int(props, "block_size", 1))]


@irdl_op_definition
class SpaceToDepthOp(NNOperation):
    """Move block x block spatial tiles into channels (inverse of DCR depth_to_space)."""

    name = "nn.space_to_depth"
    input = operand_def(AnyT)
    output = result_def(AnyT)
    block_size = prop_def(IntegerAttr[I64])

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [shapes.space_to_depth(operand_shapes[0], prop_int(props, "block_size", 1))]
