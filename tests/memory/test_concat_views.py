"""The memory planner writes a concat's operands straight into their slices of its result
(docs/memory-planning.md): each operand's buffer starts at the concat's offset plus the
bytes of the operands before it, at any alignment that divides those offsets."""

# ruff: noqa: E501  (IR in strings keeps its one-op-per-line form)

from __future__ import annotations

import pytest

import npuc.api as api
from npuc.graph_io import entry_function

SOURCE = """
func.func @main(%x: tensor<2x2x4x4xf32> {nn.name = "x"}) -> (tensor<1x2x4x4xf32> {nn.name = "y"}) {
  %a = nn.reduce_sum %x {axes = array<i64: 0>, keepdims = true} : (tensor<2x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %b = nn.reduce_max %x {axes = array<i64: 0>, keepdims = true} : (tensor<2x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %t = nn.reduce_min %x {axes = array<i64: 0>, keepdims = true} : (tensor<2x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = nn.concat %a, %b, %t {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x6x4x4xf32>
  %p, %q = nn.split %c {axis = 1 : i64} : (tensor<1x6x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x4x4x4xf32>)
  %s = nn.reduce_sum %q {axes = array<i64: 1>, keepdims = true} : (tensor<1x4x4x4xf32>) -> tensor<1x1x4x4xf32>
  %y = nn.mul %p, %s : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
"""


@pytest.mark.parametrize("alignment", [1, 16, 64])
def test_concat_operands_are_written_into_their_slices(alignment):
    module = api.apply_pipeline(
        api.parse_mlir(SOURCE), f"plan-memory{{target=mcu-64 alignment={alignment}}}"
    )
    ops = {op.name: op for op in entry_function(module).body.block.ops}
    concat = ops["nn.concat"]
    whole = concat.attributes["mem.buffer"]
    at = whole.offset.data
    for operand in concat.operands:
        buffer = operand.owner.attributes["mem.buffer"]
        assert buffer.region.data == whole.region.data
        assert buffer.offset.data == at, operand.owner.name
        at += buffer.size.data
    assert at == whole.offset.data + whole.size.data


AFTER_A_STRIDED_CONCAT = """
func.func @main(%x: tensor<1x2x4x4xf32> {nn.name = "x"}) -> (tensor<1x1x4x4xf32> {nn.name = "y"}) {
  %w = nn.concat %x, %x {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %h = nn.reduce_max %w {axes = array<i64: 3>, keepdims = true} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x1xf32>
  %x2 = nn.add %x, %h : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  %e = nn.exp %x2 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %a = nn.relu %e : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %g = nn.sigmoid %x2 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %b = nn.relu %g : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = nn.concat %a, %b {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
  %y = nn.reduce_sum %c {axes = array<i64: 1>, keepdims = true} : (tensor<1x4x4x4xf32>) -> tensor<1x1x4x4xf32>
  func.return %y : tensor<1x1x4x4xf32>
}
"""


def test_in_place_chains_write_into_a_concat_after_one_that_stays_a_copy():
    """The first concat joins along W (each operand's bytes spread over the result) and
    stays a copy; the second still has its operands' in-place chains (exp then relu,
    sigmoid then relu) write straight into its slices."""
    module = api.apply_pipeline(
        api.parse_mlir(AFTER_A_STRIDED_CONCAT), "plan-memory{target=mcu-64 alignment=16}"
    )
    concats = [op for op in entry_function(module).body.block.ops if op.name == "nn.concat"]
    whole = concats[1].attributes["mem.buffer"]
    at = whole.offset.data
    for operand in concats[1].operands:
        chain = [operand.owner, operand.owner.operands[0].owner]  # relu and its producer
        for op in chain:
            buffer = op.attributes["mem.buffer"]
            assert (buffer.region.data, buffer.offset.data) == (whole.region.data, at), op.name
        at += chain[0].attributes["mem.buffer"].size.data
