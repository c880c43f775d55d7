"""The cycle model against a second model written here from docs/cycle-model.md alone.

Random small programs (every instruction kind, strided, padded, transposed and broadcast
views, dependencies, layers, a region whose memory the target lacks or that the program does
not declare) on random targets (MAC array shapes that do not divide the work, memories with
fractional clock scales, distinct read and write latencies, a host CPU at another clock).
The reference counts bytes from the views' element addresses (numpy), rounds each run of
consecutive addresses to bursts, schedules the engines as the document's `start`/`end`
formulas say and attributes every cycle of the timeline to its owner one by one, so none of
it goes through the helpers of runtime/cycle_model.py.
"""

from __future__ import annotations

import math
import struct
import tomllib
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from npu_programs import CTX, TINY, tensor
from xdsl.parser import Parser

from npuc.backend.npubin import encode_program, program_op
from npuc.dialects.npu_isa import (
    ConstantStream,
    Instruction,
    IODesc,
    Program,
    Region,
    TensorRef,
    default_params,
)
from npuc.runtime.cycle_model import attribute, estimate, owned_spans
from npuc.target import Target, parse_target, targets_dir

ITEMSIZE = {"i8": 1, "u8": 1, "i16": 2, "i32": 4, "i64": 8}
PRIORITY = ("compute", "dma", "host")  # who owns a stretch where engines overlap
NO_LAYER = "(no layer)"
LAYERS = ("stem", "body", "head", "unused")


# --------------------------------------------------------------------------- random targets


def random_target(rng: np.random.Generator) -> Target:
    data = tomllib.loads((targets_dir() / "mcu-64.toml").read_text())
    data["clock_mhz"] = 300
    data["mac_array"] = {
        "output_channels": int(rng.choice([1, 3, 8])),
        "pixels": int(rng.choice([1, 2, 4])),
        "input_channels": int(rng.choice([1, 5, 8])),
    }
    for name, writable in (("sram", True), ("flash", False), ("dram", True)):
        data["memories"][name] = {
            "kind": "sram" if writable else "onchip_flash",
            "size": "4 MiB",
            "bus_width": int(rng.choice([2, 4, 8, 16])),
            "clock_scale": float(rng.choice([0.25, 0.5, 0.75, 1.0, 1.5])),
            "burst_length": int(rng.choice([1, 8, 16, 32, 64])),
            "read_latency": int(rng.integers(0, 40)),
            "write_latency": int(rng.integers(0, 40)),
            "writable": writable,
        }
    data["placement"] = {"constants": "flash", "arena": "sram", "io": "dram"}
    data["host"] = {
        "name": "cpu",
        "clock_mhz": 200,
        "cycles_per_element": int(rng.integers(1, 7)),
        "macs_per_cycle": 1,
    }
    return parse_target(data)


# --------------------------------------------------------------------------- random programs


@dataclass
class Views:
    rng: np.random.Generator

    def view(self, region: str, shape: tuple[int, ...], dtype: str, read: bool) -> TensorRef:
        """A view of `shape`: row-major, rows padded apart, every other element, transposed
        in memory, or (a read) broadcast along some dimensions."""
        rng = self.rng
        rank = len(shape)
        layout = rng.choice(["row-major", "padded", "stepped", "transposed", "broadcast"])
        order = list(range(rank))
        if layout == "transposed":
            order = list(rng.permutation(rank))
        strides = [0] * rank
        step = 2 if layout == "stepped" else 1
        for position, d in enumerate(reversed(order)):
            strides[d] = step
            step *= shape[d]
            if layout == "padded" and position == 0:
                step += int(rng.integers(1, 5))
        if layout == "broadcast" and read:
            for d in range(rank):
                if rng.random() < 0.5:
                    strides[d] = 0
        for d in range(rank):  # a dimension of size 1 never moves: any stride is its
            if shape[d] == 1 and rng.random() < 0.5:
                strides[d] = int(rng.integers(1, 50))
        offset = int(rng.integers(0, 64)) * ITEMSIZE[dtype]
        return tensor(region, offset, shape, dtype, strides)


def dims(rng: np.random.Generator, n: int, high: int = 6) -> tuple[int, ...]:
    return tuple(int(v) for v in rng.integers(1, high + 1, n))


def host_body() -> str:
    """The body of tiny.mlir's host op: an argmax, which has no MACs."""
    program = program_op(Parser(CTX, TINY.read_text()).parse_module()).program()
    return next(i for i in program.instructions if i.op == "host").params["body"]


def random_instruction(rng: np.random.Generator, views: Views, kind: str, body: str):
    """(op, operands, extra params) of one instruction of `kind`."""

    def src(shape, dtype="i8"):
        region = str(rng.choice(["mutable", "activations", "sram", "constants"]))
        return views.view(region, shape, dtype, read=True)

    def dst(shape, dtype="i8"):
        region = str(rng.choice(["mutable", "activations", "sram"]))
        return views.view(region, shape, dtype, read=False)

    if kind in ("conv2d", "depthwise", "grouped"):
        n, h, w = int(rng.integers(1, 3)), *dims(rng, 2, 5)
        kh, kw = dims(rng, 2, 3)
        if kind == "conv2d":
            groups, ci, co = 1, int(rng.integers(1, 12)), int(rng.integers(1, 12))
        elif kind == "depthwise":
            groups = ci = co = int(rng.integers(2, 12))
        else:
            groups = int(rng.integers(2, 4))
            ci, co = groups * int(rng.integers(2, 5)), groups * int(rng.integers(1, 5))
        ifm, ofm = src((n, ci, h + kh - 1, w + kw - 1)), dst((n, co, h, w))
        weights = src((co, ci // groups, kh, kw))
        table = src((co, 4), "i32")
        return "conv2d", (ifm, weights, table, ofm), {"groups": groups}
    if kind == "matmul":
        b, m, k, n = dims(rng, 4, 9)
        lhs, rhs, table = src((b, m, k)), src((b, k, n)), src((n, 4), "i32")
        return "matmul", (lhs, rhs, table, dst((b, m, n))), {}
    if kind == "pool":
        n, c, h, w = dims(rng, 4)
        kh, kw = dims(rng, 2, 3)
        ifm = src((n, c, h + kh - 1, w + kw - 1))
        return "pool", (ifm, dst((n, c, h, w))), {"mode": "max", "kernel": (kh, kw)}
    shape = dims(rng, int(rng.integers(1, 4)), 9)
    if kind == "eltwise":
        return "eltwise", (src(shape), src(shape), dst(shape)), {"kind": "add"}
    if kind == "lut":
        return "lut", (src(shape), src((256,)), dst(shape)), {"table_base": -128}
    if kind in ("softmax", "move"):
        return kind, (src(shape), dst(shape)), {}
    if kind == "dma":
        dtype = str(rng.choice(["i8", "i16", "i32"]))
        return "dma", (src(shape, dtype), dst(shape, dtype)), {}
    assert kind == "host"
    return "host", (src((1, 10)), dst((1,), "i64")), {"body": body, "inputs": 1}


KINDS = (
    "conv2d",
    "depthwise",
    "grouped",
    "matmul",
    "pool",
    "eltwise",
    "lut",
    "softmax",
    "move",
    "dma",
    "dma",
    "host",
)


def random_program(rng: np.random.Generator, body: str) -> Program:
    views = Views(rng)
    instructions = []
    for index in range(int(rng.integers(1, 13))):
        op, operands, extra = random_instruction(rng, views, str(rng.choice(KINDS)), body)
        params = default_params(op, operands)
        params.update(extra)
        earlier = rng.permutation(index)[: int(rng.integers(0, 3))] if index else []
        deps = tuple(sorted(int(d) for d in earlier))
        layer = int(rng.integers(0, 3)) if rng.random() < 0.8 else None
        instructions.append(Instruction(op, operands, params, deps, layer))
    regions = [
        Region("constants", 1 << 16, str(rng.choice(["flash", "rom"]))),  # rom: not on the target
        Region("mutable", 1 << 16, str(rng.choice(["dram", "sram", "tcm"]))),
        Region("sram", 1 << 16, "sram"),
    ]
    if rng.random() < 0.5:  # else the target's arena holds activations by placement
        regions.append(Region("activations", 1 << 16, str(rng.choice(["sram", "dram"]))))
    x = IODesc("x", tensor("mutable", 0, (16,)))
    return Program("p", tuple(regions), (x,), (x,), LAYERS, tuple(instructions))


# --------------------------------------------------------------------------- the reference


def addresses(t: TensorRef) -> np.ndarray:
    """The distinct element offsets a view touches, sorted."""
    index = np.indices(t.shape).reshape(len(t.shape), -1)
    return np.unique((np.array(t.strides)[:, None] * index).sum(axis=0))


def bytes_of(t: TensorRef, burst: int) -> tuple[int, int]:
    """(distinct bytes, bytes the bus moves: each run of consecutive elements in whole bursts)."""
    at = addresses(t)
    item = ITEMSIZE[t.dtype]
    cuts = np.flatnonzero(np.diff(at) != 1) + 1
    runs = np.diff(np.concatenate([[0], cuts, [len(at)]])) * item
    return len(at) * item, int(sum(-(-int(r) // burst) * burst for r in runs))


def memory_of(program: Program, target: Target, region: str) -> Any:
    names = {m.name: m for m in target.memories}
    declared = {r.kind: r.memory for r in program.regions}
    if declared.get(region) in names:
        return names[declared[region]]
    by_kind = {"constants": target.placement.constants, "mutable": target.placement.io}
    return names[by_kind.get(region, target.placement.arena)]


def numel(t: TensorRef) -> int:
    return math.prod(t.shape)


def reference_compute(inst: Instruction, target: Target, host_clock: float) -> int:
    oc = target.mac_array.output_channels
    px = target.mac_array.pixels
    ic = target.mac_array.input_channels

    def up(a: int, b: int) -> int:
        return -(-a // b)

    if inst.op == "conv2d":
        _, weights, _, ofm = inst.operands
        n, co, oh, ow = ofm.shape
        _, ci_g, kh, kw = weights.shape
        groups = inst.params["groups"]
        pixels = n * oh * ow
        if ci_g == 1 and groups > 1:
            return up(co, oc) * up(pixels, px) * kh * kw
        return groups * up(co // groups, oc) * up(pixels, px) * up(ci_g, ic) * kh * kw
    if inst.op == "matmul":
        b, m, k = inst.operands[0].shape
        return b * up(m, px) * up(inst.operands[3].shape[2], oc) * up(k, ic)
    outputs = numel(inst.operands[-1])
    if inst.op == "pool":
        kh, kw = inst.params["kernel"]
        return up(outputs, oc * px) * kh * kw
    if inst.op in ("eltwise", "lut", "move"):
        return up(outputs, oc * px)
    if inst.op == "softmax":
        return 4 * up(outputs, oc * px)
    if inst.op == "host":  # argmax: no host MACs, so elements x cycles per element
        per_element = target.host.cycles_per_element
        assert per_element == int(per_element)
        host_cycles = sum(numel(t) for t in inst.operands) * int(per_element)
        return -(-host_cycles * int(target.clock_mhz) // int(host_clock))
    return 0


def written(inst: Instruction) -> list[TensorRef]:
    if inst.op == "host":
        return list(inst.operands[inst.params["inputs"] :])
    return [inst.operands[-1]]  # docs/binary-format.md: every other opcode writes its last


@dataclass
class Cost:
    engine: str
    layer: str
    start: int
    end: int
    compute: int
    memory: dict[str, int]
    macs: int
    read: dict[str, int]
    written: dict[str, int]


def reference_costs(program: Program, target: Target) -> list[Cost]:
    free = {"dma": 0, "compute": 0, "host": 0}
    costs: list[Cost] = []
    for inst in program.instructions:
        outs = written(inst)
        ins = [t for t in inst.operands if all(t is not o for o in outs)]
        reads: dict[str, int] = {}
        writes: dict[str, int] = {}
        moved: dict[str, int] = {}
        latency: dict[str, int] = {}
        for t, is_write in [*((t, False) for t in ins), *((t, True) for t in outs)]:
            m = memory_of(program, target, t.region)
            distinct, bus = bytes_of(t, m.burst_length)
            into = writes if is_write else reads
            into[m.name] = into.get(m.name, 0) + distinct
            moved[m.name] = moved.get(m.name, 0) + bus
            wait = m.write_latency if is_write else m.read_latency
            latency[m.name] = max(latency.get(m.name, 0), wait)
        memory = {}
        for name, n in moved.items():
            m = next(m for m in target.memories if m.name == name)
            memory[name] = latency[name] + math.ceil(n / (m.bus_width * m.clock_scale))
        compute = reference_compute(inst, target, target.host.clock_mhz)
        engine = {"dma": "dma", "host": "host"}.get(inst.op, "compute")
        if inst.op == "dma":
            duration = max(memory.values())
        elif inst.op == "host":
            duration = compute
        else:
            duration = max(compute, *memory.values())
        start = max([free[engine], *(costs[d].end for d in inst.deps)])
        free[engine] = start + duration
        macs = 0
        if inst.op == "conv2d":
            macs = numel(inst.operands[3]) * math.prod(inst.operands[1].shape[1:])
        elif inst.op == "matmul":
            macs = numel(inst.operands[3]) * inst.operands[0].shape[2]
        layer = NO_LAYER if inst.layer is None else program.layers[inst.layer]
        costs.append(
            Cost(engine, layer, start, start + duration, compute, memory, macs, reads, writes)
        )
    return costs


def owners(costs: list[Cost], total: int) -> list[Cost | None]:
    """The instruction that owns each cycle of the timeline (None: nothing runs)."""
    owner: list[Cost | None] = [None] * total
    for engine in reversed(PRIORITY):  # the higher priority engines overwrite
        for c in costs:
            if c.engine == engine:
                owner[c.start : c.end] = [c] * (c.end - c.start)
    return owner


# --------------------------------------------------------------------------- the comparison


@pytest.fixture(scope="module")
def body() -> str:
    return host_body()


@pytest.mark.parametrize("seed", range(40))
def test_random_programs_cost_what_the_document_says(seed: int, body: str) -> None:
    rng = np.random.default_rng(seed)
    target = random_target(rng)
    program = random_program(rng, body)
    profile = estimate(program, target)
    want = reference_costs(program, target)

    for got, c in zip(profile.instructions, want, strict=True):
        assert (got.engine, got.layer, got.start, got.end) == (c.engine, c.layer, c.start, c.end)
        assert got.compute_cycles == c.compute, got
        assert got.memory_cycles == c.memory, got
        assert (got.macs, got.bytes_read, got.bytes_written) == (c.macs, c.read, c.written)

    total = max(c.end for c in want)
    assert profile.total_cycles == total
    owner = owners(want, total)
    assert None not in owner  # every instruction starts at 0 or when another ends
    mpc = target.mac_array.macs_per_cycle
    names = [*LAYERS, NO_LAYER] if any(c.layer == NO_LAYER for c in want) else list(LAYERS)
    assert [layer.name for layer in profile.layers] == names
    for layer in profile.layers:
        mine = [c for c in want if c.layer == layer.name]
        cycles = sum(1 for o in owner if o is not None and o.layer == layer.name)
        timeline: dict[str, int] = {}
        for o in owner:
            if o is not None and o.layer == layer.name:
                timeline[o.engine] = timeline.get(o.engine, 0) + 1
        busy: dict[str, int] = {}
        read: dict[str, int] = {}
        wrote: dict[str, int] = {}
        for c in mine:
            busy[c.engine] = busy.get(c.engine, 0) + c.end - c.start
            for into, more in ((read, c.read), (wrote, c.written)):
                for k, v in more.items():
                    into[k] = into.get(k, 0) + v
        macs = sum(c.macs for c in mine)
        assert (layer.cycles, layer.timeline, layer.busy) == (cycles, timeline, busy), layer
        assert (layer.macs, layer.instructions) == (macs, len(mine)), layer
        assert (layer.bytes_read, layer.bytes_written) == (read, wrote), layer
        span = (min(c.start for c in mine), max(c.end for c in mine)) if mine else (0, 0)
        assert (layer.start, layer.end) == span, layer
        assert layer.utilization == pytest.approx(macs / (cycles * mpc) if cycles else 0.0)
        assert layer.share == pytest.approx(cycles / total)
    assert sum(layer.cycles for layer in profile.layers) == total
    assert attribute(profile.instructions) == {
        layer.name: layer.cycles for layer in profile.layers if layer.cycles
    }

    spans: list[tuple[str, int, int]] = []
    for cycle, o in enumerate(owner):
        assert o is not None
        if spans and spans[-1][0] == o.layer:
            spans[-1] = (o.layer, spans[-1][1], cycle + 1)
        else:
            spans.append((o.layer, cycle, cycle + 1))
    assert owned_spans(profile.instructions) == spans

    busy = {e: sum(c.end - c.start for c in want if c.engine == e) for e in PRIORITY}
    assert profile.busy == busy
    assert profile.total_macs == sum(c.macs for c in want)
    assert profile.inference_ms == pytest.approx(total / 300e3)
    assert profile.inferences_per_s == pytest.approx(300e6 / total)
    assert profile.utilization == pytest.approx(profile.total_macs / (total * mpc))
    assert profile.memories == {m.name: m.bus_width * m.clock_scale for m in target.memories}
    assert (profile.target, profile.clock_mhz, profile.macs_per_cycle) == (target.name, 300, mpc)


def test_the_random_programs_reach_every_case(body: str) -> None:
    """The sample above meets what it is meant to test: every kind, overlap and fallback."""
    seen: set[str] = set()
    for seed in range(40):
        rng = np.random.default_rng(seed)
        target = random_target(rng)
        program = random_program(rng, body)
        costs = reference_costs(program, target)
        for inst, c in zip(program.instructions, costs, strict=True):
            seen.add(inst.op)
            if inst.op == "conv2d" and inst.params["groups"] > 1:
                seen.add("depthwise" if inst.operands[1].shape[1] == 1 else "grouped")
            if inst.op not in ("dma", "host"):
                seen.add("memory bound" if max(c.memory.values()) > c.compute else "compute bound")
            if any(t.strides.count(0) for t in inst.operands):
                seen.add("broadcast")
        starts = {c.start for c in costs}
        if any(
            a.engine != b.engine and a.start < b.end and b.start < a.end
            for a in costs
            for b in costs
        ):
            seen.add("overlap")
        if any(d for inst in program.instructions for d in inst.deps):
            seen.add("deps")
        if not any(r.kind == "activations" for r in program.regions):
            seen.add("undeclared region")
        if any(r.memory in ("rom", "tcm") for r in program.regions):
            seen.add("unknown memory")
        assert 0 in starts
    assert seen >= {
        *("conv2d", "depthwise", "grouped", "matmul", "pool", "eltwise", "lut"),
        *("softmax", "move", "dma", "host", "memory bound", "compute bound", "broadcast"),
        *("overlap", "deps", "undeclared region", "unknown memory"),
    }, seen


# --------------------------------------------------------------------------- encoded constants

STREAMS = ((64, 256, "i8"), (512, 192, "i8"), (768, 128, "i16"))  # (offset, size, type)
READS = (  # (offset, bytes) of reads of the constants, one DMA each
    (0, 64),  # before the first stream
    (64, 256),  # exactly the first
    (128, 64),  # inside the first
    (32, 400),  # the first whole, the gap, the second's start
    (320, 448),  # the gap, the second, the gap, the third's start
    (896, 64),  # after the last
    (800, 96),  # the third's end and beyond
    (511, 2),  # one byte of the second
    (767, 4),  # three bytes of the third (i16): one whole element to decode
)


def streamed_program(constants_memory: str = "flash") -> Program:
    rng = np.random.default_rng(7)
    constants = bytearray(rng.integers(-128, 128, 1024, dtype=np.int8).tobytes())
    for offset, size, dtype in STREAMS:  # small values: the streams code smaller than raw
        item = ITEMSIZE[dtype]
        small = rng.integers(-3, 4, size // item).astype(f"<i{item}")
        constants[offset : offset + size] = small.tobytes()
    regions = (Region("constants", 1024, constants_memory), Region("sram", 2048, "sram"))
    body = tuple(
        Instruction(
            "dma",
            (tensor("constants", at, (n,)), tensor("sram", at, (n,))),
            {},
            (),
            None,
        )
        for at, n in READS
    )
    # SRAM bytes at the streams' offsets: not constants, so every byte counts
    body += (
        Instruction(
            "dma", (tensor("sram", 64, (448,)), tensor("sram", 1536, (448,))), {}, (), None
        ),
    )
    x = IODesc("x", tensor("sram", 1024, (16,)))
    return Program(
        "p",
        regions,
        (x,),
        (x,),
        (),
        body,
        bytes(constants),
        streams=tuple(ConstantStream(o, s, d) for o, s, d in STREAMS),
    )


def payload_sizes(program: Program) -> list[int]:
    """Each stream's payload size, read from the encoded file as docs/binary-format.md lays
    out version 2.0's CONSTANTS section (entry i at 16 + 32i, payload size u32 at 24)."""
    data = encode_program(program)
    assert struct.unpack_from("<HH", data, 4) == (2, 0)
    (count,) = struct.unpack_from("<I", data, 12)
    for i in range(count):
        kind, _, offset, _, _, _ = struct.unpack_from("<IIQQII", data, 32 + 32 * i)
        if kind == 6:
            (streams,) = struct.unpack_from("<I", data, offset + 8)
            return [
                struct.unpack_from("<I", data, offset + 16 + 32 * j + 24)[0] for j in range(streams)
            ]
    raise AssertionError("no CONSTANTS section")


def decoder_target(elements_per_cycle: float | None) -> Target:
    data = tomllib.loads((targets_dir() / "ethos-u55-256-hee.toml").read_text())
    for memory in data["memories"].values():
        memory["burst_length"] = 1  # no rounding: the encoded share is the whole figure
    data["memories"]["flash"]["clock_scale"] = 0.25  # 2 B/cycle
    if elements_per_cycle is None:
        del data["weight_decoder"]
    else:
        data["weight_decoder"] = {"elements_per_cycle": elements_per_cycle}
    return parse_target(data)


@pytest.mark.parametrize("rate", [None, 0.5, 2.0, 64.0])
def test_reads_of_encoded_streams_move_their_payloads_share(rate: float | None) -> None:
    """docs/cycle-model.md, "Encoded constants": each byte of a read inside stream s counts
    payload_s / size_s bytes; the decoder's elements bound the memory's cycles from below.
    Without a decoder every byte counts."""
    program = streamed_program()
    payloads = payload_sizes(program)
    assert all(p < s for p, (_, s, _) in zip(payloads, STREAMS, strict=True))
    target = decoder_target(rate)
    flash = next(m for m in target.memories if m.name == "flash")
    sram = next(m for m in target.memories if m.name == "sram")
    profile = estimate(program, target)
    *reads, sram_copy = profile.instructions
    latency = max(sram.read_latency, sram.write_latency)  # reads and writes share the port
    assert sram_copy.memory_cycles == {"sram": latency + math.ceil(Fraction(2 * 448, 8))}
    for cost, (at, n) in zip(reads, READS, strict=True):
        moved, elements = Fraction(n), 0
        for (offset, size, dtype), payload in zip(STREAMS, payloads, strict=True):
            inside = len(set(range(at, at + n)) & set(range(offset, offset + size)))
            if rate is not None:  # each byte inside counts payload / size bytes
                moved -= inside * (1 - Fraction(payload, size))
                elements += inside // ITEMSIZE[dtype]  # whole elements the decoder expands
        bus = flash.read_latency + math.ceil(moved / Fraction(2))
        if elements:
            bus = max(bus, flash.read_latency + math.ceil(Fraction(elements) / Fraction(rate)))
        write = sram.write_latency + math.ceil(Fraction(n, 8))
        assert cost.memory_cycles == {"flash": bus, "sram": write}, (at, n)
        assert cost.end - cost.start == max(bus, write)
        assert cost.bytes_read == {"flash": n}


def test_only_reads_of_streams_feed_the_decoder() -> None:
    """Constants kept in the SRAM that the copies write: the decoder's bound on the SRAM's
    cycles counts the elements read from streams; the written bytes add none."""
    program = streamed_program("sram")
    payloads = payload_sizes(program)
    rate = 0.5  # slow: the decoder bounds every read of a stream
    target = decoder_target(rate)
    sram = next(m for m in target.memories if m.name == "sram")
    latency = max(sram.read_latency, sram.write_latency)
    *reads, _ = estimate(program, target).instructions
    for cost, (at, n) in zip(reads, READS, strict=True):
        moved, elements = Fraction(2 * n), 0  # the bytes read, as if raw, and written
        for (offset, size, dtype), payload in zip(STREAMS, payloads, strict=True):
            inside = len(set(range(at, at + n)) & set(range(offset, offset + size)))
            moved -= inside * (1 - Fraction(payload, size))
            elements += inside // ITEMSIZE[dtype]
        bus = latency + math.ceil(moved / Fraction(8))
        if elements:
            bus = max(bus, latency + math.ceil(Fraction(elements) / Fraction(rate)))
        assert cost.memory_cycles == {"sram": bus}, (at, n)


def test_a_program_without_instructions_takes_no_time() -> None:
    """No instruction: 0 cycles, every layer empty, and an inference rate without bound."""
    x = IODesc("x", tensor("mutable", 0, (16,)))
    program = Program("p", (Region("mutable", 64, "sram"),), (x,), (x,), ("a", "b"), ())
    profile = estimate(program, decoder_target(None))
    assert profile.total_cycles == 0 and profile.instructions == []
    assert profile.inferences_per_s == math.inf
    assert profile.utilization == 0.0 and profile.total_macs == 0
    assert profile.busy == {"dma": 0, "compute": 0, "host": 0}
    assert [(layer.name, layer.cycles, layer.share) for layer in profile.layers] == [
        ("a", 0, 0.0),
        ("b", 0, 0.0),
    ]


def test_dma_owns_the_cycles_it_shares_with_the_host(body: str) -> None:
    """docs/cycle-model.md, "Per layer": where engines overlap, compute owns the stretch, then
    DMA, then host, whatever the instructions' order. A host op (index 0, layer `host`) runs
    beside a shorter DMA (index 1, layer `dma`), then beside a compute instruction (index 2)."""
    target = decoder_target(None)
    x = tensor("mutable", 0, (1, 10))
    host = Instruction(
        "host", (x, tensor("mutable", 16, (1,), "i64")), {"body": body, "inputs": 1}, (), 0
    )
    dma = Instruction("dma", (tensor("mutable", 32, (16,)), tensor("sram", 0, (16,))), {}, (), 1)
    move = Instruction("move", (tensor("sram", 0, (16,)), tensor("sram", 64, (16,))), {}, (1,), 2)
    regions = (Region("mutable", 128, "sram"), Region("sram", 256, "sram"))
    program = Program(
        "p",
        regions,
        (IODesc("x", x),),
        (IODesc("x", x),),
        ("host", "dma", "move"),
        (host, dma, move),
    )
    want = reference_costs(program, target)
    assert want[0].start == want[1].start == 0 and want[1].end < want[0].end  # the overlap
    assert want[1].end < want[2].end and want[2].start < want[0].end  # compute over it
    profile = estimate(program, target)
    owner = owners(want, max(c.end for c in want))
    cycles = {layer.name: layer.cycles for layer in profile.layers}
    assert cycles == {n: sum(1 for o in owner if o is not None and o.layer == n) for n in cycles}
    assert cycles == {"host": 0, "dma": want[1].end, "move": want[2].end - want[2].start}
