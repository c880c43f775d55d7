"""Rewrite patterns on `nn` ops shared by the float-level passes.

Each pattern is defined once; `canonicalize` and `eliminate-identity` pick the
subsets they need (`IDENTITY_PATTERNS`, `COMPOSITION_PATTERNS`). A pattern
that removes an op replaces its result with an existing value, so the name of
the op that produced that value survives; a pattern that replaces an op with
a new one gives the new op the replaced op's `name`.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import FloatAttr, StringAttr, f32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from npuc.dialects.nn import (
    AddOp,
    BroadcastOp,
    ClipOp,
    ConcatOp,
    ConstantOp,
    DivOp,
    HardSwishOp,
    MulOp,
    PadOp,
    PowOp,
    ReshapeOp,
    SliceOp,
    SplitOp,
    SubOp,
    TransposeOp,
    ints,
    shape_of,
)
from npuc.dialects.nn_base import ActivationFusable
from npuc.tensors import from_dense

# --------------------------------------------------------------------------- helpers


def constant_value(value: SSAValue) -> np.ndarray | None:
    """The array held by `value` if an `nn.constant` defines it."""
    owner = value.owner
    return from_dense(owner.value) if isinstance(owner, ConstantOp) else None


def is_splat(value: SSAValue, scalar: float) -> bool:
    """Whether `value` is a constant whose every element equals `scalar`."""
    array = constant_value(value)
    return array is not None and bool(np.all(array == scalar))


def replace_with_value(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> None:
    """Forward `op`'s single result to `value` and erase `op`."""
    rewriter.replace_all_uses_with(op.results[0], value)
    rewriter.erase(op)


def with_name(props: dict[str, Attribute], op: Operation) -> dict[str, Attribute]:
    """`props` plus `op`'s `name` property, if it has one."""
    name = op.properties.get("name")
    return {**props, "name": name} if isinstance(name, StringAttr) else props


def bound(attr: FloatAttr | None, default: float) -> float:
    return default if attr is None else float(attr.value.data)


def clip_bounds(op: ClipOp) -> tuple[float, float]:
    """(min, max) of a clip, with absent bounds as -inf / +inf."""
    return bound(op.min, -math.inf), bound(op.max, math.inf)


def fused_clip_bounds(op: ActivationFusable) -> tuple[float, float]:
    """(min, max) of an op's fused clip activation, with absent bounds as -inf / +inf."""
    return bound(op.activation_min, -math.inf), bound(op.activation_max, math.inf)


def compose_clips(inner: tuple[float, float], outer: tuple[float, float]) -> tuple[float, float]:
    """Bounds of clip(clip(x, *inner), *outer) as one clip, also when the ranges are disjoint."""
    lo, hi = outer
    return min(max(inner[0], lo), hi), min(max(inner[1], lo), hi)


def bound_props(lo: float, hi: float, min_key: str, max_key: str) -> dict[str, Attribute]:
    """Clip bound properties for (lo, hi); infinite bounds are left out."""
    props: dict[str, Attribute] = {}
    if lo != -math.inf:
        props[min_key] = FloatAttr(lo, f32)
    if hi != math.inf:
        props[max_key] = FloatAttr(hi, f32)
    return props


def compose_perms(inner: tuple[int, ...], outer: tuple[int, ...]) -> tuple[int, ...]:
    """Perm of transpose(transpose(x, inner), outer) as one transpose."""
    return tuple(inner[p] for p in outer)


def is_identity_perm(perm: tuple[int, ...]) -> bool:
    return perm == tuple(range(len(perm)))


# --------------------------------------------------------------------------- identities


class RemoveIdentityReshape(RewritePattern):
    """reshape(x) to x's own shape -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        if op.input.type == op.output.type:
            replace_with_value(rewriter, op, op.input)


class RemoveReshapeRoundTrip(RewritePattern):
    """reshape(reshape(x)) back to x's shape -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, ReshapeOp) and inner.input.type == op.output.type:
            replace_with_value(rewriter, op, inner.input)


class RemoveIdentityTranspose(RewritePattern):
    """transpose(x, perm = [0, 1, ..., n-1]) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        if is_identity_perm(op.perm.get_values()):
            replace_with_value(rewriter, op, op.input)


class RemoveInverseTransposes(RewritePattern):
    """transpose(transpose(x, p), q) with q undoing p -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, TransposeOp) and is_identity_perm(
            compose_perms(inner.perm.get_values(), op.perm.get_values())
        ):
            replace_with_value(rewriter, op, inner.input)


class RemoveFullSlice(RewritePattern):
    """slice(x) that keeps every element in order -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SliceOp, rewriter: PatternRewriter) -> None:
        dims = shape_of(op.input)
        if dims != shape_of(op.output):
            return
        starts, steps = op.starts.get_values(), op.steps.get_values()
        # A dimension of size <= 1 kept whole reads the same element for any step.
        if all(d <= 1 or (s == 0 and k == 1) for d, s, k in zip(dims, starts, steps, strict=True)):
            replace_with_value(rewriter, op, op.input)


class RemoveZeroPad(RewritePattern):
    """pad(x) with every pad 0 (any mode) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: PadOp, rewriter: PatternRewriter) -> None:
        if not any(op.pads.get_values()):
            replace_with_value(rewriter, op, op.input)


class RemoveUnboundedClip(RewritePattern):
    """clip(x) without bounds, or with bounds -inf and +inf -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ClipOp, rewriter: PatternRewriter) -> None:
        if clip_bounds(op) == (-math.inf, math.inf):
            replace_with_value(rewriter, op, op.input)


class RemoveIdentityBroadcast(RewritePattern):
    """broadcast(x) to x's own shape -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BroadcastOp, rewriter: PatternRewriter) -> None:
        if op.input.type == op.output.type:
            replace_with_value(rewriter, op, op.input)


class RemoveSingleConcat(RewritePattern):
    """concat(x) of one operand -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ConcatOp, rewriter: PatternRewriter) -> None:
        if len(op.inputs) == 1:
            replace_with_value(rewriter, op, op.inputs[0])


class RemoveSingleSplit(RewritePattern):
    """split(x) into one piece -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SplitOp, rewriter: PatternRewriter) -> None:
        if len(op.outputs) == 1:
            replace_with_value(rewriter, op, op.input)


# --------------------------------------------------------------------------- compositions


class ComposeReshapes(RewritePattern):
    """reshape(reshape(x)) -> reshape(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, ReshapeOp):
            return
        new = ReshapeOp.create(
            operands=[inner.input], result_types=[op.output.type], properties=with_name({}, op)
        )
        rewriter.replace(op, new)


class ComposeTransposes(RewritePattern):
    """transpose(transpose(x, p), q) -> transpose(x, p o q), or x when p o q is the identity."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, TransposeOp):
            return
        perm = compose_perms(inner.perm.get_values(), op.perm.get_values())
        if is_identity_perm(perm):
            replace_with_value(rewriter, op, inner.input)
            return
        new = TransposeOp.create(
            operands=[inner.input],
            result_types=[op.output.type],
            properties=with_name({"perm": ints(perm)}, op),
        )
        rewriter.replace(op, new)


class ComposeClips(RewritePattern):
    """clip(clip(x, a, b), c, d) -> clip(x, min(max(a, c), d), min(max(b, c), d))."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ClipOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, ClipOp):
            return
        lo, hi = compose_clips(clip_bounds(inner), clip_bounds(op))
        new = ClipOp.create(
            operands=[inner.input],
            result_types=[op.output.type],
            properties=with_name(bound_props(lo, hi, "min", "max"), op),
        )
        rewriter.replace(op, new)


class RemoveNeutralOperand(RewritePattern):
    """x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1 -> x.

    The neutral operand must be a constant splat and must not broadcast x to a
    larger shape; an add/sub/mul with a fused activation stays. (x + 0 turns
    -0.0 into +0.0, which compares equal.)
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: AddOp | SubOp | MulOp | DivOp, rewriter: PatternRewriter
    ) -> None:
        if isinstance(op, ActivationFusable) and op.activation is not None:
            return
        neutral = 1.0 if isinstance(op, MulOp | DivOp) else 0.0
        commutative = isinstance(op, AddOp | MulOp)
        pairs = [(op.lhs, op.rhs)] + ([(op.rhs, op.lhs)] if commutative else [])
        for keep, drop in pairs:
            if keep.type == op.output.type and is_splat(drop, neutral):
                replace_with_value(rewriter, op, keep)
                return


class SquareAsProduct(RewritePattern):
    """pow(x, 2) -> x * x: the square of a layer norm's variance, which quantizes to a
    qnn.mul while a general power has no integer form. Both round once in f32."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: PowOp, rewriter: PatternRewriter) -> None:
        if op.lhs.type != op.output.type or not is_splat(op.rhs, 2.0):
            return
        new = MulOp.create(
            operands=[op.lhs, op.lhs], result_types=[op.output.type], properties=with_name({}, op)
        )
        rewriter.replace(op, new)


class FuseHardSwish(RewritePattern):
    """x * clip(x + 3, 0, 6) / 6 -> hard_swish(x), the clip possibly fused into the add and
    `/ 6` possibly `* (1/6)`: exported MobileNetV3 blocks (PP-OCR) spell hard-swish this way.
    Quantized, hard_swish is one table lookup from x, rounded once; the chain would round after
    the add and after the multiply. The interpreter's hard_swish is the `/ 6` form in f32, so
    that form is rewritten exactly (`* (1/6)` within an ulp)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: DivOp | MulOp, rewriter: PatternRewriter) -> None:
        product = _divided_by_six(op)
        if product is None or not product.has_one_use():
            return
        mul = product.owner
        if not isinstance(mul, MulOp) or mul.activation is not None:
            return
        for x, gate in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
            same = x.type == gate.type == op.output.type
            if same and gate.has_one_use() and _is_relu6_of_x_plus_3(gate, x):
                new = HardSwishOp.create(
                    operands=[x], result_types=[op.output.type], properties=with_name({}, op)
                )
                rewriter.replace(op, new)
                for dead in dict.fromkeys((mul, gate.owner, _relu6_input(gate).owner)):
                    if isinstance(dead, Operation) and not any(r.uses for r in dead.results):
                        rewriter.erase(dead)
                return


def _divided_by_six(op: DivOp | MulOp) -> SSAValue | None:
    """v for op = v / 6 or v * (1/6) (no fused activation), else None."""
    if isinstance(op, ActivationFusable) and op.activation is not None:
        return None
    if isinstance(op, DivOp):
        return op.lhs if is_splat(op.rhs, 6.0) else None
    for v, c in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        array = constant_value(c)
        if array is not None and bool(np.all(array.astype(np.float32) == np.float32(1 / 6))):
            return v
    return None


def _relu6_input(gate: SSAValue) -> SSAValue:
    """What `gate` clips to [0, 6]: a clip's input, or the add itself when it fuses the clip."""
    owner = gate.owner
    return owner.input if isinstance(owner, ClipOp) else gate


def _is_relu6_of_x_plus_3(gate: SSAValue, x: SSAValue) -> bool:
    owner = gate.owner
    if isinstance(owner, ClipOp):
        if clip_bounds(owner) != (0.0, 6.0):
            return False
        add = owner.input.owner
        if not isinstance(add, AddOp) or add.activation is not None:
            return False
        if not owner.input.has_one_use():
            return False
    elif isinstance(owner, AddOp) and owner.activation is not None:
        if owner.activation.data != "clip":
            return False
        if fused_clip_bounds(owner) != (0.0, 6.0):
            return False
        add = owner
    else:
        return False
    return add.output.type == x.type and any(
        a is x and is_splat(b, 3.0) for a, b in ((add.lhs, add.rhs), (add.rhs, add.lhs))
    )


IDENTITY_PATTERNS: tuple[type[RewritePattern], ...] = (
    RemoveIdentityReshape,
    RemoveReshapeRoundTrip,
    RemoveIdentityTranspose,
    RemoveInverseTransposes,
    RemoveFullSlice,
    RemoveZeroPad,
    RemoveUnboundedClip,
    RemoveIdentityBroadcast,
    RemoveSingleConcat,
    RemoveSingleSplit,
)
"""Patterns that delete an op whose result equals its input."""

COMPOSITION_PATTERNS: tuple[type[RewritePattern], ...] = (
    ComposeReshapes,
    ComposeTransposes,
    ComposeClips,
    RemoveNeutralOperand,
    SquareAsProduct,
    FuseHardSwish,
)
"""Patterns that merge chains, drop neutral arithmetic or strength-reduce (canonicalize only)."""
