"""From a function's IR to planned buffers: regions, aliasing, op order, offsets.

`plan_function` is the work of the `plan-memory` pass minus the IR rewrite: it
assigns every value a region, applies the aliasing rules of `memory_rules`, picks a
memory-aware op order, decides in-place reuse in that order, places each region and
verifies the result. See docs/memory-planning.md ("The plan-memory pass").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import DenseArrayBase, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from npuc import graph_io
from npuc.diagnostics import NpucError
from npuc.dialects.arrays import int_values
from npuc.dialects.tile import InsertOp
from npuc.target import Target

from .ir import (
    ACTIVATIONS,
    CONSTANTS,
    MUTABLE,
    byte_size,
    compute_ops,
    is_constant,
    itemsize,
    layer_name,
)
from .plan import (
    Buffer,
    Placement,
    PlacementError,
    align_up,
    aligned_size,
    effective_alignment,
    lower_bound,
    naive_size,
    resolve_aliases,
)
from .report import MemoryReport, plan_with_report, verify_placement
from .rules import (
    VIEW_RULES,
    Rule,
    contiguous_axis,
    region_offset,
    rule_for,
    same_element_type,
)
from .schedule import Node, schedule

#: Aliasing rules whose result overwrites (part of) its root's bytes.
WRITES = (Rule.INPLACE, Rule.INSERT, Rule.TILE)

#: Ops that lower-to-npu turns into a view of their operand where it can (a movement op
#: without an instruction): through one, a strided slice's bytes would be read after its
#: last reader here, and a view the lowering then finds broken is copied to its planned
#: place (for a strided slice: inside its source).
VIEWED_BY_LOWERING = frozenset(
    f"{d}.{n}" for d in ("nn", "qnn") for n in ("reshape", "transpose", "slice", "split")
) | {"tile.slice"}

#: Property (or attribute) naming the memory an op's result lives in, when not the arena.
MEMORY_ATTR = "to"


class UnsoundPlanError(RuntimeError):
    """The planner produced overlapping or misplaced buffers: a compiler bug."""


@dataclass
class _Value:
    value: SSAValue
    name: str
    size: int
    region: str
    explicit: bool  # region fixed by the IR (graph output, `to`), not free to follow a view
    producer: Operation | None
    parent: SSAValue | None = None
    offset: int = 0
    rule: Rule | None = None
    start: int = 0
    end: int = 0


@dataclass(frozen=True)
class PlannedBuffer:
    region: str
    offset: int
    size: int
    live: tuple[int, int] | None


@dataclass(frozen=True)
class PlannedRegion:
    name: str
    memory: str
    size: int
    lower_bound: int
    naive: int


@dataclass
class FunctionPlan:
    """The outcome: the op order to use, where each value lives, the regions and reports."""

    sequence: list[Operation] | None  # new order of the body (return excluded); None: unchanged
    buffers: dict[SSAValue, PlannedBuffer]
    regions: list[PlannedRegion]
    reports: list[MemoryReport]
    views: dict[str, int] = field(default_factory=dict)  # aliasing decisions per rule
    problems: dict[str, list[Buffer]] = field(default_factory=dict)  # the placer's input


def memory_of(op: Operation) -> str | None:
    attr = op.properties.get(MEMORY_ATTR) or op.attributes.get(MEMORY_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def _shape(v: SSAValue) -> tuple[int, ...] | None:
    return tuple(v.type.get_shape()) if isinstance(v.type, TensorType) else None


class _Planner:
    def __init__(self, func: FuncOp, target: Target, alignment: int, io_in_arena: bool = False):
        self.func, self.target, self.alignment = func, target, alignment
        block = func.body.block
        ret = block.last_op
        if not isinstance(ret, ReturnOp):
            raise NpucError(f"@{func.sym_name.data} must end with func.return")
        for op in block.ops:
            if op.regions:
                raise NpucError(f"cannot plan memory across '{op.name}' (an op with regions)")
        self.constants = [op for op in block.ops if is_constant(op)]
        self.compute = compute_ops(func)
        self.returned = list(dict.fromkeys(ret.operands))
        self.vals: dict[SSAValue, _Value] = {}
        self.views: dict[str, int] = {}
        self.strided: set[SSAValue] = set()  # slices read in place across their source
        self._roots: dict[SSAValue, SSAValue] = {}
        returned = set(self.returned)
        try:
            pairs = graph_io.state_names(func)
        except ValueError as e:
            raise NpucError(f"plan-memory: {e}") from None
        state = {block.args[a] for a, _, _ in pairs} | {ret.operands[r] for _, r, _ in pairs}
        # With io_in_arena, inputs and outputs share the activations arena (reused by
        # liveness); persistent state must survive between calls, so it stays mutable.
        io_region = ACTIVATIONS if io_in_arena else MUTABLE
        self.io_in_arena = io_in_arena
        for a in block.args:
            self._add(a, MUTABLE if a in state else io_region, True, None)
        for op in self.constants:
            for r in op.results:
                self._add(r, MUTABLE if r in returned else CONSTANTS, True, op)
        for op in self.compute:
            memory = memory_of(op)
            region = ACTIVATIONS
            if memory is not None and memory != target.placement.arena:
                mem = target.memory(memory)
                if not mem.writable:
                    raise NpucError(
                        f"'{op.name}' ({layer_name(op) or 'unnamed'}): memory "
                        f"'{memory}' is read-only"
                    )
                region = memory
            for r in op.results:
                if r in returned:
                    self._add(r, MUTABLE if r in state else io_region, True, op)
                else:
                    self._add(r, region, memory is not None, op)

    def _add(self, v: SSAValue, region: str, explicit: bool, producer: Operation | None) -> None:
        self.vals[v] = _Value(
            v, f"v{len(self.vals)}", byte_size(v.type), region, explicit, producer
        )

    # ------------------------------------------------------------------ aliasing

    def root(self, v: SSAValue) -> SSAValue:
        # Views only attach to roots, so a remembered root is still on the chain (resume there).
        r = self._roots.get(v, v)
        while (p := self.vals[r].parent) is not None:
            r = p
        self._roots[v] = r
        return r

    def liveness(self, v: SSAValue) -> bool:
        return self.vals[v].region not in (CONSTANTS, MUTABLE)

    def _can_view(self, child: SSAValue, parent: SSAValue, offset: int) -> bool:
        c, p = self.vals[child], self.vals[parent]
        return (
            c.parent is None
            and c.region != MUTABLE
            and (not c.explicit or c.region == p.region)
            and offset % self.alignment == 0
            and offset + c.size <= p.size
        )

    def _attach(self, child: SSAValue, parent: SSAValue, offset: int, rule: Rule) -> None:
        c = self.vals[child]
        c.parent, c.offset, c.rule, c.region = parent, offset, rule, self.vals[parent].region
        self.views[rule.value] = self.views.get(rule.value, 0) + 1

    def static_views(self) -> None:
        """Views that do not depend on the op order: reshape, split, concat slices."""
        for op in self.compute:
            rule = rule_for(op)
            if rule is Rule.VIEW and op.operands and len(op.results) == 1:
                src, r = op.operands[0], op.results[0]
                same = same_element_type(src, r) and self.vals[src].size == self.vals[r].size
                if same and self._can_view(r, src, 0):
                    self._attach(r, src, 0, rule)
            elif rule is Rule.SLICE and op.operands and len(op.results) == 1:
                self._slice(op)
            elif rule is Rule.SPLIT and op.operands:
                src, shape = op.operands[0], _shape(op.operands[0])
                if shape is None or not contiguous_axis(op, shape):
                    continue
                offset = 0
                for r in op.results:
                    if same_element_type(src, r) and self._can_view(r, src, offset):
                        self._attach(r, src, offset, rule)
                    offset += self.vals[r].size
        for op in self.compute:
            if rule_for(op) is Rule.CONCAT and len(op.results) == 1:
                self._concat(op)

    def _slice(self, op: Operation) -> None:
        src, r = op.operands[0], op.results[0]
        shape, part = _shape(src), _shape(r)
        attr = op.properties.get("offsets")
        if shape is None or part is None or itemsize(src.type) != itemsize(r.type):
            return
        if not isinstance(attr, DenseArrayBase):
            return
        index = region_offset(shape, int_values(attr), part)
        if index is not None and self._can_view(r, src, index * itemsize(r.type)):
            self._attach(r, src, index * itemsize(r.type), Rule.SLICE)

    def _concat(self, op: Operation) -> None:
        out = op.results[0]
        shape = _shape(out)
        if not self.liveness(out) or shape is None or not contiguous_axis(op, shape):
            return
        counts: dict[SSAValue, int] = {}
        for x in op.operands:
            counts[self._slice_owner(x) or x] = counts.get(self._slice_owner(x) or x, 0) + 1
        offset = 0
        for x in op.operands:
            owner = self._slice_owner(x)
            if (
                owner is not None
                and rule_for(self.vals[owner].producer) is not Rule.INPLACE  # type: ignore[arg-type]
                and counts[owner] == 1
                and same_element_type(x, out)
                and self.vals[owner].region == self.vals[out].region
                and self._can_view(owner, out, offset)
            ):
                self._attach(owner, out, offset, Rule.CONCAT)
            offset += self.vals[x].size

    def _slice_owner(self, x: SSAValue, links: tuple[Rule, ...] = (Rule.VIEW,)) -> SSAValue | None:
        """The value whose producer can write `x`'s bytes into a concat slice, if any.

        `x` itself, or the root of a chain of whole-size `links` (reshapes, in-place
        ops) ending at `x`.
        """
        v = self.vals[x]
        while v.parent is not None:
            if v.rule not in links:
                return None
            v = self.vals[v.parent]
        ok = v.producer is not None and not is_constant(v.producer) and v.size == self.vals[x].size
        return v.value if ok and self.liveness(v.value) else None

    def late_concat(self, order: list[Operation]) -> None:
        """Concat slices through in-place chains, once in-place reuse is decided.

        Producers that are in-place candidates wait for this phase, so that a chain such
        as `exp` then in-place `relu` writes straight into the slice. Safe when every
        in-place write into the slice's bytes comes before the concat, and every one
        into the concat's bytes comes after the slice's values are last read.
        """
        step = {op: i for i, op in enumerate(order)}
        for op in order:
            if rule_for(op) is not Rule.CONCAT or len(op.results) != 1:
                continue
            out = op.results[0]
            shape = _shape(out)
            if not self.liveness(out) or shape is None or not contiguous_axis(op, shape):
                continue
            top = self.root(out)
            writes = [step[v.producer] for v in self._members(top) if v.rule in WRITES]  # type: ignore[index]
            links = (Rule.VIEW, *WRITES)
            owners = [self._slice_owner(x, links) for x in op.operands]
            offset = 0
            for x, owner in zip(op.operands, owners, strict=True):
                if (
                    owner is not None
                    and owners.count(owner) == 1
                    and owner is not top
                    and same_element_type(x, out)
                    and self.vals[owner].region == self.vals[out].region
                    and self._slice_safe(owner, step[op], writes, step)
                    and self._can_view(owner, out, offset)
                ):
                    self._attach(owner, out, offset, Rule.CONCAT)
                offset += self.vals[x].size

    def _slice_safe(
        self, owner: SSAValue, at: int, writes: list[int], step: dict[Operation, int]
    ) -> bool:
        """In-place writes into `owner` come before the concat at step `at`; those into the
        concat's bytes come after `owner`'s bytes are last read."""
        members = self._members(owner)
        if any(step[v.producer] >= at for v in members if v.rule in WRITES):  # type: ignore[index]
            return False
        return all(w > max(v.end for v in members) for w in writes)

    def _members(self, root: SSAValue) -> list[_Value]:
        return [
            v for v in self.vals.values() if self.liveness(v.value) and self.root(v.value) is root
        ]

    def prune_views(self, alignment: int, max_work: int = 5_000_000) -> None:
        """Undo concat slices and split views that raise their region's lower bound.

        A slice reserves the whole concat buffer from its producer on, and a split piece
        keeps its whole parent alive, which can cost more than a copy. Undoing a view is
        always safe. Each candidate is tried on its own, in order, while the work (buffers
        times candidates) stays under `max_work`.
        """
        regions = {v.region for v in self.vals.values() if self.liveness(v.value)}
        for region in sorted(regions):
            members = [v for v in self.vals.values() if v.region == region]
            candidates = [v for v in members if v.rule in (Rule.CONCAT, Rule.SPLIT)]
            if not candidates or len(candidates) * len(members) > max_work:
                continue
            bufs = self.buffers(region)  # kept equal to self.buffers(region) below
            index = {b.name: i for i, b in enumerate(bufs)}
            best = lower_bound(bufs, alignment)
            for v in candidates:
                saved, old = (v.parent, v.offset, v.rule), bufs[index[v.name]]
                v.parent, v.offset, v.rule = None, 0, None
                self._roots.clear()
                bufs[index[v.name]] = Buffer(old.name, old.size, old.start, old.end)
                bound = lower_bound(bufs, alignment)
                if bound < best:
                    best = bound
                    self.views[saved[2].value] -= 1  # type: ignore[union-attr]
                else:
                    v.parent, v.offset, v.rule = saved
                    bufs[index[v.name]] = old

    # ------------------------------------------------------------------ order

    def _pieces(self, v: SSAValue, memo: dict[SSAValue, tuple[str, ...]]) -> tuple[str, ...]:
        """Names of the byte pieces (one per writing producer) that `v`'s bytes cover."""
        if v in memo:
            return memo[v]
        val = self.vals[v]
        if not self.liveness(v):
            got: tuple[str, ...] = ()
        elif val.rule in VIEW_RULES:
            got = self._pieces(val.parent, memo)  # type: ignore[arg-type]
        else:
            got = (val.name,)
        memo[v] = got
        return got

    def choose_order(self, alignment: int) -> list[Operation]:
        memo: dict[SSAValue, tuple[str, ...]] = {}
        children: dict[SSAValue, list[SSAValue]] = {}
        for v, val in self.vals.items():
            if val.rule is Rule.CONCAT:
                children.setdefault(val.parent, []).append(v)  # type: ignore[arg-type]
        sizes: dict[str, int] = {}
        for v, val in self.vals.items():
            if self.liveness(v) and val.rule not in VIEW_RULES:
                sliced = sum(self.vals[c].size for c in children.get(v, ()))
                sizes[val.name] = val.size - sliced

        done: dict[SSAValue, set[str]] = {}

        def covered(v: SSAValue) -> set[str]:
            if v in done:
                return done[v]
            base = v
            while self.vals[base].rule in VIEW_RULES:
                base = self.vals[base].parent  # type: ignore[assignment]
            names = set(self._pieces(v, memo))
            for c in children.get(base, ()):
                names |= covered(c)
            done[v] = names  # read-only from here on
            return names

        nodes = []
        for i, op in enumerate(self.compute):
            # "=name" tokens (no bytes) keep every SSA dependency, views included.
            reads: set[str] = set()
            for x in op.operands:
                if x in self.vals:
                    reads.add("=" + self.vals[x].name)
                    if self.liveness(x):
                        reads |= covered(x)
            writes = ["=" + self.vals[r].name for r in op.results]
            writes += [
                self.vals[r].name
                for r in op.results
                if self.liveness(r) and self.vals[r].rule not in VIEW_RULES
            ]
            nodes.append(Node(str(i), tuple(sorted(reads)), tuple(writes)))
        order = schedule(nodes, sizes, alignment=alignment)
        ordered = [self.compute[i] for i in order]
        _check_dominance(ordered, self.constants)
        return ordered

    # ------------------------------------------------------------------ in place

    def live_ranges(self, order: list[Operation], double_buffer: bool = False) -> None:
        step = {op: i for i, op in enumerate(order)}
        for op in order:
            for r in op.results:
                self.vals[r].start = self.vals[r].end = step[op]
        for op in order:
            for x in op.operands:
                if x in self.vals and self.liveness(x):
                    self.vals[x].end = max(self.vals[x].end, step[op])
        last = max(len(order) - 1, 0)
        for v in self.returned:  # the caller reads the outputs after the last step
            if v in self.vals and self.liveness(v):
                self.vals[v].end = last
        if double_buffer:
            self._double_buffer(order, step)

    def _double_buffer(self, order: list[Operation], step: dict[Operation, int]) -> None:
        """A load's bytes are reserved from the compute op before it, so its DMA shares no
        byte with that op and runs while it does (the tiler's cost model assumes so)."""
        previous = None
        for op in order:
            if op.name == "tile.load" and previous is not None:
                for r in op.results:
                    if self.liveness(r):
                        self.vals[r].start = step[previous]
            elif not op.name.startswith("tile."):
                previous = op

    def in_place(self, order: list[Operation]) -> None:
        last: dict[SSAValue, int] = {}
        for v, val in self.vals.items():
            if self.liveness(v):
                r = self.root(v)
                last[r] = max(last.get(r, -1), val.end)
        for step, op in enumerate(order):
            rule = rule_for(op)
            if rule not in (Rule.INPLACE, Rule.INSERT) or len(op.results) != 1:
                continue
            out = op.results[0]
            o = self.vals[out]
            if o.parent is not None or not self.liveness(out):
                continue
            # An insert may only reuse its destination (operand 1).
            candidates = op.operands[1:2] if rule is Rule.INSERT else op.operands
            for x in dict.fromkeys(candidates):
                if self._reusable(x, out, op, step, last):
                    r = self.root(x)
                    last[r] = max(last[r], last.pop(out))
                    self._attach(out, x, 0, rule)
                    break

    def _reusable(
        self, x: SSAValue, out: SSAValue, op: Operation, step: int, last: dict[SSAValue, int]
    ) -> bool:
        xv, o = self.vals[x], self.vals[out]
        if not self.liveness(x) or xv.region != o.region or xv.size != o.size:
            return False
        if x in self.strided:  # its elements are spread over its root's bytes
            return False
        r = self.root(x)
        if last.get(r) != step:  # the cheap test first: most inputs live on
            return False
        if _shape(x) != _shape(out) or itemsize(x.type) != itemsize(out.type):
            return False
        others = [y for y in op.operands if y is not x and y in self.vals]
        return all(self.root(y) is not r for y in others)

    def strided_slices(self, order: list[Operation], alignment: int, extend: bool) -> None:
        """Non-contiguous `tile.slice`s read in place where that does not raise the peak.

        A slice across channels (a tile's stripe of an NCHW tensor) is not a contiguous
        byte range, so `static_views` leaves it a copy. The NPU reads it as a strided view
        of its source all the same; the copy's bytes are only needed when the source's
        bytes do not survive until the slice's last reader. So, once the order, the live
        ranges and in-place reuse are known, such a slice becomes a view of its source's
        root when nothing writes into that root before the slice's last reader (in place,
        an insert, a concat slice), and keeping the root that long (if it would end
        earlier) raises no step above the region's peak of live bytes: the copy's bytes
        are saved from the slice on, the root's are held until the last reader. (Tiles
        read stripes of resident tensors this way; a rolling buffer's tail, kept long after
        its buffer is dead, stays a copy, and so does a slice read through a transpose,
        reshape or slice, which the lowering may turn into a view read later still.) The
        view is recorded at the root's first byte (its elements are strided across the
        root); `in_place` never writes a result over it, and sees the root as read until
        the view's last reader.

        Runs twice: before `in_place` (`extend=False`) for the slices read while their root
        is read anyway, which takes no in-place reuse away; after it for those that would
        keep the root longer, once the writes into it are known.
        """
        step = {op: i for i, op in enumerate(order)}
        has_children = {v.parent for v in self.vals.values() if v.parent is not None}
        start: dict[SSAValue, int] = {}
        reserved: dict[SSAValue, int] = {}
        writes: dict[SSAValue, list[int]] = {}
        for v, val in self.vals.items():
            if not self.liveness(v):
                continue
            r = self.root(v)
            start[r] = min(start.get(r, val.start), val.start)
            reserved[r] = max(reserved.get(r, -1), val.end)
            if val.rule in (*WRITES, Rule.CONCAT) and val.producer in step:
                writes.setdefault(r, []).append(step[val.producer])
        profiles: dict[str, list[int]] = {}
        peaks: dict[str, int] = {}

        def profile(region: str) -> list[int]:
            if region not in profiles:
                delta = [0] * (len(order) + 1)
                for r, end in reserved.items():
                    if self.vals[r].region == region:
                        size = align_up(self.vals[r].size, alignment)
                        delta[start[r]] += size
                        delta[end + 1] -= size
                live, total = [], 0
                for d in delta[:-1]:
                    total += d
                    live.append(total)
                profiles[region], peaks[region] = live, max(live, default=0)
            return profiles[region]

        for op in order:
            if rule_for(op) is not Rule.SLICE or len(op.results) != 1 or not op.operands:
                continue
            src, r = op.operands[0], op.results[0]
            s = self.vals.get(r)
            if (
                s is None
                or s.parent is not None
                or r in has_children
                or src not in self.vals
                or not self.liveness(src)
                or not self.liveness(r)
                or self.vals[src].region != s.region
                or itemsize(src.type) != itemsize(r.type)
                or not self._can_view(r, src, 0)
                or any(use.operation.name in VIEWED_BY_LOWERING for use in r.uses)
                or not self._in_place_when_lowered(src)
            ):
                continue
            root = self.root(src)
            at, end, held = step[op], s.end, reserved[root]
            if end > held and not extend:
                continue
            if any(at < w <= end for w in writes.get(root, ())):
                continue  # the source's bytes change before the slice is last read
            live = profile(s.region)
            own = align_up(s.size, alignment)
            rise = align_up(self.vals[root].size, alignment) - own
            top = peaks[s.region]
            if any(live[t] + rise > top for t in range(held + 1, end + 1)):
                continue  # holding the whole source that long costs more than the copy
            for t in range(at, min(held, end) + 1):
                live[t] -= own
            for t in range(held + 1, end + 1):
                live[t] += rise
            reserved[root] = max(held, end)
            self._attach(r, src, 0, Rule.SLICE)
            self.strided.add(r)
            has_children.add(src)

    def tiles_in_place(self, order: list[Operation]) -> None:
        """Tiles written by their producer straight into their in-place insert's region.

        `%t = conv(...)` then `%r = tile.insert %t into %d` in place of `%d`: lower-to-npu
        points the conv's output at `%d`'s region, so `%t` needs no bytes of its own. It
        becomes a view of `%d` (at its region's offset when that is a contiguous, aligned
        byte range, else recorded at `%d`'s first byte like a strided slice) when `%d`'s
        bytes exist before the producer runs and, from the producer on until the insert,
        nothing reads them (the producer's own
        operands included; an in-place insert does not read its destination) and nothing
        writes them but inserts and tiles into other regions, so the early write is
        invisible. The producer must write `%t` itself: not a view op, a tile op or a
        constant. Without this every tile of a group counted as a buffer of its own next
        to the tensor it fills (MobileNetV2's b1/dw tiles: 37 KiB at the SRAM peak).
        """
        step = {op: i for i, op in enumerate(order)}
        reads: dict[SSAValue, list[int]] = {}  # root -> steps that read its bytes
        writes: dict[SSAValue, list[tuple[int, _Box | None]]] = {}  # root -> (step, region)
        in_place = {v.producer for v in self.vals.values() if v.rule is Rule.INSERT}
        for v, val in self.vals.items():
            if not self.liveness(v):
                continue
            r = self.root(v)
            reads.setdefault(r, []).extend(_read_steps(v, step, in_place))
            producer = val.producer
            if producer in step and producer.name != "tile.empty":
                box = _box(producer, r) if val.rule is Rule.INSERT else None
                writes.setdefault(r, []).append((step[producer], box))
        has_children = {v.parent for v in self.vals.values() if v.parent is not None}
        for op in order:
            if not isinstance(op, InsertOp) or op.result not in self.vals:
                continue
            out, t, dest = self.vals[op.result], op.source, op.dest
            if out.parent is not dest or out.rule is not Rule.INSERT or t not in self.vals:
                continue
            tv = self.vals[t]
            producer = tv.producer
            if (
                producer is None
                or producer not in step
                or not _writes_own_result(producer)
                or len(list(t.uses)) != 1
                or t in has_children
                or tv.region != out.region
                or not self._can_view(t, dest, 0)
            ):
                continue
            root, at, end = self.root(dest), step[producer], step[op]
            box = _box(op, root)
            if self.vals[root].start > at:  # the destination is made after the tile
                continue
            if any(at <= s < end for s in reads.get(root, ())):
                continue
            if any(at < w < end and _meet(box, b) for w, b in writes.get(root, ())):
                continue
            offset = self._region_bytes(op, dest)
            if offset is not None and self._can_view(t, dest, offset):
                self._attach(t, dest, offset, Rule.TILE)
            else:
                self._attach(t, dest, 0, Rule.TILE)
                self.strided.add(t)
            writes.setdefault(root, []).append((at, box))

    def _region_bytes(self, op: InsertOp, dest: SSAValue) -> int | None:
        """The byte offset of an insert's region in `dest` if the region is contiguous."""
        shape, part = _shape(dest), _shape(op.source)
        if shape is None or part is None:
            return None
        index = region_offset(shape, int_values(op.offsets), part)
        return None if index is None else index * itemsize(dest.type)

    def _in_place_when_lowered(self, v: SSAValue) -> bool:
        """Whether lower-to-npu keeps `v` at its planned bytes: its producer (through
        reshapes that are views here) writes them, rather than being bound as a view of
        another tensor (a transpose, a slice: a view that may be found broken and copied
        later, which a strided view inside it would not survive)."""
        while True:
            val = self.vals[v]
            if val.producer is None:
                return True
            name = val.producer.name
            if name.endswith(".reshape") and val.parent is not None:
                v = val.parent
                continue
            return name not in VIEWED_BY_LOWERING

    # ------------------------------------------------------------------ placement

    def buffers(self, region: str) -> list[Buffer]:
        out = []
        for v, val in self.vals.items():
            if val.region != region:
                continue
            parent = self.vals[val.parent].name if val.parent is not None else None
            start, end = (val.start, val.end) if self.liveness(v) else (0, 0)
            out.append(Buffer(val.name, val.size, start, end, None, parent, val.offset))
        return out

    def stack(self, region: str, order: list[SSAValue], bufs: list[Buffer]) -> Placement:
        """The region's `bufs`, all live for the whole call, one after another in `order`."""
        rank = {self.vals[v].name: i for i, v in enumerate(order)}
        res = resolve_aliases(bufs)
        offsets: dict[str, int] = {}
        top = 0
        for b in sorted(res.roots, key=lambda b: rank.get(b.name, len(rank))):
            offsets[b.name] = align_up(top, effective_alignment(b, self.alignment))
            top = offsets[b.name] + aligned_size(b, self.alignment)
        for view, (root, off) in res.views.items():
            offsets[view] = offsets[root] + off
        placement = Placement(offsets, align_up(top, self.alignment), method="stacked")
        _check(bufs, placement, self.alignment, region)
        return placement


def _read_steps(
    v: SSAValue, step: dict[Operation, int], in_place: set[Operation | None]
) -> list[int]:
    """The steps whose ops read `v`'s bytes, through the views lower-to-npu makes of it
    (an insert in `in_place` does not read its destination: it writes into it)."""
    found = []
    for use in v.uses:
        reader = use.operation
        if reader in in_place and use.index == 1:
            continue
        if reader in step:
            found.append(step[reader])
            if reader.name in VIEWED_BY_LOWERING:
                for r in reader.results:
                    found += _read_steps(r, step, in_place)
    return found


#: A region of a tensor: (offsets, sizes) per dimension.
_Box = tuple[tuple[int, ...], tuple[int, ...]]


def _box(op: Operation, root: SSAValue) -> _Box | None:
    """The region an in-place `tile.insert` writes, in `root`'s coordinates (None: unknown,
    when its destination is not `root`'s whole tensor)."""
    if not isinstance(op, InsertOp) or _shape(op.dest) != _shape(root):
        return None
    part = _shape(op.source)
    return None if part is None else (tuple(int_values(op.offsets)), part)


def _meet(a: _Box | None, b: _Box | None) -> bool:
    """Whether two regions may share an element (unknown regions may)."""
    if a is None or b is None:
        return True
    return all(o1 < o2 + n2 and o2 < o1 + n1 for o1, n1, o2, n2 in zip(*a, *b, strict=True))


def _writes_own_result(op: Operation) -> bool:
    """Whether lower-to-npu writes `op`'s result with an instruction of `op` (so it can write
    it anywhere): not a constant, a tile op, a view or an assembly of other results."""
    return (
        len(op.results) == 1
        and not is_constant(op)
        and not op.name.startswith("tile.")
        and op.name not in VIEWED_BY_LOWERING
        and rule_for(op) in (None, Rule.INPLACE)
    )


def _check_dominance(order: list[Operation], constants: list[Operation]) -> None:
    defined = {r for op in constants for r in op.results}
    for op in order:
        if any(isinstance(x.owner, Operation) and x not in defined for x in op.operands):
            raise UnsoundPlanError(
                f"plan-memory: the new order uses a value of '{op.name}' before it is defined"
            )
        defined.update(op.results)


def _check(bufs: list[Buffer], placement: Placement, alignment: int, region: str) -> None:
    try:
        verify_placement(bufs, placement, alignment)
    except PlacementError as e:
        raise UnsoundPlanError(f"plan-memory produced an unsound plan for @{region}: {e}") from e


def plan_function(
    func: FuncOp,
    target: Target,
    alignment: int,
    *,
    reorder: bool = True,
    budget_seconds: float | None = None,
    seed: int = 0,
    io_in_arena: bool = False,
    double_buffer: bool = False,
) -> FunctionPlan:
    """Plan every value of `func`; raises UnsoundPlanError if verification fails.

    With `io_in_arena`, inputs and outputs are planned in the activations region by
    liveness (inputs live from the first step, outputs to the last) instead of being
    stacked in the mutable region. With `double_buffer`, loads are double buffered
    (`_Planner._double_buffer`).
    """
    p = _Planner(func, target, alignment, io_in_arena)
    p.static_views()
    order = p.choose_order(alignment) if reorder else list(p.compute)
    changed = any(a is not b for a, b in zip(order, p.compute, strict=True))
    sequence = _with_constants(order, p.constants) if changed else None
    p.live_ranges(order, double_buffer)
    p.strided_slices(order, alignment, extend=False)
    p.in_place(order)
    p.late_concat(order)
    p.prune_views(alignment)
    p.tiles_in_place(order)
    p.strided_slices(order, alignment, extend=True)

    placements: dict[str, Placement] = {}
    regions: list[PlannedRegion] = []
    reports: list[MemoryReport] = []
    block_args = list(func.body.block.args)
    const_order = [
        r for op in (sequence or func.body.block.ops) if is_constant(op) for r in op.results
    ]
    memories = {
        CONSTANTS: target.placement.constants,
        MUTABLE: target.placement.io,
        ACTIVATIONS: target.placement.arena,
    }
    extra = sorted({v.region for v in p.vals.values()} - set(memories))
    memories.update({m: m for m in extra})
    problems = {region: p.buffers(region) for region in memories}
    for region, memory in memories.items():
        bufs = problems[region]
        if region in (CONSTANTS, MUTABLE):
            placement = p.stack(
                region,
                const_order
                if region == CONSTANTS
                else list(dict.fromkeys([*block_args, *p.returned])),
                bufs,
            )
            roots = resolve_aliases(bufs).roots
            lb = sum(aligned_size(b, alignment) for b in roots)
            report = MemoryReport(
                region,
                placement.total_size,
                lb,
                naive_size(bufs, alignment),
                len(roots),
                len(bufs) - len(roots),
                "stacked",
                0.0,
            )
        else:
            try:
                placement, report = plan_with_report(
                    bufs, alignment, region=region, budget_seconds=budget_seconds, seed=seed
                )
            except PlacementError as e:
                raise UnsoundPlanError(f"plan-memory: unsound plan for @{region}: {e}") from e
        placements[region] = placement
        reports.append(report)
        regions.append(
            PlannedRegion(region, memory, placement.total_size, report.lower_bound, report.naive)
        )

    buffers: dict[SSAValue, PlannedBuffer] = {}
    for region in memories:
        stacked = region in (CONSTANTS, MUTABLE)
        root_of = {} if stacked else {b.name: b for b in resolve_aliases(problems[region]).roots}
        for v, val in p.vals.items():
            if val.region != region:
                continue
            live = None
            if not stacked:
                root = root_of.get(val.name)
                live = (root.start, root.end) if root is not None else (val.start, val.end)
            offset = placements[region].offsets[val.name]
            buffers[v] = PlannedBuffer(region, offset, val.size, live)
    return FunctionPlan(sequence, buffers, regions, reports, p.views, problems)


def _with_constants(order: list[Operation], constants: list[Operation]) -> list[Operation]:
    """`order` with each constant just before its first user (unused ones last)."""
    pending = set(constants)
    sequence: list[Operation] = []
    for op in order:
        for x in op.operands:
            owner = x.owner
            if isinstance(owner, Operation) and owner in pending:
                pending.discard(owner)
                sequence.append(owner)
        sequence.append(op)
    sequence.extend(c for c in constants if c in pending)
    return sequence
