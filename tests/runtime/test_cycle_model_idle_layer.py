"""A layer no instruction belongs to (the format allows one: layers are a name table that
instructions index) spans nothing: no cycles, and its first start and last end
(docs/cycle-model.md, "Per layer") are the same cycle, 0. The figures are worked out by
hand from docs/cycle-model.md for one DMA on mcu-64."""

from __future__ import annotations

from npu_programs import inst, tensor

from npuc.dialects.npu_isa import IODesc, Program, Region
from npuc.runtime.cycle_model import estimate
from npuc.runtime.profile_html import html
from npuc.runtime.profile_report import to_json
from npuc.target import load_target


def program() -> Program:
    regions = (Region("constants", 1 << 12, "flash"), Region("mutable", 1 << 12, "sram"))
    x = IODesc("x", tensor("mutable", 0, (16,)))
    # layer 1, "idle", names no instruction
    dma = inst("dma", (tensor("constants", 0, (256,)), tensor("mutable", 256, (256,))), layer=0)
    return Program("p", regions, (x,), (x,), ("copy", "idle"), (dma,))


def test_a_layer_without_instructions_spans_nothing() -> None:
    profile = estimate(program(), load_target("mcu-64"))
    # mcu-64's flash: 256 B at 2 B/cycle + latency 32; its SRAM side 256 / 8 + 16 is faster
    dma_cycles = 256 // 2 + 32
    assert profile.total_cycles == dma_cycles
    layers = {layer["name"]: layer for layer in to_json(profile)["layers"]}
    assert set(layers) == {"copy", "idle"}
    copy, idle = layers["copy"], layers["idle"]
    assert (copy["start_cycle"], copy["end_cycle"], copy["cycles"]) == (0, dma_cycles, dma_cycles)
    assert (idle["start_cycle"], idle["end_cycle"], idle["cycles"]) == (0, 0, 0)
    assert idle["instructions"] == 0 and idle["busy_cycles"] == {"compute": 0, "dma": 0, "host": 0}
    page = html(profile)
    assert "<title>copy: cycles" in page
    assert "<title>idle: cycles" not in page  # an empty span draws no band
