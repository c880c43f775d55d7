"""Host fallback in `npu-compile`: ops without an NPU instruction run on the target's host CPU.

The module has a qnn.argmax and a qnn.gather, which have no NPU instruction. The binary's
outputs are checked against the qnn interpreter, and the host ops' cost against the target's
[host] description (docs/targets.md).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from tool_runner import run_tool

import npuc
from npuc.runtime.executor import Executor
from npuc.runtime.host_cost import host_cycles, share
from npuc.runtime.loader import load_file
from npuc.runtime.qnn_interpreter import random_inputs, run_module
from npuc.target import load_target

Q10 = "tensor<1x10x!qnn.uniform<i8:f32, 0.1:-3>>"
Q2 = "tensor<1x2x!qnn.uniform<i8:f32, 0.1:-3>>"
MODULE = f"""
func.func @main(%x: {Q10} {{nn.name = "x"}}) -> (tensor<1xi64> {{nn.name = "class"}},
    {Q10} {{nn.name = "y"}}) {{
  %m = qnn.maximum %x, %x {{name = "max"}} : ({Q10}, {Q10}) -> {Q10}
  %c = qnn.argmax %m {{axis = 1 : i64, keepdims = false, name = "argmax"}}
    : ({Q10}) -> tensor<1xi64>
  %i = qnn.constant {{value = dense<[0, 2]> : tensor<2xi64>}} : tensor<2xi64>
  %g = qnn.gather %m, %i {{axis = 1 : i64, name = "gather"}} : ({Q10}, tensor<2xi64>) -> {Q2}
  %p = qnn.pad %g {{pads = array<i64: 0, 4, 0, 4>}} : ({Q2}) -> {Q10}
  func.return %c, %p : tensor<1xi64>, {Q10}
}}
"""


def compile_module(tmp_path: Path, *flags: str):
    source = tmp_path / "net.mlir"
    source.write_text(MODULE)
    out = tmp_path / "out"
    done = run_tool("npu-compile", source, "--target", "mcu-64", "-o", out, *flags)
    return done, out


def test_ops_without_an_instruction_run_on_the_host_by_default(tmp_path):
    done, out = compile_module(tmp_path, "--show-host-ops")
    assert done.returncode == 0, done.stderr
    assert "host (Arm Cortex-M33): 2 layers, 2 ops, 0 MACs" in done.stdout
    lines = done.stdout.splitlines()
    listed = lines[lines.index("ops on the host:") + 1 :][:2]
    assert [line.split()[:2] for line in listed] == [
        ["argmax", "qnn.argmax"],
        ["gather", "qnn.gather"],
    ]
    assert all(line.endswith("no NPU instruction") for line in listed)

    program = load_file(out / "net.npubin")
    module = npuc.parse_mlir(MODULE)
    inputs = random_inputs(module, seed=5)
    expected = run_module(module, inputs)
    got = Executor(program).run(inputs)
    for name, array in expected.items():
        np.testing.assert_array_equal(got[name], array)

    profile = json.loads((out / "net.profile.json").read_text())
    assert profile["host"]["cpu"] == "Arm Cortex-M33"
    assert [op["op"] for op in profile["host"]["ops"]] == ["qnn.argmax", "qnn.gather"]


def test_no_host_fallback_refuses_them(tmp_path):
    done, out = compile_module(tmp_path, "--no-host-fallback")
    assert done.returncode == 1
    assert "'qnn.argmax' (layer 'argmax'): no NPU instruction" in done.stderr
    assert "'qnn.gather' (layer 'gather'): no NPU instruction" in done.stderr
    assert not out.exists()


def test_host_ops_are_priced_on_the_targets_host_cpu():
    module = npuc.parse_mlir(MODULE)
    npuc.apply_pipeline(module, "plan-memory{target=mcu-64},lower-to-npu")
    from npuc.passes.lower_to_npu import program_of

    program = program_of(module)
    hosts = [inst for inst in program.instructions if inst.op == "host"]
    assert len(hosts) == 2
    split = share(program)
    assert (split.host_layers, split.host_macs, len(split.host)) == (2, 0, 2)
    for name in ("mcu-64", "mid-256", "ethos-u55-256-hee"):
        target = load_target(name)
        host = target.host
        for inst in hosts:
            elements = sum(t.numel for t in inst.operands)
            expected = elements * host.cycles_per_element * target.clock_mhz / host.clock_mhz
            assert host_cycles(inst, target) == math.ceil(expected)
