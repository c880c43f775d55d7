"""`fold-affine`: fold chains of constant per-channel scales and shifts.

Patterns, on f32 `nn.mul` / `nn.add` with one constant operand and no fused
activation, whose other operand has the result's shape (the constant does not
broadcast it to a larger one) and is used only by them:

- mul(mul(x, a), b) -> mul(x, a * b); add(add(x, a), b) -> add(x, a + b)
- mul(add(x, t), s) -> add(mul(x, s), t * s), so that scales meet scales and
  shifts meet shifts (a batch norm followed by a Caffe-style scale layer
  becomes one mul and one add)
- mul(layer(x), s) and add(layer(x), t), with s and t per output channel and
  the layer (conv2d, conv_transpose2d, fully_connected with constant weight and
  bias) without a fused activation -> the layer with scaled weights or shifted
  bias, as onnxruntime's Conv+Mul and Conv+Add fusions do

New constants are computed in float64 and stored as float32. A folded layer
keeps its `name`; a merged mul or add keeps the outer op's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from npuc.dialects.nn import AddOp, ConstantOp, ConvTranspose2dOp, MulOp, build, shape_of
from npuc.dialects.nn_base import is_float
from npuc.tensors import to_dense

from .fold_batchnorm import Layer, fold_into_layer, scale_output_channels
from .nn_patterns import constant_value

Affine = AddOp | MulOp


def _split(op: Affine) -> tuple[SSAValue, np.ndarray] | None:
    """(x, c) for an f32 op(x, c) with constant c that leaves x's shape, else None."""
    if op.activation is not None or not is_float(op.output):
        return None
    for x, c in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        value = constant_value(c)
        if value is not None and x.type == op.output.type and constant_value(x) is None:
            return x, np.asarray(value, dtype=np.float64)
    return None


def _constant(rewriter: PatternRewriter, array: np.ndarray, at: InsertPoint) -> SSAValue:
    op = ConstantOp(to_dense(np.asarray(array, dtype=np.float32)))
    rewriter.insert(op, at)
    return op.output


def _name(op: Affine) -> str | None:
    return op.layer_name.data if op.layer_name is not None else None


def _fits(shape: tuple[int, ...], constant: np.ndarray) -> bool:
    """Whether `constant` broadcasts into `shape` without changing it."""
    try:
        return np.broadcast_shapes(shape, constant.shape) == shape
    except ValueError:
        return False


class ComposeAffine(RewritePattern):
    """mul(mul(x, a), b) -> mul(x, a*b); add(add(x, a), b) -> add(x, a+b);
    mul(add(x, t), s) -> add(mul(x, s), t*s)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AddOp | MulOp, rewriter: PatternRewriter) -> None:
        outer = _split(op)
        if outer is None:
            return
        inner_value, b = outer
        inner = inner_value.owner
        if not isinstance(inner, AddOp | MulOp) or not inner_value.has_one_use():
            return
        split = _split(inner)
        if split is None:
            return
        x, a = split
        shape = shape_of(op.output)
        at = InsertPoint.before(op)
        if type(inner) is type(op):
            combined = a * b if isinstance(op, MulOp) else a + b
            if not _fits(shape, combined):
                return
            merged = build(type(op), [x, _constant(rewriter, combined, at)], name=_name(op))
            rewriter.replace(op, merged)
            rewriter.erase(inner)
        elif isinstance(op, MulOp):  # mul(add(x, t), s) = add(mul(x, s), t*s)
            shifted = a * b
            if not _fits(shape, shifted) or not _fits(shape, b):
                return
            mul = build(MulOp, [x, _constant(rewriter, b, at)])
            add = build(AddOp, [mul, _constant(rewriter, shifted, at)], name=_name(op))
            rewriter.replace(op, [mul, add])
            rewriter.erase(inner)


def _per_channel(constant: np.ndarray, output_shape: tuple[int, ...]) -> np.ndarray | None:
    """`constant` as one value per output channel (axis 1 of the layer's output), or None
    if it varies along any other axis."""
    rank = len(output_shape)
    if constant.ndim > rank:
        return None
    full = constant.reshape((1,) * (rank - constant.ndim) + constant.shape)
    if any(d != 1 for i, d in enumerate(full.shape) if i != 1):
        return None
    return np.broadcast_to(full.reshape(-1), (output_shape[1],)).astype(np.float64)


class FoldAffineIntoLayer(RewritePattern):
    """mul(layer(x), s) / add(layer(x), t) with per-channel s, t -> layer with folded weights."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AddOp | MulOp, rewriter: PatternRewriter) -> None:
        split = _split(op)
        if split is None:
            return
        value, constant = split
        layer = value.owner
        if not isinstance(layer, Layer) or layer.activation is not None:
            return
        if not value.has_one_use() or len(shape_of(value)) < 2:
            return
        per_channel = _per_channel(constant, shape_of(value))
        weight = constant_value(layer.weight)
        bias = constant_value(layer.bias) if layer.bias is not None else None
        if per_channel is None or weight is None or (layer.bias is not None and bias is None):
            return
        if isinstance(layer, ConvTranspose2dOp) and weight.shape[0] % layer.groups.value.data:
            return  # its weight must split evenly into its groups
        weight = np.asarray(weight, dtype=np.float64)
        shift = np.zeros(per_channel.shape) if bias is None else np.asarray(bias, np.float64)
        if isinstance(op, MulOp):
            weight = scale_output_channels(layer, weight, per_channel)
            shift = shift * per_channel
        else:
            shift = shift + per_channel
        fold_into_layer(rewriter, layer, weight, shift, op)


@dataclass(frozen=True)
class FoldAffinePass(ModulePass):
    """Merge constant per-channel scale/shift chains and fold them into the preceding layer."""

    name = "fold-affine"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns: list[RewritePattern] = [FoldAffineIntoLayer(), ComposeAffine()]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)
