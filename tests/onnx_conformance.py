"""Which of ONNX's backend test cases npuc runs, and why the rest are excluded.

The cases come from `onnx.backend.test.BackendTest` (the runner ONNX ships for
backend conformance). npuc runs:
- every generated node test whose graph uses only ONNX ops npuc claims,
- the nine model-zoo graphs in `onnx/backend/test/data/light/` ("real" kind),
- all `simple`, `pytorch-converted` and `pytorch-operator` cases,
minus the cases listed in `tests/conformance/exclusions.toml`, each with its reason.
"""

from __future__ import annotations

import tomllib
import unittest
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from onnx.backend.test.loader import load_model_tests

EXCLUSIONS_FILE = Path(__file__).parent / "conformance" / "exclusions.toml"

CLAIMED_OPS = frozenset(
    [
        "LSTM",
        "GRU",
        "RNN",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Sum",
        "Min",
        "Max",
        "Relu",
        "LeakyRelu",
        "PRelu",
        "Clip",
        "Sigmoid",
        "HardSigmoid",
        "HardSwish",
        "Tanh",
        "Exp",
        "Log",
        "Sqrt",
        "Pow",
        "Erf",
        "Abs",
        "Neg",
        "Reciprocal",
        "Floor",
        "Ceil",
        "Softplus",
        "Elu",
        "Gelu",
        "Softmax",
        "LogSoftmax",
        "Conv",
        "ConvTranspose",
        "Gemm",
        "MatMul",
        "MaxPool",
        "AveragePool",
        "GlobalAveragePool",
        "GlobalMaxPool",
        "BatchNormalization",
        "LRN",
        "LayerNormalization",
        "InstanceNormalization",
        "ReduceMean",
        "ReduceSum",
        "ReduceMax",
        "ReduceMin",
        "ReduceProd",
        "ArgMax",
        "ArgMin",
        "Reshape",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "Transpose",
        "Concat",
        "Split",
        "Slice",
        "Pad",
        "Resize",
        "Upsample",
        "Gather",
        "DepthToSpace",
        "SpaceToDepth",
        "Expand",
        "Shape",
        "ConstantOfShape",
        "Constant",
        "Identity",
        "Dropout",
        "Cast",
        "CastLike",
        "Equal",
        "Less",
        "LessOrEqual",
        "Greater",
        "GreaterOrEqual",
        "Not",
        "And",
        "Or",
        "Xor",
        "Where",
    ]
)

KINDS = {
    "OnnxBackendNodeModelTest": "node",
    "OnnxBackendRealModelTest": "real",
    "OnnxBackendSimpleModelTest": "simple",
    "OnnxBackendPyTorchConvertedModelTest": "pytorch-converted",
    "OnnxBackendPyTorchOperatorModelTest": "pytorch-operator",
}


@dataclass(frozen=True)
class Case:
    name: str
    kind: str
    run: Callable[[], None]


@cache
def node_test_ops() -> dict[str, frozenset[str]]:
    """Op types used by each generated node test's graph."""
    ops = {}
    for case in load_model_tests(kind="node"):
        if case.model is not None:
            ops[case.name] = frozenset(n.op_type for n in case.model.graph.node)
    return ops


@cache
def exclusions() -> dict[str, str]:
    with EXCLUSIONS_FILE.open("rb") as f:
        data = tomllib.load(f)
    return {name: reason for section in data.values() for name, reason in section.items()}


def _runner(test_class: type[unittest.TestCase], method: str) -> Callable[[], None]:
    def run() -> None:
        getattr(test_class(method), method)()

    return run


@cache
def all_cases() -> dict[str, Case]:
    """Every backend test case for the CPU device, keyed by name without the `_cpu` suffix."""
    from onnx.backend.test import BackendTest

    from npuc.onnx_backend import NpucBackend

    cases = {}
    for category, test_class in BackendTest(NpucBackend, __name__).test_cases.items():
        kind = KINDS.get(category)
        if kind is None:
            continue
        for method in dir(test_class):
            if method.startswith("test_") and method.endswith("_cpu"):
                name = method.removesuffix("_cpu")
                cases[name] = Case(name, kind, _runner(test_class, method))
    return cases


def claimed(case: Case) -> bool:
    if case.kind != "node":
        return True
    ops = node_test_ops().get(case.name)
    return ops is not None and ops <= CLAIMED_OPS


def selected_cases() -> list[Case]:
    """Claimed cases that are not excluded: the ones the test suite runs."""
    excluded = exclusions()
    return [c for c in all_cases().values() if claimed(c) and c.name not in excluded]
