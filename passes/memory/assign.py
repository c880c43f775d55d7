"""From a function's IR to planned buffers: regions, aliasing, op order, offsets.

`plan_function` is the work of the `plan-memory` pass minus the IR rewrite: it
assigns every value a region, applies the aliasing rules of `memory_rules`, picks a
memory-aware op order, decides in-place reuse in that order, places each region and
verifies the result. See docs/memory-planning.md ("The plan-memory pass").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import DenseArrayBase, StringAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from npuc import graph_io
from npuc.diagnostics import NpucError
from npuc.dialects.arrays import int_values
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
from .reuse import WRITES, ValueAliases, ValueState, shape_of
from .rules import (
    VIEW_RULES,
    Rule,
    contiguous_axis,
    region_offset,
    rule_for,
    same_element_type,
)
from .schedule import Node, schedule

#: Property (or attribute) naming the memory an op's result lives in, when not the arena.
MEMORY_ATTR = "to"


class UnsoundPlanError(RuntimeError):
    """The planner produced overlapping or misplaced buffers: a compiler bug."""


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


class _Planner(ValueAliases):
    """Regions, views and the op order of one function, then its placements."""

    def __init__(self, func: FuncOp, target: Target, alignment: int, io_in_arena: bool = False):
        super().__init__(alignment)
        self.func, self.target = func, target
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
        self.vals[v] = ValueState(
            v, f"v{len(self.vals)}", byte_size(v.type), region, explicit, producer
        )

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
                src, shape = op.operands[0], shape_of(op.operands[0])
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
        shape, part = shape_of(src), shape_of(r)
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
        shape = shape_of(out)
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
        members = self._members_by_root()  # kept up to date as slices attach below
        for op in order:
            if rule_for(op) is not Rule.CONCAT or len(op.results) != 1:
                continue
            out = op.results[0]
            shape = shape_of(out)
            if not self.liveness(out) or shape is None or not contiguous_axis(op, shape):
                continue
            top = self.root(out)
            writes = [step[v.producer] for v in members.get(top, ()) if v.rule in WRITES]  # type: ignore[index]
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
                    and self._slice_safe(members.get(owner, []), step[op], writes, step)
                    and self._can_view(owner, out, offset)
                ):
                    self._attach(owner, out, offset, Rule.CONCAT)
                    # the slice's bytes (owner and its views) are the concat's now
                    members.setdefault(top, []).extend(members.pop(owner, ()))
                offset += self.vals[x].size

    def _slice_safe(
        self, members: list[ValueState], at: int, writes: list[int], step: dict[Operation, int]
    ) -> bool:
        """In-place writes into a slice's bytes (`members`: the values sharing them) come
        before the concat at step `at`; those into the concat's bytes come after the slice's
        are last read."""
        if any(step[v.producer] >= at for v in members if v.rule in WRITES):  # type: ignore[index]
            return False
        return all(w > max(v.end for v in members) for w in writes)

    def _members_by_root(self) -> dict[SSAValue, list[ValueState]]:
        """The live values sharing each root's bytes (the root included), by root."""
        members: dict[SSAValue, list[ValueState]] = {}
        for v in self.vals.values():
            if self.liveness(v.value):
                members.setdefault(self.root(v.value), []).append(v)
        return members

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
