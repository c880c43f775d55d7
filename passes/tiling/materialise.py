"""Rewrite planned groups into unrolled tiles: ordinary `nn`/`qnn` ops on tile-sized
tensors joined by `tile` ops.

For each tile of a group (output-channel part outermost, then H stripes, then W
parts), every layer of the group runs on the region it needs: the previous layer's
tile in a cascade, a `tile.slice` view of a tensor in the arena, or a `tile.load`
from another memory (function inputs where I/O is not in the arena). Weights are
sliced or loaded once per group and channel part. Window layers get the tile's own
padding; per-channel multipliers, shifts, biases and per-axis quantized types follow
the output channels. The last layer's tiles are assembled with `tile.empty` and
`tile.insert` (or `tile.store` into another memory). Every op made for layer k
carries `tile.layer = k`, and `tile.part = [h, w, c]` when the group has several tiles.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from npuc.dialects import tile
from npuc.dialects.arrays import int_values, ints
from npuc.dialects.quant_types import UniformQuantizedType

from .layers import Kind, Layer, shape
from .rolling import Roll, rolling_spans
from .search import Group
from .working_set import (
    Channels,
    Memories,
    Region,
    Span,
    box,
    cascade_spans,
    channel_parts,
    output_region,
    run_readers,
    transposed_region,
)

#: A tile's [h, w, c] part index, or None when its group is one tile.
Part = tuple[int, int, int] | None

# Attributes are immutable, so ops share them; cleared after each `materialise` call.
_ARRAYS: dict[tuple[int, ...], DenseArrayBase[IntegerType]] = {}
_LAYERS: dict[int, IntegerAttr] = {}
_TYPES: dict[tuple[int, tuple[int, ...], tuple[int, ...]], tuple[TensorType, TensorType]] = {}


def _ints(values: Sequence[int]) -> DenseArrayBase[IntegerType]:
    key = tuple(values)
    found = _ARRAYS.get(key)
    if found is None:
        found = _ARRAYS[key] = ints(key)
    return found


def _region_type(ty: TensorType, offsets: Sequence[int], sizes: Sequence[int]) -> TensorType:
    """`tile.region_type`, cached by the identity of `ty` (hashing a per-axis quantized type
    is slow); only a per-axis quantized type depends on the offsets."""
    element = ty.element_type
    per_axis = isinstance(element, UniformQuantizedType) and element.per_axis
    key = (id(ty), tuple(offsets) if per_axis else (), tuple(sizes))
    found = _TYPES.get(key)
    if found is None:
        result = tile.region_type(ty, offsets, sizes) if per_axis else TensorType(element, sizes)
        found = _TYPES[key] = (ty, result)  # holding `ty` keeps its id unique
    return found[1]


class Materialiser:
    """Emits the tiles of one group before the group's last op, then removes its ops."""

    def __init__(self, layers: Sequence[Layer], group: Group, memories: Memories):
        self.seg = list(layers[group.first : group.last + 1])
        self.group = group
        self.memories = memories
        self.anchor = self.seg[-1].op
        self.constants: dict[tuple[SSAValue, Region], SSAValue] = {}
        self.props: dict[tuple[int, tuple[int, int]], dict[str, Attribute]] = {}
        # operand index -> position in the run of the layer feeding it, per layer
        self.feeds: list[dict[int, int]] = [{} for _ in self.seg]
        for k, readers in enumerate(run_readers(self.seg)):
            for j, index in readers:
                self.feeds[j][index] = k

    def needed(self) -> bool:
        """Whether the group changes the IR (more than one tile, a DMA or a folded transpose)."""
        if self.group.estimate.tiles > 1 or len(self.seg) > 1:
            return True
        layer = self.seg[0]
        if layer.kind is Kind.WHOLE and len(layer.op.results) != 1:
            return False
        m = self.memories
        values = [layer.source(i) for i in range(len(layer.op.operands))] + [layer.result]
        return bool(layer.transposes) or any(m.of(v) != m.arena for v in values)

    def emit(self, op: Operation) -> Operation:
        Rewriter.insert_op(op, InsertPoint.before(self.anchor))
        return op

    def tag(self, op: Operation, layer: Layer, part: Part) -> Operation:
        number = _LAYERS.get(layer.index)
        if number is None:
            number = _LAYERS[layer.index] = IntegerAttr(layer.index, i64)
        op.attributes[tile.LAYER_ATTR] = number
        if part is not None:
            op.attributes[tile.PART_ATTR] = _ints(part)
        return op

    def region(self, value: SSAValue, region: Region, layer: Layer, part: Part) -> SSAValue:
        """`value` itself, a view of its region, or a load of it into the arena."""
        ty = value.type
        assert isinstance(ty, TensorType)
        full = tuple(ty.get_shape())
        offsets = [lo for lo, _ in region]
        sizes = [hi - lo for lo, hi in region]
        memory = self.memories.of(value)
        if memory == self.memories.arena and tuple(sizes) == full:
            return value
        result_type = _region_type(ty, offsets, sizes)
        props: dict[str, Attribute] = {"offsets": _ints(offsets)}
        if memory == self.memories.arena:
            op: Operation = tile.SliceOp.create(
                operands=[value], result_types=[result_type], properties=props
            )
        else:
            props |= {"from": StringAttr(memory), "to": StringAttr(self.memories.arena)}
            op = tile.LoadOp.create(operands=[value], result_types=[result_type], properties=props)
        return self.emit(self.tag(op, layer, part)).results[0]

    def constant(self, value: SSAValue, region: Region, layer: Layer) -> SSAValue:
        """A weight region, sliced or loaded once per group and channel part (so no part)."""
        key = (value, region)
        if key not in self.constants:
            self.constants[key] = self.region(value, region, layer, None)
        return self.constants[key]

    def destination(self) -> SSAValue | None:
        """The buffer the last layer's tiles are assembled into (None: a single tile in the
        arena, which is the result itself)."""
        (h, w, c), last = self.group.estimate.parts, self.seg[-1]
        out_memory = self.memories.of(last.result)
        if h * w * c == 1 and out_memory == self.memories.arena:
            return None
        props: dict[str, Attribute] = {}
        if out_memory != self.memories.arena:
            props["to"] = StringAttr(out_memory)
        empty = tile.EmptyOp.create(result_types=[last.result.type], properties=props)
        return self.emit(self.tag(empty, last, None)).results[0]

    def finish(self, final: SSAValue) -> None:
        self.seg[-1].result.replace_all_uses_with(final)
        for layer in reversed(self.seg):
            Rewriter.erase_op(layer.op)
            for transpose in layer.transposes.values():
                Rewriter.erase_op(transpose)

    def run(self) -> None:
        if self.group.estimate.rolling:
            return self.run_rolling()
        seg, (h, w, c) = self.seg, self.group.estimate.parts
        last = seg[-1]
        many = h * w * c > 1
        out_memory = self.memories.of(last.result)
        dest = self.destination()
        hs = cascade_spans(seg, 0, h) if last.spatial else None
        ws = cascade_spans(seg, 1, w) if last.spatial else None
        final: SSAValue | None = None
        for p in range(c):
            for i in range(h):
                for j in range(w):
                    part = (i, j, p) if many else None
                    value: SSAValue | None = None
                    out: Region = ()
                    tiles: dict[int, tuple[SSAValue, Region | None]] = {}
                    for k, layer in enumerate(seg):
                        hspan = hs[k][i] if hs is not None else None
                        wspan = ws[k][j] if ws is not None else None
                        channels = channel_parts(layer, c)[p if layer.channel_units > 1 else 0]
                        out = output_region(layer, hspan, wspan, channels)
                        value = self.layer_tile(k, hspan, wspan, channels, tiles, part)
                        tiles[k] = (value, out)
                    assert value is not None
                    if dest is None:
                        final = value
                        continue
                    final = dest = self.assemble(value, dest, out, last, part, out_memory)
        assert final is not None
        self.finish(final)

    def run_rolling(self) -> None:
        """H stripes through rolling buffers (rolling.py): layer k computes only its new
        rows; its buffer for layer k + 1 is the previous buffer's tail and those rows. Each
        column part keeps its own buffers (W halos are recomputed)."""
        seg, (h, w, _) = self.seg, self.group.estimate.parts
        last = seg[-1]
        out_memory = self.memories.of(last.result)
        rolls = rolling_spans(seg, 0, h)
        ws = cascade_spans(seg, 1, w)
        channels = [channel_parts(layer, 1)[0] for layer in seg]
        dest = self.destination()
        assert dest is not None
        held: list[list[SSAValue | None]] = [[None] * w for _ in seg]  # kept tails
        for i in range(h):
            for j in range(w):
                part = (i, j, 0)
                buffer: SSAValue | None = None  # layer k - 1's buffer for this tile
                for k, layer in enumerate(seg):
                    roll, wspan = rolls[k][i], ws[k][j]
                    new = None
                    if roll.span is not None:
                        fed: dict[int, tuple[SSAValue, Region | None]] = {}
                        if buffer is not None:
                            fed[k - 1] = (buffer, None)
                        new = self.layer_tile(k, roll.span, wspan, channels[k], fed, part)
                        keep = rolls[k - 1][i] if k else None
                        if buffer is not None and keep is not None and keep.keep is not None:
                            held[k - 1][j] = self.tail(buffer, keep, seg[k - 1], part)
                    if k == len(seg) - 1:
                        assert new is not None and roll.span is not None
                        out = output_region(layer, roll.span, wspan, channels[k])
                        dest = self.assemble(new, dest, out, last, part, out_memory)
                    elif roll.need is not None:
                        buffer = self.rolled(layer, roll, wspan, held[k][j], new, part)
        self.finish(dest)

    def rolled(
        self,
        layer: Layer,
        roll: Roll,
        wspan: Span,
        tail: SSAValue | None,
        new: SSAValue | None,
        part: Part,
    ) -> SSAValue:
        """Layer `layer`'s buffer of rows `roll.need`: the kept tail, then the new rows."""
        assert roll.need is not None
        lo, hi = roll.need
        start = roll.span.out[0] if roll.span is not None else hi
        if start == lo:
            assert new is not None
            return new
        assert tail is not None
        if new is None:
            return tail
        n, c = layer.out_shape[:2]
        ty = layer.result.type
        assert isinstance(ty, TensorType)
        w0, w1 = wspan.out
        buffer_type = _region_type(ty, [0, 0, lo, w0], [n, c, hi - lo, w1 - w0])
        empty = tile.EmptyOp.create(result_types=[buffer_type])
        value = self.emit(self.tag(empty, layer, part)).results[0]
        for piece, row in ((tail, 0), (new, start - lo)):
            op = tile.InsertOp.create(
                operands=[piece, value],
                result_types=[buffer_type],
                properties={"offsets": _ints([0, 0, row, 0])},
            )
            value = self.emit(self.tag(op, layer, part)).results[0]
        return value

    def tail(self, buffer: SSAValue, roll: Roll, layer: Layer, part: Part) -> SSAValue:
        """The rows `roll.keep` of a buffer of rows `roll.need`, kept for a later stripe."""
        assert roll.need is not None and roll.keep is not None
        if roll.keep == roll.need:
            return buffer
        n, c, _, w = shape(buffer)
        offsets = [0, 0, roll.keep[0] - roll.need[0], 0]
        sizes = [n, c, roll.keep[1] - roll.keep[0], w]
        ty = buffer.type
        assert isinstance(ty, TensorType)
        op = tile.SliceOp.create(
            operands=[buffer],
            result_types=[_region_type(ty, offsets, sizes)],
            properties={"offsets": _ints(offsets)},
        )
        return self.emit(self.tag(op, layer, part)).results[0]

    def layer_tile(
        self,
        k: int,
        hspan: Span | None,
        wspan: Span | None,
        channels: Channels,
        tiles: dict[int, tuple[SSAValue, Region | None]],
        part: Part,
    ) -> SSAValue:
        """Layer k of the group on one tile; `tiles` holds this tile's results of the layers
        before k in the run, with the region each covers (None: exactly what k reads)."""
        layer = self.seg[k]
        out = output_region(layer, hspan, wspan, channels)
        inp = (hspan.inp, wspan.inp) if hspan and wspan else ((0, 0), (0, 0))
        feeds = self.feeds[k]
        operands = []
        for index, operand in enumerate(layer.op.operands):
            region = box(layer, index, out, inp, channels)
            if index in feeds:
                value, covered = tiles[feeds[index]]
                operands.append(self.within(value, covered, region, layer, part))
            elif index in layer.constants:
                operands.append(self.constant(operand, region, layer))
            elif index in layer.transposes:
                operands.append(self.transposed(layer, index, region, part))
            else:
                operands.append(self.region(operand, region, layer, part))
        pads = None
        if hspan is not None and wspan is not None and layer.kind is Kind.WINDOW:
            pads = (hspan.pads[0], wspan.pads[0], hspan.pads[1], wspan.pads[1])
        op = self.tile_op(layer, operands, out, channels, pads)
        return self.emit(self.tag(op, layer, part)).results[0]

    def within(
        self, value: SSAValue, covered: Region | None, region: Region, layer: Layer, part: Part
    ) -> SSAValue:
        """The part `region` of a tile that covers `covered` (a view when they differ)."""
        if covered is None or tuple(covered) == tuple(region):
            return value
        ty = value.type
        assert isinstance(ty, TensorType)
        offsets = [lo - c for (lo, _), (c, _) in zip(region, covered, strict=True)]
        sizes = [hi - lo for lo, hi in region]
        op = tile.SliceOp.create(
            operands=[value],
            result_types=[_region_type(ty, offsets, sizes)],
            properties={"offsets": _ints(offsets)},
        )
        return self.emit(self.tag(op, layer, part)).results[0]

    def transposed(self, layer: Layer, index: int, region: Region, part: Part) -> SSAValue:
        """The tile of a folded transpose's result: the transpose of a tile of its input."""
        transpose = layer.transposes[index]
        source = transpose.operands[0]
        piece = self.region(source, transposed_region(layer, index, region), layer, part)
        ty = transpose.results[0].type
        assert isinstance(ty, TensorType)
        offsets, sizes = [lo for lo, _ in region], [hi - lo for lo, hi in region]
        new = type(transpose).create(
            operands=[piece],
            result_types=[_region_type(ty, offsets, sizes)],
            properties=dict(transpose.properties),
            attributes=dict(transpose.attributes),
        )
        return self.emit(self.tag(new, layer, part)).results[0]

    def tile_op(
        self,
        layer: Layer,
        operands: Sequence[SSAValue],
        out: Region,
        channels: Channels,
        pads: tuple[int, int, int, int] | None,
    ) -> Operation:
        """`layer`'s op on tile operands: result box `out`, tile pads, channel slices."""
        op = layer.op
        ty = op.results[0].type
        assert isinstance(ty, TensorType)
        offsets, sizes = [lo for lo, _ in out], [hi - lo for lo, hi in out]
        props = dict(op.properties)
        if pads is not None:
            props["pads"] = _ints(pads)
            props.pop("ceil_mode", None)
        if layer.channel_units > 1:
            props.update(self.channel_props(layer, channels))
        return type(op).create(
            operands=list(operands),
            result_types=[_region_type(ty, offsets, sizes)],
            properties=props,
            attributes=dict(op.attributes),
        )

    def channel_props(self, layer: Layer, channels: Channels) -> dict[str, Attribute]:
        """Per-channel multipliers and shifts, and conv groups, of an output-channel part."""
        key = (layer.index, channels.out)
        if key not in self.props:
            lo, hi = channels.out
            props: dict[str, Attribute] = {}
            for name in ("multiplier", "shift"):
                values = layer.op.properties.get(name)
                if not isinstance(values, DenseArrayBase):
                    continue
                if (lo, hi) != (0, len(values)) and len(values) > 1:
                    props[name] = _ints(list(int_values(values))[lo:hi])
            if "groups" in layer.op.properties:
                props["groups"] = IntegerAttr(channels.groups, i64)
            self.props[key] = props
        return self.props[key]

    def assemble(
        self, value: SSAValue, dest: SSAValue, out: Region, last: Layer, part: Part, memory: str
    ) -> SSAValue:
        props: dict[str, Attribute] = {"offsets": _ints([lo for lo, _ in out])}
        if memory == self.memories.arena:
            op: Operation = tile.InsertOp.create(
                operands=[value, dest], result_types=[dest.type], properties=props
            )
        else:
            props |= {"from": StringAttr(self.memories.arena), "to": StringAttr(memory)}
            op = tile.StoreOp.create(
                operands=[value, dest], result_types=[dest.type], properties=props
            )
        return self.emit(self.tag(op, last, part)).results[0]


def materialise(layers: Sequence[Layer], groups: Sequence[Group], memories: Memories) -> None:
    """Rewrite every group that needs it; tag the layers of the others."""
    for group in groups:
        m = Materialiser(layers, group, memories)
        if m.needed():
            m.run()
        else:
            m.tag(m.seg[0].op, m.seg[0], None)
    for cache in (_ARRAYS, _LAYERS, _TYPES):
        cache.clear()
