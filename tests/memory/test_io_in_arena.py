"""plan-memory{io=arena}: inputs and outputs share the activations arena by liveness."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from shared_models import MBV2

import npuc.api as api
from npuc.backend.bundle import header_text
from npuc.diagnostics import NpucError
from npuc.graph_io import entry_function
from npuc.passes.memory.ir import read_plan
from npuc.registry import DEFAULT_PIPELINE

REPO = Path(__file__).resolve().parents[2]
LENET = REPO / "examples" / "lenet5.onnx"
KIB = 1024
VELA_SIZE_OPTIMISED_PEAK_SRAM = 353.50 * KIB  # models/README.md, Vela 5.2 --optimise Size


def sizes(module) -> dict[str, int]:
    return {
        op.sym_name.data: op.properties["size"].value.data
        for op in module.ops
        if op.name == "mem.region"
    }


@pytest.mark.parametrize("tiling", ["", ",tile{target=mcu-64 sram_limit=20000}"])
def test_lenet5_io_in_arena_runs_through_the_arena(arena, tiling):
    module = api.load_model(LENET)
    api.apply_pipeline(module, DEFAULT_PIPELINE + tiling)
    feeds = api.random_inputs(module, seed=4)
    expected = api.run(module, feeds)
    separate = api.apply_pipeline(module.clone(), "plan-memory{target=mcu-64}")
    api.apply_pipeline(module, "plan-memory{target=mcu-64 io=arena}")
    arena.check_layout(module)
    got = arena.run_through_arena(module, feeds, seed=9)
    np.testing.assert_array_equal(got["prob"], expected["prob"])
    joint, apart = sizes(module), sizes(separate)
    assert joint["mutable"] == 0
    # Sharing can only help: never more than the two regions side by side.
    assert joint["activations"] <= apart["activations"] + apart["mutable"]
    func, where = arena.buffers(module)
    assert {where[a][0] for a in func.body.block.args} == {"activations"}


def test_header_says_where_inputs_and_outputs_live():
    module = api.load_model(LENET)
    api.apply_pipeline(module, DEFAULT_PIPELINE + ",plan-memory{target=mcu-64 io=arena}")
    header = header_text("lenet5", read_plan(module))
    assert "#define LENET5_IO_IN_ACTIVATIONS 1" in header
    assert "#define LENET5_MUTABLE_MEM_SIZE 0" in header
    offsets = re.findall(r"#define LENET5_(?:INPUT|OUTPUT)_\w+_OFFSET (\d+)", header)
    assert len(offsets) == 2


def test_bad_io_option_is_a_diagnostic():
    module = api.load_model(LENET)
    with pytest.raises(NpucError, match='io must be "separate" or "arena", got "both"'):
        api.apply_pipeline(module, "plan-memory{target=mcu-64 io=both}")


def test_tiled_mobilenet_v2_peak_sram_is_below_velas(arena):
    """Size-optimised tiling on ethos-u55-256-hee, I/O in the arena: the whole SRAM use."""
    module = api.load_model(MBV2)
    api.apply_pipeline(
        module,
        'tile{target="ethos-u55-256-hee" optimise="size"},'
        "plan-memory{target=ethos-u55-256-hee alignment=16 io=arena}",
    )
    arena.check_layout(module)
    regions = sizes(module)
    assert regions["mutable"] == 0
    func = entry_function(module)
    input_bytes = 224 * 224 * 3
    assert input_bytes <= regions["activations"] < VELA_SIZE_OPTIMISED_PEAK_SRAM
    assert len(list(func.body.block.ops)) > 1000  # tiled, not the 175-op graph


def test_a_function_returning_its_input_keeps_it_in_the_arena():
    """No op at all: the input, also the output, is live for the call's one step."""
    module = api.parse_mlir(
        "func.func @main(%x: tensor<1x100xi8>) -> tensor<1x100xi8> {\n"
        "  func.return %x : tensor<1x100xi8>\n"
        "}"
    )
    api.apply_pipeline(module, "plan-memory{target=mcu-64 io=arena}")
    assert sizes(module)["activations"] == 128  # 100 bytes, 64-byte aligned
    func = entry_function(module)
    text = str(func)
    assert text.count('#mem.buffer<"activations", 0, 100, live [0, 0]>') == 2
