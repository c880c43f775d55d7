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

from npuc.dialects.nn_base import prop_ints
from npuc.target import Target

from .layers import Kind, Layer, is_constant, itemsize, shape

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


def run_readers(layers: Sequence[Layer]) -> list[list[tuple[int, int]]]:
    """For each layer of a run, its readers inside the run: (position in the run, operand)."""
    pos = {layer.op: k for k, layer in enumerate(layers)}
    return [
        [(pos[u.operation], u.index) for u in layer.result.uses if u.operation in pos]
        for layer in layers
    ]


def cascade_spans(
    layers: Sequence[Layer], axis: int, parts: int, known: Sequence[list[Span]] = ()
) -> list[list[Span]]:
    """Spans of every layer of a run for each part of the last layer's output.

    `result[k][i]` is layer k's span in part i; layer k produces exactly the rows (or
    columns) its readers in the run read: in a chain the input range of layer k + 1, in a
    sub-graph the smallest range covering every reader's. `known`: the spans of the run's
    last layers, already computed (they do not depend on the layers before them).
    """
    last = layers[-1]
    if not last.spatial:
        return [[Span((0, 0), (0, 0), (0, 0))]]
    n = len(layers)
    result: list[list[Span]] = [[] for _ in range(n - len(known))] + list(known)
    if not known:
        result[-1] = [layer_span(last, axis, part) for part in split(last.extent(axis), parts)]
    readers = run_readers(layers)
    for k in range(n - max(len(known), 1) - 1, -1, -1):
        inner = [result[j] for j, _ in readers[k]] or [result[k + 1]]
        spans = result[k]
        layer = layers[k]
        if len(inner) == 1:
            for r in inner[0]:
                spans.append(layer_span(layer, axis, r.inp))
        else:
            for i in range(parts):
                out = (min(r[i].inp[0] for r in inner), max(r[i].inp[1] for r in inner))
                spans.append(layer_span(layer, axis, out))
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
    if layer.cdim is None:  # a 3-D layer: (N, H, W), no channels
        return [Channels((0, 1), (0, 1), 1)]
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
    perm = list(prop_ints(layer.transposes[index].properties, "perm"))
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
            self.views
            + self.buffers
            + self.loads * twice
            + w
            + self.output
            + self.stored * (twice - 1)
            + self.acc
        )

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
    layer: Layer, channels: Channels, linked: tuple[int, ...], memories: Memories
) -> list[Term]:
    """The buffers of a tile of `layer` in output-channel part `channels`, by role;
    `linked` are the operands that tiles of other layers of the run feed."""
    probe_out = tuple((0, n) for n in layer.out_shape)
    if layer.spatial:
        probe_out = output_region(layer, _EMPTY, _EMPTY, channels)
    elif layer.kind is Kind.DENSE:
        probe_out = (probe_out[0], channels.out)
    terms: list[Term] = []
    sentinel = (-1, -2)  # marks which region axes follow the tile's H/W ranges
    for index, operand in enumerate(layer.op.operands):
        region = box(layer, index, probe_out, (sentinel, sentinel), channels)
        unit, h, w = itemsize(operand), 2, 2
        gap = len(probe_out) - len(region)  # elementwise operands broadcast from the right
        for axis, (lo, hi) in enumerate(region):
            along_h = axis + gap == layer.hw[0]
            if (lo, hi) == sentinel:
                h, w = (1, w) if along_h else (h, 1)
            elif (lo, hi) == (0, 0):
                h, w = (0, w) if along_h else (h, 0)
            else:
                unit *= hi - lo
        if index in layer.constants:
            terms.append(Term(ROLES["weights"], unit, h, w))
        elif index in linked:
            terms.append(Term(ROLES["buffers"], unit, h, w))
        else:
            in_arena = memories.of(layer.source(index)) == memories.arena
            if index in layer.transposes:
                terms.append(Term(ROLES["buffers"], unit, h, w))
            terms.append(Term(ROLES["views" if in_arena else "loads"], unit, h, w))
    result = layer.result
    unit = math.prod(hi - lo for lo, hi in probe_out if (lo, hi) != _EMPTY)
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


_EMPTY = (0, 0)  # tile_terms' stand-in for the tile's H and W ranges


def output_region(
    layer: Layer, h: Span | Range | None, w: Span | Range | None, channels: Channels
) -> Region:
    """The output box of a tile: NCHW (or N, H, W) from spans and channels, NF for dense
    layers."""
    full = [(0, n) for n in layer.out_shape]
    if layer.kind is Kind.DENSE:
        return (full[0], channels.out)
    if not layer.spatial:
        return tuple(full)
    assert h is not None and w is not None
    if layer.cdim is not None:
        full[layer.cdim] = channels.out
    full[layer.hw[0]] = h.out if isinstance(h, Span) else h
    full[layer.hw[1]] = w.out if isinstance(w, Span) else w
    return tuple(full)
