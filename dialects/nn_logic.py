"""Type conversion, comparison and boolean ops of the `nn` dialect.

They carry the integer and boolean (i1) paths of a model: `nn.cast` converts
between element types, comparisons give i1, `nn.where` selects with an i1
condition. See docs/dialects/nn.md ("Element types").
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from . import nn_shapes as shapes
from .nn_base import ANY_ELEMENT, BoolTensor, NNOperation, same_element
from .nn_shapes import Props, Shape, Shapes

AnyTensor = TensorType.constr(ANY_ELEMENT)


@irdl_op_definition
class CastOp(NNOperation):
    """Convert to the result's element type (ONNX Cast).

    float -> integer truncates toward zero and saturates to the integer range
    (NaN becomes 0); integer -> integer wraps around; anything -> i1 is x != 0;
    i1 -> number is 0 or 1; integer -> f32 rounds to nearest.
    """

    name = "nn.cast"
    input = operand_def(AnyTensor)
    output = result_def(AnyTensor)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [operand_shapes[0]]


class CompareOperation(NNOperation):
    """Broadcasting comparison of two tensors of one element type; the result is i1."""

    lhs = operand_def(same_element(ANY_ELEMENT))
    rhs = operand_def(same_element(ANY_ELEMENT))
    output = result_def(BoolTensor)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [shapes.broadcast(*operand_shapes)]


@irdl_op_definition
class EqualOp(CompareOperation):
    """lhs == rhs."""

    name = "nn.equal"


@irdl_op_definition
class LessOp(CompareOperation):
    """lhs < rhs."""

    name = "nn.less"


@irdl_op_definition
class LessEqualOp(CompareOperation):
    """lhs <= rhs."""

    name = "nn.less_equal"


@irdl_op_definition
class GreaterOp(CompareOperation):
    """lhs > rhs."""

    name = "nn.greater"


@irdl_op_definition
class GreaterEqualOp(CompareOperation):
    """lhs >= rhs."""

    name = "nn.greater_equal"


@irdl_op_definition
class NotOp(NNOperation):
    """Logical not of an i1 tensor."""

    name = "nn.not"
    input = operand_def(BoolTensor)
    output = result_def(BoolTensor)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [operand_shapes[0]]


class LogicalOperation(NNOperation):
    """Broadcasting logical op on two i1 tensors."""

    lhs = operand_def(BoolTensor)
    rhs = operand_def(BoolTensor)
    output = result_def(BoolTensor)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [shapes.broadcast(*operand_shapes)]


@irdl_op_definition
class AndOp(LogicalOperation):
    """lhs and rhs."""

    name = "nn.and"


@irdl_op_definition
class OrOp(LogicalOperation):
    """lhs or rhs."""

    name = "nn.or"


@irdl_op_definition
class XorOp(LogicalOperation):
    """lhs xor rhs."""

    name = "nn.xor"


@irdl_op_definition
class WhereOp(NNOperation):
    """Elementwise `condition ? lhs : rhs` with three-way broadcasting."""

    name = "nn.where"
    condition = operand_def(BoolTensor)
    lhs = operand_def(same_element(ANY_ELEMENT))
    rhs = operand_def(same_element(ANY_ELEMENT))
    output = result_def(same_element(ANY_ELEMENT))

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [shapes.broadcast(*operand_shapes)]


__all__ = [
    "AndOp",
    "CastOp",
    "EqualOp",
    "GreaterEqualOp",
    "GreaterOp",
    "LessEqualOp",
    "LessOp",
    "NotOp",
    "OrOp",
    "WhereOp",
    "XorOp",
]
