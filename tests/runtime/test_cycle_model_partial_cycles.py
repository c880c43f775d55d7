"""A memory whose bytes per cycle do not divide the bytes moved: the last, partial cycle of
a transfer still costs a whole cycle (docs/cycle-model.md: `latency + ceil(moved /
bytes_per_cycle)`). Shipped targets move whole bursts that their buses divide, so the target
here is mcu-64 with its flash at three quarters of the core clock: 8 x 0.75 = 6 B/cycle."""

from __future__ import annotations

import tomllib

from npu_programs import inst, tensor

from npuc.dialects.npu_isa import IODesc, Program, Region
from npuc.runtime.cycle_model import estimate
from npuc.target import parse_target, targets_dir

FLASH_LATENCY, SRAM_LATENCY = 32, 16  # targets/mcu-64.toml: read latencies
BURST = 32  # both memories' burst_length


def six_bytes_a_cycle_flash():
    data = tomllib.loads((targets_dir() / "mcu-64.toml").read_text())
    assert data["memories"]["flash"]["bus_width"] == 8
    assert data["memories"]["flash"]["burst_length"] == BURST
    assert data["memories"]["flash"]["read_latency"] == FLASH_LATENCY
    assert data["memories"]["sram"]["write_latency"] == SRAM_LATENCY
    data["memories"]["flash"]["clock_scale"] = 0.75
    return parse_target(data)


def copy_from_flash(n: int) -> Program:
    regions = (Region("constants", 1 << 12, "flash"), Region("sram", 1 << 12, "sram"))
    x = IODesc("x", tensor("sram", 0, (16,)))
    dma = inst("dma", (tensor("constants", 0, (n,)), tensor("sram", 64, (n,))))
    return Program("p", regions, (x,), (x,), (), (dma,))


def test_a_partial_last_cycle_of_a_transfer_costs_a_whole_cycle() -> None:
    target = six_bytes_a_cycle_flash()
    for n, flash_bytes in ((32, 32), (100, 128)):  # whole 32-byte bursts
        (cost,) = estimate(copy_from_flash(n), target).instructions
        flash = FLASH_LATENCY + -(-flash_bytes // 6)  # 32 B: 6 cycles, 128 B: 22
        sram = SRAM_LATENCY + -(-flash_bytes // 8)
        assert cost.memory_cycles == {"flash": flash, "sram": sram}
        assert cost.cycles == flash  # a DMA takes its slower side
