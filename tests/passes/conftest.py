"""Helpers for pass tests: build `nn` graphs in Python and compare them numerically."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin, FunctionType, ModuleOp, TensorType, f32
from xdsl.dialects.func import Func, FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from npuc.dialects.nn import NN, ConstantOp, NNOperation, build
from npuc.runtime.nn_interpreter import run_function
from npuc.tensors import to_dense


class Graph:
    """A `func.func @main` under construction: inputs, constants and `nn` ops in order."""

    def __init__(self, *input_shapes: Sequence[int]):
        self.block = Block(arg_types=[TensorType(f32, list(s)) for s in input_shapes])
        self.inputs = list(self.block.args)

    def const(self, array: np.ndarray, name: str | None = None) -> SSAValue:
        array = np.asarray(array)
        if array.dtype.kind == "f":
            array = array.astype(np.float32)
        op = ConstantOp(to_dense(array), name)
        self.block.add_op(op)
        return op.output

    def op(
        self,
        op_type: type[NNOperation],
        operands: Sequence[SSAValue | Operation | None],
        properties: Mapping[str, Attribute] | None = None,
        *,
        name: str | None = None,
        result_types: Sequence[Attribute] | None = None,
    ) -> NNOperation:
        op = build(op_type, operands, properties, name=name, result_types=result_types)
        self.block.add_op(op)
        return op

    def module(self, *outputs: SSAValue | Operation) -> ModuleOp:
        values = [SSAValue.get(o) for o in outputs]
        self.block.add_op(ReturnOp(*values))
        signature = FunctionType.from_lists([a.type for a in self.inputs], [v.type for v in values])
        module = ModuleOp([FuncOp("main", signature, Region(self.block))])
        module.verify()
        return module


def ops_of(module: ModuleOp, op_type: type[Operation] = NNOperation) -> list[Operation]:
    return [op for op in module.walk() if isinstance(op, op_type)]


def main(module: ModuleOp) -> FuncOp:
    return next(op for op in module.ops if isinstance(op, FuncOp))


def make_context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, Arith, NN):
        ctx.load_dialect(dialect)
    return ctx


def random_inputs(module: ModuleOp, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal(tuple(a.type.get_shape())).astype(np.float32)
        for a in main(module).body.block.args
    ]


def check_pass(
    module: ModuleOp,
    module_pass: ModulePass,
    *,
    rtol: float = 1e-5,
    atol: float = 1e-5,
    seed: int = 0,
) -> ModuleOp:
    """Apply `module_pass` in place; assert the module verifies and computes the same outputs."""
    inputs = random_inputs(module, seed)
    before = run_function(main(module), inputs)
    module_pass.apply(make_context(), module)
    module.verify()
    after = run_function(main(module), inputs)
    assert len(before) == len(after)
    for b, a in zip(before, after, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    return module


@pytest.fixture(name="graph")
def graph_fixture() -> type[Graph]:
    return Graph


@pytest.fixture(name="check")
def check_fixture() -> Callable[..., ModuleOp]:
    return check_pass


@pytest.fixture(name="ops")
def ops_fixture() -> Callable[..., list[Operation]]:
    return ops_of
