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


NESTED_CONCATS = """
func.func @main(%x: tensor<1x2x4x4xf32> {nn.name = "x"}) -> (tensor<1x1x4x4xf32> {nn.name = "y"}) {
  %e = nn.exp %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %a = nn.relu %e : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %g = nn.sigmoid %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %b = nn.relu %g : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %inner = nn.concat %a, %b {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
  %t = nn.tanh %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %d = nn.relu %t : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %outer = nn.concat %inner, %d {axis = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x6x4x4xf32>
  %y = nn.reduce_sum %outer {axes = array<i64: 1>, keepdims = true} : (tensor<1x6x4x4xf32>) -> tensor<1x1x4x4xf32>
  func.return %y : tensor<1x1x4x4xf32>
}
"""


def test_the_slices_of_a_concat_inside_a_concat_are_written_in_place_too():
    """The inner concat is a slice of the outer one, and its operands' in-place chains
    write straight into their bytes of the outer result: each chain's ops share one
    buffer, at its operand's offset in the inner concat, which starts the outer one."""
    module = api.apply_pipeline(
        api.parse_mlir(NESTED_CONCATS), "plan-memory{target=mcu-64 alignment=16}"
    )
    ops = {
        op.results[0].name_hint: op for op in entry_function(module).body.block.ops if op.results
    }
    buffer = {name: op.attributes["mem.buffer"] for name, op in ops.items()}
    outer = buffer["outer"]
    slice_bytes = 2 * 4 * 4 * 4
    expected = {"e": 0, "a": 0, "g": 1, "b": 1, "inner": 0}
    for name, part in expected.items():
        assert buffer[name].region.data == outer.region.data, name
        assert buffer[name].offset.data == outer.offset.data + part * slice_bytes, name


CONCATS_OF_CHAINS = """
func.func @main(%x: tensor<1x2x4x4xf32> {nn.name = "x"}) -> (tensor<1x1x4x4xf32> {nn.name = "y"}) {
  %e = nn.exp %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %a = nn.relu %e : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %g = nn.sigmoid %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %b = nn.relu %g : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %first = nn.concat %a, %b {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
  %t = nn.tanh %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = nn.relu %t : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %n = nn.neg %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %d = nn.relu %n : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %second = nn.concat %c, %d {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
  %outer = nn.concat %first, %second {axis = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x8x4x4xf32>
  %y = nn.reduce_sum %outer {axes = array<i64: 1>, keepdims = true} : (tensor<1x8x4x4xf32>) -> tensor<1x1x4x4xf32>
  func.return %y : tensor<1x1x4x4xf32>
}
"""


def test_in_place_writes_of_one_slice_count_for_the_next_concat_into_the_same_bytes():
    """Both inner concats are slices of the outer one. The first inner concat's chains
    (exp then relu, sigmoid then relu) write into their slices; from then on the outer
    concat's bytes take in-place writes (the relus) before the second inner concat's
    operands are last read, so its chains stay copies: late_concat's rule, which does not
    look at where in the concat the writes fall."""
    module = api.apply_pipeline(
        api.parse_mlir(CONCATS_OF_CHAINS), "plan-memory{target=mcu-64 alignment=16}"
    )
    ops = entry_function(module).body.block.ops
    buffer = {op.results[0].name_hint: op.attributes["mem.buffer"] for op in ops if op.results}
    outer, slice_bytes = buffer["outer"], 2 * 4 * 4 * 4
    for name, part in {"e": 0, "a": 0, "g": 1, "b": 1, "first": 0, "second": 2}.items():
        assert buffer[name].offset.data == outer.offset.data + part * slice_bytes, name
    inside = range(outer.offset.data, outer.offset.data + outer.size.data)
    for name in ("t", "c", "n", "d"):
        assert buffer[name].offset.data not in inside, name
