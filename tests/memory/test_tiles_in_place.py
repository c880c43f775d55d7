"""Tiles written straight into their `tile.insert`'s destination take no bytes of their own.

A tiled layer computes each tile and inserts it into the tensor being assembled; lower-to-npu
points the producer's output at the insert's region, so the tile's own buffer is never
written. The plan makes such a tile a view of the destination when nothing reads or writes
that region between the producer and the insert (MobileNetV2's performance plan on the U55
lost 37 KiB of SRAM to them). Checked from the IR alone and by running every op on its
planned bytes (conftest.py), and, lowered, bit for bit on the NPU runtime.
"""

# ruff: noqa: E501  (IR in strings keeps its one-op-per-line form)

from __future__ import annotations

from pathlib import Path

import pytest
from compile_helpers import assert_same, lower_and_run

import npuc.api as api
from npuc.graph_io import entry_function
from npuc.registry import DEFAULT_PIPELINE

T = "tensor<1x4x8x8xf32>"
HALF = "tensor<1x4x4x8xf32>"
TILE = "tensor<1x4x2x4xf32>"
OUT = "tensor<1x4x4x4xf32>"
LENET = Path(__file__).resolve().parents[2] / "examples" / "lenet5.onnx"
POOL = "{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>}"


def stripes(body: str, results: str = OUT, returned: str = f"%e1 : {OUT}", row1: int = 2) -> str:
    """Two 2x2 max-pool stripes of %a assembled into %e (the second at row `row1`), ops in
    the order given."""
    ops = {
        "e": f"%e = tile.empty : {OUT}",
        "a0": f"%a0 = tile.slice %a {{offsets = array<i64: 0, 0, 0, 0>}} : {T} -> {HALF}",
        "a1": f"%a1 = tile.slice %a {{offsets = array<i64: 0, 0, 4, 0>}} : {T} -> {HALF}",
        "p0": f"%p0 = nn.max_pool2d %a0 {POOL} : ({HALF}) -> {TILE}",
        "p1": f"%p1 = nn.max_pool2d %a1 {POOL} : ({HALF}) -> {TILE}",
        "e0": f"%e0 = tile.insert %p0 into %e {{offsets = array<i64: 0, 0, 0, 0>}} : {TILE} into {OUT}",
        "e1": f"%e1 = tile.insert %p1 into %e0 {{offsets = array<i64: 0, 0, {row1}, 0>}} : {TILE} into {OUT}",
    }
    lines = [ops.get(name, name) for name in body.split(";")]
    text = "\n  ".join(lines)
    return f"func.func @main(%a: {T}) -> ({results}) {{\n  {text}\n  func.return {returned}\n}}"


@pytest.fixture(scope="module")
def lenet_int8():
    module = api.load_model(LENET)
    api.apply_pipeline(module, DEFAULT_PIPELINE + ",quantize{samples=8}")
    return module


def planned(text: str):
    module = api.parse_mlir(text)
    api.apply_pipeline(module, "plan-memory{target=mcu-64 alignment=16 io=arena schedule=false}")
    return module


def activations(module) -> int:
    return next(
        op.size.value.data
        for op in module.ops
        if op.name == "mem.region" and op.sym_name.data == "activations"
    )


def inside(module, arena) -> list[bool]:
    """For each pooled tile: whether the plan put its bytes inside its insert's destination."""
    _, where = arena.buffers(module)
    found = []
    for op in entry_function(module).body.block.ops:
        if op.name == "tile.insert":
            (r1, o1, s1), (r2, o2, s2) = where[op.operands[1]], where[op.operands[0]]
            found.append(r1 == r2 and o1 <= o2 and o2 + s2 <= o1 + s1)
    return found


def test_stripes_are_written_into_the_result(arena):
    module = planned(stripes("e;a0;p0;e0;a1;p1;e1"))
    assert inside(module, arena) == [True, True]
    # the input (1 KiB, read in place by the stripes) and the result (256 bytes) only
    assert activations(module) == 1024 + 256
    arena.check_against_interpreter(module)


def test_a_tile_may_wait_while_another_region_is_inserted(arena):
    """p1 is computed before p0's insert, which writes rows 0-1: p1's rows 2-3 are apart."""
    module = planned(stripes("e;a0;a1;p0;p1;e0;e1"))
    assert inside(module, arena) == [True, True]
    arena.check_against_interpreter(module)


def test_a_tile_whose_region_is_written_before_its_insert_has_its_own_bytes(arena):
    """Inserting p1 at rows 1-2 (p0's row 1 too) after p0's insert: p1 computed before that
    insert must not be in the result's bytes yet."""
    module = planned(stripes("e;a0;a1;p0;p1;e0;e1", row1=1))
    assert inside(module, arena) == [True, False]
    arena.check_against_interpreter(module)


def test_a_tile_whose_destination_is_read_before_its_insert_has_its_own_bytes(arena):
    """Rows 0-1 of the partly assembled result are read after p1 is computed: p1 may not
    be written into the result before then (the read sees p0's rows, not p1's)."""
    body = (
        f"e;a0;p0;e0;a1;p1;%s = tile.slice %e0 {{offsets = array<i64: 0, 0, 0, 0>}} : {OUT} -> {TILE};"
        f"%n = nn.neg %s : ({TILE}) -> {TILE};e1"
    )
    module = planned(stripes(body, f"{OUT}, {TILE}", f"%e1, %n : {OUT}, {TILE}"))
    assert inside(module, arena) == [True, False]
    arena.check_against_interpreter(module)


def test_a_tile_made_before_its_destination_has_its_own_bytes(arena):
    module = planned(stripes("a0;p0;e;e0;a1;p1;e1"))
    assert inside(module, arena) == [False, True]
    arena.check_against_interpreter(module)


@pytest.mark.parametrize("tiling", ["tile{target=mcu-64 sram_limit=20000}", "tile{target=mcu-64}"])
def test_lowered_tiles_write_their_destination_bit_exact(lenet_int8, arena, tiling):
    """Row stripes and channel parts of LeNet-5 int8: every tile the plan put inside its
    destination is written there by its instruction, and no instruction copies it."""
    module = lenet_int8.clone()
    api.apply_pipeline(module, tiling + ",plan-memory{target=mcu-64}")
    placed = inside(module, arena).count(True)
    assert placed > 0
    arena.check_layout(module)
    reference, outputs, program = lower_and_run(module)
    assert_same(reference, outputs)
    assert not [inst for inst in program.instructions if inst.op == "move"]


Q = "tensor<1x4x2x4x!qnn.uniform<i8:f32, 0.5:-3>>"
QOUT = "tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.5:-3>>"
I32 = "tensor<1x4x2x4xi32>"
# Each tile is made on the host (an int32 stripe cast to float, then quantized there).
HOST_TILES = f"""
func.func @main(%x: tensor<1x4x4x4xi32>) -> {QOUT} {{
  %e = tile.empty : {QOUT}
  %x0 = tile.slice %x {{offsets = array<i64: 0, 0, 0, 0>}} : tensor<1x4x4x4xi32> -> {I32}
  %c0 = nn.cast %x0 : ({I32}) -> tensor<1x4x2x4xf32>
  %q0 = qnn.quantize %c0 : (tensor<1x4x2x4xf32>) -> {Q}
  %e0 = tile.insert %q0 into %e {{offsets = array<i64: 0, 0, 0, 0>}} : {Q} into {QOUT}
  %x1 = tile.slice %x {{offsets = array<i64: 0, 0, 2, 0>}} : tensor<1x4x4x4xi32> -> {I32}
  %c1 = nn.cast %x1 : ({I32}) -> tensor<1x4x2x4xf32>
  %q1 = qnn.quantize %c1 : (tensor<1x4x2x4xf32>) -> {Q}
  %e1 = tile.insert %q1 into %e0 {{offsets = array<i64: 0, 0, 2, 0>}} : {Q} into {QOUT}
  func.return %e1 : {QOUT}
}}
"""


def test_host_ops_write_their_tiles_into_the_destination(arena):
    """Host instructions, too, write the region the plan gave their tile (a host op that
    wrote its tile's recorded bytes, the destination's first ones, broke the result)."""
    module = planned(HOST_TILES)
    assert inside(module, arena) == [True, True]
    reference, outputs, program = lower_and_run(module)
    assert_same(reference, outputs)
    assert [inst.op for inst in program.instructions].count("move") == 0
