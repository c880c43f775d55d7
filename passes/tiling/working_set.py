"""Receptive fields, halos and working-set bytes of tiles.

A tile of a layer is a box of its output: a row range, a column range and an
output-channel range. Along H and W, `layer_span` maps a tile's output range to the
input range its windows read (the halo included), clipped at the borders: the part
of a window outside the input becomes the tile's own padding, so border tiles keep
the layer's padding and inner tiles have none. A cascade maps the last layer's
stripe backwards through every layer (`cascade_spans`), so the halo grows through
each 3x3 or strided layer.

Bytes of a tile (`TileBytes`): its activation inputs (views of resident tensors
included), weight slices, output and 32-bit accumulators (convolutions and dense
layers: output elements x 4). Every buffer is rounded up to the target's alignment.
See docs/tiling.md for how they add up to a working set and to peak SRAM.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import BlockArgument, SSAValue

from npuc.target import Target

from .layers import Kind, Layer, chain_operand, is_constant, itemsize, shape

Range = tuple[int, int]
Region = tuple[Range, ...]
ACC_BYTES = 4


def split(n: int, parts: int) -> list[Range]:
    """`parts` contiguous ranges covering [0, n), sizes differing by at most one (larger first)."""
    base, extra = divmod(n, parts)
    ranges, start = [], 0
    for i in range(parts):
        stop = start + base + (1 if i < extra else 0)
        ranges.append((start, stop))
        start = stop
    return ranges


def part_options(n: int) -> list[int]:
    """Part counts worth trying for a length n: the fewest parts for each largest part size."""
    return sorted({-(-n // size) for size in range(1, n + 1)})


def align(nbytes: int, alignment: int) -> int:
    return -(-nbytes // alignment) * alignment if nbytes else 0


@dataclass(frozen=True)
class Span:
    """A layer's extent along H or W in one part: output range, input range, tile pads."""

    out: Range
    inp: Range
    pads: tuple[int, int]


def layer_span(layer: Layer, axis: int, out: Range) -> Span:
    """The input range (with halo, clipped) that output range `out` of `layer` reads."""
    if layer.kind is not Kind.WINDOW:
        return Span(out, out, (0, 0))
    window = layer.window
    assert window is not None
    size = layer.in_shape[2 + axis]
    stride, pad = window.strides[axis], window.pads[axis]
    lo = out[0] * stride - pad
    hi = (out[1] - 1) * stride - pad + window.extent(axis)
    clipped = (max(lo, 0), min(hi, size))
    return Span(out, clipped, (clipped[0] - lo, hi - clipped[1]))


def cascade_spans(layers: Sequence[Layer], axis: int, parts: int) -> list[list[Span]]:
    """Spans of every layer of a chain for each part of the last layer's output.

    `result[k][i]` is layer k's span in part i; layer k produces exactly the input
    range that layer k + 1 reads.
    """
    last = layers[-1]
    size = last.out_shape[2 + axis] if last.spatial else 0
    if not last.spatial:
        return [[Span((0, 0), (0, 0), (0, 0))]]
    result: list[list[Span]] = [[] for _ in layers]
    for out in split(size, parts):
        for k in range(len(layers) - 1, -1, -1):
            span = layer_span(layers[k], axis, out)
            result[k].append(span)
            out = span.inp
    return result


@dataclass(frozen=True)
class Channels:
    """An output-channel part: output range, input-channel range, and its conv groups."""

    out: Range
    inp: Range
    groups: int


def channel_parts(layer: Layer, parts: int) -> list[Channels]:
    """Output-channel parts of a layer (whole-group pieces for grouped convolutions)."""
    if layer.kind is Kind.DENSE:
        features = layer.out_shape[1]
        k = shape(layer.op.operands[0])[1]
        return [Channels(r, (0, k), 1) for r in split(features, parts)]
    if not layer.spatial:
        return [Channels((0, 0), (0, 0), 1)]
    out_c = layer.out_shape[1]
    in_c = shape(layer.op.operands[0])[1] if layer.is_conv else out_c
    if layer.kind is Kind.WINDOW and layer.is_conv:
        if layer.groups == 1:
            return [Channels(r, (0, in_c), 1) for r in split(out_c, parts)]
        per_out, per_in = out_c // layer.groups, in_c // layer.groups
        return [
            Channels((a * per_out, b * per_out), (a * per_in, b * per_in), b - a)
            for a, b in split(layer.groups, parts)
        ]
    return [Channels((0, out_c), (0, out_c), 1)]


@dataclass(frozen=True)
class Memories:
    """Where values live: arguments and results in `io`, constants in `constants`,
    everything else in the activation arena; compute reads and writes the arena."""

    arena: str
    constants: str
    io: str
    alignment: int
    returned: frozenset[SSAValue]

    @classmethod
    def of_target(cls, target: Target, func: FuncOp) -> Memories:
        ret = func.body.block.last_op
        returned = frozenset(ret.operands) if isinstance(ret, ReturnOp) else frozenset()
        p = target.placement
        return cls(p.arena, p.constants, p.io, target.alignment, returned)

    def of(self, value: SSAValue) -> str:
        if isinstance(value, BlockArgument) or value in self.returned:
            return self.io
        if is_constant(value):
            return self.constants
        return self.arena


def box(layer: Layer, index: int, out: Region, inp: Region, channels: Channels) -> Region:
    """The region of operand `index` (in the coordinates of the value the op reads) that
    output region `out` of `layer` needs; `out` is NCHW for spatial layers, NF for dense,
    and `inp` the (H, W) input ranges of a window layer's tile."""
    operand = layer.op.operands[index]
    full = tuple((0, n) for n in shape(operand))
    if layer.kind is Kind.DENSE:
        return full if index == 0 else (channels.out, *full[1:])
    if layer.kind is Kind.WINDOW:
        if index in layer.activations:
            return (out[0], channels.inp, inp[0], inp[1])
        return (channels.out, *full[1:])
    if layer.kind is Kind.ELEMENTWISE:
        rank_gap = len(out) - len(full)
        return tuple(full[d] if full[d][1] == 1 else out[d + rank_gap] for d in range(len(full)))
    return full


def transposed_region(layer: Layer, index: int, region: Region) -> Region:
    """The region of a folded transpose's input that holds `region` of its result."""
    perm = [int(p) for p in layer.transposes[index].perm.get_values()]
    source = [(0, 0)] * len(region)
    for result_axis, input_axis in enumerate(perm):
        source[input_axis] = region[result_axis]
    return tuple(source)


def elements(region: Region) -> int:
    return math.prod(hi - lo for lo, hi in region)


class TileBytes(NamedTuple):
    """Aligned bytes of one layer tile, by role (see the module docstring)."""

    views: int  # activation regions read in place from resident tensors
    buffers: int  # activation tiles made inside the group (cascade links, transposed slices)
    loads: int  # activation regions DMA'd in from another memory
    weights: int  # constant regions (weights, biases)
    output: int
    stored: int  # output bytes DMA'd out to another memory
    acc: int

    def working_set(self, streamed: bool, weights_streamed: bool, weights_dma: bool) -> int:
        """input slices + weight slices + output + accumulators, x2 for what is double
        buffered (DMA'd slices that change from tile to tile)."""
        twice = 2 if streamed else 1
        w = self.weights * (2 if weights_streamed and weights_dma else 1)
        return (
            self.views + self.buffers + self.loads * twice + w + self.output
            + self.stored * (twice - 1) + self.acc
        )  # fmt: skip

    def extra(self, streamed: bool) -> int:
        """What the tile adds to SRAM beyond resident tensors and the group's weights."""
        twice = 2 if streamed else 1
        return (
            self.buffers + self.loads * twice + self.output + self.stored * (twice - 1) + self.acc
        )


ROLES = {name: i for i, name in enumerate(TileBytes._fields)}


@dataclass(frozen=True)
class Term:
    """One buffer of a layer tile, as `bytes_per_unit * H factor * W factor` (factors: the
    tile's output length, its input length, or 1) so that search can size tiles fast."""

    role: int  # index of a TileBytes field
    unit: int
    h: int  # 0: output length, 1: input length, 2: fixed
    w: int


def tile_terms(
    layer: Layer, channels: Channels, chain: int | None, memories: Memories
) -> list[Term]:
    """The buffers of a tile of `layer` in output-channel part `channels`, by role."""
    probe_out = tuple((0, n) for n in layer.out_shape)
    if layer.spatial:
        probe_out = (probe_out[0], channels.out, (0, 0), (0, 0))
    elif layer.kind is Kind.DENSE:
        probe_out = (probe_out[0], channels.out)
    terms: list[Term] = []
    sentinel = (-1, -2)  # marks which region axes follow the tile's H/W ranges
    for index, operand in enumerate(layer.op.operands):
        region = box(layer, index, probe_out, (sentinel, sentinel), channels)
        unit, h, w = itemsize(operand), 2, 2
        for axis, (lo, hi) in enumerate(region):
            if (lo, hi) == sentinel:
                h, w = (1, w) if axis == len(region) - 2 else (h, 1)
            elif (lo, hi) == (0, 0):
                h, w = (0, w) if axis == len(region) - 2 else (h, 0)
            else:
                unit *= hi - lo
        if index in layer.constants:
            terms.append(Term(ROLES["weights"], unit, h, w))
        elif index == chain:
            terms.append(Term(ROLES["buffers"], unit, h, w))
        else:
            in_arena = memories.of(layer.source(index)) == memories.arena
            if index in layer.transposes:
                terms.append(Term(ROLES["buffers"], unit, h, w))
            terms.append(Term(ROLES["views" if in_arena else "loads"], unit, h, w))
    result = layer.result
    unit = math.prod(hi - lo for lo, hi in probe_out if (lo, hi) != (0, 0))
    fixed = 0 if layer.spatial else 2
    terms.append(Term(ROLES["output"], unit * itemsize(result), fixed, fixed))
    if memories.of(result) != memories.arena:
        terms.append(Term(ROLES["stored"], unit * itemsize(result), fixed, fixed))
    if layer.has_accumulators:
        terms.append(Term(ROLES["acc"], unit * ACC_BYTES, fixed, fixed))
    return terms


def terms_bytes(
    terms: Sequence[Term], hs: tuple[int, int], ws: tuple[int, int], alignment: int
) -> TileBytes:
    """TileBytes of a tile whose (output, input) lengths are `hs` along H and `ws` along W."""
    sizes = [0] * len(ROLES)
    hv, wv = (hs[0], hs[1], 1), (ws[0], ws[1], 1)
    for t in terms:
        n = t.unit * hv[t.h] * wv[t.w]
        sizes[t.role] += -(-n // alignment) * alignment
    return TileBytes(*sizes)


def output_region(layer: Layer, h: Span | None, w: Span | None, channels: Channels) -> Region:
    """The output box of a tile: NCHW from spans and channels, NF for dense layers."""
    full = tuple((0, n) for n in layer.out_shape)
    if layer.kind is Kind.DENSE:
        return (full[0], channels.out)
    if not layer.spatial:
        return full
    assert h is not None and w is not None
    return (full[0], channels.out, h.out, w.out)


def chain_index(layers: Sequence[Layer], k: int) -> int | None:
    """The operand of layers[k] fed by layers[k - 1] in a cascade (None for the first)."""
    return chain_operand(layers[k - 1], layers[k]) if k else None
