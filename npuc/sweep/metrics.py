"""What a sweep can measure at each point, and which way is better."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Metric:
    name: str
    goal: str  # "min" or "max": the better direction, for Pareto fronts and Optuna
    what: str


METRICS = {
    m.name: m
    for m in (
        Metric("total_cycles", "min", "estimated cycles of one inference (cycle model)"),
        Metric("inference_ms", "min", "total_cycles at the target's clock, in ms"),
        Metric(
            "sram_peak_bytes", "min", "bytes planned in the SRAM (the activation arena's memory)"
        ),
        Metric("flash_bytes", "min", "size of the .npubin: instructions and constants"),
        Metric("compile_s", "min", "seconds of all compile stages, shared ones included"),
        Metric("macs", "min", "multiply-accumulates of one inference"),
        Metric("utilisation", "max", "MACs over cycles x the MAC array's MACs per cycle"),
        Metric("instructions", "min", "NPU instructions in the program"),
        Metric("cosine", "max", "worst output's cosine similarity to the float model (data)"),
        Metric("top1", "max", "worst output's top-1 agreement with the float model (data)"),
    )
}
# Columns every results table has, whatever the file chooses.
ALWAYS = ("total_cycles", "sram_peak_bytes", "flash_bytes", "compile_s")
DEFAULT_METRICS = ("total_cycles", "inference_ms", "sram_peak_bytes", "flash_bytes", "compile_s")
FIDELITY_METRICS = ("cosine", "top1")


def measure(result: Any, seconds: float, fidelity: tuple[float, float] | None) -> dict[str, Any]:
    """Every metric of a compilation (a compile_flow.CompileResult); `fidelity`: (cosine,
    top-1 agreement) of its quantized model on the sweep's data, None without data."""
    from ..passes.memory.report import memory_usage

    used = {memory: size for memory, size, _ in memory_usage(result.plan, result.target)}
    profile = result.profile
    cosine, top1 = fidelity if fidelity is not None else (math.nan, math.nan)
    return {
        "total_cycles": profile.total_cycles,
        "inference_ms": profile.inference_ms,
        "sram_peak_bytes": used.get(result.target.sram.name, 0),
        "flash_bytes": len(result.files[f"{result.name}.npubin"]),
        "compile_s": round(seconds, 4),
        "macs": profile.total_macs,
        "utilisation": profile.utilization,
        "instructions": len(result.program.instructions),
        "cosine": cosine,
        "top1": top1,
    }


def overflows(result: Any) -> list[str]:
    """The memories whose planned regions exceed their capacity (npu-compile warns and
    writes the program all the same; a sweep marks the point as not fitting)."""
    from ..passes.memory.report import memory_usage

    return [
        f"{memory}: {used} bytes planned, capacity {capacity}"
        for memory, used, capacity in memory_usage(result.plan, result.target)
        if used > capacity
    ]
