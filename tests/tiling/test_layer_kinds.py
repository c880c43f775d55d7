"""How find_layers classifies ops it has no rule for (docs/tiling.md: "whole | everything
else"): an op of another dialect, with a result that is not a tensor, with several
results or with none, is a whole layer."""

from __future__ import annotations

from xdsl.dialects import test as test_dialect
from xdsl.dialects.builtin import FunctionType, TensorType, f32, i32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

from npuc.passes.tiling.layers import Kind, find_layers


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
