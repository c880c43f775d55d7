"""In-place reuse is decided op by op: an op whose result cannot be placed in place (a
graph output, planned in the mutable region) does not stop the ops after it from writing
over an operand they read last. Sharing is checked on the planned IR's buffers (the
`arena` fixture), the results by running through the arena against the unplanned module."""

# ruff: noqa: E501  (IR in strings keeps its one-op-per-line form)

from __future__ import annotations

import numpy as np

import npuc.api as api

MODULE = """
func.func @main(%x: tensor<1x2x4x4xf32> {nn.name = "x"}) -> (tensor<1x2x4x4xf32> {nn.name = "n"}, tensor<1x2x4x4xf32> {nn.name = "y"}) {
  %n = nn.neg %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %e = nn.exp %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %r = nn.relu %e : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %t = nn.tanh %r : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = nn.add %t, %x : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %n, %y : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}
"""


def test_ops_after_an_output_still_run_in_place(arena):
    module = api.parse_mlir(MODULE)
    feeds = api.random_inputs(module, seed=3)
    expected = api.run(module, feeds)
    api.apply_pipeline(module, "plan-memory{target=mcu-64 alignment=16 schedule=false}")
    arena.check_layout(module)
    func, where = arena.buffers(module)
    result = {op.name: op.results[0] for op in func.body.block.ops if op.results}
    assert where[result["nn.neg"]][0] == "mutable"  # an output: not placed in place
    assert where[result["nn.relu"]] == where[result["nn.exp"]]
    assert where[result["nn.tanh"]] == where[result["nn.relu"]]
    got = arena.run_through_arena(module, feeds)
    for key, want in expected.items():
        np.testing.assert_array_equal(got[key], want, err_msg=key)
