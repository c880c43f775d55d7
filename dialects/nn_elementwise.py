"""Elementwise, activation and constant ops of the `nn` dialect."""

from __future__ import annotations

from xdsl.dialects.builtin import I64, DenseIntOrFPElementsAttr, IntegerAttr, StringAttr, TensorType
from xdsl.ir import Attribute, OpResult
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from npuc.shape_text import shape_text

from . import nn_shapes as shapes
from .nn_base import (
    NUMERIC_ELEMENT,
    ActivationFusable,
    F32Attr,
    F32Tensor,
    NNOperation,
    is_float,
    prop_int,
    same_element,
)
from .nn_shapes import Props, Shape, ShapeError, Shapes

# --------------------------------------------------------------------------- constants


@irdl_op_definition
class ConstantOp(NNOperation):
    """A constant tensor (weights, biases, folded values)."""

    name = "nn.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    output = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())
    assembly_format = None

    def __init__(self, value: DenseIntOrFPElementsAttr, name: str | None = None):
        props: dict[str, Attribute] = {"value": value}
        if name:
            props["name"] = StringAttr(name)
        super().__init__(properties=props, result_types=[value.get_type()])

    def verify_(self) -> None:
        super().verify_()
        if self.value.get_type() != self.output.type:
            raise VerifyException("'nn.constant': value type must equal the result type")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        attrs = dict(self.attributes)  # discardable ones, e.g. a memory plan's mem.buffer
        if self.layer_name is not None:
            attrs = {"name": self.layer_name, **attrs}
        if attrs:
            printer.print_op_attributes(attrs, print_keyword=False)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        start = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("nn.constant expects a dense elements attribute", start, parser.pos)
        attrs = parser.parse_optional_attr_dict()
        name = attrs.pop("name", None)
        op = cls(value, name.data if isinstance(name, StringAttr) else None)
        op.attributes.update(attrs)
        return op


# --------------------------------------------------------------------------- elementwise


class UnaryOperation(NNOperation):
    """Elementwise op on one f32 tensor; the result has the input's shape."""

    input = operand_def(F32Tensor)
    output: OpResult[TensorType[Attribute]] = result_def(F32Tensor)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [operand_shapes[0]]


class BinaryOperation(NNOperation):
    """Elementwise op on two f32 tensors with numpy broadcasting."""

    lhs = operand_def(F32Tensor)
    rhs = operand_def(F32Tensor)
    output: OpResult[TensorType[Attribute]] = result_def(F32Tensor)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [shapes.broadcast(*operand_shapes)]


class NumericUnaryOperation(UnaryOperation):
    """Elementwise op on f32 or integer tensors; the result has the input's type."""

    input = operand_def(same_element(NUMERIC_ELEMENT))
    output = result_def(same_element(NUMERIC_ELEMENT))


class NumericBinaryOperation(BinaryOperation):
    """Broadcasting op on two f32 or two integer tensors of one element type.

    On integers it wraps around (two's complement) and divides truncating toward zero.
    """

    lhs = operand_def(same_element(NUMERIC_ELEMENT))
    rhs = operand_def(same_element(NUMERIC_ELEMENT))
    output = result_def(same_element(NUMERIC_ELEMENT))


class FusableBinaryOperation(NumericBinaryOperation, ActivationFusable):
    """A broadcasting binary op that can carry a fused activation (on f32 only)."""

    def verify_(self) -> None:
        super().verify_()
        if self.activation is not None and not is_float(self.output):
            raise VerifyException(f"'{self.name}': a fused activation needs f32 tensors")


@irdl_op_definition
class AddOp(FusableBinaryOperation):
    """lhs + rhs."""

    name = "nn.add"


@irdl_op_definition
class SubOp(FusableBinaryOperation):
    """lhs - rhs."""

    name = "nn.sub"


@irdl_op_definition
class MulOp(FusableBinaryOperation):
    """lhs * rhs."""

    name = "nn.mul"


@irdl_op_definition
class DivOp(NumericBinaryOperation):
    """lhs / rhs."""

    name = "nn.div"


@irdl_op_definition
class PowOp(BinaryOperation):
    """lhs ** rhs."""

    name = "nn.pow"


@irdl_op_definition
class MaximumOp(NumericBinaryOperation):
    """Elementwise maximum (NaN-propagating)."""

    name = "nn.maximum"


@irdl_op_definition
class MinimumOp(NumericBinaryOperation):
    """Elementwise minimum (NaN-propagating)."""

    name = "nn.minimum"


@irdl_op_definition
class PReluOp(BinaryOperation):
    """x if x >= 0 else slope * x; slope broadcasts to x."""

    name = "nn.prelu"

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        x, slope = operand_shapes
        if shapes.broadcast(x, slope) != x:
            raise ShapeError(
                f"slope {shape_text(slope)} does not broadcast to input {shape_text(x)}"
            )
        return [x]


@irdl_op_definition
class ReluOp(UnaryOperation):
    """max(x, 0)."""

    name = "nn.relu"


@irdl_op_definition
class SigmoidOp(UnaryOperation):
    """1 / (1 + exp(-x))."""

    name = "nn.sigmoid"


@irdl_op_definition
class TanhOp(UnaryOperation):
    """tanh(x)."""

    name = "nn.tanh"


@irdl_op_definition
class ExpOp(UnaryOperation):
    """exp(x)."""

    name = "nn.exp"


@irdl_op_definition
class LogOp(UnaryOperation):
    """Natural logarithm."""

    name = "nn.log"


@irdl_op_definition
class SqrtOp(UnaryOperation):
    """Square root."""

    name = "nn.sqrt"


@irdl_op_definition
class ErfOp(UnaryOperation):
    """Gauss error function."""

    name = "nn.erf"


@irdl_op_definition
class AbsOp(NumericUnaryOperation):
    """|x|."""

    name = "nn.abs"


@irdl_op_definition
class NegOp(NumericUnaryOperation):
    """-x."""

    name = "nn.neg"


@irdl_op_definition
class ReciprocalOp(UnaryOperation):
    """1 / x."""

    name = "nn.reciprocal"


@irdl_op_definition
class FloorOp(UnaryOperation):
    """Round toward negative infinity."""

    name = "nn.floor"


@irdl_op_definition
class CeilOp(UnaryOperation):
    """Round toward positive infinity."""

    name = "nn.ceil"


@irdl_op_definition
class SoftplusOp(UnaryOperation):
    """log(1 + exp(x))."""

    name = "nn.softplus"


@irdl_op_definition
class HardSwishOp(UnaryOperation):
    """x * relu6(x + 3) / 6."""

    name = "nn.hard_swish"


@irdl_op_definition
class GeluOp(UnaryOperation):
    """x * Phi(x); approximate = "none" (erf) or "tanh"."""

    name = "nn.gelu"
    approximate = opt_prop_def(StringAttr, StringAttr("none"))

    def verify_(self) -> None:
        super().verify_()
        if self.approximate.data not in ("none", "tanh"):
            raise VerifyException('\'nn.gelu\': approximate must be "none" or "tanh"')


@irdl_op_definition
class LeakyReluOp(UnaryOperation):
    """x if x >= 0 else alpha * x."""

    name = "nn.leaky_relu"
    alpha = prop_def(F32Attr)


@irdl_op_definition
class EluOp(UnaryOperation):
    """x if x > 0 else alpha * (exp(x) - 1)."""

    name = "nn.elu"
    alpha = prop_def(F32Attr)


@irdl_op_definition
class HardSigmoidOp(UnaryOperation):
    """max(0, min(1, alpha * x + beta))."""

    name = "nn.hard_sigmoid"
    alpha = prop_def(F32Attr)
    beta = prop_def(F32Attr)


@irdl_op_definition
class ClipOp(UnaryOperation):
    """min(max(x, min), max); an absent bound is unbounded."""

    name = "nn.clip"
    min = opt_prop_def(F32Attr)
    max = opt_prop_def(F32Attr)

    def verify_(self) -> None:
        super().verify_()
        if (
            self.min is not None
            and self.max is not None
            and self.min.value.data > self.max.value.data
        ):
            raise VerifyException("'nn.clip': min must not exceed max")


class AxisOperation(UnaryOperation):
    """Unary op along one axis of its input."""

    axis = prop_def(IntegerAttr[I64])

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        shapes.normalize_axis(prop_int(props, "axis", 0), len(operand_shapes[0]))
        return [operand_shapes[0]]


@irdl_op_definition
class SoftmaxOp(AxisOperation):
    """exp(x) / sum(exp(x)) along `axis`."""

    name = "nn.softmax"


@irdl_op_definition
class LogSoftmaxOp(AxisOperation):
    """log(softmax(x)) along `axis`."""

    name = "nn.log_softmax"
