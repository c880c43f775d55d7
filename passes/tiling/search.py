"""Plans: which layers run as one group (a layer, or a cascade) and into how many parts.

`Planner.evaluate` estimates one group with given parts (peak SRAM, largest tile
working set, cycles, halo overlap); `Planner.plan` chooses groups and parts for the
whole function. Groups are contiguous runs of layers; in a run of more than one layer
every result but the last is read only by later layers of the run (a chain, or a
sub-graph). The choice is exact for the model, by dynamic
programming over the runs:

1. the lowest peak SRAM reachable, `P*` (min over plans of the max over groups);
2. the plan with the fewest estimated cycles whose every group stays at or below a
   threshold: `P*` in "size" mode, the SRAM limit in "performance" mode (or `P*` if
   even that exceeds the limit).

Options per group: every distinct stripe count along H (and W, up to 16 parts) for
cascades within the overlap limit; for single layers, H stripes with up to 16
output-channel parts, and W parts of single rows. Each tile is charged
TILE_CHARGE cycles; ties go to fewer tiles, then to H before W before channels.
Deterministic. Residency (residency.py) gives the whole tensors every group holds.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.func import FuncOp
from xdsl.ir import SSAValue

from npuc.progress import progress
from npuc.target import Target

from .cost import group_cycles, mac_factor, transfer_cycles
from .layers import Graph, Kind, Layer, float_value
from .residency import NEVER, Residency
from .rolling import Roll, RollingBytes, Summary, rolling_bytes, rolling_spans, summarise
from .working_set import (
    ROLES,
    Channels,
    Memories,
    Span,
    Term,
    align,
    cascade_spans,
    channel_parts,
    part_options,
    terms_bytes,
    tile_terms,
)

MAX_CASCADE = 12  # layers per cascade the search considers (manual ranges may be longer)
MAX_WIDTH_PARTS = 16
OVER_LIMIT_SLACK = 1 / 32  # performance mode, when even the lowest peak is over the limit
# What the choice charges each tile beyond its estimated cycles: with double buffering
# every extra tile shortens the first tile's DMA a little, so without a charge the search
# cut a one-hot chain (magika, 1x2048x257) into 12,288 tiles to save 0.03 % of its cycles,
# and each tile is another command to fetch and decode (on the host, another call).
TILE_CHARGE = 16
MAX_STRIPE_FOR_COLUMNS = 10  # cascades split along W only with stripes this thin (rows)
CHANNEL_PARTS = (1, 2, 3, 4, 6, 8, 12, 16)


@dataclass(frozen=True)
class Estimate:
    """A group with given parts: bytes, cycles and recompute."""

    parts: tuple[int, int, int]
    peak: int  # resident tensors + the group's weights + its largest tile's buffers
    working_set: int  # the largest layer tile's working set
    cycles: int
    overlap: float  # recomputed / needed output elements of the group's layers
    resident: int
    layer_working_sets: tuple[int, ...] = ()
    rolling: bool = False  # a cascade along H through rolling buffers (rolling.py)

    @property
    def tiles(self) -> int:
        h, w, c = self.parts
        return h * w * c

    def order(self) -> tuple[int, int, int]:
        return self.tiles, self.parts[2], self.parts[1]

    def with_resident(self, resident: int) -> Estimate:
        """The same group with other resident bytes (they add to the peak)."""
        # The constructor, not dataclasses.replace: equal layers reuse ~100 options each.
        return Estimate(
            self.parts,
            self.peak - self.resident + resident,
            self.working_set,
            self.cycles,
            self.overlap,
            resident,
            self.layer_working_sets,
            self.rolling,
        )


@dataclass(frozen=True)
class Group:
    first: int
    last: int
    estimate: Estimate
    manual: bool = False


#: A tile's buffers and its MAC cost factors (`mac_factor`).
TileModel = tuple[tuple[Term, ...], int, int]
#: Cascades ending at each layer b: (first layer, its estimates, chosen by hand).
Runs = dict[int, list[tuple[int, list[Estimate], bool]]]


def _width(r: tuple[int, int]) -> int | tuple[int, int]:
    """A channel range by its size (the empty range at 0 by itself, see `tile_terms`)."""
    return r if r == (0, 0) else r[1] - r[0]


def fastest(options: Sequence[Estimate]) -> Estimate:
    """The option with the fewest cycles, each tile charged TILE_CHARGE more."""
    return min(options, key=lambda e: (e.cycles + TILE_CHARGE * e.tiles, *e.order()))


class Planner:
    """Estimates and chooses groups for the layers of one function on one target."""

    def __init__(
        self,
        func: FuncOp,
        layers: Sequence[Layer],
        target: Target,
        sram_limit: int,
        overlap_limit: float,
        cascade: str = "auto",
    ):
        self.layers = list(layers)
        self.cascade = cascade
        self.target = target
        self.sram_limit = sram_limit
        self.overlap_limit = overlap_limit
        self.memories = Memories.of_target(target, func)
        self._io_memory = target.memory(self.memories.io)
        self._constants_memory = target.memory(self.memories.constants)
        self._port = target.arena_memory.bytes_per_cycle
        self.residency = Residency(func, layers, self.memories)
        self.graph = Graph.of(self.layers)
        # float tensors between quantized layers are the host's (no NPU instruction moves them)
        self.float_islands = "float32" not in target.data_types and any(
            layer.op.name.startswith("qnn.") for layer in self.layers
        )
        # the first layer of the longest single-consumer chain ending at each layer
        self._chain_from = [0] * len(self.layers)
        for k in range(len(self.layers)):
            single = k > 0 and self.graph.is_chain(k - 1, k)
            self._chain_from[k] = self._chain_from[k - 1] if single else k
        self._added: set[tuple[int, int]] = set()
        # a run's options and their lowest peak, by the options' identity
        self._lowest: dict[int, tuple[list[Estimate], int]] = {}
        self._layers: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._layers_by_content: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._part_models: dict[tuple[int, tuple[int, ...], int], tuple[int, ...]] = {}
        self._crossing: dict[tuple[int, int], list[tuple[int, ...]] | None] = {}
        self._linked: dict[tuple[int, int], tuple[int, ...]] = {}
        self._spans: dict[tuple[int, int, int], list[list[Span]]] = {}
        self._rolls: dict[tuple[int, int], list[list[Roll]]] = {}
        self._classes: dict[tuple[int, int, int, bool], list[list[tuple[Any, ...]]]] = {}
        self._window_classes: dict[tuple[int, ...], list[list[tuple[Any, ...]]]] = {}
        self._models: dict[tuple[Any, ...], TileModel] = {}
        self._distinct: dict[TileModel, TileModel] = {}
        self._shared: dict[tuple[Any, ...], tuple[int, int, float, float, int, int]] = {}
        self._channels: dict[tuple[int, int], list[Channels]] = {}
        self._resident: dict[tuple[int, int], int] = {}
        self._values: dict[tuple[Any, ...], tuple[int, int, float, float, int, int]] = {}
        self._held: dict[tuple[int, int, int, int], RollingBytes] = {}
        self._summaries: dict[tuple[int, int], list[Summary]] = {}
        self._alone_options: dict[tuple[Any, ...], list[Estimate]] = {}

    # ------------------------------------------------------------------ one group

    def linked(self, k: int, first: int) -> tuple[int, ...]:
        """The operands of layer k fed by layers of a run that starts at `first`."""
        key = (k, first)
        found = self._linked.get(key)
        if found is None:
            found = self._linked[key] = tuple(i for i, _ in self.graph.run_inputs(k, first))
        return found

    def joins(self, k: int, last: int) -> bool:
        """Whether layer k may run inside a cascade ending at `last` (all of its readers are
        in k + 1..last, tile by tile)."""
        return self.layers[last].spatial and self.graph.joins(k, last)

    def spans(self, first: int, last: int, axis: int, parts: int) -> list[list[Span]]:
        """`cascade_spans` of first..last: a suffix of a longer run's when known (a layer's
        spans depend only on its readers, all of them after it)."""
        key = (last, axis, parts)
        cached = self._spans.get(key)
        if cached is None or len(cached) < last - first + 1:
            cached = cascade_spans(self.layers[first : last + 1], axis, parts, cached or ())
            self._spans[key] = cached
        return cached[len(cached) - (last - first + 1) :]

    def rolls(self, first: int, last: int, parts: int) -> list[list[Roll]]:
        """Rolling spans along H of first..last (a suffix of the longest chain ending at
        `last`: a layer's rows depend only on the layers after it)."""
        cached = self._rolls.get((last, parts))
        if cached is None or len(cached) < last - first + 1:
            cached = rolling_spans(self.layers[first : last + 1], 0, parts, cached or ())
            self._rolls[last, parts] = cached
        return cached[len(cached) - (last - first + 1) :]

    def summaries(self, first: int, last: int, parts: int) -> list[Summary]:
        """`summarise` of the intermediate layers of first..last (a suffix, as `rolls`)."""
        cached = self._summaries.get((last, parts))
        if cached is None or len(cached) < last - first:
            known = cached or []  # a layer's summary depends only on its own rolls
            rolls = self.rolls(first, last, parts)
            layers = self.layers[first : last - len(known)]
            cached = [summarise(layer, r) for layer, r in zip(layers, rolls, strict=False)]
            cached += known
            self._summaries[last, parts] = cached
        return cached[len(cached) - (last - first) :]

    def rolling(self, first: int, last: int, parts: tuple[int, int, int]) -> bool:
        """Whether the group runs through rolling buffers (along H; W parts recompute)."""
        return (
            self.cascade != "recompute"
            and first < last
            and parts[0] > 1
            and self.layers[last].spatial
            and self.layers[last].nchw
            and first >= self._chain_from[last]
        )

    def model(self, k: int, linked: tuple[int, ...], c: int, part: int) -> TileModel:
        """A tile's buffers and its MAC cost (`mac_factor`) for layer k in channel part `part`,
        its operands `linked` fed by other layers of the run."""
        key = (k, linked, c, part)
        found = self._models.get(key)
        if found is None:
            layer = self.layers[k]
            channels = self.channels(k, c)[part]
            # a part's buffers and MACs depend on its channel counts, not where they start
            # (a range at 0 of no channels stands for the tile's own axes: kept apart)
            sizes = (k, linked, _width(channels.out), _width(channels.inp), channels.groups)
            found = self._models.get(sizes)
            if found is None:
                terms = tile_terms(layer, channels, linked, self.memories)
                if layer.op in self.residency.merged:  # its operands are its own bytes
                    terms = [t for t in terms if t.role != ROLES["views"]]
                model = (tuple(terms), *mac_factor(self.target, layer, channels))
                # one object per distinct model: tile_values shares results between equal ones
                found = self._models[sizes] = self._distinct.setdefault(model, model)
            self._models[key] = found
        return found

    def rolling_bytes(self, first: int, last: int, h: int, w: int) -> RollingBytes:
        key = (first, last, h, w)
        if key not in self._held:
            seg, columns = self.layers[first:last], self.spans(first, last, 1, w)
            summaries = self.summaries(first, last, h)
            self._held[key] = rolling_bytes(seg, summaries, columns, self.memories.alignment)
        return self._held[key]

    def tile_values(
        self,
        key: tuple[int, tuple[int, ...], int, int],
        oh: int,
        ih: int,
        ow: int,
        iw: int,
        streamed: bool,
    ) -> tuple[int, int, float, float, int, int]:
        """One tile of the model `key` with (output, input) lengths along H and W: its working
        set, what it adds to the peak, its compute and activation-DMA cycles, its weight
        bytes and its output bytes. Cached: the search revisits the same tile sizes many
        times."""
        full = (key, oh, ih, ow, iw, streamed)
        found = self._values.get(full)
        if found is not None:
            return found
        model = self.model(*key)
        same = (id(model), key[2] > 1, oh, ih, ow, iw, streamed)  # equal layers, equal tiles
        found = self._shared.get(same)
        if found is None:
            terms, factor, batch = model
            m = self.memories
            weights_dma = m.constants != m.arena
            io, port = self._io_memory, self._port
            tb = terms_bytes(terms, (oh, ih), (ow, iw), m.alignment)
            c = key[2]
            pixels = self.target.mac_array.pixels
            mac = factor * -(-(batch * oh * ow) // pixels) if batch else factor
            moved = tb.views + tb.buffers + tb.loads + tb.weights + tb.output
            dma = 0.0
            if tb.loads or tb.stored:
                dma = transfer_cycles(io, tb.loads) + transfer_cycles(io, tb.stored, write=True)
            found = (
                tb.working_set(streamed, c > 1, weights_dma),
                tb.extra(streamed),
                max(mac, moved / port),
                dma,
                tb.weights,
                tb.output,
            )
            self._shared[same] = found
        self._values[full] = found
        return found

    def channels(self, k: int, c: int) -> list[Channels]:
        key = (k, c)
        if key not in self._channels:
            self._channels[key] = channel_parts(self.layers[k], c)
        return self._channels[key]

    def _class_table(
        self, first: int, last: int, axis: int, parts: int, rolling: bool
    ) -> list[list[tuple[Any, ...]]]:
        """Per layer of a run ending at `last` that starts at `first` or before: the distinct
        (output, input) lengths of its parts along `axis`, as (out, in, count) triples
        (rolling: of the rows each part computes); layer k's are at
        `len(table) - 1 - (last - k)`. Cached for the longest chain ending at `last`, as
        `spans`."""
        key = (last, axis, parts, rolling)
        cached = self._classes.get(key)
        layer = self.layers[last]
        if cached is None and first == last and layer.kind is not Kind.WINDOW:
            # no halo: the parts' lengths are those of `split`
            base, extra = divmod(layer.extent(axis), parts)
            sizes = ((base + 1, extra), (base, parts - extra))
            cached = self._classes[key] = [[(o, o, n) for o, n in sizes if n]]
        geometry: tuple[int, ...] | None = None
        if cached is None and first == last and layer.kind is Kind.WINDOW and not rolling:
            # a window layer alone: its parts' lengths depend only on its geometry along
            # `axis`, which layers of a repeated shape share
            window = layer.window
            assert window is not None
            size, stride = layer.in_shape[2 + axis], window.strides[axis]
            pad, extent = window.pads[axis], window.extent(axis)
            geometry = (axis, parts, layer.extent(axis), size, stride, pad, extent)
            cached = self._window_classes.get(geometry)
            if cached is not None:
                self._classes[key] = cached
        if cached is None or len(cached) < last - first + 1:
            if rolling:
                per_layer = [
                    [r.span for r in rolls if r.span is not None]
                    for rolls in self.rolls(first, last, parts)
                ]
            else:
                per_layer = self.spans(first, last, axis, parts)
            known = list(cached or ())  # the later layers' classes do not change
            cached = self._classes[key] = [
                [
                    (o, i, n)
                    for (o, i), n in Counter(
                        (s.out[1] - s.out[0], s.inp[1] - s.inp[0]) for s in spans
                    ).items()
                ]
                for spans in per_layer[: len(per_layer) - len(known)]
            ] + known
            if geometry is not None:
                self._window_classes[geometry] = cached
        return cached

    def resident_tensors(self, first: int, last: int) -> list[tuple[SSAValue, int]]:
        """The whole tensors live in the arena while first..last runs, largest first."""
        seg = self.layers[first : last + 1]
        links = {layer.result for layer in seg[:-1]}
        return self.residency.live(seg[0].op, seg[-1].op, links)

    def resident(self, first: int, last: int) -> int:
        key = (first, last)
        if key not in self._resident:
            seg = self.layers[first : last + 1]
            links = {layer.result for layer in seg[:-1]}
            self._resident[key] = self.residency.resident(seg[0].op, seg[-1].op, links)
        return self._resident[key]

    def evaluate(
        self, first: int, last: int, parts: tuple[int, int, int], rolling: bool | None = None
    ) -> Estimate:
        """The estimate of first..last in `parts` (rolling: through rolling buffers, by
        default whenever the `cascade` mode allows)."""
        h, w, c = parts
        seg = self.layers[first : last + 1]
        tiles = h * w * c
        port = self._port
        if rolling is None or not self.rolling(first, last, parts):
            rolling = self.rolling(first, last, parts)
        many = len(seg) > 1
        computed = needed = weights = extra = 0
        compute = streamed_dma = activation_dma = once = first_dma = 0.0
        layer_ws = []
        outputs: list[int] = []
        crossing = self.crossing(first, last) if many else None
        # One tile of the last layer is its whole result, already counted as resident.
        whole = tiles == 1 and self.memories.of(seg[-1].result) == self.memories.arena
        for k, layer in enumerate(seg):
            v = self.layer_values(layer.index, first, last, parts, rolling)
            computed += v[0]
            needed += v[1]
            layer_ws.append(v[2])
            held = v[3] - v[10] if whole and k == len(seg) - 1 else v[3]
            if crossing is not None and crossing[k]:
                held += sum(outputs[p] for p in crossing[k])  # tiles read after this layer
            if held > extra:
                extra = held
            compute += v[4]
            activation_dma += v[5]
            streamed_dma += v[6]
            first_dma += v[7]
            once += v[8]
            weights += v[9]
            outputs.append(v[10])
        if rolling:
            roll = self.rolling_bytes(first, last, h, w)
            extra = roll.held + max(extra, roll.assembly)
            compute += 2 * roll.copied / port  # tails copied into the next stripe's buffers
        resident = self.resident(first, last)
        overlap = computed / needed - 1 if many and needed else 0.0
        first_dma += activation_dma / tiles
        return Estimate(
            parts,
            resident + weights + extra,
            max(layer_ws),
            group_cycles(once, compute, streamed_dma + activation_dma, first_dma, tiles),
            overlap,
            resident,
            tuple(layer_ws),
            rolling,
        )

    def crossing(self, first: int, last: int) -> list[tuple[int, ...]] | None:
        """Per layer of a run: the earlier layers of the run (positions) whose tiles stay live
        across it without being read by it (None for a chain: there are none)."""
        key = (first, last)
        if key not in self._crossing:
            found: list[tuple[int, ...]] | None = None
            if first < self._chain_from[last]:
                readers = self.graph.readers
                found = []
                for k in range(first, last + 1):
                    found.append(
                        tuple(
                            p - first
                            for p in range(first, k)
                            if max(j for j, _ in readers[p]) > k
                            and all(j != k for j, _ in readers[p])
                        )
                    )
            self._crossing[key] = found
        return self._crossing[key]

    def layer_values(
        self, index: int, first: int, last: int, parts: tuple[int, int, int], rolling: bool
    ) -> tuple[Any, ...]:
        """Layer `index`'s share of the estimate of the run first..last in `parts`: computed and
        needed output elements, its largest tile working set, what its largest tile adds to
        the peak, compute and DMA cycles (activations, streamed weights, the first tile's
        weights, weights loaded once), resident weight bytes, its largest output tile.
        Cached: runs ending at `last` share everything but their first layer's links."""
        h, w, c = parts
        streamed = h * w * c > 1
        linked = self.linked(index, first)
        key = (index, linked, last, parts, rolling)
        found = self._layers.get(key)
        if found is not None:
            return found
        layer = self.layers[index]
        m = self.memories
        weights_dma = m.constants != m.arena
        constants = self._constants_memory
        one = [(1, 1, 1)]
        spatial = self.layers[last].spatial
        if spatial:
            h_table = self._class_table(first, last, 0, h, rolling)
            w_table = self._class_table(first, last, 1, w, False)
            hcls, wcls = (
                h_table[len(h_table) - 1 - (last - index)],
                w_table[len(w_table) - 1 - (last - index)],
            )
        else:
            hcls = wcls = one
        computed = needed = 0
        if spatial and first < last:
            rows, cols = layer.extent(0), layer.extent(1)
            rest = math.prod(layer.out_shape) // (rows * cols)
            computed = rest * sum(o * t for o, _, t in hcls) * sum(o * t for o, _, t in wcls)
            needed = rest * rows * cols
        # Everything below depends only on these: layers of equal shapes (repeated blocks,
        # a chain of equal convolutions) share their values.
        models = self.part_models(index, linked, c)
        content = (models, tuple(hcls), tuple(wcls), streamed, computed, needed)
        found = self._layers_by_content.get(content)
        if found is not None:
            self._layers[key] = found
            return found
        part_weights = []
        most = extra = output = 0
        compute = activation_dma = streamed_dma = first_dma = once = 0.0
        values = self._values
        # parts with one model have equal tiles: look each distinct model's tiles up once
        grids: dict[int, tuple[list[tuple[int, float, float]], int, int, int, int]] = {}
        for p in range(c if layer.channel_units > 1 else 1):
            key_p = (index, linked, c, p)
            model = self.model(*key_p)
            grid = grids.get(id(model))
            if grid is None:
                row = []
                tb = None
                m_most = m_extra = m_output = 0
                for oh, ih, nh in hcls:
                    for ow, iw, nw in wcls:
                        tb = values.get((key_p, oh, ih, ow, iw, streamed))
                        if tb is None:
                            tb = self.tile_values(key_p, oh, ih, ow, iw, streamed)
                        m_most = max(m_most, tb[0])
                        m_extra = max(m_extra, tb[1])
                        m_output = max(m_output, tb[5])
                        row.append((nh * nw, tb[2], tb[3]))
                assert tb is not None
                grid = grids[id(model)] = (row, tb[4], m_most, m_extra, m_output)
            row, part_weight, m_most, m_extra, m_output = grid
            for count, cycles, dma in row:  # summed tile by tile, in the same order
                compute += count * cycles
                activation_dma += count * dma
            most, extra, output = max(most, m_most), max(extra, m_extra), max(output, m_output)
            part_weights.append(part_weight)
            if weights_dma and c > 1:
                streamed_dma += transfer_cycles(constants, part_weight)
                first_dma += transfer_cycles(constants, part_weight) if p == 0 else 0
            elif weights_dma:
                once += transfer_cycles(constants, part_weight)
        weights = 0
        if weights_dma:
            weights = 2 * max(part_weights) if c > 1 else part_weights[0]
        found = (
            computed,
            needed,
            most,
            extra,
            compute,
            activation_dma,
            streamed_dma,
            first_dma,
            once,
            weights,
            output,
        )
        self._layers[key] = self._layers_by_content[content] = found
        return found

    def part_models(self, k: int, linked: tuple[int, ...], c: int) -> tuple[int, ...]:
        """The identities of layer k's tile models in each of its `c` channel parts (equal
        models are one object, kept for the planner's life)."""
        key = (k, linked, c)
        found = self._part_models.get(key)
        if found is None:
            parts = c if self.layers[k].channel_units > 1 else 1
            found = tuple(id(self.model(k, linked, c, p)) for p in range(parts))
            self._part_models[key] = found
        return found

    # ------------------------------------------------------------------ choices

    def options(self, first: int, last: int) -> list[Estimate]:
        """Candidate estimates of the run first..last (see the module docstring)."""
        found = self._alone(first) if first == last else self._options(first, last)
        if self.host_copies(first, last):
            found = [e for e in found if e.tiles == 1] or found[:1]
        return found

    def host_copies(self, first: int, last: int) -> bool:
        """Whether tiles of first..last would slice a float tensor made outside the run, or
        assemble a float result: float tiles have no NPU instruction, so every such slice or
        insert becomes a host copy of the whole tensor. A run that dequantizes and quantizes
        inside keeps its float tensors within its tiles instead. (A float model, or a target
        with float32 arithmetic, tiles float tensors as any other.)"""
        if not self.float_islands:
            return False
        if float_value(self.layers[last].result):
            return True
        for k in range(first, last + 1):
            layer = self.layers[k]
            linked = self.linked(k, first)
            for i in layer.activations:
                if i not in linked and float_value(layer.source(i)):
                    return True
        return False

    def _alone(self, k: int) -> list[Estimate]:
        """`_options` of layer k alone. Equal layers (a repeated block, a chain of equal
        convolutions) have equal options but for their resident bytes, which add to every
        peak: the options of the first such layer are reused with the resident bytes moved."""
        layer = self.layers[k]
        linked = self.linked(k, k)
        c_opts = [c for c in CHANNEL_PARTS if c <= layer.channel_units]
        signature = (
            linked,
            layer.kind,
            layer.out_shape,
            layer.hw,
            layer.fixed,
            layer.window,
            layer.in_shape if layer.window is not None else None,
            self.memories.of(layer.result) == self.memories.arena,
            tuple(self.part_models(k, linked, c) for c in c_opts),
        )
        resident = self.resident(k, k)
        known = self._alone_options.get(signature)
        if known is None:
            found = self._options(k, k)
            self._alone_options[signature] = found
            return found
        return [e.with_resident(resident) for e in known]

    def _options(self, first: int, last: int) -> list[Estimate]:
        layer = self.layers[last]
        c_opts = [c for c in CHANNEL_PARTS if c <= layer.channel_units]
        if not layer.spatial:
            return [self.evaluate(first, last, (1, 1, c)) for c in c_opts]
        rows, cols = layer.extent(0), layer.extent(1)
        seg = self.layers[first : last + 1]
        h_opts = [1] if any(x.fixed[0] for x in seg) else part_options(rows)
        w_opts = [1] if any(x.fixed[1] for x in seg) else part_options(cols)
        w_opts = [w for w in w_opts if w <= MAX_WIDTH_PARTS]
        if first == last:
            grid = [(h, 1, c) for h in h_opts for c in c_opts]
            grid += [(h_opts[-1], w, 1) for w in w_opts[1:]]
            return [self.evaluate(first, last, p) for p in grid]
        if not any(x.kind is Kind.WINDOW for x in seg):
            # No halos: stripes and column parts only trade tile size for tile count, as
            # for a single layer (rolling buffers would hold nothing).
            grid = [(h, 1, 1) for h in h_opts] + [(h_opts[-1], w, 1) for w in w_opts[1:]]
            return [self.evaluate(first, last, p, False) for p in grid]
        found = []
        can_roll = self.rolling(first, last, (2, 1, 1))
        kinds = [None, False] if self.cascade == "auto" and can_roll else [None]
        for rolling in kinds:
            for h in h_opts:
                if rolling is False and h == 1:
                    continue  # the same as the rolling kind's
                # Column parts only once stripes are thin: before that, more stripes save
                # as much SRAM with less halo (and rolling stripes recompute none).
                for w in w_opts if -(-rows // h) <= MAX_STRIPE_FOR_COLUMNS else w_opts[:1]:
                    estimate = self.evaluate(first, last, (h, w, 1), rolling)
                    if estimate.overlap > self.overlap_limit:
                        break  # more parts only add halo
                    found.append(estimate)
        return found

    def plan(
        self, optimise: str, manual: Sequence[tuple[int, int, int, int]] = ()
    ) -> tuple[list[Group], int]:
        """Groups covering every layer, and the lowest reachable peak `P*`."""
        n = len(self.layers)
        owner: dict[int, tuple[int, int, int, int]] = {}
        for entry in manual:
            for k in range(entry[0], entry[1] + 1):
                owner[k] = entry
        runs: Runs = {b: [] for b in range(n)}
        alone: dict[int, int] = {}  # each free layer's lowest peak as a group of its own
        for b in progress(range(n), desc="tiling search", unit="layer"):
            if b in owner:
                first, last, h, w = owner[b]
                if last == b:
                    runs[b].append((first, [self.evaluate(first, last, (h, w, 1))], True))
                continue
            options = self._feasible(b, b)
            runs[b].append((b, options, False))
            alone[b] = min((e.peak for e in options), default=NEVER)
        # The layers cascades go through: in size mode, every layer (through only those
        # at the lowest peak, the plans' arenas moved: ppocrv4_det's grew by 6 KiB). In
        # performance mode, the layers over the SRAM limit: elsewhere single layers fit
        # as well, and a cascade mostly saves SRAM, not cycles (see below for the layers
        # that the threshold slows down); and while even the lowest peak found is over
        # the limit, only the layers at or above it: the threshold is then that peak and
        # more (`_threshold`), so the others fit alone (every layer over the limit cost
        # up to 20 times the search time for at most 0.1 % fewer estimated cycles,
        # docs/tiling.md). The lowest peak is found again until no new layer qualifies.
        floor = self.sram_limit if optimise == "performance" else -1
        expanded: set[int] = set()
        while True:
            best_peak = self._min_max_peak(runs)
            need = best_peak if 0 <= floor < best_peak else min(best_peak, floor + 1)
            above = [
                k
                for k, peak in alone.items()
                if k not in expanded and peak > floor and peak >= need
            ]
            if not above:
                break
            for k in above:
                expanded.add(k)
                # P* only falls as runs are added, and so does the threshold: a run that
                # cannot fit the threshold of the P* so far can never be chosen
                bound = self._threshold(optimise, self._min_max_peak(runs))
                self._add_runs(k, runs, owner, bound)
        threshold = self._threshold(optimise, best_peak)
        # Layers slowed down by the threshold (their fastest way alone is over it) may run
        # faster in a cascade with fewer tiles.
        for k, options in ((k, runs[k][0][1]) for k in alone if k not in expanded):
            best = fastest(options) if options else None
            if best is not None and best.peak > threshold:
                expanded.add(k)
                self._add_runs(k, runs, owner, threshold)
        return self._min_cycles(runs, threshold), best_peak

    def _threshold(self, optimise: str, best_peak: int) -> int:
        """The largest group peak the cycle choice allows, given the lowest peak P*."""
        if optimise != "performance":
            return best_peak
        # Over the limit anyway, squeezing the last bytes out of the worst group costs
        # many tiles: allow OVER_LIMIT_SLACK of the lowest peak for fewer cycles.
        if best_peak > self.sram_limit:
            return best_peak + int(best_peak * OVER_LIMIT_SLACK)
        return self.sram_limit

    def _add_runs(
        self, k: int, runs: Runs, owner: Mapping[int, tuple[int, int, int, int]], bound: int
    ) -> None:
        """Add the cascades through layer k (runs first..last with first <= k <= last). A run
        whose `least_peak` exceeds `bound` gets no options: neither choice takes a group over
        the threshold (P* or the limit), which is at most `bound`, and below P* it cannot
        lower P* either."""
        known = self._added
        for b in range(k, min(len(self.layers), k + MAX_CASCADE)):
            if b in owner:
                break
            a = b
            while True:
                if a <= k and a < b and (a, b) not in known:
                    known.add((a, b))
                    fits = self.least_peak(a, b) <= bound
                    runs[b].append((a, self._feasible(a, b) if fits else [], False))
                if a == 0 or not self.joins(a - 1, b) or a - 1 in owner or b - a + 1 >= MAX_CASCADE:
                    break
                a -= 1

    def least_peak(self, first: int, last: int) -> int:
        """A lower bound of the peak of every option of the cascade first..last (parts along H
        and W, one channel part): its resident bytes and, when weights are loaded, every
        layer's whole weights (the weight terms that do not scale with the tile)."""
        least = self.resident(first, last)
        if self.memories.constants != self.memories.arena and self.layers[last].spatial:
            alignment = self.memories.alignment
            for k in range(first, last + 1):
                terms = self.model(k, self.linked(k, first), 1, 0)[0]
                least += sum(
                    align(t.unit, alignment)
                    for t in terms
                    if t.role == ROLES["weights"] and t.h == 2 and t.w == 2
                )
        return least

    def _feasible(self, first: int, last: int) -> list[Estimate]:
        options = self.options(first, last)
        fitting = [e for e in options if e.working_set <= self.sram_limit]
        if first < last or fitting:
            return fitting
        return options  # a single layer that fits nowhere still runs (the pass warns)

    def _min_max_peak(self, runs: Runs) -> int:
        n = len(self.layers)
        best = [0] + [NEVER] * n
        for b in range(n):
            for a, options, _ in runs[b]:
                if options and best[a] < NEVER:
                    known = self._lowest.get(id(options))
                    if known is None:  # holding the list keeps its identity unique
                        known = self._lowest[id(options)] = (options, min(e.peak for e in options))
                    best[b + 1] = min(best[b + 1], max(best[a], known[1]))
        return max(best[n], self.residency.floor())

    def _min_cycles(self, runs: Runs, threshold: int) -> list[Group]:
        n = len(self.layers)
        cost: list[tuple[int, int]] = [(0, 0)] + [(NEVER, 0)] * n
        choice: list[tuple[int, Estimate, bool] | None] = [None] * (n + 1)
        for b in range(n):
            for a, options, manual in runs[b]:
                allowed = [e for e in options if e.peak <= threshold or manual]
                if not allowed or cost[a][0] >= NEVER:
                    continue
                e = fastest(allowed)
                total = (cost[a][0] + e.cycles + TILE_CHARGE * e.tiles, cost[a][1] + e.tiles)
                if total < cost[b + 1]:
                    cost[b + 1] = total
                    choice[b + 1] = (a, e, manual)
        groups = []
        b = n
        while b > 0:
            picked = choice[b]
            assert picked is not None, "every layer has at least one option"
            a, e, manual = picked
            groups.append(Group(a, b - 1, e, manual))
            b = a
        return groups[::-1]
