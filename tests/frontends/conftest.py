"""Helpers for the ONNX importer tests: building models with onnx.helper, reading the IR.

Tests reach them through the `ox` fixture (this module), since pytest's importlib
mode does not put this folder on sys.path.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnxruntime_reference import reference_session
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from npuc.graph_io import entry_function, input_names, output_names

# onnxruntime reads IR versions up to 10 for every opset we test.
IR_VERSION = 10

Shape = Sequence[int | str | None] | None


def tensor(name: str, shape: Shape, elem_type: int = onnx.TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem_type, shape)


def init(name: str, value: np.ndarray | Sequence, dtype=None) -> onnx.TensorProto:
    array = np.asarray(value, dtype=dtype)
    if dtype is None and array.dtype == np.float64:
        array = array.astype(np.float32)
    return numpy_helper.from_array(array, name)


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[onnx.ValueInfoProto | tuple[str, Shape]],
    outputs: Sequence[onnx.ValueInfoProto | str],
    initializers: Iterable[onnx.TensorProto] = (),
    opset: int = 13,
) -> onnx.ModelProto:
    ins = [i if isinstance(i, onnx.ValueInfoProto) else tensor(*i) for i in inputs]
    outs = [o if isinstance(o, onnx.ValueInfoProto) else tensor(o, None) for o in outputs]
    graph = helper.make_graph(list(nodes), "test", ins, outs, initializer=list(initializers))
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION
    )


def node(op_type: str, inputs: Sequence[str], outputs: Sequence[str], name: str = "", **attrs):
    return helper.make_node(op_type, list(inputs), list(outputs), name=name or None, **attrs)


def main_func(module: ModuleOp) -> FuncOp:
    return entry_function(module)


def nn_ops(module: ModuleOp, *, constants: bool = False) -> list[Operation]:
    ops = [op for op in main_func(module).body.block.ops if op.name.startswith("nn.")]
    return ops if constants else [op for op in ops if op.name != "nn.constant"]


def op_names(module: ModuleOp) -> list[str]:
    return [op.name for op in nn_ops(module)]


def layer(op: Operation) -> str | None:
    attr = op.properties.get("name")
    return attr.data if attr is not None else None


def prop_values(op: Operation, key: str) -> list:
    return list(op.properties[key].get_values())


def io_names(module: ModuleOp) -> tuple[list[str], list[str]]:
    func = main_func(module)
    return input_names(func), output_names(func)


def shape(value) -> tuple[int, ...]:
    return tuple(value.type.get_shape())


def run_onnxruntime(
    model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:

    session = reference_session(model)
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, dict(feeds)), strict=True))


def random_feeds(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        dims = [d.dim_value or 1 for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(dims).astype(np.float32)
    return feeds


LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


@pytest.fixture(name="ox")
def _ox():
    """This module: model builders and IR readers."""
    return sys.modules[__name__]
