"""`canonicalize`: bring `nn` graphs into canonical form.

Patterns (see `nn_patterns.py`):

- reshape(reshape(x)) -> reshape(x); reshape to x's own shape -> x
- transpose(transpose(x)) -> one transpose, or x when the perms cancel;
  transpose with the identity perm -> x
- clip(clip(x)) -> one clip; clip without (or with infinite) bounds -> x
- x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1 (constant splat that does not
  broadcast x, no fused activation) -> x
- pad by zero, slice taking everything, broadcast to the same shape,
  concat of one operand, split into one piece -> x
- xDSL's own canonicalization patterns and folders (builtin, arith, ...)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
from xdsl.transforms.canonicalize import CanonicalizationRewritePattern
from xdsl.transforms.dead_code_elimination import region_dce

from .nn_patterns import COMPOSITION_PATTERNS, IDENTITY_PATTERNS


@dataclass(frozen=True)
class CanonicalizePass(ModulePass):
    """Apply the nn canonicalization patterns and xDSL's, then remove dead code."""

    name = "canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [p() for p in (*IDENTITY_PATTERNS, *COMPOSITION_PATTERNS)]
        applier = GreedyRewritePatternApplier(
            [*patterns, CanonicalizationRewritePattern()], ctx=ctx, folding_enabled=True
        )
        PatternRewriteWalker(applier, post_walk_func=region_dce).rewrite_module(op)
