"""`cse`: common-subexpression elimination for `nn` graphs.

xDSL's CSE, with one difference: the `name` property of `nn` ops is treated
like an MLIR location and ignored when comparing ops, so two constants with
the same value (or two identical layers) merge even when the source model
named them differently. The first op in program order survives, with its name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.traits import IsolatedFromAbove
from xdsl.transforms.common_subexpression_elimination import (
    CommonSubexpressionElimination,
    CSEDriver,
    KnownOps,
    OperationInfo,
)

from npuc.dialects.nn import NNOperation


def _type_key(ty: Attribute) -> object:
    """What an op's hash takes of a result type: a tensor's shape and element type kind.
    Equal types have equal keys; a per-channel quantized type's hash would hash every
    scale (MobileNetV2's 18,000 took most of the pass), and equality checks them anyway."""
    if isinstance(ty, TensorType):
        return ty.shape, type(ty.element_type)
    return ty


def _properties(op: Operation) -> dict[str, Attribute]:
    if isinstance(op, NNOperation):
        return {k: v for k, v in op.properties.items() if k != "name"}
    return op.properties


class NamelessOperationInfo(OperationInfo):
    """OperationInfo that compares `nn` ops without their `name` property."""

    def __hash__(self) -> int:
        return hash(
            (
                self.name,
                sum(hash(i) for i in self.op.attributes.items()),
                sum(hash(i) for i in _properties(self.op).items()),
                hash(tuple(_type_key(t) for t in self.op.result_types)),
                hash(self.op.operands),
            )
        )

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, NamelessOperationInfo)
            and hash(self) == hash(other)
            and self.name == other.name
            and self.op.attributes == other.op.attributes
            and _properties(self.op) == _properties(other.op)
            and self.op.operands == other.op.operands
            and self.op.result_types == other.op.result_types
            and all(
                s.is_structurally_equivalent(o)
                for s, o in zip(self.op.regions, other.op.regions, strict=True)
            )
        )


class NamelessKnownOps(KnownOps):
    """KnownOps keyed by NamelessOperationInfo."""

    def __getitem__(self, k: Operation) -> Operation:
        return self._known_ops[NamelessOperationInfo(k)]

    def __setitem__(self, k: Operation, v: Operation) -> None:
        self._known_ops[NamelessOperationInfo(k)] = v

    def __contains__(self, k: Operation) -> bool:
        return NamelessOperationInfo(k) in self._known_ops

    def get(self, k: Operation, default: Any = None) -> Any:
        return self._known_ops.get(NamelessOperationInfo(k), default)

    def pop(self, k: Operation) -> Operation:
        return self._known_ops.pop(NamelessOperationInfo(k))


@dataclass
class NamelessCSEDriver(CSEDriver):
    """CSEDriver whose scopes are NamelessKnownOps."""

    _known_ops: KnownOps = field(default_factory=NamelessKnownOps)

    # Same as CSEDriver's, except that new scopes are NamelessKnownOps.
    def _simplify_block(self, block: Block) -> None:
        for op in block.ops:
            if op.regions:
                if op.has_trait(IsolatedFromAbove, value_if_unregistered=True):
                    outer, self._known_ops = self._known_ops, NamelessKnownOps()
                    for region in op.regions:
                        self._simplify_region(region)
                    self._known_ops = outer
                else:
                    for region in op.regions:
                        self._simplify_region(region)
            self._simplify_operation(op)

    def _simplify_region(self, region: Region) -> None:
        if len(region.blocks) == 1:
            outer = self._known_ops
            self._known_ops = NamelessKnownOps(outer)
            self._simplify_block(region.block)
            self._known_ops = outer


@dataclass(frozen=True)
class CSEPass(CommonSubexpressionElimination):
    """Merge identical side-effect-free ops, ignoring `nn` op names."""

    name = "cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        NamelessCSEDriver().simplify(op)
