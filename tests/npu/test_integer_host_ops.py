"""Integer and bool `nn` ops in a compiled program: they run on the host, reading and writing
int32 and bool (b8) buffers, exactly like the nn interpreter."""

from __future__ import annotations

import numpy as np

import npuc
from npuc.backend.npubin import encode_program
from npuc.passes.lower_to_npu import program_of
from npuc.runtime.executor import Executor
from npuc.runtime.loader import load
from npuc.runtime.qnn_interpreter import run_module

ONE_HOT = """
func.func @main(%x: tensor<1x8xi32> {nn.name = "x"})
    -> (tensor<1x8x4xf32> {nn.name = "hot"}, tensor<1x8x4xi1> {nn.name = "flags"}) {
  %c = nn.constant dense<[[[0, 1, 2, 3]]]> : tensor<1x1x4xi32>
  %r = nn.reshape %x {name = "column"} : (tensor<1x8xi32>) -> tensor<1x8x1xi32>
  %e = nn.equal %r, %c {name = "eq"} : (tensor<1x8x1xi32>, tensor<1x1x4xi32>) -> tensor<1x8x4xi1>
  %f = nn.cast %e {name = "cast"} : (tensor<1x8x4xi1>) -> tensor<1x8x4xf32>
  func.return %f, %e : tensor<1x8x4xf32>, tensor<1x8x4xi1>
}
"""


def test_one_hot_runs_on_the_host_like_the_interpreter(parse):
    module = parse(ONE_HOT)
    npuc.apply_pipeline(module, "plan-memory{target=mcu-64}")
    inputs = {"x": np.array([[0, 3, 1, 7, -2, 2, 3, 0]], np.int32)}
    reference = run_module(module, inputs)
    npuc.apply_pipeline(module, "lower-to-npu")
    program = program_of(module)
    assert {inst.op for inst in program.instructions} <= {"host", "move", "dma"}
    flags = [t for inst in program.instructions for t in inst.operands if t.dtype == "b8"]
    assert flags
    outputs = Executor(load(encode_program(program))).run(inputs)
    for name, want in reference.items():
        assert outputs[name].dtype == want.dtype, name
        np.testing.assert_array_equal(outputs[name], want, err_msg=name)
    assert outputs["hot"].sum() == 6


REFLECT_PAD = """
func.func @main(%x: tensor<1x2x4x!qnn.uniform<i8:f32, 0.1:3>> {nn.name = "x"})
    -> (tensor<1x2x8x!qnn.uniform<i8:f32, 0.1:3>> {nn.name = "y"}) {
  %p = qnn.pad %x {pads = array<i64: 0, 0, 2, 0, 0, 2>, mode = "MODE", name = "pad"}
    : (tensor<1x2x4x!qnn.uniform<i8:f32, 0.1:3>>) -> tensor<1x2x8x!qnn.uniform<i8:f32, 0.1:3>>
  func.return %p : tensor<1x2x8x!qnn.uniform<i8:f32, 0.1:3>>
}
"""


def test_non_constant_padding_falls_back_to_the_host(parse):
    """Silero VAD's STFT pads by reflection: no NPU instruction, so the host runs it."""
    for mode, where in (("reflect", "host"), ("edge", "host"), ("constant", "move")):
        module = parse(REFLECT_PAD.replace("MODE", mode))
        npuc.apply_pipeline(module, "plan-memory{target=mcu-64}")
        inputs = {"x": np.arange(-4, 4, dtype=np.int8).reshape(1, 2, 4)}
        reference = run_module(module, inputs)
        npuc.apply_pipeline(module, "lower-to-npu")
        program = program_of(module)
        assert [inst.op for inst in program.instructions] == [where], mode
        outputs = Executor(load(encode_program(program))).run(inputs)
        np.testing.assert_array_equal(outputs["y"], reference["y"], err_msg=mode)
