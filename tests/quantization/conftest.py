"""Helpers for the calibration tests: small ONNX models imported as `nn` modules.

Tests reach them through the `qm` fixture, since pytest's importlib mode does not
put this folder on sys.path.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from xdsl.dialects.builtin import ModuleOp

from npuc.frontends.onnx import import_onnx

IR_VERSION = 10


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[tuple[str, Sequence[int]]],
    outputs: Sequence[str],
    initializers: dict[str, np.ndarray] | None = None,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        list(nodes),
        "calibration_test",
        [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, list(s)) for n, s in inputs],
        [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=IR_VERSION
    )


def relu_model(shape: Sequence[int]) -> ModuleOp:
    """x -> Relu (layer 'relu') -> y."""
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    return import_onnx(make_model([node], [("x", shape)], ["y"]))


def add_model(shape_a: Sequence[int], shape_b: Sequence[int]) -> ModuleOp:
    """a + b (layer 'add') -> y, two inputs."""
    node = helper.make_node("Add", ["a", "b"], ["y"], name="add")
    return import_onnx(make_model([node], [("a", shape_a), ("b", shape_b)], ["y"]))


def conv_model(batch: int = 1, seed: int = 0) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """conv1 -> relu1 -> conv2 -> gap -> flat (output 'logits'); returns the module and its
    weights."""
    rng = np.random.default_rng(seed)
    weights = {
        "w1": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
        "b1": rng.standard_normal(4).astype(np.float32),
        "w2": rng.standard_normal((5, 4, 1, 1)).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2"),
        helper.make_node("GlobalAveragePool", ["c2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["logits"], name="flat"),
    ]
    model = make_model(nodes, [("x", (batch, 3, 6, 5))], ["logits"], weights)
    return import_onnx(model), weights


def heavy_tailed_inputs(seed: int = 4, calls: int = 12) -> list[dict[str, np.ndarray]]:
    """`conv_model` inputs whose rare large values make the range strategies disagree."""
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(calls):
        x = rng.standard_normal((1, 3, 6, 5))
        x[rng.random(x.shape) < 0.02] *= 12
        batches.append({"x": x.astype(np.float32)})
    return batches


@pytest.fixture
def qm() -> SimpleNamespace:
    return SimpleNamespace(
        make_model=make_model,
        relu_model=relu_model,
        add_model=add_model,
        conv_model=conv_model,
        heavy_tailed_inputs=heavy_tailed_inputs,
    )
