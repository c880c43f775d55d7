"""How find_layers classifies ops it has no rule for (docs/tiling.md: "whole | everything
else"): an op of another dialect, with a result that is not a tensor, with several
results or with none, is a whole layer."""

from __future__ import annotations

from xdsl.dialects import test as test_dialect
from xdsl.dialects.builtin import FunctionType, TensorType, f32, i32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

from npuc.graph_io import entry_function
from npuc.passes.tiling.layers import Kind, find_layers
from npuc.pipeline import parse_mlir


def test_ops_without_a_rule_are_whole_layers() -> None:
    image = TensorType(f32, [1, 4, 8, 8])
    block = Block(arg_types=[image])
    x = block.args[0]
    scalar = test_dialect.TestOp.create(operands=[x], result_types=[i32])  # a scalar result
    pair = test_dialect.TestOp.create(operands=[x], result_types=[image, image])  # two results
    sink = test_dialect.TestOp.create(operands=[x, scalar.results[0]], result_types=[])  # none
    same = test_dialect.TestOp.create(operands=[x], result_types=[image])  # a tensor, no rule
    block.add_ops([scalar, pair, sink, same, ReturnOp(same.results[0])])
    func = FuncOp("main", FunctionType.from_lists([image], [image]), Region(block))
    layers = find_layers(func)
    assert [layer.op for layer in layers] == [scalar, pair, sink, same]
    assert all(layer.kind is Kind.WHOLE for layer in layers)
    assert [layer.activations for layer in layers] == [(0,), (0,), (0, 1), (0,)]


def _dequantize_kind(axis: int) -> Kind:
    """The kind of a dequantize whose NCHW input is quantized per axis `axis`."""
    sizes = [1, 2, 3, 4]
    scales = ", ".join(["0.5"] * sizes[axis])
    text = f"""
func.func @main(%x: tensor<1x2x3x4x!qnn.uniform<i8:f32:{axis}, {{{scales}}}>>)
    -> tensor<1x2x3x4xf32> {{
  %y = qnn.dequantize %x : (tensor<1x2x3x4x!qnn.uniform<i8:f32:{axis}, {{{scales}}}>>)
      -> tensor<1x2x3x4xf32>
  func.return %y : tensor<1x2x3x4xf32>
}}
"""
    [layer] = find_layers(entry_function(parse_mlir(text)))
    return layer.kind


def test_per_axis_types_tile_unless_quantized_along_h_or_w() -> None:
    # Tiles split H and W: a type quantized per batch or channel keeps its scales in every
    # tile, one quantized per row or column would need its scales sliced.
    assert [_dequantize_kind(axis) for axis in range(4)] == [
        Kind.ELEMENTWISE,
        Kind.ELEMENTWISE,
        Kind.WHOLE,
        Kind.WHOLE,
    ]
