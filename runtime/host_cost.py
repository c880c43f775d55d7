"""Host fallback: which ops of a program run on the host CPU, why, and what they cost.

An `npu.host` instruction carries the `nn`/`qnn` ops it runs as text (its body). Their
multiply-accumulates and the elements they move price them on the target's `[host]` CPU
(docs/targets.md); a plugin's op counts the multiply-accumulates its plugin's `host_costs`
entry gives. The NPU/host share sums them against the NPU's instructions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

from xdsl.dialects.builtin import AnyFloat, TensorType
from xdsl.ir import Operation

from npuc.dialects import npu_isa as isa
from npuc.plugin_registry import op_function
from npuc.target import Target

# Ops whose MACs count: output elements times the reduction each one needs.
_FILTER_OPS = ("conv2d", "depthwise_conv2d", "conv_transpose2d")
_MATMUL_OPS = ("matmul", "fully_connected", "gemm", "batch_matmul")


@dataclass(frozen=True)
class HostOp:
    """One op of a host body: `reason` says why it is not on the NPU."""

    name: str
    macs: int
    reason: str


def _numel(value) -> int:
    ty = value.type
    return math.prod(ty.get_shape()) if isinstance(ty, TensorType) else 1


def _macs(op: Operation) -> int:
    cost = op_function("host_costs", op.name, f"the host cost of '{op.name}'")
    if cost is not None:
        return int(cost(op))
    kind = op.name.partition(".")[2]
    if not op.results or len(op.operands) < 2:
        return 0
    out = _numel(op.results[0])
    weights = op.operands[1].type
    if not isinstance(weights, TensorType):
        return 0
    shape = weights.get_shape()
    if kind in _FILTER_OPS:
        return out * math.prod(shape[1:])
    if kind in _MATMUL_OPS:
        lhs = op.operands[0].type
        return out * (lhs.get_shape()[-1] if isinstance(lhs, TensorType) else 1)
    return 0


def _reason(op: Operation) -> str:
    if op.name.startswith("nn."):
        return "float op"
    floats = any(
        isinstance(v.type, TensorType) and isinstance(v.type.get_element_type(), AnyFloat)
        for v in (*op.operands, *op.results)
    )
    if op.name in ("qnn.quantize", "qnn.dequantize") or floats:
        return "float input or output"
    return "no NPU instruction"


@lru_cache(maxsize=256)
def host_ops(body: str) -> tuple[HostOp, ...]:
    """The model's ops a host body runs: not its closing npu.yield, nor the tiles' data
    movement (`tile.*`) it does for host ops of a tiled layer."""
    from .host import parse_body

    block = parse_body(body).blocks[0]
    return tuple(
        HostOp(op.name, _macs(op), _reason(op))
        for op in block.ops
        if op.name != "npu.yield" and not op.name.startswith("tile.")
    )


def host_cycles(inst: isa.Instruction, target: Target) -> int:
    """An npu.host instruction's duration in NPU cycles, on the target's host CPU."""
    host = target.host
    elements = sum(t.numel for t in inst.operands)
    macs = sum(op.macs for op in host_ops(inst.params["body"]))
    cycles = elements * host.cycles_per_element + macs / host.macs_per_cycle
    return math.ceil(cycles * target.clock_mhz / (host.clock_mhz or target.clock_mhz))


@dataclass
class Share:
    """How a program's layers and MACs split between the NPU and the host CPU."""

    npu_layers: int = 0
    host_layers: int = 0
    npu_macs: int = 0
    host_macs: int = 0
    host: list[tuple[str, HostOp]] = field(default_factory=list)  # (layer, op)

    def lines(self, host_name: str) -> list[str]:
        macs = self.npu_macs + self.host_macs
        percent = 100 * self.npu_macs / macs if macs else 100.0
        return [
            f"NPU: {self.npu_layers} layers, {self.npu_macs:,} MACs ({percent:.1f} %); "
            f"host ({host_name}): {self.host_layers} layers, {len(self.host)} ops, "
            f"{self.host_macs:,} MACs"
        ]

    def host_table(self) -> list[str]:
        if not self.host:
            return ["no op runs on the host"]
        width = max(len(layer) for layer, _ in self.host)
        return [
            f"  {layer:<{width}}  {op.name:<24} {op.macs:>12,} MACs  {op.reason}"
            for layer, op in self.host
        ]


def share(program: isa.Program) -> Share:
    """The NPU/host split of `program`: layers with an NPU compute instruction and layers with
    a host instruction (a layer may have both), and their MACs."""
    result = Share()
    npu: set[int | None] = set()
    host: set[int | None] = set()
    for inst in program.instructions:
        layer = "(no layer)" if inst.layer is None else program.layers[inst.layer]
        if inst.op == "host":
            ops = host_ops(inst.params["body"])
            if ops:
                host.add(inst.layer)
            for op in ops:
                result.host.append((layer, op))
                result.host_macs += op.macs
        elif inst.op != "dma":
            npu.add(inst.layer)
            result.npu_macs += inst.macs()
    result.npu_layers = len(npu - {None})
    result.host_layers = len(host - {None})
    return result
