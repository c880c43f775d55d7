"""`fold-constants`: evaluate `nn` ops whose operands are all constants.

Each such op (other than `nn.constant`) runs through the reference
interpreter and is replaced by one `nn.constant` per result, carrying the
op's `name`. Ops without an interpreter kernel stay, and so does any op with
a result of more than `max_size` elements, so folding never inflates a model
(a broadcast of a scalar to a huge tensor stays a broadcast).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from npuc.dialects.nn import ConstantOp, NNOperation
from npuc.tensors import numpy_dtype, to_dense

from .nn_patterns import constant_value

Evaluator = Callable[[Operation, list[np.ndarray]], list[np.ndarray]]


@dataclass(eq=False)
class FoldConstantOp(RewritePattern):
    """op(constant, ..., constant) -> constant, if every result has at most max_size elements."""

    evaluate: Evaluator
    max_size: int

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, NNOperation) or isinstance(op, ConstantOp) or not op.operands:
            return
        found = [constant_value(v) for v in op.operands]
        args = [a for a in found if a is not None]
        if len(args) != len(found):
            return
        types = [r.type for r in op.results if isinstance(r.type, TensorType)]
        if len(types) != len(op.results):
            return
        if any(math.prod(t.get_shape()) > self.max_size for t in types):
            return
        try:
            values = self.evaluate(op, args)
        except NotImplementedError:
            return
        name = op.layer_name.data if op.layer_name is not None else None
        constants = []
        for value, ty in zip(values, types, strict=True):
            array = np.asarray(value).astype(numpy_dtype(ty.get_element_type()), copy=False)
            if array.shape != tuple(ty.get_shape()):
                raise ValueError(f"{op.name} evaluated to shape {array.shape}, expected {ty}")
            constants.append(ConstantOp(to_dense(array, ty.get_element_type()), name))
        rewriter.replace(op, constants, [c.output for c in constants])


@dataclass(frozen=True)
class FoldConstantsPass(ModulePass):
    """Replace constant-operand `nn` ops by their value.

    max_size: largest number of elements a folded result may have.
    """

    name = "fold-constants"

    max_size: int = 1 << 24

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from npuc.runtime.nn_interpreter import evaluate_op

        pattern = FoldConstantOp(evaluate_op, self.max_size)
        PatternRewriteWalker(GreedyRewritePatternApplier([pattern])).rewrite_module(op)
