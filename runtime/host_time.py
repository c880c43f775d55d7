"""Where the NPU runtime's host time goes: `Executor.timed_run` summed by kind of work.

Kinds: the convolutions by shape (1x1, depthwise, others), the output stage of the
convolutions and matmuls that run it as calls of their own (a compiled depthwise
convolution requantizes inside its one call, so its stage counts as depthwise),
elementwise instructions, data movement (DMA, move), host ops, and the other instructions
by name. tests/bench/bench_runtime.py prints them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from npuc.dialects import npu_isa as isa

from .executor import Executor
from .npu_requant import OUTPUT_STAGE

OUTPUT_STAGE_KIND = "output stage (requant)"


def instruction_kind(inst: isa.Instruction) -> str:
    """The kind of work an instruction is, for `host_times`."""
    if inst.op == "conv2d":
        weights = inst.operand("weights")
        if weights.shape[1] == 1 and inst.params["groups"] > 1:
            return "conv depthwise"
        return "conv 1x1" if weights.shape[2:] == (1, 1) else "conv (full)"
    if inst.op in ("dma", "move"):
        return "DMA / move"
    if inst.op == "eltwise":
        return "elementwise"
    if inst.op == "host":
        return "host ops"
    return inst.op


def host_times(
    executor: Executor, inputs: Mapping[str, np.ndarray], repeat: int = 5
) -> dict[str, float]:
    """Seconds per kind of work in one run: each call's fastest of `repeat` timed runs
    (after one untimed run), summed by kind, largest first."""
    executor.run(inputs)
    best: list[float] = []
    kinds: list[str] = []
    for _ in range(repeat):
        calls = executor.timed_run(inputs)
        if not kinds:
            instructions = executor.program.instructions
            kinds = [
                OUTPUT_STAGE_KIND
                if getattr(call, OUTPUT_STAGE, False)
                else instruction_kind(instructions[indices[0]])
                for indices, call, _ in calls
            ]
            best = [seconds for _, _, seconds in calls]
        else:
            best = [min(b, seconds) for b, (_, _, seconds) in zip(best, calls, strict=True)]
    totals: dict[str, float] = {}
    for kind, seconds in zip(kinds, best, strict=True):
        totals[kind] = totals.get(kind, 0.0) + seconds
    return dict(sorted(totals.items(), key=lambda item: -item[1]))
