"""The executor's fast schedule: runs of conv2d tiles planned as one, and DMAs nothing reads.

A program tiled for a target computes a layer as several conv2d instructions, each on a
slice of its output (a block of channels, or of rows), with the weight DMAs of the next
tile between them. Run one by one they are exact but pay numpy's per-call costs once a
tile. `Executor.run` without an observer instead runs such a run of tiles as a single
convolution over the union of their slices, at the place of the last tile, and skips the
DMAs whose bytes no executed step reads (weights that the planned convolutions take from
the constants). Outputs are the same bytes; only the scratch contents of the arenas
(those skipped weight buffers) differ, which is why an observer, which may look at any
instruction's writes, gets the instructions one by one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from npuc.dialects import npu_isa as isa

#: The operand roles whose bytes a prepared step never reads, by instruction index: the
#: weights and tables it planned from their constant copies.
Frozen = Mapping[int, Collection[str]]

#: Whether two planned conv2d instructions (by index) have the same weights and table.
SameConstants = Callable[[int, int], bool]

CHANNELS, ROWS = 1, 2  # the NCHW axis along which a run's tiles join


@dataclass(frozen=True)
class TileRun:
    """conv2d tiles (instruction indices, in program order) whose slices join along `axis`
    into the views `ifm` and `ofm` of one convolution, depthwise (a group per channel) or
    not (a single group)."""

    members: tuple[int, ...]
    axis: int
    ifm: isa.TensorRef
    ofm: isa.TensorRef
    depthwise: bool = False


def _adjacent(a: isa.TensorRef, b: isa.TensorRef, axis: int) -> isa.TensorRef | None:
    """The view of a followed by b along `axis`, when b starts where a ends on it."""
    if not (
        len(a.shape) == len(b.shape) == 4
        and a.region == b.region
        and a.dtype == b.dtype
        and a.strides == b.strides
    ):
        return None
    if any(x != y for i, (x, y) in enumerate(zip(a.shape, b.shape, strict=True)) if i != axis):
        return None
    if b.offset != a.offset + a.shape[axis] * a.strides[axis] * a.itemsize:
        return None
    shape = list(a.shape)
    shape[axis] += b.shape[axis]
    return replace(a, shape=tuple(shape))


def depthwise(inst: isa.Instruction) -> bool:
    ifm, w, _, ofm = inst.operands
    channels = ifm.shape[1]
    return w.shape[1] == 1 and inst.params["groups"] == channels == ofm.shape[1] == w.shape[0]


def _pointwise(inst: isa.Instruction) -> bool:
    p = inst.params
    return (
        inst.operands[1].shape[2:] == (1, 1)
        and p["strides"] == (1, 1)
        and not any(p["pads"])
        and p["groups"] == 1
    )


def _joined(
    run: TileRun,
    index: int,
    inst: isa.Instruction,
    program: isa.Program,
    same_constants: SameConstants,
) -> TileRun | None:
    """`run` extended by the tile `inst` at `index`, if it continues it."""
    first = program.instructions[run.members[0]]
    ignore = {"groups"}
    if (
        inst.op != "conv2d"
        or inst.layer != first.layer
        or {k: v for k, v in inst.params.items() if k not in ignore}
        != {k: v for k, v in first.params.items() if k not in ignore}
    ):
        return None
    ifm, w, table, ofm = inst.operands
    _, first_w, first_table, _ = first.operands
    if (w.shape[1:], w.dtype, table.dtype) != (first_w.shape[1:], first_w.dtype, first_table.dtype):
        return None
    candidates = []  # (axis, the joined ifm, depthwise)
    if depthwise(first) and depthwise(inst):
        candidates.append((CHANNELS, _adjacent(run.ifm, ifm, CHANNELS), True))
    if first.params["groups"] == inst.params["groups"] == 1 and ifm == run.ifm:
        candidates.append((CHANNELS, run.ifm, False))
    if _pointwise(first) and _pointwise(inst) and same_constants(run.members[0], index):
        candidates.append((ROWS, _adjacent(run.ifm, ifm, ROWS), False))
    for axis, joined_ifm, dw in candidates:
        if joined_ifm is None or (len(run.members) > 1 and (axis, dw) != (run.axis, run.depthwise)):
            continue
        joined_ofm = _adjacent(run.ofm, ofm, axis)
        if joined_ofm is not None and joined_ofm.apart_from(joined_ifm):
            return TileRun((*run.members, index), axis, joined_ifm, joined_ofm, dw)
    return None


def _independent(inst: isa.Instruction, run: TileRun) -> bool:
    """Whether `inst` may run before or after the run's tiles: it writes none of their
    bytes and reads none they write."""
    touched = (run.ifm, run.ofm)
    return all(w.apart_from(t) for w in inst.written() for t in touched) and all(
        r.apart_from(run.ofm) for r in inst.read()
    )


def tile_runs(program: isa.Program, frozen: Frozen, same_constants: SameConstants) -> list[TileRun]:
    """The runs of two or more conv2d tiles, each planned from constant weights and table,
    that compute adjacent slices of one convolution: depthwise tiles of adjacent channels,
    tiles of adjacent output channels of one input, or pointwise tiles of adjacent rows
    with the same weights (`same_constants(i, j)`). The instructions between a run's tiles
    must be independent of it (`_independent`), so that it can run at its last tile."""
    runs: list[TileRun] = []
    instructions = program.instructions
    current: TileRun | None = None
    between: list[int] = []

    def planned(index: int) -> bool:
        inst = instructions[index]
        return inst.op == "conv2d" and {"weights", "bias_scale"} <= set(frozen.get(index, ()))

    def close() -> None:
        if current is not None and len(current.members) > 1:
            runs.append(current)

    for index, inst in enumerate(instructions):
        if current is not None and planned(index):
            joined = _joined(current, index, inst, program, same_constants)
            if joined is not None and all(_independent(instructions[j], joined) for j in between):
                current, between = joined, []
                continue
        if current is not None and inst.op == "dma" and _independent(inst, current):
            between.append(index)
            continue
        close()
        current, between = None, []
        if planned(index):
            _, _, _, ofm = inst.operands
            current = TileRun((index,), CHANNELS, inst.operands[0], ofm)
    close()
    return runs


def dead_dmas(program: isa.Program, frozen: Frozen) -> set[int]:
    """The DMAs none of whose destination bytes a later instruction reads before other
    writes replace them, or a program output holds at the end; reads of frozen roles do
    not count. Bytes are followed as ranges: a later contiguous write removes its range,
    a strided one nothing, and a read counts where its [offset, end) meets a range left.
    (A tile run reads what its tiles read: the DMAs it moves past do not write those
    bytes.)"""
    instructions = program.instructions
    outputs = [d.tensor for d in program.outputs]
    dead: set[int] = set()
    for index, inst in enumerate(instructions):
        if inst.op != "dma":
            continue
        dst = inst.operands[1]
        if _unread_after(dst, instructions, index + 1, frozen, outputs):
            dead.add(index)
    return dead


def _unread_after(
    dst: isa.TensorRef,
    instructions: Sequence[isa.Instruction],
    start: int,
    frozen: Frozen,
    outputs: Sequence[isa.TensorRef],
) -> bool:
    """Whether no byte of dst is read from `start` on before a write replaces it, nor
    held by an output at the end."""
    left = [(dst.offset, dst.end)]
    for j in range(start, len(instructions)):
        later, skipped = instructions[j], frozen.get(j, ())
        written = later.written_roles()
        reads = [later.operand(r) for r in later.roles() if r not in written and r not in skipped]
        if any(_meets(t, dst.region, left) for t in reads):
            return False
        for t in later.written():
            if t.region == dst.region and t.is_contiguous():
                left = _without(left, t.offset, t.end)
        if not left:
            return True
    return not any(_meets(o, dst.region, left) for o in outputs)


def _meets(t: isa.TensorRef, region: str, ranges: list[tuple[int, int]]) -> bool:
    return t.region == region and any(t.offset < end and start < t.end for start, end in ranges)


def _without(ranges: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """The byte ranges less [start, end)."""
    kept: list[tuple[int, int]] = []
    for a, b in ranges:
        if b <= start or end <= a:
            kept.append((a, b))
            continue
        if a < start:
            kept.append((a, start))
        if end < b:
            kept.append((end, b))
    return kept
