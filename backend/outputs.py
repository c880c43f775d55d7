"""The files a planned module turns into, and writing a set of files all or nothing.

`memory_files` is shared by `npu-bundle` and `npu-compile`: the embedded header,
the weights (binary and C text), the planned IR and the memory reports.
"""

from __future__ import annotations

import dataclasses

from xdsl.dialects.builtin import ModuleOp

from npuc.dialects.npu_isa import Program
from npuc.passes.memory.ir import ACTIVATIONS, CONSTANTS, MUTABLE, PlannedModule
from npuc.passes.memory.report import format_memory_report, memory_json_text, memory_usage
from npuc.passes.memory.usage import region_contents
from npuc.target import Target

from .bundle import header_text, weights_bytes, weights_text
from .memory_plot import plot_profile
from .npubin import constants_image


def memory_files(
    name: str,
    module: ModuleOp,
    planned: PlannedModule,
    target: Target,
    model: str,
    with_ir: bool = True,
    program: Program | None = None,
    section: bytes | None = None,
) -> dict[str, bytes]:
    """NAME.h, NAME.weights.bin/.txt, NAME.mem.mlir (`with_ir`), NAME.memory.txt/.json/.png.

    With the lowered `program`, the constants are the program's (`with_program_constants`;
    `section`: its constants_section, when the caller has it).
    """
    from npuc.printing import print_module

    if program is not None:
        region = program.region("constants")
        contents = region_contents(planned, region.size if region is not None else None)
        planned, weights = with_program_constants(planned, program, section)
    else:
        contents = region_contents(planned)
        weights = weights_bytes(planned)
    report = memory_json_text(planned, target, contents)
    files = {
        f"{name}.h": header_text(name, planned, model, target.name).encode(),
        f"{name}.weights.bin": weights,
        f"{name}.weights.txt": weights_text(weights),
    }
    if with_ir:
        files[f"{name}.mem.mlir"] = print_module(module, elide_above=None).encode()
    return files | {
        f"{name}.memory.txt": format_memory_report(planned, target, contents).encode(),
        f"{name}.memory.json": report.encode(),
        f"{name}.memory.png": plot_profile(planned, f"{name} on {target.name}"),
    }


def with_program_constants(
    planned: PlannedModule, program: Program, section: bytes | None = None
) -> tuple[PlannedModule, bytes]:
    """The plan with the constants region of the lowered program, and that region's bytes.

    Lowering appends the bias/scale tables and LUTs after the planned constants, so the
    binary's constants region is larger than the plan's; the header, the weights file and
    the reports must describe the binary's. With encoded streams (compress-constants) the
    bytes are the binary's CONSTANTS section, what the target's flash holds.
    """
    data = constants_image(program, section)
    size = len(data)
    if CONSTANTS not in planned.regions:
        return planned, data
    regions = dict(planned.regions)
    regions[CONSTANTS] = dataclasses.replace(regions[CONSTANTS], size=size)
    if program.streams:  # the bounds of the raw bytes do not bound their encoding
        regions[CONSTANTS] = dataclasses.replace(regions[CONSTANTS], lower_bound=None, naive=None)
    return dataclasses.replace(planned, regions=regions), data


def memory_summary(planned: PlannedModule, target: Target) -> list[str]:
    """The three region sizes of the header, and a warning per memory over its capacity."""
    lines = []
    labels = ((CONSTANTS, "constant"), (MUTABLE, "mutable"), (ACTIVATIONS, "activations"))
    for region, label in labels:
        size = planned.regions[region].size if region in planned.regions else 0
        lines.append(f"{label} memory: {size} bytes ({size / 1024:.1f} KiB)")
    for memory, used, capacity in memory_usage(planned, target):
        if used > capacity:
            lines.append(f"warning: memory '{memory}' needs {used} bytes but holds {capacity}")
    return lines
