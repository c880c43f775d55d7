"""The plan-memory pass on real graphs, checked from the IR alone and by executing through
the planned arenas (helpers: conftest.py, the `arena` fixture)."""

# ruff: noqa: E501  (IR in strings keeps its one-op-per-line form)

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx_models import LIGHT_DIR, with_random_weights
from PIL import Image
from shared_models import MBV2
from tool_runner import tool_command
from xdsl.passes import PassPipeline

import npuc.api as api
from npuc.backend.memory_plot import plot_profile
from npuc.diagnostics import NpucError
from npuc.frontends.onnx import import_onnx
from npuc.graph_io import entry_function
from npuc.passes.memory.ir import read_plan
from npuc.passes.memory.report import format_memory_report, memory_json
from npuc.passes.plan_memory import PlanMemoryPass
from npuc.registry import DEFAULT_PIPELINE, PASSES
from npuc.target import load_target

LIGHT = [
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
]
KIB = 1024


def plan(module, options: str = "target=mcu-64 alignment=16"):
    return api.apply_pipeline(module, f"plan-memory{{{options}}}")


def region_attrs(module) -> dict[str, dict[str, int]]:
    return {
        op.sym_name.data: {
            k: op.properties[k].value.data for k in ("size", "alignment", "lower_bound", "naive")
        }
        for op in module.ops
        if op.name == "mem.region"
    }


def peak_live(module, arena, region: str = "activations") -> int:
    """Peak over steps of the aligned bytes of values live there (the test's own liveness)."""
    func, where = arena.buffers(module)
    align = region_attrs(module)[region]["alignment"]
    ops = [op for op in func.body.block.ops if op.name not in arena.CONSTANT_OPS][:-1]
    first = {r: i for i, op in enumerate(ops) for r in op.results}
    last = dict(first)
    for i, op in enumerate(ops):
        for x in op.operands:
            if x in last:
                last[x] = i
    peak = 0
    for step in range(len(ops)):
        spans = sorted(
            (where[v][1], where[v][1] + -(-where[v][2] // align) * align)
            for v in first
            if where[v][0] == region and first[v] <= step <= last[v]
        )
        total, end = 0, 0
        for lo, hi in spans:
            total += max(0, hi - max(lo, end))
            end = max(end, hi)
        peak = max(peak, total)
    return peak


# --------------------------------------------------------------------------- real graphs


@pytest.mark.parametrize("name", LIGHT)
def test_light_model_layout(arena, name):
    module = import_onnx(str(LIGHT_DIR / f"light_{name}.onnx"))
    api.apply_pipeline(module, DEFAULT_PIPELINE)
    plan(module)
    arena.check_layout(module)
    act = region_attrs(module)["activations"]
    live = peak_live(module, arena)
    assert live <= act["lower_bound"] <= act["size"] <= act["naive"]
    # The light graphs are chains with branches: the planner reaches the bound.
    assert act["size"] == act["lower_bound"]


@pytest.mark.parametrize("name", ["squeezenet", "shufflenet", "inception_v2"])
def test_light_model_runs_through_arena(arena, name):
    model = with_random_weights(onnx.load(LIGHT_DIR / f"light_{name}.onnx"), seed=7)
    module = import_onnx(model)
    api.apply_pipeline(module, DEFAULT_PIPELINE)
    feeds = api.random_inputs(module, seed=1)
    expected = api.run(module, feeds)
    plan(module)
    got = arena.run_through_arena(module, feeds, seed=2)
    assert list(got) == list(expected)
    for key, want in expected.items():
        np.testing.assert_array_equal(got[key], want, err_msg=key)


def test_mobilenet_v2_reaches_the_lower_bound(arena):
    module = api.load_model(MBV2)
    feeds = {"input": np.random.default_rng(5).integers(-128, 128, (1, 224, 224, 3), np.int8)}
    expected = api.run(module, feeds)
    plan(module)
    act = region_attrs(module)["activations"]
    # The peak: the 112x112x96 expansion read by the depthwise conv writing 56x56x96 (int8).
    assert act["size"] == act["lower_bound"] == 112 * 112 * 96 + 56 * 56 * 96
    assert f"{act['size'] / KIB:.1f}" == "1470.0"  # ../shared/models/README.md
    assert act["lower_bound"] >= peak_live(module, arena)
    arena.check_layout(module)
    got = api.run(module, feeds)
    np.testing.assert_array_equal(got["softmax"], expected["softmax"])
    np.testing.assert_array_equal(
        arena.run_through_arena(module, feeds)["softmax"], expected["softmax"]
    )


# --------------------------------------------------------------------------- small graphs

VIEWS = """
func.func @main(%x: tensor<1x2x4x4xf32> {nn.name = "x"}) -> (tensor<1x4x4x4xf32> {nn.name = "y"}, tensor<1x2x4x4xf32> {nn.name = "x_again"}, tensor<1x2x4x4xf32> {nn.name = "k"}) {
  %k = nn.constant dense<0.5> : tensor<1x2x4x4xf32>
  %a = nn.exp %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %r = nn.relu %a : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %b = nn.neg %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %f = nn.reshape %b : (tensor<1x2x4x4xf32>) -> tensor<1x32xf32>
  %g = nn.reshape %f : (tensor<1x32xf32>) -> tensor<1x2x4x4xf32>
  %s = nn.add %g, %k : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = nn.concat %r, %s, %b {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x6x4x4xf32>
  %p, %q = nn.split %c {axis = 1 : i64} : (tensor<1x6x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x4x4x4xf32>)
  %t = nn.tanh %q : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %u = nn.mul %p, %p : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %w = nn.concat %u, %u {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
  %y = nn.add %t, %w : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  func.return %y, %x, %k : tensor<1x4x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}
"""


def _ops_sharing(module, arena, a: str, b: str) -> bool:
    """True if the first results of the first ops named `a` and `b` share a byte."""
    func, where = arena.buffers(module)
    ops = {op.name: op for op in reversed(list(func.body.block.ops))}
    return arena._overlap(where[ops[a].results[0]], where[ops[b].results[0]])


@pytest.mark.parametrize("alignment", [16, 64])
def test_views_in_place_and_concat_slices(arena, alignment):
    module = api.parse_mlir(VIEWS)
    feeds = api.random_inputs(module, seed=4)
    expected = api.run(module, feeds)
    plan(module, f"target=mcu-64 alignment={alignment}")
    arena.check_layout(module)
    got = arena.run_through_arena(module, feeds, seed=alignment)
    for key, want in expected.items():
        np.testing.assert_array_equal(got[key], want, err_msg=key)
    # Zero copies where the semantics allow: relu in place of exp inside the concat,
    # reshapes as views.
    func, where = arena.buffers(module)
    by_name = {op.name: op for op in func.body.block.ops}
    assert _ops_sharing(module, arena, "nn.exp", "nn.concat")
    assert _ops_sharing(module, arena, "nn.relu", "nn.exp")
    assert where[by_name["nn.reshape"].results[0]][1:] == where[by_name["nn.neg"].results[0]][1:]
    # A value returned twice, an input returned as an output, a constant output: mutable.
    ret = func.body.block.last_op
    assert {where[v][0] for v in ret.operands} == {"mutable"}
    assert where[ret.operands[1]] == where[func.body.block.args[0]]


# Concat operands whose bytes are written in place after the concat, or which are read
# after an in-place op overwrote the concat: they must not be written into the slices.
HAZARDS = [
    """
    func.func @main(%x: tensor<1x2x4xf32> {nn.name = "x"}) -> (tensor<1x4x4xf32> {nn.name = "y"}, tensor<1x2x4xf32> {nn.name = "z"}) {
      %a = nn.neg %x : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
      %b = nn.exp %x : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
      %c = nn.concat %a, %b {axis = 1 : i64} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x4x4xf32>
      %r = nn.relu %a : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
      %y = nn.tanh %c : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
      %z = nn.sigmoid %r : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
      func.return %y, %z : tensor<1x4x4xf32>, tensor<1x2x4xf32>
    }
    """,
    """
    func.func @main(%x: tensor<1x2x4xf32> {nn.name = "x"}) -> (tensor<1x4x4xf32> {nn.name = "y"}) {
      %a = nn.exp %x : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
      %b = nn.neg %x : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
      %c = nn.concat %a, %b {axis = 1 : i64} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x4x4xf32>
      %t = nn.tanh %c : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
      %a2 = nn.concat %a, %a {axis = 1 : i64} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x4x4xf32>
      %y = nn.add %a2, %t : (tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
      func.return %y : tensor<1x4x4xf32>
    }
    """,
]


@pytest.mark.parametrize("text", HAZARDS)
def test_slices_never_clobbered(arena, text):
    module = api.parse_mlir(text)
    feeds = api.random_inputs(module, seed=6)
    expected = api.run(module, feeds)
    plan(module, "target=mcu-64 alignment=16 schedule=false")
    arena.check_layout(module)
    got = arena.run_through_arena(module, feeds)
    for key, want in expected.items():
        np.testing.assert_array_equal(got[key], want, err_msg=key)


def test_split_pieces_are_views_when_that_saves_memory(arena):
    text = """
    func.func @main(%x: tensor<1x4x4xf32> {nn.name = "x"}) -> (tensor<1x2x4xf32> {nn.name = "y"}) {
      %e = nn.exp %x : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
      %a, %b = nn.split %e {axis = 1 : i64} : (tensor<1x4x4xf32>) -> (tensor<1x2x4xf32>, tensor<1x2x4xf32>)
      %y = nn.sub %a, %b : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
      func.return %y : tensor<1x2x4xf32>
    }
    """
    module = plan(api.parse_mlir(text))
    func, where = arena.buffers(module)
    split = next(op for op in func.body.block.ops if op.name == "nn.split")
    e = split.operands[0]
    region, offset, _ = where[e]
    assert [where[r] for r in split.results] == [(region, offset, 32), (region, offset + 32, 32)]
    assert region_attrs(module)["activations"]["size"] == 64


def test_unplanned_and_planned_runs_agree_and_plan_is_deterministic():
    module = api.parse_mlir(VIEWS)
    feeds = api.random_inputs(module, seed=9)
    expected = api.run(module, feeds)
    once = str(plan(module))
    got = api.run(module, feeds)
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key])
    assert str(plan(module)) == once  # re-planning replaces the plan with the same one
    assert str(plan(api.parse_mlir(VIEWS))) == once


def test_tiled_model_runs_through_arena(arena):
    module = api.load_model(Path(__file__).parents[2] / "examples" / "lenet5.onnx")
    api.apply_pipeline(module, DEFAULT_PIPELINE + ",tile{target=mcu-64 sram_limit=20000}")
    ops = {op.name for op in entry_function(module).body.block.ops}
    assert {"tile.slice", "tile.insert", "tile.load", "tile.empty"} <= ops
    feeds = api.random_inputs(module, seed=3)
    expected = api.run(module, feeds)
    plan(module)
    arena.check_layout(module)
    func, where = arena.buffers(module)
    inserts = [op for op in func.body.block.ops if op.name == "tile.insert"]
    in_place = [op for op in inserts if where[op.results[0]] == where[op.operands[1]]]
    assert len(in_place) >= len(inserts) // 2  # assembled in place, not copied tile by tile
    got = arena.run_through_arena(module, feeds)
    np.testing.assert_array_equal(got["prob"], expected["prob"])


def test_memory_named_by_to_gets_its_own_region(arena):
    text = """
    func.func @main(%x: tensor<2x8xf32> {nn.name = "x"}) -> (tensor<1x8xf32> {nn.name = "y"}) {
      %e = nn.exp %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
      %l = tile.load %e {offsets = array<i64: 1, 0>, from = "sram", to = "dram"} : tensor<2x8xf32> -> tensor<1x8xf32>
      %y = nn.neg %l : (tensor<1x8xf32>) -> tensor<1x8xf32>
      func.return %y : tensor<1x8xf32>
    }
    """
    module = api.parse_mlir(text)
    feeds = api.random_inputs(module, seed=1)
    expected = api.run(module, feeds)
    plan(module, "target=mid-256")
    regions = {op.sym_name.data: op.memory.data for op in module.ops if op.name == "mem.region"}
    assert regions == {
        "constants": "dram",
        "mutable": "dram",
        "activations": "sram",
        "dram": "dram",
    }
    func, where = arena.buffers(module)
    load = next(op for op in func.body.block.ops if op.name == "tile.load")
    assert where[load.results[0]] == ("dram", 0, 32)
    np.testing.assert_array_equal(arena.run_through_arena(module, feeds)["y"], expected["y"])
    with pytest.raises(NpucError, match="no memory 'dram'"):
        plan(api.parse_mlir(text), "target=mcu-64")
    with pytest.raises(NpucError, match="read-only"):
        plan(api.parse_mlir(text.replace('to = "dram"', 'to = "flash"')), "target=mcu-64")


def test_tile_store_assembles_in_place_in_another_memory(arena):
    text = """
    func.func @main(%x: tensor<2x8xf32> {nn.name = "x"}) -> (tensor<2x8xf32> {nn.name = "y"}) {
      %e = nn.exp %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
      %d = tile.empty {to = "dram"} : tensor<2x8xf32>
      %s0 = tile.slice %e {offsets = array<i64: 0, 0>} : tensor<2x8xf32> -> tensor<1x8xf32>
      %n0 = nn.neg %s0 : (tensor<1x8xf32>) -> tensor<1x8xf32>
      %d1 = tile.store %n0 into %d {offsets = array<i64: 0, 0>, from = "sram", to = "dram"} : tensor<1x8xf32> into tensor<2x8xf32>
      %s1 = tile.slice %e {offsets = array<i64: 1, 0>} : tensor<2x8xf32> -> tensor<1x8xf32>
      %n1 = nn.abs %s1 : (tensor<1x8xf32>) -> tensor<1x8xf32>
      %d2 = tile.store %n1 into %d1 {offsets = array<i64: 1, 0>, from = "sram", to = "dram"} : tensor<1x8xf32> into tensor<2x8xf32>
      %y = nn.tanh %d2 : (tensor<2x8xf32>) -> tensor<2x8xf32>
      func.return %y : tensor<2x8xf32>
    }
    """
    module = api.parse_mlir(text)
    feeds = api.random_inputs(module, seed=2)
    expected = api.run(module, feeds)
    plan(module, "target=mid-256 alignment=16")
    arena.check_layout(module)
    func, where = arena.buffers(module)
    ops = {op.name: op for op in func.body.block.ops}
    stores = [op for op in func.body.block.ops if op.name == "tile.store"]
    empty = ops["tile.empty"].results[0]
    assert where[empty] == ("dram", 0, 64)
    assert all(where[op.results[0]] == where[empty] for op in stores)  # in place
    e = ops["nn.exp"].results[0]
    slices = [op.results[0] for op in func.body.block.ops if op.name == "tile.slice"]
    assert sorted(where[v][1] - where[e][1] for v in slices) == [0, 32]  # row views of %e
    np.testing.assert_array_equal(arena.run_through_arena(module, feeds)["y"], expected["y"])


def test_schedule_option_lowers_the_bound():
    text = """
    func.func @main(%x: tensor<1x4x8x8xf32> {nn.name = "x"}) -> (tensor<1x4x1x1xf32> {nn.name = "y"}) {
      %a = nn.exp %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      %b = nn.neg %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      %c = nn.sigmoid %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      %ga = nn.global_avg_pool %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
      %gb = nn.global_avg_pool %b : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
      %gc = nn.global_avg_pool %c : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
      %s = nn.add %ga, %gb : (tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x1xf32>
      %y = nn.add %s, %gc : (tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x1xf32>
      func.return %y : tensor<1x4x1x1xf32>
    }
    """
    kept = plan(api.parse_mlir(text), "target=mcu-64 alignment=16 schedule=false")
    moved = plan(api.parse_mlir(text), "target=mcu-64 alignment=16")
    big, small = 4 * 8 * 8 * 4, 16
    # File order: the three 1 KiB maps are live together with %ga. Scheduled, one map at a
    # time and the sums early: the best any order can do is a map plus two pooled values.
    assert region_attrs(kept)["activations"]["lower_bound"] == 3 * big + small
    assert region_attrs(moved)["activations"]["lower_bound"] == big + 2 * small
    names = [op.name for op in entry_function(kept).body.block.ops]
    assert names[:3] == ["nn.exp", "nn.neg", "nn.sigmoid"]
    feeds = api.random_inputs(kept, seed=0)
    np.testing.assert_array_equal(api.run(moved, feeds)["y"], api.run(kept, feeds)["y"])


# --------------------------------------------------------------------------- options


def test_pipeline_string_round_trips():
    p = PlanMemoryPass(target="mid-256", alignment=32, schedule=False, budget_seconds=0.5)
    spec = str(p.pipeline_pass_spec())
    (back,) = PassPipeline.parse_spec(PASSES, spec).passes
    assert back == p
    assert spec.startswith("plan-memory{")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("alignment=16", "plan-memory needs a target"),
        ("target=nope", "unknown target 'nope'"),
        ('target="/no/such.toml"', "no such target file"),
        ("target=mcu-64 alignment=24", "alignment must be a power of two, got 24"),
        ("target=mcu-64 budget_seconds=0.0", "budget_seconds must be positive"),
    ],
)
def test_bad_options_are_diagnostics(options, message):
    with pytest.raises(NpucError, match=message):
        plan(api.parse_mlir(VIEWS), options)


def test_bad_option_in_npu_opt_exits_with_one_line(tmp_path):
    src = tmp_path / "m.mlir"
    src.write_text(VIEWS)
    out = tmp_path / "out.mlir"
    proc = subprocess.run(
        [
            *tool_command("npu-opt"),
            src,
            "-p",
            "plan-memory{target=nope}",
            "-o",
            out,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip() == proc.stderr.strip().splitlines()[0]
    assert "unknown target 'nope'" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


# --------------------------------------------------------------------------- reports


def test_reports_describe_the_plan(tmp_path, arena):
    module = plan(api.parse_mlir(VIEWS), "target=mcu-64 alignment=16")
    planned = read_plan(module)
    act = region_attrs(module)["activations"]
    profile = planned.live_profile("activations")
    assert len(profile) == len(planned.steps) == 12
    assert max(profile) == act["lower_bound"]
    assert max(profile) >= peak_live(module, arena)

    text = format_memory_report(planned, load_target("mcu-64"))
    assert f"{act['size'] / KIB:.1f} KiB" in text
    assert "memory sram:" in text and "fits" in text
    rows = [line for line in text.splitlines() if line[:5].strip().isdigit()]
    assert [int(r.split()[0]) for r in rows] == list(range(12))
    assert [int(r.split()[-1]) for r in rows] == profile

    data = json.loads(json.dumps(memory_json(planned, load_target("mcu-64"))))
    regions = {r["name"]: r for r in data["regions"]}
    assert regions["activations"]["size"] == act["size"]
    assert regions["activations"]["lower_bound"] == act["lower_bound"]
    assert [s["live_bytes"]["activations"] for s in data["profile"]] == profile
    assert [i["name"] for i in data["inputs"]] == ["x"]
    assert [o["name"] for o in data["outputs"]] == ["y", "x_again", "k"]
    func, where = arena.buffers(module)
    assert data["outputs"][0]["offset"] == where[func.body.block.last_op.operands[0]][1]
    used = {m["name"]: m["used"] for m in data["memories"]}
    assert used["sram"] == regions["mutable"]["size"] + regions["activations"]["size"]

    png = tmp_path / "p.png"
    png.write_bytes(plot_profile(planned, "views"))
    with Image.open(png) as image:
        assert image.format == "PNG" and image.size == (1200, 600)  # memory_plot's 12x6 in
        assert len(image.convert("RGB").getcolors(1 << 16)) > 3  # more than a blank page


def test_npu_opt_memory_targets(tmp_path):
    src = tmp_path / "m.mlir"
    src.write_text(VIEWS)
    npu_opt = tool_command("npu-opt")
    args = [*npu_opt, src, "-p", "plan-memory{target=mcu-64}"]
    proc = subprocess.run(
        [*args, "-t", "memory-json"], capture_output=True, text=True, timeout=120, check=True
    )
    data = json.loads(proc.stdout)
    module = plan(api.parse_mlir(VIEWS), "target=mcu-64")
    assert data["regions"] == json.loads(json.dumps(memory_json(read_plan(module))))["regions"]
    proc = subprocess.run(
        [*args, "-t", "memory-report{target=mcu-64}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert proc.stdout.startswith("region") and "memory sram:" in proc.stdout
    proc = subprocess.run(
        [*npu_opt, src, "-t", "memory-report"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1 and "not memory-planned" in proc.stderr


def test_sizes_follow_storage_types():
    text = """
    func.func @main(%x: tensor<3x5x!qnn.uniform<i8:f32, 0.5>> {nn.name = "x"}) -> (tensor<3x5x!qnn.uniform<i16:f32, 0.5>> {nn.name = "y"}) {
      %b = qnn.constant {value = dense<[1, 2, 3]> : tensor<3xi32>} : tensor<3xi32>
      %y = qnn.requantize %x {multiplier = array<i64: 1073741824>, shift = array<i64: 30>} : (tensor<3x5x!qnn.uniform<i8:f32, 0.5>>) -> tensor<3x5x!qnn.uniform<i16:f32, 0.5>>
      func.return %y : tensor<3x5x!qnn.uniform<i16:f32, 0.5>>
    }
    """
    planned = read_plan(plan(api.parse_mlir(text), "target=mcu-64 alignment=8"))
    assert [(v.label, v.size) for v in planned.inputs + planned.outputs] == [("x", 15), ("y", 30)]
    assert planned.regions["mutable"].size == 16 + 32
    assert planned.regions["constants"].size == math.ceil(12 / 8) * 8
