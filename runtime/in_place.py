"""Elementwise ops the float interpreter may compute into their first operand's array.

An nn.add, nn.sub or nn.mul may write its result over its first operand when that
operand is used by nothing else, is not returned, has the result's type, and was made
by a kernel that returns an array of its own (a convolution or another such op): no
other value can then see the array. This saves an allocation and a pass over memory
per op (the scale and shift of a batch norm that did not fold, as in DenseNet).
Kept intermediates and FunctionRunner.steps never run in place.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
from xdsl.ir import Operation, OpResult, SSAValue

from npuc.dialects import nn

UFUNCS: dict[type[Operation], np.ufunc] = {
    nn.AddOp: np.add,
    nn.SubOp: np.subtract,
    nn.MulOp: np.multiply,
}
FRESH: tuple[type[Operation], ...] = (nn.Conv2dOp, nn.AddOp, nn.SubOp, nn.MulOp)


def in_place_ops(
    ops: Sequence[Operation], returned: Collection[SSAValue]
) -> dict[Operation, np.ufunc]:
    """The ops of a function body that may run into their first operand, with their ufunc."""
    found: dict[Operation, np.ufunc] = {}
    for op in ops:
        ufunc = UFUNCS.get(type(op))
        if ufunc is None:
            continue
        first, second = op.operands
        if (
            isinstance(first, OpResult)
            and isinstance(first.owner, FRESH)
            and first.has_one_use()
            and first is not second
            and first not in returned
            and first.type == op.results[0].type
        ):
            found[op] = ufunc
    return found
