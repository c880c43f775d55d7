"""Values, their aliases, and the decisions that let a value reuse another's bytes.

`ValueAliases` holds what the planner knows of each value (region, size, the value it is
a view of, its live range) with the aliasing primitives, and, once the op order and the
live ranges are known, decides where a value can take another's bytes: results written
in place of an operand (`in_place`), channel slices read as strided views of their source
(`strided_slices`) and tiles written straight into their insert's region
(`tiles_in_place`). `assign._Planner` builds on it. See docs/memory-planning.md ("The
plan-memory pass").
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from npuc.dialects.arrays import int_values
from npuc.dialects.tile import InsertOp

from .ir import CONSTANTS, MUTABLE, is_constant, itemsize
from .plan import align_up
from .rules import Rule, region_offset, rule_for

#: Aliasing rules whose result overwrites (part of) its root's bytes.
WRITES = (Rule.INPLACE, Rule.INSERT, Rule.TILE)

#: Ops that lower-to-npu turns into a view of their operand where it can (a movement op
#: without an instruction): through one, a strided slice's bytes would be read after its
#: last reader here, and a view the lowering then finds broken is copied to its planned
#: place (for a strided slice: inside its source).
VIEWED_BY_LOWERING = frozenset(
    f"{d}.{n}" for d in ("nn", "qnn") for n in ("reshape", "transpose", "slice", "split")
) | {"tile.slice"}


@dataclass
class ValueState:
    """What the planner knows of one value: its bytes, region, the value it is a view of
    (at `offset`, by `rule`) and its live range in op steps."""

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


def shape_of(v: SSAValue) -> tuple[int, ...] | None:
    return tuple(v.type.get_shape()) if isinstance(v.type, TensorType) else None


class ValueAliases:
    """Every value's `ValueState` and the aliasing decisions taken on them."""

    def __init__(self, alignment: int) -> None:
        self.alignment = alignment
        self.vals: dict[SSAValue, ValueState] = {}
        self.views: dict[str, int] = {}  # aliasing decisions per rule
        self.strided: set[SSAValue] = set()  # slices read in place across their source
        self._roots: dict[SSAValue, SSAValue] = {}

    # ------------------------------------------------------------------ aliasing

    def root(self, v: SSAValue) -> SSAValue:
        # Views only attach to roots, so a remembered root is still on the chain: the walk
        # jumps to it, and every value walked through remembers the root found (tiles
        # assembled in place make chains of hundreds of views: palm_detection in size
        # mode took 16 million steps for 159,000 calls, walking parent by parent).
        roots = self._roots
        walked = [v]
        r = roots.get(v, v)
        while (p := self.vals[r].parent) is not None:
            walked.append(r)
            r = roots.get(p, p)
        for w in walked:
            roots[w] = r
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

    # ------------------------------------------------------------------ reuse

    def in_place(self, order: list[Operation]) -> None:
        """Results of in-place ops (and inserts, into their destination) take the bytes of
        an operand whose root is last read by that op, in `order`."""
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
        if shape_of(x) != shape_of(out) or itemsize(x.type) != itemsize(out.type):
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
        shape, part = shape_of(dest), shape_of(op.source)
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
    if not isinstance(op, InsertOp) or shape_of(op.dest) != shape_of(root):
        return None
    part = shape_of(op.source)
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
