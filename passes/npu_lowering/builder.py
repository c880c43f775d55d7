"""The state of one lowering: where each value's elements are, the instructions so far, and the
constants region (planned constants plus the parameter tables and LUTs the lowering adds)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, StringAttr
from xdsl.ir import Operation, Region, SSAValue

from npuc.dialects.mem import BUFFER_ATTR, BufferAttr, buffer_list
from npuc.dialects.npu_isa import Instruction, TensorRef, default_params
from npuc.dialects.npu_rules import overlaps
from npuc.dialects.tile import LAYER_ATTR

from .views import contiguous


def _name(op: Operation) -> str | None:
    attr = op.properties.get("name") or op.attributes.get("name")
    return attr.data if isinstance(attr, StringAttr) else None


#: How an op lowers: instructions appended to the builder.
Rule = Callable[["Builder", Any], None]  # each rule takes its own op class
#: Which instances of an op its rule lowers (the others run on the host).
Support = Callable[[Operation], bool]


class LoweringError(Exception):
    """An op that cannot be lowered (collected, then reported together)."""


@dataclass(frozen=True, eq=False)
class Virtual:
    """A view that stands in for a copy the plan made: valid while nobody touches its bytes.

    `op` is the op whose copy was skipped; its bytes must not be written (by anyone but
    `owner`, and for a redirected output: not read either) from instruction `start` to
    where the builder's `ends` says (the builder's, so that a saved builder shares the
    records: copying thousands of them took half of palm_detection's 32 builder copies in
    size mode).
    """

    op: Operation
    ref: TensorRef
    start: int
    owner: int | None = None  # a redirected output's producer


@dataclass
class Constants:
    """The constants region: the planned bytes, then appended tables at `alignment`."""

    data: bytearray
    alignment: int
    tables: dict[bytes, int] = field(default_factory=dict)

    def add(self, array: np.ndarray) -> int:
        blob = np.ascontiguousarray(array).tobytes()
        if blob in self.tables:
            return self.tables[blob]
        offset = -(-len(self.data) // self.alignment) * self.alignment
        self.data += bytes(offset - len(self.data)) + blob
        self.tables[blob] = offset
        return offset


class Builder:
    """Instructions in program order (deps come later) and each value's current view."""

    def __init__(
        self,
        constants: Constants,
        layer_names: dict[int, str],
        copies: set[Operation],
        kinds: dict[str, str],
    ):
        self.constants = constants
        self.kinds = kinds  # planned region name -> NPU region kind
        self.cache: dict[Operation, np.ndarray] = {}  # constant values (bias tables)
        self.copies = copies  # ops whose result must be a real copy (a view was unsafe)
        self.redirects: dict[SSAValue, TensorRef] = {}
        self.pinned: set[Operation] = set()  # redirects the plan made views (never copied)
        self.pending: dict[SSAValue, list[Virtual]] = {}
        self.refs: dict[SSAValue, TensorRef] = {}
        self.instructions: list[Instruction] = []
        self.host_bodies: dict[int, Region] = {}  # host instruction index -> its body
        self.layers: list[str] = []
        self.layer_names = layer_names
        self.virtual: list[Virtual] = []
        self.ends: dict[Virtual, int] = {}  # where each virtual view must stay valid to
        self.origins: dict[SSAValue, list[Virtual]] = {}
        self.op: Operation | None = None
        self.constants_end = 0  # of a saved state: the length of its constants bytes

    def saved(self) -> Builder:
        """A copy of the state so far, to resume lowering from later with `resumed` (the
        constants bytes are only appended to: it keeps their length, not a copy)."""
        return self._copy(self.constants)

    def resumed(self, copies: set[Operation]) -> Builder:
        """A builder that lowers on from this saved state, with the ops in `copies` copied."""
        c = self.constants
        constants = Constants(bytearray(c.data[: self.constants_end]), c.alignment, c.tables)
        new = self._copy(constants)
        new.copies = copies
        return new

    def _copy(self, constants: Constants) -> Builder:
        new = copy.copy(self)
        new.constants_end = len(self.constants.data)
        new.constants = replace(constants, tables=dict(constants.tables))
        # the `Virtual` records are shared; lists of them are replaced, never changed
        new.virtual = list(self.virtual)
        new.ends = dict(self.ends)
        new.pending = dict(self.pending)
        new.origins = dict(self.origins)
        new.cache = dict(self.cache)
        new.redirects = dict(self.redirects)
        new.pinned = set(self.pinned)
        new.refs = dict(self.refs)
        new.instructions = list(self.instructions)
        new.host_bodies = dict(self.host_bodies)
        new.layers = list(self.layers)
        return new

    # ------------------------------------------------------------------ values

    def planned(self, value: SSAValue) -> TensorRef:
        """The row-major view of the bytes the plan gave `value`."""
        b = self._buffer(value)
        return contiguous(self.kinds[b.region.data], b.offset.data, value.type)

    def planned_inside(self, value: SSAValue, whole: SSAValue) -> bool:
        """Whether the plan gave `value` bytes inside `whole`'s while both are live: a view
        of it (plan-memory's tiles written in place), which only a redirect may write."""
        a, b = self._buffer(value), self._buffer(whole)
        if a.region != b.region or a.live is None or b.live is None:
            return False
        (a0, a1), (b0, b1) = a.live, b.live
        inside = b.offset.data <= a.offset.data < b.offset.data + b.size.data
        return inside and a0 <= b1 and b0 <= a1

    def _buffer(self, value: SSAValue) -> BufferAttr:
        owner = value.owner
        assert isinstance(owner, Operation)
        buffers = buffer_list(owner.attributes.get(BUFFER_ATTR))
        assert buffers is not None
        b = buffers[value.index]  # type: ignore[attr-defined]
        assert isinstance(b, BufferAttr)
        return b

    def out(self, value: SSAValue) -> TensorRef:
        """Where an op writes `value`: its planned bytes, or the slice it was redirected to."""
        ref = self.redirects.get(value) or self.planned(value)
        self.refs[value] = ref
        return ref

    def redirect(self, producer: Operation, value: SSAValue, ref: TensorRef) -> None:
        """`producer` writes `value` straight into `ref` (its insert's slice of the result)."""
        v = Virtual(producer, ref, len(self.instructions), len(self.instructions))
        self.virtual.append(v)
        self.ends[v] = v.start
        self.pending[value] = [v]
        self.redirects[value] = ref

    def ref(self, value: SSAValue) -> TensorRef:
        return self.refs[value]

    def bind(self, value: SSAValue, ref: TensorRef, source: SSAValue | None = None) -> None:
        """`value` lives at `ref`; a view of a virtual `source` inherits its validity."""
        self.refs[value] = ref
        if source is not None and source in self.origins:
            self.origins[value] = self.origins[source]

    def mark_virtual(self, value: SSAValue, v: Virtual) -> None:
        self.virtual.append(v)
        self.ends[v] = v.start
        self.origins[value] = [*self.origins.get(value, []), v]

    # ------------------------------------------------------------------ instructions

    def layer(self, op: Operation) -> int | None:
        """The layer of `op`: its name, else a direct user's or producer's (a tile's load
        belongs to the layer it feeds), else its tile group's."""
        near = [u.operation for r in op.results for u in r.uses]
        near += [v.owner for v in op.operands if isinstance(v.owner, Operation)]
        name = next((n for n in map(_name, [op, *near]) if n), None)
        if name is None:
            index = op.attributes.get(LAYER_ATTR)
            name = (
                self.layer_names.get(index.value.data) if isinstance(index, IntegerAttr) else None
            )
        if not name:
            return None
        if name not in self.layers:
            self.layers.append(name)
        return self.layers.index(name)

    def emit(
        self,
        kind: str,
        operands: Sequence[TensorRef],
        reads: Sequence[SSAValue] = (),
        /,
        **params: Any,
    ) -> int:
        """Append an instruction of the current op; `reads` are the values its inputs view."""
        assert self.op is not None
        values = default_params(kind, operands)
        values.update(params)
        index = len(self.instructions)
        ends = self.ends
        for value in reads:
            for v in self.origins.get(value, ()):
                ends[v] = max(ends[v], index + 1)
        self.instructions.append(
            Instruction(kind, tuple(operands), values, (), self.layer(self.op))
        )
        return index

    def copy(self, src: TensorRef, dst: TensorRef, reads: Sequence[SSAValue], dma: bool) -> None:
        """dst = src (same shape): a DMA, or a move on the compute engine."""
        if dma:
            self.emit("dma", (src, dst), reads)
        else:
            self.emit("move", (src, dst), reads)

    # ------------------------------------------------------------------ validity of views

    def broken_views(self) -> list[Operation]:
        """The ops whose skipped copy was not safe: someone touched the bytes meanwhile."""
        broken = []
        for v in self.virtual:
            for index in range(v.start, min(self.ends[v], len(self.instructions))):
                inst = self.instructions[index]
                if index == v.owner:
                    touched = inst.read()
                else:
                    touched = inst.written() if v.owner is None else inst.operands
                if any(overlaps(t, v.ref) for t in touched):
                    broken.append(v.op)
                    break
        return broken
