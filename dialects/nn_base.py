"""Shared base of the `nn` dialect: the op base class, the builder and property helpers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    f32,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AttrConstraint,
    AttrSetConstraint,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    opt_prop_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from npuc.shape_text import shapes_text

from .nn_shapes import Props, Shape, ShapeError, Shapes

F32Tensor = TensorType.constr(f32)
I64Tensor = TensorType.constr(i64)

# Element types of `nn` tensors. Signless integers are signed (ONNX intN); uiN are unsigned.
INTEGER_TYPES: tuple[IntegerType, ...] = (
    i8,
    i16,
    i32,
    i64,
    *(IntegerType(w, Signedness.UNSIGNED) for w in (8, 16, 32, 64)),
)
NUMERIC_ELEMENT = AttrSetConstraint.get(f32, *INTEGER_TYPES)
ANY_ELEMENT = AttrSetConstraint.get(f32, i1, *INTEGER_TYPES)
IndexTensor = TensorType.constr(AttrSetConstraint.get(i32, i64))
BoolTensor = TensorType.constr(i1)


def same_element(
    constraint: AttrConstraint[Attribute], var: str = "T"
) -> AttrConstraint[TensorType[Attribute]]:
    """Tensors whose element type satisfies `constraint` and is one type across the op."""
    return TensorType.constr(VarConstraint(var, constraint))


def is_float(value: SSAValue | Attribute) -> bool:
    ty = value.type if isinstance(value, SSAValue) else value
    return isinstance(ty, TensorType) and ty.element_type == f32


F32Attr = FloatAttr.constr(type=f32)
FUNCTIONAL_FORMAT = "operands attr-dict `:` functional-type(operands, results)"


def shape_of(value: SSAValue | Attribute) -> Shape:
    ty = value.type if isinstance(value, SSAValue) else value
    assert isinstance(ty, TensorType)
    return tuple(ty.get_shape())


def prop_ints(props: Mapping[str, Attribute], key: str, default: Sequence[int] = ()) -> Shape:
    attr = props.get(key)
    return tuple(attr.get_values()) if isinstance(attr, DenseArrayBase) else tuple(default)


def prop_int(props: Mapping[str, Attribute], key: str, default: int) -> int:
    attr = props.get(key)
    return attr.value.data if isinstance(attr, IntegerAttr) else default


def prop_bool(props: Mapping[str, Attribute], key: str) -> bool:
    attr = props.get(key)
    return isinstance(attr, IntegerAttr) and bool(attr.value.data)


class NNOperation(IRDLOperation):
    """Base of every `nn` op: pure, optionally named, with inferred result shapes."""

    layer_name = opt_prop_def(StringAttr, prop_name="name")
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format: ClassVar[str | None] = FUNCTIONAL_FORMAT

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        """Result shapes implied by operands and properties; None if the result type decides."""
        return None

    def verify_(self) -> None:
        # Unprefixed names are inherent: an unknown one is a typo, not a discardable attribute.
        unknown = sorted(k for k in self.attributes if "." not in k)
        if unknown:
            raise VerifyException(f"'{self.name}': unknown properties {', '.join(unknown)}")
        try:
            inferred = type(self).infer_shapes(
                [shape_of(o) for o in self.operands], self.properties
            )
        except ShapeError as e:
            raise VerifyException(f"'{self.name}': {e}") from e
        if inferred is None:
            return
        declared = [shape_of(r) for r in self.results]
        if declared != inferred:
            raise VerifyException(
                f"'{self.name}': result shape must be {shapes_text(inferred)}, "
                f"got {shapes_text(declared)}"
            )


ACTIVATIONS = ("clip", "leaky_relu")


class ActivationFusable(NNOperation):
    """An op that can apply a fused activation to its result.

    `activation = "clip"` clamps to [activation_min, activation_max] (an absent
    bound is unbounded; relu is clip with min 0); `"leaky_relu"` uses
    activation_alpha.
    """

    activation = opt_prop_def(StringAttr)
    activation_min = opt_prop_def(F32Attr)
    activation_max = opt_prop_def(F32Attr)
    activation_alpha = opt_prop_def(F32Attr)

    def verify_(self) -> None:
        super().verify_()
        kind = self.activation.data if self.activation is not None else None
        if kind is not None and kind not in ACTIVATIONS:
            raise VerifyException(
                f"'{self.name}': activation must be one of {', '.join(ACTIVATIONS)}"
            )
        if kind != "clip" and (self.activation_min is not None or self.activation_max is not None):
            raise VerifyException(f"'{self.name}': activation_min/max need activation = \"clip\"")
        if (kind == "leaky_relu") != (self.activation_alpha is not None):
            raise VerifyException(
                f"'{self.name}': activation_alpha goes with activation = \"leaky_relu\""
            )
        lo, hi = self.activation_min, self.activation_max
        if lo is not None and hi is not None and lo.value.data > hi.value.data:
            raise VerifyException(f"'{self.name}': activation_min must not exceed activation_max")


def build(
    op_type: type[NNOperation],
    operands: Sequence[SSAValue | Operation | None],
    properties: Mapping[str, Attribute] | None = None,
    *,
    name: str | None = None,
    result_types: Sequence[Attribute] | None = None,
    element_type: Attribute = f32,
) -> NNOperation:
    """Create an `nn` op whose result types come from shape inference."""
    props = dict(properties or {})
    if name:
        props["name"] = StringAttr(name)
    values = [SSAValue.get(o) for o in operands if o is not None]
    if result_types is None:
        inferred = op_type.infer_shapes([shape_of(v) for v in values], props)
        if inferred is None:
            raise ValueError(f"{op_type.name} needs explicit result types")
        result_types = [TensorType(element_type, s) for s in inferred]
    return op_type.create(operands=values, properties=props, result_types=list(result_types))
