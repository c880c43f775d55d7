"""Shared helpers: run single-node ONNX models as independent references."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnxruntime_reference import reference_session


def node_model(
    op_type: str,
    inputs: Sequence[np.ndarray | None],
    attrs: dict[str, Any] | None = None,
    *,
    n_outputs: int = 1,
    opset: int = 18,
    feeds: int = 1,
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A one-node model; the first `feeds` inputs are graph inputs, the rest initializers.

    A None input is an omitted optional input.
    """
    inputs = list(inputs)
    while inputs and inputs[-1] is None:  # trailing optional inputs are simply left off
        inputs.pop()
    names, graph_inputs, initializers, feed = [], [], [], {}
    for i, array in enumerate(inputs):
        if array is None:
            names.append("")
            continue
        name = f"in{i}"
        names.append(name)
        if i < feeds:
            dtype = helper.np_dtype_to_tensor_dtype(array.dtype)
            graph_inputs.append(helper.make_tensor_value_info(name, dtype, array.shape))
            feed[name] = array
        else:
            initializers.append(numpy_helper.from_array(array, name))
    outputs = [f"out{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, names, outputs, **(attrs or {}))
    graph = helper.make_graph(
        [node],
        "g",
        graph_inputs,
        [helper.make_empty_tensor_value_info(o) for o in outputs],
        initializer=initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model, feed


def run_ort(
    op_type: str,
    inputs: Sequence[np.ndarray | None],
    attrs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> list[np.ndarray]:
    """Outputs of one ONNX node under onnxruntime's CPU provider."""
    model, feed = node_model(op_type, inputs, attrs, **kwargs)
    session = reference_session(model)
    return session.run(None, feed)


def run_reference(
    op_type: str,
    inputs: Sequence[np.ndarray | None],
    attrs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> list[np.ndarray]:
    """Outputs of one ONNX node under onnx's Python reference evaluator."""
    model, feed = node_model(op_type, inputs, attrs, **kwargs)
    return ReferenceEvaluator(model).run(None, feed)


def assert_close(
    actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-5, atol: float = 1e-5
) -> None:
    """allclose with atol scaled by the expected magnitude; shapes and dtypes must match."""
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0, where=np.isfinite(expected))))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol * scale)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture(name="onnx_ort")
def _onnx_ort():
    """run_ort(op_type, inputs, attrs, *, n_outputs, opset, feeds) -> outputs."""
    return run_ort


@pytest.fixture(name="onnx_ref")
def _onnx_ref():
    """run_reference(op_type, inputs, attrs, *, n_outputs, opset, feeds) -> outputs."""
    return run_reference


@pytest.fixture(name="close")
def _close():
    """assert_close(actual, expected, rtol=1e-5, atol=1e-5): atol scales with |expected|."""
    return assert_close


@pytest.fixture(params=["numba", "numpy"])
def kernel_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each NPU runtime kernel path in turn (NPUC_KERNELS, runtime/npu_jit.py)."""
    monkeypatch.setenv("NPUC_KERNELS", request.param)
    return str(request.param)
