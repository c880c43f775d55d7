"""Whole tensors in the arena while a run of layers executes: how long each one lives,
and which concats the memory planner writes in place (their operands are the concat's
bytes). The tile search adds these resident bytes to every group's peak."""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue

from .layers import Layer, is_constant_op, nbytes, shape
from .working_set import Memories, align

NEVER = 1 << 62  # a live range's end for a model output, and the search's infinity


class Residency:
    """Bytes of whole tensors in the arena while a run of layers executes.

    A tensor is live from its producer to its last user (a folded transpose counts as its
    consumer, a reshape shares its input's bytes); outputs live to the end. Links inside
    a cascade never exist whole.
    """

    def __init__(self, func: FuncOp, layers: Sequence[Layer], memories: Memories):
        block = func.body.block
        self.pos = {op: i for i, op in enumerate(block.ops)}
        folded = {t: layer.op for layer in layers for t in layer.transposes.values()}
        root: dict[SSAValue, SSAValue] = {}
        live: dict[SSAValue, list[int]] = {}
        for arg in block.args:
            root[arg] = arg
            live[arg] = [-1, -1]
        for op in block.ops:
            for r in op.results:
                if op.name.endswith(".reshape"):
                    root[r] = root.get(op.operands[0], op.operands[0])
                elif not is_constant_op(op) and op not in folded:
                    root[r] = r
                    live[r] = [self.pos[op], self.pos[op]]
        for value, base in root.items():
            if base not in live:
                continue
            for use in value.uses:
                user = use.operation
                end = NEVER if isinstance(user, ReturnOp) else self.pos[folded.get(user, user)]
                live[base][1] = max(live[base][1], end)
        self.merged: set[Operation] = set()  # concats whose operands are written into them
        for op in block.ops:
            if (
                op.name.endswith(".concat")
                and op not in folded
                and _merge_concat(op, root, live, memories)
            ):
                self.merged.add(op)
        self.tensors = [
            (value, lo, hi, align(nbytes(value), memories.alignment))
            for value, (lo, hi) in live.items()
            if memories.of(value) == memories.arena
            or (isinstance(value, BlockArgument) and memories.io == memories.arena)
        ]
        self.static = 0
        if memories.constants == memories.arena:
            self.static = sum(
                align(nbytes(op.results[0]), memories.alignment)
                for op in block.ops
                if is_constant_op(op)
            )
        self.steps = [
            self.pos[op]
            for op in block.ops
            if not is_constant_op(op)
            and not isinstance(op, ReturnOp)
            and op.name.endswith("transpose")
            and op not in folded
        ]
        # resident() from prefix sums: a tensor overlaps [lo, hi] when it starts at or
        # before hi, unless it also ends before lo (then it starts before lo too)
        by_start = sorted((a, size) for _, a, _, size in self.tensors)
        by_end = sorted((b, size) for _, _, b, size in self.tensors)
        self._starts = [a for a, _ in by_start]
        self._ends = [b for b, _ in by_end]
        self._started = list(itertools.accumulate((size for _, size in by_start), initial=0))
        self._ended = list(itertools.accumulate((size for _, size in by_end), initial=0))
        self._span = {v: (a, b, size) for v, a, b, size in self.tensors}

    def resident(self, first: Operation, last: Operation, links: set[SSAValue]) -> int:
        lo, hi = self.pos[first], self.pos[last]
        total = (
            self._started[bisect.bisect_right(self._starts, hi)]
            - self._ended[bisect.bisect_left(self._ends, lo)]
        )
        for v in links:
            a, b, size = self._span.get(v, (0, -1, 0))
            if a <= hi and b >= lo:
                total -= size
        return self.static + total

    def live(
        self, first: Operation, last: Operation, links: set[SSAValue]
    ) -> list[tuple[SSAValue, int]]:
        """The whole tensors `resident` counts, largest first (a concat stands for the
        operands written into it)."""
        lo, hi = self.pos[first], self.pos[last]
        found = [(v, s) for v, a, b, s in self.tensors if a <= hi and b >= lo and v not in links]
        return sorted(found, key=lambda t: -t[1])

    def floor(self) -> int:
        """The largest residency at an op that is not a layer (a transpose copies)."""
        return max(
            (
                self.static + sum(s for _, a, b, s in self.tensors if a <= p <= b)
                for p in self.steps
            ),
            default=0,
        )


def _element(value: SSAValue) -> Attribute:
    ty = value.type
    assert isinstance(ty, TensorType)
    return ty.element_type


def _merge_concat(
    op: Operation,
    root: dict[SSAValue, SSAValue],
    live: dict[SSAValue, list[int]],
    memories: Memories,
) -> bool:
    """The memory planner writes a concat's operands straight into their slices of its
    result when the slices are contiguous (a concat along the outermost non-unit axis) and
    each operand feeds only the concat: such operands are the concat's bytes from their
    producer on, not tensors of their own."""
    out = op.results[0]
    dims = list(shape(out))
    axis_attr = op.properties.get("axis")
    if (
        out not in live
        or not isinstance(axis_attr, IntegerAttr)
        or memories.of(out) != memories.arena
    ):
        return False
    axis = axis_attr.value.data % len(dims)
    if math.prod(dims[:axis]) != 1:
        return False
    bases = [root.get(x) for x in op.operands]
    if len(set(map(id, bases))) != len(bases):
        return False
    element = _element(out)
    for x, base in zip(op.operands, bases, strict=True):
        if (
            base is None
            or base not in live
            or isinstance(base, BlockArgument)
            or not x.has_one_use()
            or _element(x) != element
            or memories.of(base) != memories.arena
            or nbytes(base) != nbytes(x)
            or any(
                use.operation is not op and not use.operation.name.endswith(".reshape")
                for use in base.uses
            )
        ):
            return False
    for base in bases:
        assert base is not None
        lo, hi = live.pop(base)
        live[out][0] = min(live[out][0], lo)
        live[out][1] = max(live[out][1], hi)
    return True
