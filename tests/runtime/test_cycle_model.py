"""The cycle model against cycle counts computed by hand from docs/cycle-model.md.

Targets (docs/targets.md): mcu-64 has an 8 x 1 x 8 MAC array, SRAM 8 B/cycle (burst 32,
latency 16) and flash 8 x 0.25 = 2 B/cycle (burst 32, latency 32); ethos-u55-256-hee has
8 x 4 x 8, SRAM 8 B/cycle (burst 32, latency 32) and flash 8 x 0.125 = 1 B/cycle (burst
128, latency 64).
"""

from __future__ import annotations

import pytest
from npu_programs import inst, tensor

from npuc.dialects.npu_isa import IODesc, Program, Region
from npuc.runtime.cycle_model import CycleModel, burst_bytes, compute_cycles, estimate
from npuc.target import load_target

MCU = load_target("mcu-64")
U55 = load_target("ethos-u55-256-hee")


def program(body, layers=()) -> Program:
    regions = (
        Region("constants", 1 << 16, "flash"),
        Region("mutable", 1 << 14, "sram"),
        Region("sram", 1 << 16, "sram"),
    )
    x = IODesc("x", tensor("mutable", 0, (16,)))
    return Program("p", regions, (x,), (x,), tuple(layers), tuple(body))


def conv(co=24, ci=16, hw=8, k=3, groups=1, ifm_at=0, ofm_at=8192, deps=(), layer=None):
    ifm = tensor("sram", ifm_at, (1, ci, hw, hw))
    w = tensor("constants", 0, (co, ci // groups, k, k))
    table = tensor("constants", 8192, (co, 4), "i32")
    ofm = tensor("sram", ofm_at, (1, co, hw, hw))
    return inst("conv2d", (ifm, w, table, ofm), deps, layer, pads=(k // 2,) * 4, groups=groups)


def test_conv2d_compute_cycles_by_hand() -> None:
    c = conv()  # 24 x 16 x 3 x 3 over 8 x 8 pixels: 221184 MACs
    # mcu-64: ceil(24/8) * ceil(64/1) * ceil(16/8) * 9 taps; the array is full: 100 %
    assert compute_cycles(c, MCU) == 3 * 64 * 2 * 9 == 3456
    # ethos-u55-256-hee: ceil(24/8) * ceil(64/4) * ceil(16/8) * 9
    assert compute_cycles(c, U55) == 3 * 16 * 2 * 9 == 864
    # depthwise: channels on the oc lanes, one tap per cycle: ceil(16/8) * 64 * 9
    assert compute_cycles(conv(co=16, groups=16), MCU) == 2 * 64 * 9
    # grouped: per group ceil(12/8) * ceil(8/8) blocks, 2 groups
    assert compute_cycles(conv(co=24, groups=2), MCU) == 2 * (2 * 1) * 64 * 9


def test_edge_effects_cost_a_whole_block() -> None:
    """17 output channels take as long as 24 (3 blocks of 8); 9 input channels as 16."""
    assert compute_cycles(conv(co=17), MCU) == compute_cycles(conv(co=24), MCU)
    assert compute_cycles(conv(ci=9), U55) == compute_cycles(conv(ci=16), U55)
    assert compute_cycles(conv(co=25), MCU) > compute_cycles(conv(co=24), MCU)
    # 7 x 7 = 49 pixels fill 13 blocks of 4 pixels, as 52 would
    assert compute_cycles(conv(hw=7), U55) == 3 * 13 * 2 * 9


def test_matmul_and_elementwise_cycles() -> None:
    lhs = tensor("sram", 0, (1, 1, 100))
    rhs = tensor("constants", 0, (1, 100, 10), strides=(0, 1, 100))
    table = tensor("constants", 4096, (10, 4), "i32")
    mm = inst("matmul", (lhs, rhs, table, tensor("sram", 256, (1, 1, 10))))
    # one output row uses 1 of the 4 pixel lanes: ceil(1/4) * ceil(10/8) * ceil(100/8)
    assert compute_cycles(mm, U55) == 1 * 2 * 13
    a = tensor("sram", 0, (1, 8, 10, 10))
    add = inst("eltwise", (a, a, tensor("sram", 1024, (1, 8, 10, 10))), kind="add")
    assert compute_cycles(add, U55) == -(-800 // 32)  # 32 output elements per cycle
    pool = inst(
        "pool", (a, tensor("sram", 2048, (1, 8, 5, 5))), mode="max", kernel=(2, 2), strides=(2, 2)
    )
    assert compute_cycles(pool, MCU) == -(-200 // 8) * 4


def test_memory_cycles_and_bytes_by_hand() -> None:
    model = CycleModel(program([conv()]), MCU)
    cost = model.cost(0, model.program.instructions[0], 0)
    # flash: weights 24*16*9 = 3456 B + table 24*16 = 384 B at 2 B/cycle + latency 32
    # sram: ifm 1024 B + ofm 1536 B at 8 B/cycle + latency 16
    assert cost.bytes_read == {"sram": 1024, "flash": 3840}
    assert cost.bytes_written == {"sram": 1536}
    assert cost.memory_cycles == {"sram": 16 + 2560 // 8, "flash": 32 + 3840 // 2}
    assert cost.cycles == 3456  # compute-bound: max(3456, 1952, 336)
    assert cost.macs == 221184


def test_dma_cycles_bursts_and_latency() -> None:
    src = tensor("constants", 0, (4096,))
    dma = inst("dma", (src, tensor("sram", 0, (4096,))))
    costs = estimate(program([dma]), U55).instructions
    # flash side: 4096 B at 1 B/cycle + 64; sram side 4096 / 8 + 32; the slower side counts
    assert costs[0].memory_cycles == {"flash": 4096 + 64, "sram": 512 + 32}
    assert costs[0].cycles == 4160
    assert costs[0].compute_cycles == 0 and compute_cycles(dma, U55) == 0  # no MAC array work
    # 10 rows of 20 contiguous bytes, 64 apart: each row costs a whole 128-byte flash burst
    strided = tensor("constants", 0, (10, 20), strides=(64, 1))
    assert burst_bytes(strided, 128) == 10 * 128
    dma2 = inst("dma", (strided, tensor("sram", 0, (10, 20))))
    assert estimate(program([dma2]), U55).instructions[0].cycles == 1280 + 64


def _three(serial: bool) -> Program:
    """conv1 (layer a), a weight DMA for conv2, conv2 (layer b) waiting for the DMA."""
    c1 = conv(ifm_at=0, ofm_at=8192, layer=0)
    # the DMA overwrites conv1's ifm when serial (so it must wait), else a free buffer
    dst = tensor("sram", 0 if serial else 32768, (4096,))
    dma = inst("dma", (tensor("constants", 0, (4096,)), dst), deps=(0,) if serial else (), layer=1)
    c2 = conv(ifm_at=8192, ofm_at=16384, deps=(0, 1), layer=1)
    return program([c1, dma, c2], layers=("a", "b"))


def test_dma_overlaps_compute_only_when_tokens_allow() -> None:
    compute = 3 * 16 * 2 * 9  # 864 cycles on the MAC array
    dma = 4096 + 64  # 4096 B from flash at 1 B/cycle + latency
    # each conv reads 3456 + 384 B of flash (whole 128-byte bursts) at 1 B/cycle: memory-bound
    conv_cycles = max(compute, 3840 + 64, 2560 // 8 + 32)
    assert conv_cycles == 3904
    overlapped = estimate(_three(serial=False), U55)
    serial = estimate(_three(serial=True), U55)
    assert [c.start for c in overlapped.instructions] == [0, 0, dma]
    assert overlapped.total_cycles == dma + conv_cycles
    assert [c.start for c in serial.instructions] == [0, conv_cycles, conv_cycles + dma]
    assert serial.total_cycles == 2 * conv_cycles + dma
    for profile in (overlapped, serial):
        assert sum(layer.cycles for layer in profile.layers) == profile.total_cycles
        assert profile.busy["dma"] == dma and profile.busy["compute"] == 2 * conv_cycles
    # overlapped: the DMA runs under conv1, which owns that time; layer b gets the rest
    a, b = overlapped.layers
    assert (a.name, a.cycles, b.cycles) == ("a", conv_cycles, dma)


def test_totals_and_rates() -> None:
    profile = estimate(program([conv(layer=0)], layers=("conv",)), MCU)
    assert profile.total_cycles == 3456
    assert profile.inference_ms == pytest.approx(3456 / 200e3)
    assert profile.inferences_per_s == pytest.approx(200e6 / 3456)
    (layer,) = profile.layers
    assert layer.utilization == pytest.approx(1.0)  # 221184 MACs / (3456 x 64)
    assert layer.share == 1.0
    assert layer.bytes_read == {"sram": 1024, "flash": 3840}


def test_unknown_memory_falls_back_to_the_placement() -> None:
    regions = (Region("constants", 1 << 16, "rom"), Region("sram", 1 << 16, "tcm"))
    x = IODesc("x", tensor("sram", 0, (16,)))
    prog = Program("p", regions, (x,), (x,), (), (conv(),))
    cost = estimate(prog, MCU).instructions[0]
    assert set(cost.bytes_read) == {"flash", "sram"}  # constants -> flash, sram -> arena
