"""`eliminate-identity`: remove `nn` ops whose result equals their input.

Patterns (see `nn_patterns.py`):

- reshape to x's own shape; reshape(reshape(x)) back to x's shape
- transpose with the identity perm; transpose(transpose(x)) whose perms cancel
- slice taking every element; pad by zero (any mode)
- clip without bounds or with bounds -inf / +inf
- broadcast to x's own shape; concat of one operand; split into one piece

Dropout and Identity have no `nn` op: the frontends drop them on import.
Unlike `canonicalize`, this pass never creates ops, it only deletes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker

from .nn_patterns import IDENTITY_PATTERNS


@dataclass(frozen=True)
class EliminateIdentityPass(ModulePass):
    """Forward the input of every value-preserving op to its users and erase the op."""

    name = "eliminate-identity"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        applier = GreedyRewritePatternApplier([p() for p in IDENTITY_PATTERNS])
        PatternRewriteWalker(applier).rewrite_module(op)
