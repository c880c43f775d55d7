"""Element types that depend on the shape of the tensor holding them.

A per-axis quantized type carries one scale per index of one dimension, so whether it is
valid depends on the tensor it is the element type of: the axis must be below the rank
and the scale count must equal that dimension (MLIR's quant dialect checks the same,
allowing a dynamic dimension). xDSL verifies a type's own parameters when it is built and
an op's operands in the op's verifier, but a function's or block's argument types, and
the results of ops that know nothing of quantization (`func.return`, `func.call`), are
checked by no one: `verify_element_shapes` walks them all.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence

from xdsl.dialects.builtin import ContainerType, FunctionType, ShapedType, StringAttr
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import VerifyException


class OpVerifyException(VerifyException):
    """A verifier error that knows the op it is about (so it can be reported at the op)."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op


class ShapedElementType(ABC):
    """An element type that a tensor of some shapes cannot hold."""

    @abstractmethod
    def shape_mismatch(self, shape: Sequence[int] | None) -> str | None:
        """Why a tensor of `shape` (None: a scalar, not in a tensor) cannot hold this
        element type, or None if it can. A dynamic dimension (-1) fits any count."""


def type_shape_mismatch(ty: Attribute) -> str | None:
    """Why the type `ty` is invalid for its shape (None if it is valid or has no shape)."""
    if isinstance(ty, ShapedElementType):
        return ty.shape_mismatch(None)
    if not isinstance(ty, ContainerType):
        return None
    element = ty.get_element_type()
    if not isinstance(element, ShapedElementType):
        return None
    if not isinstance(ty, ShapedType):
        return None  # unranked: any rank may come
    return element.shape_mismatch(ty.get_shape())


def verify_element_shapes(root: Operation) -> None:
    """VerifyException naming the first value (op result, block or function argument, or a
    type in an op's function type) whose element type does not fit its shape."""
    for op in root.walk():
        for where, ty in _types_of(op):
            reason = type_shape_mismatch(ty)
            if reason is not None:
                symbol = op.properties.get("sym_name") or op.attributes.get("sym_name")
                name = f" @{symbol.data}" if isinstance(symbol, StringAttr) else ""
                raise OpVerifyException(op, f"'{op.name}'{name} {where}: {reason} (in {ty})")


def _types_of(op: Operation) -> Iterator[tuple[str, Attribute]]:
    for i, result in enumerate(op.results):
        yield f"result {i}", result.type
    for r, region in enumerate(op.regions):
        for b, block in enumerate(region.blocks):
            prefix = "" if (r, b) == (0, 0) else f"region {r} block {b} "
            for i, arg in enumerate(block.args):
                yield f"{prefix}argument {i}", arg.type
    for name, attr in (*op.properties.items(), *op.attributes.items()):
        if isinstance(attr, FunctionType):
            for i, ty in enumerate(attr.inputs):
                yield f"{name} input {i}", ty
            for i, ty in enumerate(attr.outputs):
                yield f"{name} output {i}", ty
