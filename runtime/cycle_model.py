"""Cycle-approximate model of an NPU program on a target (docs/cycle-model.md).

Each instruction gets a cost from the target description: compute cycles from
the MAC array geometry (with the edge effects of shapes that do not fill it),
memory cycles per memory from bytes, bus width, clock scale, burst length and
latency; its duration is the larger of the two. A two-engine schedule (DMA and
compute, plus the host CPU) then starts each instruction when its engine is
free and the instructions it waits for are done, so DMA overlaps compute exactly
where the tokens allow. Results are aggregated per layer.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from npuc.dialects import constant_codec
from npuc.dialects import npu_isa as isa
from npuc.target import Memory, Target

from .host_cost import Share, host_cycles, share

UNASSIGNED = "(no layer)"
SOFTMAX_PASSES = 4  # max, exponentials, sum, normalise: each a pass over the row


@dataclass(frozen=True)
class InstructionCost:
    """One instruction on the timeline (cycles at the target clock)."""

    index: int
    op: str
    engine: str
    layer: str
    start: int
    end: int
    compute_cycles: int
    memory_cycles: dict[str, int]
    macs: int
    bytes_read: dict[str, int]
    bytes_written: dict[str, int]

    @property
    def cycles(self) -> int:
        return self.end - self.start


@dataclass
class LayerProfile:
    """One layer: `cycles` are the timeline cycles attributed to it (they sum to the total)."""

    name: str
    cycles: int = 0
    macs: int = 0
    instructions: int = 0
    busy: dict[str, int] = field(default_factory=dict)  # engine -> cycles
    bytes_read: dict[str, int] = field(default_factory=dict)  # memory -> bytes
    bytes_written: dict[str, int] = field(default_factory=dict)
    start: int = 0
    end: int = 0
    utilization: float = 0.0
    share: float = 0.0
    # `cycles` split by the engine that owns each stretch (compute before DMA before host):
    # "dma" is DMA time no compute hides
    timeline: dict[str, int] = field(default_factory=dict)


@dataclass
class Profile:
    target: str
    clock_mhz: float
    macs_per_cycle: int
    total_cycles: int
    instructions: list[InstructionCost]
    layers: list[LayerProfile]
    busy: dict[str, int]  # engine -> cycles
    memories: dict[str, float]  # memory -> bytes per cycle
    share: Share = field(default_factory=Share)  # layers and MACs on the NPU and the host
    host: str = "host CPU"
    # bytes of SRAM in use while each layer runs, where the memory plan is known
    # (npu-compile: `with_sram`); a binary alone does not say
    sram: dict[str, int] = field(default_factory=dict)

    @property
    def total_macs(self) -> int:
        return sum(layer.macs for layer in self.layers)

    @property
    def inference_ms(self) -> float:
        return self.total_cycles / (self.clock_mhz * 1e3)

    @property
    def inferences_per_s(self) -> float:
        return 1e3 / self.inference_ms if self.total_cycles else math.inf

    @property
    def utilization(self) -> float:
        return _ratio(self.total_macs, self.total_cycles * self.macs_per_cycle)


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


# --------------------------------------------------------------------------- bytes


def distinct_bytes(t: isa.TensorRef) -> int:
    """Bytes the view covers once: a broadcast (stride 0) dimension is read once."""
    return math.prod(d for d, s in zip(t.shape, t.strides, strict=True) if s) * t.itemsize


def burst_bytes(t: isa.TensorRef, burst: int) -> int:
    """Bytes the bus moves for `t`: each contiguous run rounded up to whole bursts."""
    run, step = 1, 1
    for stride, dim in sorted(
        (s, d) for d, s in zip(t.shape, t.strides, strict=True) if s and d > 1
    ):
        if stride != step:
            break
        run *= dim
        step *= dim
    total = distinct_bytes(t)
    run_bytes = run * t.itemsize
    return (total // run_bytes) * (-(-run_bytes // burst) * burst)


# --------------------------------------------------------------------------- per instruction


def compute_cycles(inst: isa.Instruction, target: Target) -> int:
    """Cycles on the MAC array (docs/cycle-model.md): whole blocks of oc x px x ic."""
    a = target.mac_array
    lanes = a.output_channels * a.pixels  # output elements produced per cycle
    if inst.op == "conv2d":
        n, _, oh, ow = inst.operand("ofm").shape
        co, cg, kh, kw = inst.operand("weights").shape
        groups = inst.params["groups"]
        if cg == 1 and groups > 1:  # depthwise: channels on the oc lanes, taps one per cycle
            return a.cycles(co, n * oh * ow, 1, kh * kw)
        return groups * a.cycles(co // groups, n * oh * ow, cg, kh * kw)
    if inst.op == "matmul":
        b, m, k = inst.operand("lhs").shape
        return b * a.cycles(inst.operand("ofm").shape[2], m, k)
    if inst.op == "pool":
        kh, kw = inst.params["kernel"]
        return -(-inst.operand("ofm").numel // lanes) * kh * kw
    if inst.op in ("eltwise", "lut", "move"):
        return -(-inst.operands[-1].numel // lanes)
    if inst.op == "softmax":
        return SOFTMAX_PASSES * -(-inst.operand("ofm").numel // lanes)
    if inst.op == "host":
        return host_cycles(inst, target)
    return 0


def memory_for(region: isa.Region | None, kind: str, target: Target) -> Memory:
    """The target memory holding a region: the one it names, else the placement's by kind."""
    if region is not None:
        for memory in target.memories:
            if memory.name == region.memory:
                return memory
    placement = target.placement
    name = {"constants": placement.constants, "mutable": placement.io}.get(kind, placement.arena)
    return target.memory(name)


@dataclass(frozen=True)
class _Stream:
    """An encoded run of the constants region: `ratio` stored bytes per decoded byte."""

    offset: int
    end: int
    ratio: float
    itemsize: int


def _streams(program: isa.Program) -> list[_Stream]:
    out = []
    for s in program.streams:
        data = program.constants[s.offset : s.end]
        ratio = constant_codec.encoded_size(data, s.dtype) / s.size
        out.append(_Stream(s.offset, s.end, ratio, isa.DTYPES[s.dtype][0]))
    return out


class CycleModel:
    """Costs and schedules the instructions of one program on one target."""

    def __init__(self, program: isa.Program, target: Target) -> None:
        self.program = program
        self.target = target
        self.memories = {r.kind: memory_for(r, r.kind, target) for r in program.regions}
        # Without a decoder the target holds the constants decoded: no stream is cheaper.
        self.streams = _streams(program) if target.weight_decoder is not None else []
        self.stream_starts = [s.offset for s in self.streams]

    def encoded(self, t: isa.TensorRef) -> tuple[float, int]:
        """For a read of the constants: the fraction of its bytes the bus moves (streams
        move their encoded bytes, a part of a stream its share of them) and the elements
        the weight decoder expands."""
        if not self.streams or t.region != "constants":
            return 1.0, 0
        saved, elements = 0.0, 0
        first = max(bisect.bisect_right(self.stream_starts, t.offset) - 1, 0)
        for s in self.streams[first:]:
            if s.offset >= t.end:
                break
            overlap = min(s.end, t.end) - max(s.offset, t.offset)
            if overlap > 0:
                saved += overlap * (1 - s.ratio)
                elements += overlap // s.itemsize
        return 1 - saved / t.extent, elements

    def memory(self, t: isa.TensorRef) -> Memory:
        if t.region not in self.memories:
            self.memories[t.region] = memory_for(None, t.region, self.target)
        return self.memories[t.region]

    def traffic(self, inst: isa.Instruction) -> tuple[dict, dict, dict[str, int]]:
        """(bytes read, bytes written per memory, memory cycles per memory)."""
        reads: dict[str, int] = {}
        writes: dict[str, int] = {}
        moved: dict[str, int] = {}  # burst-rounded bytes per memory
        latency: dict[str, int] = {}
        decoded: dict[str, int] = {}  # elements the weight decoder expands, per memory
        for refs, counts, is_write in ((inst.read(), reads, False), (inst.written(), writes, True)):
            for t in refs:
                m = self.memory(t)
                fraction, elements = (1.0, 0) if is_write else self.encoded(t)
                counts[m.name] = counts.get(m.name, 0) + distinct_bytes(t)
                bus = math.ceil(burst_bytes(t, m.burst_length) * fraction)
                moved[m.name] = moved.get(m.name, 0) + bus
                decoded[m.name] = decoded.get(m.name, 0) + elements
                wait = m.write_latency if is_write else m.read_latency
                latency[m.name] = max(latency.get(m.name, 0), wait)
        cycles = {}
        decoder = self.target.weight_decoder
        for name, n in moved.items():
            m = self.target.memory(name)
            cycles[name] = latency[name] + math.ceil(n / m.bytes_per_cycle)
            if decoder is not None and decoded[name]:  # the decoder streams behind the bus
                decode = math.ceil(decoded[name] / decoder.elements_per_cycle)
                cycles[name] = max(cycles[name], latency[name] + decode)
        return reads, writes, cycles

    def cost(self, index: int, inst: isa.Instruction, start: int) -> InstructionCost:
        reads, writes, memory = self.traffic(inst)
        compute = compute_cycles(inst, self.target)
        if inst.op == "dma":  # the read and write sides are pipelined: the slower one counts
            duration = max(memory.values(), default=0)
        elif inst.op == "host":
            duration = compute
        else:
            duration = max(compute, *memory.values()) if memory else compute
        layer = UNASSIGNED if inst.layer is None else self.program.layers[inst.layer]
        return InstructionCost(
            index,
            inst.op,
            inst.engine,
            layer,
            start,
            start + duration,
            compute,
            memory,
            inst.macs(),
            reads,
            writes,
        )

    def schedule(self) -> list[InstructionCost]:
        """Start each instruction when its engine is free and its dependencies are done."""
        free = dict.fromkeys(isa.ENGINES, 0)
        costs: list[InstructionCost] = []
        for index, inst in enumerate(self.program.instructions):
            start = max([free[inst.engine], *(costs[d].end for d in inst.deps)])
            cost = self.cost(index, inst, start)
            free[inst.engine] = cost.end
            costs.append(cost)
        return costs

    def profile(self) -> Profile:
        costs = self.schedule()
        total = max((c.end for c in costs), default=0)
        names = list(self.program.layers)
        if any(c.layer == UNASSIGNED for c in costs):
            names.append(UNASSIGNED)
        layers = {name: LayerProfile(name) for name in names}
        busy = dict.fromkeys(isa.ENGINES, 0)
        for c in costs:
            layer = layers[c.layer]
            if not layer.instructions:
                layer.start = c.start
            layer.start, layer.end = min(layer.start, c.start), max(layer.end, c.end)
            layer.instructions += 1
            layer.macs += c.macs
            layer.busy[c.engine] = layer.busy.get(c.engine, 0) + c.cycles
            busy[c.engine] += c.cycles
            _add(layer.bytes_read, c.bytes_read)
            _add(layer.bytes_written, c.bytes_written)
        for (name, engine), cycles in attribute_by_engine(costs).items():
            layers[name].cycles += cycles
            layers[name].timeline[engine] = cycles
        mpc = self.target.macs_per_cycle
        for layer in layers.values():
            layer.utilization = _ratio(layer.macs, layer.cycles * mpc)
            layer.share = _ratio(layer.cycles, total)
        return Profile(
            self.target.name,
            self.target.clock_mhz,
            mpc,
            total,
            costs,
            list(layers.values()),
            busy,
            {m.name: m.bytes_per_cycle for m in self.target.memories},
            share(self.program),
            self.target.host.name,
        )


def _add(into: dict[str, int], more: dict[str, int]) -> None:
    for key, value in more.items():
        into[key] = into.get(key, 0) + value


PRIORITY = {"compute": 0, "dma": 1, "host": 2}


def attribute(costs: Iterable[InstructionCost]) -> dict[str, int]:
    """Cycles per layer: each stretch of the timeline goes to the layer of the instruction
    running then, compute before DMA before host (hidden DMA costs nothing), so the
    layers' cycles sum to the total."""
    result: dict[str, int] = {}
    for (layer, _), cycles in attribute_by_engine(costs).items():
        result[layer] = result.get(layer, 0) + cycles
    return result


def attribute_by_engine(costs: Iterable[InstructionCost]) -> dict[tuple[str, str], int]:
    """`attribute`'s cycles per (layer, engine of the instruction that owns them)."""
    result: dict[tuple[str, str], int] = {}
    for lo, hi, owner in _owners(costs):
        key = (owner.layer, owner.engine)
        result[key] = result.get(key, 0) + hi - lo
    return result


def owned_spans(costs: Iterable[InstructionCost]) -> list[tuple[str, int, int]]:
    """(layer, start, end) of the timeline's stretches, each owned by one layer as `attribute`
    counts them, neighbours of one layer merged: disjoint, in time order."""
    spans: list[tuple[str, int, int]] = []
    for lo, hi, owner in _owners(costs):
        if spans and spans[-1][0] == owner.layer and spans[-1][2] == lo:
            spans[-1] = (owner.layer, spans[-1][1], hi)
        else:
            spans.append((owner.layer, lo, hi))
    return spans


def _owners(costs: Iterable[InstructionCost]) -> Iterator[tuple[int, int, InstructionCost]]:
    """Each stretch [lo, hi) of the timeline with the instruction that owns it."""
    events: dict[int, list[tuple[bool, InstructionCost]]] = {}
    for c in costs:
        if c.cycles:
            events.setdefault(c.start, []).append((True, c))
            events.setdefault(c.end, []).append((False, c))
    running: dict[int, InstructionCost] = {}  # at most one per engine
    edges = sorted(events)
    for lo, hi in zip(edges, [*edges[1:], edges[-1]] if edges else [], strict=True):
        for starts, c in events[lo]:
            if starts:
                running[c.index] = c
            else:
                running.pop(c.index, None)
        if running and hi > lo:
            yield lo, hi, min(running.values(), key=lambda c: (PRIORITY.get(c.engine, 3), c.index))


def estimate(program: isa.Program, target: Target) -> Profile:
    """The profile of `program` on `target`."""
    return CycleModel(program, target).profile()
