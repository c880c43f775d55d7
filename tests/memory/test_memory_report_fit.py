"""The memory report's verdict at the edge: a memory filled to its last byte still fits
(docs/memory-planning.md, "Reports": used bytes against the memory's size), one byte less
does not. The used bytes are summed here from the planned IR's `mem.region` ops."""

from __future__ import annotations

import dataclasses
import json

import pytest

import npuc.api as api
from npuc.passes.memory.ir import read_plan
from npuc.passes.memory.report import format_memory_report, memory_json
from npuc.target import Target, load_target

MODULE = """
func.func @main(%x: tensor<1x2x4x4xf32> {nn.name = "x"}) -> (tensor<1x2x4x4xf32> {nn.name = "y"}) {
  %a = nn.exp %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %b = nn.neg %a : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = nn.relu %b : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
"""


def used_bytes(module) -> dict[str, int]:
    """Memory -> the sizes of the regions placed in it, from the IR's attributes."""
    used: dict[str, int] = {}
    for op in module.ops:
        if op.name == "mem.region":
            memory = op.properties["memory"].data
            used[memory] = used.get(memory, 0) + op.properties["size"].value.data
    return used


def with_size(target: Target, memory: str, size: int) -> Target:
    memories = tuple(
        dataclasses.replace(m, size=size) if m.name == memory else m for m in target.memories
    )
    return dataclasses.replace(target, memories=memories)


@pytest.mark.parametrize("spare", [0, -1, 1])
def test_a_memory_planned_exactly_full_fits(spare: int) -> None:
    module = api.apply_pipeline(api.parse_mlir(MODULE), "plan-memory{target=mcu-64}")
    used = used_bytes(module)
    assert used["sram"] > 0
    target = with_size(load_target("mcu-64"), "sram", used["sram"] + spare)
    planned = read_plan(module)
    fits = spare >= 0

    text = format_memory_report(planned, target)
    (line,) = [line for line in text.splitlines() if line.startswith("memory sram:")]
    assert f"({used['sram']} of {used['sram'] + spare} bytes)" in line
    assert line.endswith(": fits" if fits else ": DOES NOT FIT")

    data = json.loads(json.dumps(memory_json(planned, target)))
    (sram,) = [m for m in data["memories"] if m["name"] == "sram"]
    assert sram == {
        "name": "sram",
        "used": used["sram"],
        "capacity": used["sram"] + spare,
        "fits": fits,
    }
