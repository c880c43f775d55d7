"""`plan-memory{double_buffer=true}`: each `tile.load`'s bytes are apart from everything the
compute op before it touches, so its DMA runs while that op does (npu-compile's performance
mode). Checked from the IR's buffers, then on the lowered program's tokens and cycles."""

from __future__ import annotations

from pathlib import Path

import pytest
from compile_helpers import assert_same, lower_and_run

import npuc.api as api
from npuc.graph_io import entry_function
from npuc.registry import DEFAULT_PIPELINE
from npuc.runtime.cycle_model import estimate
from npuc.target import load_target

LENET = Path(__file__).resolve().parents[2] / "examples" / "lenet5.onnx"


@pytest.fixture(scope="module")
def tiled_lenet():
    module = api.load_model(LENET)
    api.apply_pipeline(module, DEFAULT_PIPELINE + ",quantize{samples=8},tile{target=mcu-64}")
    return module


def planned(module, double: bool):
    module = module.clone()
    api.apply_pipeline(module, f"plan-memory{{target=mcu-64 double_buffer={str(double).lower()}}}")
    return module


def loads_sharing_bytes_with_the_op_before(module, arena) -> int:
    """How many loads share a byte with an operand or result of the compute op before them."""
    _, where = arena.buffers(module)
    shared, previous = 0, None
    for op in entry_function(module).body.block.ops:
        if op.name == "tile.load" and previous is not None:
            touched = [where[v] for v in (*previous.operands, *previous.results) if v in where]
            mine = where[op.results[0]]
            shared += any(
                r == mine[0] and o < mine[1] + mine[2] and mine[1] < o + s for r, o, s in touched
            )
        elif not op.name.startswith("tile.") and op.name not in ("qnn.constant", "func.return"):
            previous = op
    return shared


def test_loads_keep_apart_from_the_op_they_overlap(tiled_lenet, arena):
    single, double = planned(tiled_lenet, False), planned(tiled_lenet, True)
    assert loads_sharing_bytes_with_the_op_before(single, arena) > 0
    assert loads_sharing_bytes_with_the_op_before(double, arena) == 0
    arena.check_layout(double)


def test_double_buffered_loads_run_during_compute(tiled_lenet):
    target = load_target("mcu-64")
    cycles = {}
    for double in (False, True):
        reference, outputs, program = lower_and_run(planned(tiled_lenet, double))
        assert_same(reference, outputs)
        insts = program.instructions
        overlapping = [
            k
            for k, inst in enumerate(insts)
            if inst.op == "dma"
            and any(i.engine == "compute" for i in insts[:k])
            and not any(insts[d].engine == "compute" for d in inst.deps)
        ]
        assert overlapping or not double
        cycles[double] = estimate(program, target).total_cycles
    assert cycles[True] < cycles[False]
