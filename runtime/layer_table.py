"""One row per layer of a profiled program, as the reports show it (NAME.layers.csv, the
HTML profile, `npuc.compile(...).layers`): what the layer does, where it runs, its cycles and
what bounds them, its MACs, the bytes it moves per memory and the SRAM in use meanwhile.

Vela's per-layer CSV (`--verbose-performance`) has the same kind of columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from npuc.dialects import npu_isa as isa

from .cycle_model import UNASSIGNED, Profile
from .host_cost import host_ops

BOUNDS = ("compute", "memory", "DMA", "host")


@dataclass
class LayerRow:
    index: int
    name: str
    op: str  # what the layer's instructions do: "conv2d", "depthwise conv2d", "host: softmax"
    runs_on: str  # "NPU", "host" or "NPU+host"
    cycles: int
    cycles_share: float  # of the whole inference
    compute_cycles: int  # timeline cycles owned by the compute engine
    dma_cycles: int  # DMA time no compute hides
    host_cycles: int
    macs: int
    macs_share: float
    utilization: float  # MACs over the MAC array's capacity in `cycles`
    bytes_read: dict[str, int] = field(default_factory=dict)  # memory -> bytes
    bytes_written: dict[str, int] = field(default_factory=dict)
    sram_in_use: int | None = None  # None: no memory plan given
    bound: str = "compute"  # see `bound`


def layer_rows(profile: Profile, program: isa.Program | None = None) -> list[LayerRow]:
    """The rows of `profile`'s layers, in program order (`op` empty without the program)."""
    kinds = _layer_ops(program) if program is not None else {}
    compute, memory = _compute_and_memory(profile)
    total_macs = profile.total_macs
    rows = []
    for i, layer in enumerate(profile.layers):
        ops = kinds.get(layer.name, [])
        host = [o for o in ops if o.startswith("host: ")]
        runs_on = "NPU+host" if host and len(host) < len(ops) else "host" if host else "NPU"
        row = LayerRow(
            index=i,
            name=layer.name,
            op=", ".join(ops) or ("DMA" if layer.busy.get("dma") else ""),
            runs_on=runs_on,
            cycles=layer.cycles,
            cycles_share=layer.share,
            compute_cycles=layer.timeline.get("compute", 0),
            dma_cycles=layer.timeline.get("dma", 0),
            host_cycles=layer.timeline.get("host", 0),
            macs=layer.macs,
            macs_share=layer.macs / total_macs if total_macs else 0.0,
            utilization=layer.utilization,
            bytes_read=dict(layer.bytes_read),
            bytes_written=dict(layer.bytes_written),
            sram_in_use=profile.sram.get(layer.name) if profile.sram else None,
        )
        row.bound = bound(row, compute.get(layer.name, 0), memory.get(layer.name, 0))
        rows.append(row)
    return rows


def bound(row: LayerRow, compute: int, memory: int) -> str:
    """What limits the layer: the host CPU, DMA the compute engine does not hide, the
    compute engine's own operand traffic ("memory": its instructions wait for bytes more
    than for MACs), or the MAC array ("compute")."""
    if row.host_cycles > max(row.compute_cycles, row.dma_cycles):
        return "host"
    if row.dma_cycles > row.compute_cycles:
        return "DMA"
    return "memory" if memory > compute else "compute"


def _compute_and_memory(profile: Profile) -> tuple[dict[str, int], dict[str, int]]:
    """Per layer, its compute instructions' MAC-array cycles and memory cycles (the slower
    memory of each instruction)."""
    compute: dict[str, int] = {}
    memory: dict[str, int] = {}
    for c in profile.instructions:
        if c.engine == "compute":
            compute[c.layer] = compute.get(c.layer, 0) + c.compute_cycles
            memory[c.layer] = memory.get(c.layer, 0) + max(c.memory_cycles.values(), default=0)
    return compute, memory


def _layer_ops(program: isa.Program) -> dict[str, list[str]]:
    """What each layer's instructions do, each kind once, in program order (DMA left out)."""
    found: dict[str, list[str]] = {}
    bodies: dict[str, list[str]] = {}  # a tiled host layer repeats one body: parse it once
    for inst in program.instructions:
        if inst.op == "dma":
            continue
        layer = UNASSIGNED if inst.layer is None else program.layers[inst.layer]
        kinds = found.setdefault(layer, [])
        for kind in _kinds(inst, bodies):
            if kind not in kinds:
                kinds.append(kind)
    return found


def _kinds(inst: isa.Instruction, bodies: dict[str, list[str]]) -> list[str]:
    p = inst.params
    if inst.op == "conv2d":
        groups = p.get("groups", 1)
        depthwise = groups > 1 and inst.operand("weights").shape[1] == 1
        return ["depthwise conv2d" if depthwise else "conv2d"]
    if inst.op == "pool":
        return [f"{p.get('mode', 'max')} pool"]
    if inst.op == "eltwise":
        return [str(p.get("kind", "eltwise"))]
    if inst.op == "host":
        body = p["body"]
        if body not in bodies:
            bodies[body] = [f"host: {op.name.split('.', 1)[-1]}" for op in host_ops(body)]
        return bodies[body]
    return [inst.op]
