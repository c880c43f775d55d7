"""Estimated cycles of tiles and groups: a first model (docs/tiling.md; issue 6 refines it).

- MAC cycles of a tile, from the array geometry with edge effects (`MacArray.cycles`, which
  the cycle model uses too): `ceil(oc / array.output_channels) * ceil(pixels / array.pixels)
  * ceil(ic_per_group / array.input_channels) * kernel taps` (pools and elementwise ops:
  one input channel per output channel; dense layers: pixels = batch).
- A tile's compute time is the larger of its MAC cycles and the cycles to move its
  operands and result through the arena's port (bytes / bytes per cycle).
- A DMA of `b` bytes from (or to) memory `m`: `b / m.bytes_per_cycle` plus `m`'s read
  (write) latency once per transfer.
- A group of `n` tiles: DMA done once (weights that do not change between tiles) comes
  first; with one tile its DMA and compute add up; with more, the tiles' buffers are
  double buffered, so the DMA engine and the MAC array overlap: the first tile's DMA,
  then the longer of the two engines' queues.
"""

from __future__ import annotations

import math

from npuc.target import Memory, Target

from .layers import CONV_OPS, Kind, Layer, shape
from .working_set import Channels, Region, elements


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def mac_factor(target: Target, layer: Layer, channels: Channels) -> tuple[int, int]:
    """`(cycles per pixel block, batch)` of a tile in output-channel part `channels`: a
    spatial tile of `p` output pixels per image takes `factor * ceil(batch * p / pixels)`
    cycles; for other layers (batch 0) the factor is the tile's cycles."""
    array = target.mac_array
    if layer.kind is Kind.DENSE:
        n, k = shape(layer.op.operands[0])
        f0, f1 = channels.out
        return array.cycles(f1 - f0, n, k), 0
    if not layer.spatial:
        return max(1, _ceil(elements(_full(layer)), array.output_channels * array.pixels)), 0
    taps, per_group = 1, 1
    if layer.kind is Kind.WINDOW:
        assert layer.window is not None
        taps = layer.window.kernel[0] * layer.window.kernel[1]
        if isinstance(layer.op, CONV_OPS):
            per_group = shape(layer.op.operands[1])[1]
    c0, c1 = channels.out
    return array.cycles(c1 - c0, 1, per_group, taps), layer.out_shape[0]


def mac_cycles(target: Target, layer: Layer, out: Region, channels: Channels) -> int:
    """MAC-array cycles of the tile of `layer` with output box `out` (NCHW or NF)."""
    factor, batch = mac_factor(target, layer, channels)
    if not batch:
        return factor
    (_, _), (_, _), (h0, h1), (w0, w1) = out
    return factor * _ceil(batch * (h1 - h0) * (w1 - w0), target.mac_array.pixels)


def _full(layer: Layer) -> Region:
    return tuple((0, n) for n in layer.out_shape)


def arena_cycles(target: Target, nbytes: int) -> float:
    """Cycles to stream `nbytes` through the arena memory's port."""
    return nbytes / target.arena_memory.bytes_per_cycle


def transfer_cycles(memory: Memory, nbytes: int, write: bool = False) -> float:
    """One DMA transfer of `nbytes` from (or, with `write`, to) `memory`."""
    if not nbytes:
        return 0.0
    latency = memory.write_latency if write else memory.read_latency
    return nbytes / memory.bytes_per_cycle + latency


def group_cycles(once: float, compute: float, streamed: float, first: float, tiles: int) -> int:
    """Cycles of a group: `once` (DMA before the first tile), then `tiles` tiles with
    `compute` cycles and `streamed` DMA cycles in total, of which `first` feeds the first
    tile (see the module docstring)."""
    if tiles <= 1:
        return math.ceil(once + compute + streamed)
    return math.ceil(once + first + max(compute, streamed - first))
