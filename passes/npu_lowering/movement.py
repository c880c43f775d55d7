"""Lowering rules of data movement: `tile` ops, reshapes, slices, transposes, concat, split.

A result that is a view of its operand (a slice, reshape, transpose, split piece)
costs no instruction: consumers read the strided view. Where the plan made a copy,
the view is only valid while nobody writes the operand's bytes; the builder records
it as `Virtual`, and a view found broken is lowered again as a copy (`npu.move`).
`tile.load`/`tile.store` are DMAs between memories.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, StringAttr
from xdsl.ir import Operation, SSAValue

from npuc.diagnostics import InternalError
from npuc.dialects import qnn, tile
from npuc.dialects.arrays import int_values
from npuc.dialects.npu_isa import TensorRef

from .builder import Builder, LoweringError, Rule, Virtual
from .views import permuted, reshaped, same_place, shape_of, sliced


def _int_prop(op: Operation, name: str) -> int:
    attr = op.properties[name]
    assert isinstance(attr, IntegerAttr)
    return attr.value.data


def bind_view(
    b: Builder, op: Operation, result: SSAValue, source: SSAValue, view: TensorRef | None
) -> None:
    """`result` is `view` of `source`: free if the plan put it there or nobody disturbs it."""
    planned = b.planned(result)
    if view is not None and same_place(view, planned):
        b.bind(result, planned, source)
    elif view is not None and (view.region == "constants" or op not in b.copies):
        b.bind(result, view, source)
        if view.region != "constants":
            start = len(b.instructions)
            b.mark_virtual(result, Virtual(op, view, start))
    else:  # a move (it reshapes row-major when the view has no strided form)
        b.emit("move", (b.ref(source) if view is None else view, planned), (source,))
        b.bind(result, planned)


def tile_slice(b: Builder, op: tile.SliceOp) -> None:
    view = sliced(b.ref(op.source), int_values(op.offsets), shape_of(op.result.type))
    bind_view(b, op, op.result, op.source, view)


def reshape(b: Builder, op: Operation) -> None:
    result = op.results[0]
    bind_view(b, op, result, op.operands[0], reshaped(b.ref(op.operands[0]), shape_of(result.type)))


def transpose(b: Builder, op: qnn.TransposeOp) -> None:
    perm = int_values(op.perm)
    if op in b.copies:
        b.emit("move", (b.ref(op.operands[0]), b.out(op.results[0])), (op.operands[0],), perm=perm)
        return
    bind_view(b, op, op.results[0], op.operands[0], permuted(b.ref(op.operands[0]), perm))


def slice_(b: Builder, op: qnn.SliceOp) -> None:
    starts, steps = int_values(op.starts), int_values(op.steps)
    if any(s < 1 for s in steps):
        raise LoweringError("slices with negative steps have no NPU instruction")
    source = b.ref(op.operands[0])
    starts = tuple(s % d if s < 0 else s for s, d in zip(starts, source.shape, strict=True))
    view = sliced(source, starts, shape_of(op.results[0].type), steps)
    bind_view(b, op, op.results[0], op.operands[0], view)


def split(b: Builder, op: Operation) -> None:
    source = b.ref(op.operands[0])
    axis = _int_prop(op, "axis") % len(source.shape)
    start = 0
    for result in op.results:
        shape = shape_of(result.type)
        offsets = [0] * len(shape)
        offsets[axis] = start
        start += shape[axis]
        bind_view(b, op, result, op.operands[0], sliced(source, offsets, shape))


def concat(b: Builder, op: Operation) -> None:
    out = b.out(op.results[0])
    axis = _int_prop(op, "axis") % len(out.shape)
    start = 0
    for value in op.operands:
        ref = b.ref(value)
        offsets = [0] * len(out.shape)
        offsets[axis] = start
        start += ref.shape[axis]
        target = sliced(out, offsets, ref.shape)
        if not same_place(ref, target):
            b.emit("move", (ref, target), (value,))


def empty(b: Builder, op: tile.EmptyOp) -> None:
    b.bind(op.result, b.planned(op.result))


def load(b: Builder, op: tile.LoadOp) -> None:
    src = sliced(b.ref(op.source), int_values(op.offsets), shape_of(op.result.type))
    b.emit("dma", (src, b.out(op.result)), (op.source,))


def assemble(b: Builder, op: tile.InsertOp) -> None:
    dma = isinstance(op, tile.StoreOp)
    out = b.out(op.result)
    dest = b.ref(op.dest)
    if not same_place(dest, out) and not isinstance(op.dest.owner, tile.EmptyOp):
        b.copy(dest, out, (op.dest,), dma)
    target = sliced(out, int_values(op.offsets), shape_of(op.source.type))
    for v in b.pending.pop(op.source, ()):
        b.ends[v] = len(b.instructions)
    if not same_place(b.ref(op.source), target):
        if b.planned_inside(op.source, op.dest):
            raise InternalError(
                "lower-to-npu: a tile the plan placed inside its destination was written "
                "elsewhere by its producer"
            )
        b.copy(b.ref(op.source), target, (op.source,), dma)


def depth_to_space(b: Builder, op: Operation) -> None:
    """One move: the input read as [n, c, h, i, w, j] (i, j within a block) in output order."""
    ifm, ofm = b.ref(op.operands[0]), b.out(op.results[0])
    block = _int_prop(op, "block_size")
    (n, c, h, w), (sn, sc, sh, sw) = ifm.shape, ifm.strides
    oc = c // (block * block)
    mode = op.properties.get("mode", StringAttr("DCR"))
    assert isinstance(mode, StringAttr)
    # DCR: channel (i * block + j) * oc + c; CRD: channel c * block^2 + i * block + j
    sc_, si, sj = (
        (sc, block * oc * sc, oc * sc)
        if mode.data == "DCR"
        else (block * block * sc, block * sc, sc)
    )
    src = TensorRef(
        ifm.region, ifm.offset, (n, oc, h, block, w, block), (sn, sc_, sh, si, sw, sj), ifm.dtype
    )
    b.emit("move", (src, _blocked(ofm, block)), (op.operands[0],))


def space_to_depth(b: Builder, op: Operation) -> None:
    """One move: the input's blocks [n, i, j, c, h, w] to output channel (i * block + j) * c + c."""
    ifm, ofm = b.ref(op.operands[0]), b.out(op.results[0])
    block = _int_prop(op, "block_size")
    (n, c, h, w), (sn, sc, sh, sw) = ifm.shape, ifm.strides
    src = TensorRef(
        ifm.region,
        ifm.offset,
        (n, block, block, c, h // block, w // block),
        (sn, sh, sw, sc, block * sh, block * sw),
        ifm.dtype,
    )
    (on, _, oh, ow), (son, soc, soh, sow) = ofm.shape, ofm.strides
    dst = TensorRef(
        ofm.region,
        ofm.offset,
        (on, block, block, c, oh, ow),
        (son, block * c * soc, c * soc, soc, soh, sow),
        ofm.dtype,
    )
    b.emit("move", (src, dst), (op.operands[0],))


def _blocked(ref: TensorRef, block: int) -> TensorRef:
    """A [n, c, H, W] view as [n, c, H / block, block, W / block, block]."""
    (n, c, h, w), (sn, sc, sh, sw) = ref.shape, ref.strides
    return TensorRef(
        ref.region,
        ref.offset,
        (n, c, h // block, block, w // block, block),
        (sn, sc, block * sh, sh, block * sw, sw),
        ref.dtype,
    )


RULES: dict[str, Rule] = {
    "tile.slice": tile_slice,
    "qnn.reshape": reshape,
    "nn.reshape": reshape,
    "qnn.transpose": transpose,
    "qnn.slice": slice_,
    "qnn.split": split,
    "nn.split": split,
    "qnn.concat": concat,
    "nn.concat": concat,
    "tile.empty": empty,
    "tile.load": load,
    "tile.insert": assemble,
    "tile.store": assemble,
    "qnn.depth_to_space": depth_to_space,
    "qnn.space_to_depth": space_to_depth,
}
