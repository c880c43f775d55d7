"""What a planned module's memory holds: each region's contents for the reports, and the
bytes of a memory in use at each step and while each layer runs (the profile's SRAM column,
the trace's SRAM counter)."""

from __future__ import annotations

from npuc.passes.memory.ir import ACTIVATIONS, CONSTANTS, MUTABLE, PlannedModule, PlannedValue


def liveness_regions(planned: PlannedModule) -> list[str]:
    """Regions planned by liveness (activations and per-memory regions), in module order."""
    return [r for r in planned.regions if r not in (CONSTANTS, MUTABLE)]


def region_contents(planned: PlannedModule, lowered_constants: int | None = None) -> dict[str, str]:
    """Region -> what it holds, for people. `lowered_constants`: the size of the lowered
    program's constants region, which adds the bias/scale tables and LUTs to the weights."""
    found: dict[str, list[PlannedValue]] = {name: [] for name in planned.regions}
    for v in planned.values:
        found.setdefault(v.region, []).append(v)
    placed_outputs = {(v.region, v.offset, v.size) for v in planned.outputs}
    contents = {}
    for name, values in found.items():
        size = planned.regions[name].size if name in planned.regions else 0
        parts = []
        constants = [v for v in values if v.kind == "constant"]
        if constants:  # the region's size: the tensors at their alignment
            weights = size if name == CONSTANTS else sum(v.size for v in constants)
            parts.append(
                f"planned weights and other constants: {len(constants)} tensors, {weights} bytes"
            )
        if name == CONSTANTS and lowered_constants is not None and lowered_constants > size:
            parts.append(
                f"bias/scale tables and LUTs added by lowering: {lowered_constants - size} bytes"
            )
        inputs = [v.label for v in planned.inputs if v.region == name]
        results = [v.label for v in planned.outputs if v.region == name]
        if inputs:
            parts.append("inputs " + ", ".join(inputs))
        if results:
            parts.append("outputs " + ", ".join(results))
        scratch = [
            v
            for v in values
            if v.kind == "op" and (v.region, v.offset, v.size) not in placed_outputs
        ]
        if scratch:
            what = "intermediate tensors" if name == ACTIVATIONS else "tiles and buffers"
            parts.append(f"{len(scratch)} {what}, reusing memory as their lives end")
        contents[name] = "; ".join(parts) or "nothing"
    return contents


def memory_in_use(planned: PlannedModule, memory: str) -> list[int]:
    """Bytes of `memory` in use at each step: the live bytes of the regions planned by
    liveness placed there, and the whole of the other regions there (constants, mutable)."""
    fixed = sum(
        r.size
        for r in planned.regions.values()
        if r.memory == memory and r.name in (CONSTANTS, MUTABLE)
    )
    used = [fixed] * len(planned.steps)
    for region in liveness_regions(planned):
        if planned.regions[region].memory == memory:
            used = [a + b for a, b in zip(used, planned.live_profile(region), strict=True)]
    return used


def layer_peaks(planned: PlannedModule, memory: str) -> dict[str, int]:
    """The most bytes of `memory` in use while each layer runs. A step without a layer (a
    tile's load or store) counts towards the next layer, trailing ones towards the last."""
    used = memory_in_use(planned, memory)
    peaks: dict[str, int] = {}
    pending = 0
    last = ""
    for step, n in zip(planned.steps, used, strict=True):
        if not step.layer:
            pending = max(pending, n)
            continue
        last = step.layer
        peaks[last] = max(peaks.get(last, 0), n, pending)
        pending = 0
    if pending and last:
        peaks[last] = max(peaks[last], pending)
    return peaks
