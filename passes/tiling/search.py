"""Plans: which layers run as one group (a layer, or a cascade) and into how many parts.

`Planner.evaluate` estimates one group with given parts (peak SRAM, largest tile
working set, cycles, halo overlap); `Planner.plan` chooses groups and parts for the
whole function. Groups are contiguous runs of layers; a run of more than one layer
must be a single-consumer chain. The choice is exact for the model, by dynamic
programming over the runs:

1. the lowest peak SRAM reachable, `P*` (min over plans of the max over groups);
2. the plan with the fewest estimated cycles whose every group stays at or below a
   threshold: `P*` in "size" mode, the SRAM limit in "performance" mode (or `P*` if
   even that exceeds the limit).

Options per group: every distinct stripe count along H (and W, up to 16 parts) for
cascades within the overlap limit; for single layers, H stripes with up to 16
output-channel parts, and W parts of single rows. Ties go to fewer tiles, then
to H before W before channels. Deterministic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import BlockArgument, Operation, SSAValue

from npuc.target import Target

from .cost import group_cycles, mac_factor, transfer_cycles
from .layers import CONSTANT_OPS, Layer, chain_link, nbytes
from .rolling import Roll, RollingBytes, Summary, rolling_bytes, rolling_spans, summarise
from .working_set import (
    Channels,
    Memories,
    Span,
    Term,
    align,
    cascade_spans,
    chain_index,
    channel_parts,
    part_options,
    terms_bytes,
    tile_terms,
)

MAX_CASCADE = 12  # layers per cascade the search considers (manual ranges may be longer)
MAX_WIDTH_PARTS = 16
CHANNEL_PARTS = (1, 2, 3, 4, 6, 8, 12, 16)
NEVER = 1 << 62


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


@dataclass(frozen=True)
class Group:
    first: int
    last: int
    estimate: Estimate
    manual: bool = False


class Residency:
    """Bytes of whole tensors in the arena while a run of layers executes.

    A tensor is live from its producer to its last user (a folded transpose counts as its
    consumer, a reshape shares its input's bytes); outputs live to the end. Links inside
    a cascade never exist whole.
    """

    def __init__(self, func: FuncOp, layers: Sequence[Layer], memories: Memories):
        block = func.body.block
        self.pos = {op: i for i, op in enumerate(block.ops)}
        folded = {t: layer.op for layer in layers for t in layer.transposes.values()}
        root: dict[SSAValue, SSAValue] = {}
        live: dict[SSAValue, list[int]] = {}
        for arg in block.args:
            root[arg] = arg
            live[arg] = [-1, -1]
        for op in block.ops:
            for r in op.results:
                if op.name.endswith(".reshape"):
                    root[r] = root.get(op.operands[0], op.operands[0])
                elif not isinstance(op, CONSTANT_OPS) and op not in folded:
                    root[r] = r
                    live[r] = [self.pos[op], self.pos[op]]
        for value, base in root.items():
            if base not in live:
                continue
            for use in value.uses:
                user = use.operation
                end = NEVER if isinstance(user, ReturnOp) else self.pos[folded.get(user, user)]
                live[base][1] = max(live[base][1], end)
        self.tensors = [
            (value, lo, hi, align(nbytes(value), memories.alignment))
            for value, (lo, hi) in live.items()
            if memories.of(value) == memories.arena
            or (isinstance(value, BlockArgument) and memories.io == memories.arena)
        ]
        self.static = 0
        if memories.constants == memories.arena:
            self.static = sum(
                align(nbytes(op.results[0]), memories.alignment)
                for op in block.ops
                if isinstance(op, CONSTANT_OPS)
            )
        self.steps = [
            self.pos[op]
            for op in block.ops
            if not isinstance(op, (*CONSTANT_OPS, ReturnOp)) and op.name.endswith("transpose")
            and op not in folded
        ]  # fmt: skip

    def resident(self, first: Operation, last: Operation, links: set[SSAValue]) -> int:
        lo, hi = self.pos[first], self.pos[last]
        return self.static + sum(
            size for v, a, b, size in self.tensors if a <= hi and b >= lo and v not in links
        )

    def floor(self) -> int:
        """The largest residency at an op that is not a layer (a transpose copies)."""
        return max(
            (
                self.static + sum(s for _, a, b, s in self.tensors if a <= p <= b)
                for p in self.steps
            ),
            default=0,
        )


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
        self.residency = Residency(func, layers, self.memories)
        self.links = [
            k + 1 < len(layers) and chain_link(layers[k], layers[k + 1]) is None
            for k in range(len(layers))
        ]
        self._spans: dict[tuple[int, int, int], list[list[Span]]] = {}
        self._rolls: dict[tuple[int, int], list[list[Roll]]] = {}
        self._classes: dict[tuple[int, int, int, bool], list[list[tuple]]] = {}
        self._models: dict[tuple[int, bool, int, int], tuple[list[Term], int, int]] = {}
        self._channels: dict[tuple[int, int], list[Channels]] = {}
        self._resident: dict[tuple[int, int], int] = {}
        self._values: dict[tuple, tuple[int, int, float, float, int]] = {}
        self._held: dict[tuple[int, int, int, int], RollingBytes] = {}
        self._summaries: dict[tuple[int, int], list[Summary]] = {}

    # ------------------------------------------------------------------ one group

    def chain_start(self, last: int, limit: int = MAX_CASCADE) -> int:
        first = last
        while first > 0 and self.links[first - 1] and last - first + 1 < limit:
            first -= 1
        return first

    def spans(self, first: int, last: int, axis: int, parts: int) -> list[list[Span]]:
        start = min(first, self.chain_start(last))
        key = (last, axis, parts)
        cached = self._spans.get(key)
        if cached is None or len(cached) < last - start + 1:
            cached = cascade_spans(self.layers[start : last + 1], axis, parts)
            self._spans[key] = cached
        return cached[len(cached) - (last - first + 1) :]

    def rolls(self, first: int, last: int, parts: int) -> list[list[Roll]]:
        """Rolling spans along H of first..last (a suffix of the longest chain ending at
        `last`: a layer's rows depend only on the layers after it)."""
        start = min(first, self.chain_start(last))
        cached = self._rolls.get((last, parts))
        if cached is None or len(cached) < last - start + 1:
            cached = rolling_spans(self.layers[start : last + 1], 0, parts)
            self._rolls[last, parts] = cached
        return cached[len(cached) - (last - first + 1) :]

    def summaries(self, first: int, last: int, parts: int) -> list[Summary]:
        """`summarise` of the intermediate layers of first..last (a suffix, as `rolls`)."""
        start = min(first, self.chain_start(last))
        cached = self._summaries.get((last, parts))
        if cached is None or len(cached) < last - start:
            rolls = self.rolls(start, last, parts)
            layers = self.layers[start:last]
            cached = [summarise(layer, r) for layer, r in zip(layers, rolls, strict=False)]
            self._summaries[last, parts] = cached
        return cached[len(cached) - (last - first) :]

    def rolling(self, first: int, last: int, parts: tuple[int, int, int]) -> bool:
        """Whether the group runs through rolling buffers (along H; W parts recompute)."""
        return (
            self.cascade != "recompute" and first < last and parts[0] > 1
            and self.layers[last].spatial
        )  # fmt: skip

    def model(self, k: int, chained: bool, c: int, part: int) -> tuple[list[Term], int, int]:
        """A tile's buffers and its MAC cost (`mac_factor`) for layer k in channel part `part`."""
        key = (k, chained, c, part)
        if key not in self._models:
            layer = self.layers[k]
            chain = chain_index(self.layers, k) if chained else None
            channels = self.channels(k, c)[part]
            terms = tile_terms(layer, channels, chain, self.memories)
            self._models[key] = (terms, *mac_factor(self.target, layer, channels))
        return self._models[key]

    def rolling_bytes(self, first: int, last: int, h: int, w: int) -> RollingBytes:
        key = (first, last, h, w)
        if key not in self._held:
            seg, columns = self.layers[first:last], self.spans(first, last, 1, w)
            summaries = self.summaries(first, last, h)
            self._held[key] = rolling_bytes(seg, summaries, columns, self.memories.alignment)
        return self._held[key]

    def tile_values(
        self, key: tuple[int, bool, int, int], oh: int, ih: int, ow: int, iw: int, streamed: bool
    ) -> tuple[int, int, float, float, int]:
        """One tile of the model `key` with (output, input) lengths along H and W: its working
        set, what it adds to the peak, its compute and activation-DMA cycles, and its weight
        bytes. Cached: the search revisits the same tile sizes many times."""
        full = (key, oh, ih, ow, iw, streamed)
        found = self._values.get(full)
        if found is None:
            terms, factor, batch = self.model(*key)
            m = self.memories
            weights_dma = m.constants != m.arena
            io = self.target.memory(m.io)
            port = self.target.arena_memory.bytes_per_cycle
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
            )
            self._values[full] = found
        return found

    def channels(self, k: int, c: int) -> list[Channels]:
        key = (k, c)
        if key not in self._channels:
            self._channels[key] = channel_parts(self.layers[k], c)
        return self._channels[key]

    def classes(
        self, first: int, last: int, axis: int, parts: int, rolling: bool = False
    ) -> list[list[tuple]]:
        """Per layer of first..last: the distinct (output, input) lengths of its parts along
        `axis`, as (out, in, count) triples (rolling: of the rows each part computes).
        Cached for the longest chain ending at `last`, as `spans`."""
        start = min(first, self.chain_start(last))
        key = (last, axis, parts, rolling)
        cached = self._classes.get(key)
        if cached is None or len(cached) < last - start + 1:
            if rolling:
                per_layer = [
                    [r.span for r in rolls if r.span is not None]
                    for rolls in self.rolls(start, last, parts)
                ]
            else:
                per_layer = self.spans(start, last, axis, parts)
            cached = self._classes[key] = [
                [(o, i, n) for (o, i), n in Counter(
                    (s.out[1] - s.out[0], s.inp[1] - s.inp[0]) for s in spans
                ).items()]
                for spans in per_layer
            ]  # fmt: skip
        return cached[len(cached) - (last - first + 1) :]

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
        streamed = tiles > 1
        m = self.memories
        weights_dma = m.constants != m.arena
        constants = self.target.memory(m.constants)
        port = self.target.arena_memory.bytes_per_cycle
        spatial = seg[-1].spatial
        if rolling is None or not self.rolling(first, last, parts):
            rolling = self.rolling(first, last, parts)
        one = [(1, 1, 1)]
        hcls_all = self.classes(first, last, 0, h, rolling) if spatial else None
        wcls_all = self.classes(first, last, 1, w) if spatial else None
        extra = weights = 0
        layer_ws = [0] * len(seg)
        compute = streamed_dma = activation_dma = once = first_dma = 0.0
        computed = needed = 0
        values = self._values
        for k, layer in enumerate(seg):
            hcls = hcls_all[k] if hcls_all is not None else one
            wcls = wcls_all[k] if wcls_all is not None else one
            if spatial and len(seg) > 1:
                n, ch, rows, cols = layer.out_shape
                computed += n * ch * sum(o * t for o, _, t in hcls) * sum(o * t for o, _, t in wcls)
                needed += n * ch * rows * cols
            part_weights = []
            most = 0
            for p in range(c if layer.channel_units > 1 else 1):
                key = (layer.index, k > 0, c, p)
                tb = None
                for oh, ih, nh in hcls:
                    for ow, iw, nw in wcls:
                        tb = values.get((key, oh, ih, ow, iw, streamed))
                        if tb is None:
                            tb = self.tile_values(key, oh, ih, ow, iw, streamed)
                        count = nh * nw
                        if tb[0] > most:
                            most = tb[0]
                        if tb[1] > extra:
                            extra = tb[1]
                        compute += count * tb[2]
                        activation_dma += count * tb[3]
                assert tb is not None
                part_weights.append(tb[4])
                if weights_dma and c > 1:
                    streamed_dma += transfer_cycles(constants, tb[4])
                    first_dma += transfer_cycles(constants, tb[4]) if p == 0 else 0
                elif weights_dma:
                    once += transfer_cycles(constants, tb[4])
            if weights_dma:
                weights += 2 * max(part_weights) if c > 1 else part_weights[0]
            layer_ws[k] = most
        if rolling:
            held = self.rolling_bytes(first, last, h, w)
            extra = held.held + max(extra, held.assembly)
            compute += 2 * held.copied / port  # tails copied into the next stripe's buffers
        resident = self.resident(first, last)
        overlap = computed / needed - 1 if len(seg) > 1 and needed else 0.0
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

    # ------------------------------------------------------------------ choices

    def options(self, first: int, last: int) -> list[Estimate]:
        """Candidate estimates of the run first..last (see the module docstring)."""
        layer = self.layers[last]
        c_opts = [c for c in CHANNEL_PARTS if c <= layer.channel_units]
        if not layer.spatial:
            return [self.evaluate(first, last, (1, 1, c)) for c in c_opts]
        rows, cols = layer.out_shape[2], layer.out_shape[3]
        h_opts = part_options(rows)
        w_opts = [w for w in part_options(cols) if w <= MAX_WIDTH_PARTS]
        if first == last:
            grid = [(h, 1, c) for h in h_opts for c in c_opts]
            grid += [(rows, w, 1) for w in w_opts[1:]]
            return [self.evaluate(first, last, p) for p in grid]
        found = []
        kinds = [None, False] if self.cascade == "auto" else [None]
        for rolling in kinds:
            for h in h_opts:
                if rolling is False and h == 1:
                    continue  # the same as the rolling kind's
                for w in w_opts:
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
        runs: dict[int, list[tuple[int, list[Estimate], bool]]] = {b: [] for b in range(n)}
        for b in range(n):
            if b in owner:
                first, last, h, w = owner[b]
                if last == b:
                    runs[b].append((first, [self.evaluate(first, last, (h, w, 1))], True))
                continue
            a = b
            while True:
                runs[b].append((a, self._feasible(a, b), False))
                if a == 0 or not self.links[a - 1] or a - 1 in owner or b - a + 1 >= MAX_CASCADE:
                    break
                a -= 1
        best_peak = self._min_max_peak(runs)
        threshold = best_peak if optimise == "size" else max(self.sram_limit, best_peak)
        return self._min_cycles(runs, threshold), best_peak

    def _feasible(self, first: int, last: int) -> list[Estimate]:
        options = self.options(first, last)
        fitting = [e for e in options if e.working_set <= self.sram_limit]
        if first < last or fitting:
            return fitting
        return options  # a single layer that fits nowhere still runs (the pass warns)

    def _min_max_peak(self, runs) -> int:
        n = len(self.layers)
        best = [0] + [NEVER] * n
        for b in range(n):
            for a, options, _ in runs[b]:
                if options and best[a] < NEVER:
                    peak = max(best[a], min(e.peak for e in options))
                    best[b + 1] = min(best[b + 1], peak)
        return max(best[n], self.residency.floor())

    def _min_cycles(self, runs, threshold: int) -> list[Group]:
        n = len(self.layers)
        cost: list[tuple[int, int]] = [(0, 0)] + [(NEVER, 0)] * n
        choice: list[tuple[int, Estimate, bool] | None] = [None] * (n + 1)
        for b in range(n):
            for a, options, manual in runs[b]:
                allowed = [e for e in options if e.peak <= threshold or manual]
                if not allowed or cost[a][0] >= NEVER:
                    continue
                e = min(allowed, key=lambda e: (e.cycles, *e.order()))
                total = (cost[a][0] + e.cycles, cost[a][1] + e.tiles)
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
