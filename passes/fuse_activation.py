"""`fuse-activation`: fold activation ops into the op that produces their input.

Patterns, when the producer is `ActivationFusable` (conv2d,
conv_transpose2d, fully_connected, matmul, avg_pool2d, add, sub, mul) and the
activation is the only user of its result:

- relu(p) -> p {activation = "clip", activation_min = 0}
- clip(p, lo, hi) -> p {activation = "clip", activation_min = lo, activation_max = hi}
  (a clip without bounds is an identity, left to `eliminate-identity`)
- leaky_relu(p, alpha) -> p {activation = "leaky_relu", activation_alpha = alpha}
- relu/clip of a clip-activated producer -> the producer with the composed bounds

The producer keeps its `name`; the activation op's name is dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from npuc.dialects.nn import ClipOp, LeakyReluOp, ReluOp
from npuc.dialects.nn_base import ActivationFusable

from .nn_patterns import (
    bound_props,
    clip_bounds,
    compose_clips,
    fused_clip_bounds,
    replace_with_value,
)

ACTIVATION_PROPS = ("activation", "activation_min", "activation_max", "activation_alpha")


def _activation_props(
    op: ReluOp | ClipOp | LeakyReluOp, producer: ActivationFusable
) -> dict[str, Attribute] | None:
    """The producer's new activation properties, or None if `op` cannot be fused into it."""
    current = producer.activation.data if producer.activation is not None else None
    if isinstance(op, LeakyReluOp):
        if current is not None:
            return None
        return {"activation": StringAttr("leaky_relu"), "activation_alpha": op.alpha}
    lo, hi = (0.0, math.inf) if isinstance(op, ReluOp) else clip_bounds(op)
    if (lo, hi) == (-math.inf, math.inf):
        return None
    if current == "clip":
        lo, hi = compose_clips(fused_clip_bounds(producer), (lo, hi))
    elif current is not None:
        return None
    props: dict[str, Attribute] = {"activation": StringAttr("clip")}
    return props | bound_props(lo, hi, "activation_min", "activation_max")


class FuseActivation(RewritePattern):
    """relu / clip / leaky_relu of a single-use ActivationFusable result -> fused activation."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: ReluOp | ClipOp | LeakyReluOp, rewriter: PatternRewriter
    ) -> None:
        producer = op.input.owner
        if not isinstance(producer, ActivationFusable) or not op.input.has_one_use():
            return
        props = _activation_props(op, producer)
        if props is None:
            return
        for key in ACTIVATION_PROPS:
            producer.properties.pop(key, None)
        producer.properties.update(props)
        rewriter.notify_op_modified(producer)
        replace_with_value(rewriter, op, op.input)


@dataclass(frozen=True)
class FuseActivationPass(ModulePass):
    """Fuse relu, clip and leaky_relu into their producers."""

    name = "fuse-activation"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier([FuseActivation()])).rewrite_module(op)
