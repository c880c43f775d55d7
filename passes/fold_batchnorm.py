"""`fold-batchnorm`: fold inference batch norms into constants.

Patterns:

- batch_norm(conv2d | conv_transpose2d | fully_connected) with constant
  weight, bias (if any) and BN parameters, where the BN is the producer's
  only user and the producer has no fused activation -> the producer with
  rescaled weight and shifted bias (a bias is created if absent)
- batch_norm(x) with constant parameters -> x * s + t with per-channel
  constants (option `standalone`, on by default)

With s = scale / sqrt(var + epsilon) and t = bias - mean * s, computed in
float64 and stored as float32. The folded layer keeps the producer's `name`
(the standalone `nn.add` takes the BN's); new weight and bias constants are
named after the producer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from npuc.dialects.nn import (
    AddOp,
    BatchNormOp,
    ConstantOp,
    Conv2dOp,
    ConvTranspose2dOp,
    FullyConnectedOp,
    MulOp,
    build,
    shape_of,
)
from npuc.tensors import to_dense

from .nn_patterns import constant_value

Layer = Conv2dOp | ConvTranspose2dOp | FullyConnectedOp


def batch_norm_affine(bn: BatchNormOp) -> tuple[np.ndarray, np.ndarray] | None:
    """(s, t) in float64 with batch_norm(x) = x * s + t per channel, or None if not constant."""
    params = [constant_value(v) for v in (bn.scale, bn.bias, bn.mean, bn.var)]
    if any(p is None for p in params):
        return None
    scale, bias, mean, var = (np.asarray(p, dtype=np.float64) for p in params)
    s = scale / np.sqrt(var + float(bn.epsilon.value.data))
    return s, bias - mean * s


def scale_output_channels(layer: Layer, weight: np.ndarray, s: np.ndarray) -> np.ndarray:
    """`weight` with each output channel o multiplied by s[o]."""
    if isinstance(layer, ConvTranspose2dOp):
        # [C, O / groups, kH, kW]: output channel g * O/groups + j is w[c in group g, j].
        groups = layer.groups.value.data
        c, per_group, kh, kw = weight.shape
        grouped = weight.reshape(groups, c // groups, per_group, kh, kw)
        return (grouped * s.reshape(groups, 1, per_group, 1, 1)).reshape(weight.shape)
    return weight * s.reshape((-1,) + (1,) * (weight.ndim - 1))


def _constant(
    rewriter: PatternRewriter, array: np.ndarray, name: str | None, at: InsertPoint
) -> SSAValue:
    op = ConstantOp(to_dense(array.astype(np.float32)), name)
    rewriter.insert(op, at)
    return op.output


def _name(value: SSAValue | None, fallback: str | None) -> str | None:
    owner = value.owner if value is not None else None
    if isinstance(owner, ConstantOp) and owner.layer_name is not None:
        return owner.layer_name.data
    return fallback


def fold_into_layer(
    rewriter: PatternRewriter,
    layer: Layer,
    weight: np.ndarray,
    bias: np.ndarray,
    consumer: Operation,
) -> None:
    """Replace `consumer` (the op folded away) and `layer` by the layer with `weight` and
    `bias` as new constants, named as the old ones (a new bias after the layer)."""
    layer_name = layer.layer_name.data if layer.layer_name is not None else None
    at = InsertPoint.before(layer)
    w = _constant(rewriter, weight, _name(layer.weight, None), at)
    b = _constant(rewriter, bias, _name(layer.bias, layer_name and f"{layer_name}.bias"), at)
    folded = type(layer).create(
        operands=[layer.input, w, b],
        properties=dict(layer.properties),
        attributes=dict(layer.attributes),
        result_types=[layer.output.type],
    )
    rewriter.insert(folded, at)
    rewriter.replace_all_uses_with(consumer.results[0], folded.output)
    rewriter.erase(consumer)
    rewriter.erase(layer)


class FoldBatchNormIntoLayer(RewritePattern):
    """batch_norm(conv2d | conv_transpose2d | fully_connected) -> layer with folded weights."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: BatchNormOp, rewriter: PatternRewriter) -> None:
        layer = bn.input.owner
        if not isinstance(layer, Layer) or layer.activation is not None:
            return
        if not layer.output.has_one_use():
            return
        weight = constant_value(layer.weight)
        bias = constant_value(layer.bias) if layer.bias is not None else None
        affine = batch_norm_affine(bn)
        if weight is None or affine is None or (layer.bias is not None and bias is None):
            return
        if isinstance(layer, ConvTranspose2dOp) and weight.shape[0] % layer.groups.value.data:
            return
        s, t = affine
        new_weight = scale_output_channels(layer, np.asarray(weight, dtype=np.float64), s)
        new_bias = (0.0 if bias is None else np.asarray(bias, dtype=np.float64)) * s + t

        fold_into_layer(rewriter, layer, new_weight, new_bias, bn)


class BatchNormToMulAdd(RewritePattern):
    """batch_norm(x) with constant parameters -> add(mul(x, s), t), s and t shaped [C, 1, ...]."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: BatchNormOp, rewriter: PatternRewriter) -> None:
        affine = batch_norm_affine(bn)
        if affine is None:
            return
        s, t = affine
        rank = len(shape_of(bn.input))
        param_shape = (-1,) + (1,) * (rank - 2)
        at = InsertPoint.before(bn)
        scale = _constant(rewriter, s.reshape(param_shape), None, at)
        shift = _constant(rewriter, t.reshape(param_shape), None, at)
        mul = build(MulOp, [bn.input, scale])
        name = bn.layer_name.data if bn.layer_name is not None else None
        add = build(AddOp, [mul, shift], name=name)
        rewriter.replace(bn, [mul, add])


@dataclass(frozen=True)
class FoldBatchNormPass(ModulePass):
    """Fold constant batch norms into the preceding layer, or into mul + add.

    standalone: also rewrite batch norms that cannot fold into a layer as mul + add.
    """

    name = "fold-batchnorm"

    standalone: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns: list[RewritePattern] = [FoldBatchNormIntoLayer()]
        if self.standalone:
            patterns.append(BatchNormToMulAdd())
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)
