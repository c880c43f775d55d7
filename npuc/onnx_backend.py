"""An `onnx.backend.base.Backend` for npuc: import, default pipeline, reference interpreter.

This lets ONNX's own backend test suite (`onnx.backend.test.BackendTest`) run
against npuc, and gives users the familiar `prepare(model).run(inputs)` API.

npuc compiles statically shaped programs, so graph inputs that act as
compile-time parameters (integer inputs such as Reshape's `shape` or Slice's
`starts`, and float parameter slots such as Resize's `scales` or Clip's bounds)
are frozen to the values given to `run()`: the model is compiled on first use
with those values and recompiled when they change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep
from xdsl.dialects.builtin import ModuleOp

from .graph_io import entry_function, output_names
from .pipeline import apply_pipeline
from .registry import DEFAULT_PIPELINE

# Input positions that are compile-time parameters, not data: op type -> positions.
_REDUCE = {1}
PARAMETER_SLOTS: dict[str, set[int]] = {
    "Reshape": {1},
    "LSTM": {4},  # sequence_lens
    "GRU": {4},
    "RNN": {4},
    "Slice": {1, 2, 3, 4},
    "Pad": {1, 2, 3},
    "Split": {1},
    "Squeeze": {1},
    "Unsqueeze": {1},
    "Tile": {1},
    "Expand": {1},
    "Resize": {1, 2, 3},
    "Upsample": {1},
    "ConstantOfShape": {0},
    "Clip": {1, 2},
    "Gather": {1},
    **{
        op: _REDUCE
        for op in [
            "ReduceMean",
            "ReduceSum",
            "ReduceMax",
            "ReduceMin",
            "ReduceProd",
            "ReduceL1",
            "ReduceL2",
            "ReduceSumSquare",
            "ReduceLogSum",
            "ReduceLogSumExp",
        ]
    },
}


def parameter_inputs(model: onnx.ModelProto) -> set[str]:
    """Graph inputs whose values only decide parameter slots, so the compiler must know them.

    An input is a parameter when every path from it ends in a parameter slot,
    directly (Reshape's `shape`) or through the arithmetic that computes one
    (expanded CenterCropPad: Max/Sub/Div of a `shape` input, then Pad's pads
    and Slice's starts). Data inputs, whose values reach a data slot or a graph
    output, are never frozen, whatever their type: a test of integer data must
    exercise the interpreter, not constant folding at import.
    """
    graph = model.graph
    initialized = {t.name for t in graph.initializer}
    candidates = {i.name for i in graph.input if i.name not in initialized}
    to_data = {o.name for o in graph.output}
    to_param: set[str] = set()
    changed = True
    while changed:  # one pass suffices for topologically sorted nodes
        before = len(to_data) + len(to_param)
        for node in reversed(graph.node):
            slots = PARAMETER_SLOTS.get(node.op_type)
            outputs = [o for o in node.output if o]
            feeds_data = any(o in to_data for o in outputs)
            feeds_param = any(o in to_param for o in outputs)
            for position, name in enumerate(node.input):
                if not name:
                    continue
                if slots is None:
                    if feeds_data:
                        to_data.add(name)
                    if feeds_param:
                        to_param.add(name)
                elif position in slots:
                    to_param.add(name)
                else:
                    to_data.add(name)
        changed = len(to_data) + len(to_param) != before
    return (candidates & to_param) - to_data


class NpucBackendRep(BackendRep):
    """A model ready to run: compiled now, or on first run if it has parameter inputs."""

    def __init__(self, model: onnx.ModelProto, pipeline: str):
        self.model = model
        self.pipeline = pipeline
        initialized = {t.name for t in model.graph.initializer}
        self.input_names = [i.name for i in model.graph.input if i.name not in initialized]
        self.parameters = parameter_inputs(model)
        self._compiled: dict[bytes, ModuleOp] = {}
        if not self.parameters:
            self._compiled[b""] = self._compile({})

    def _compile(self, constants: dict[str, np.ndarray]) -> ModuleOp:
        from .frontends.onnx import import_onnx

        module = import_onnx(self.model, constants=constants)
        return apply_pipeline(module, self.pipeline)

    def module_for(self, feeds: dict[str, np.ndarray]) -> ModuleOp:
        constants = {name: np.asarray(feeds.pop(name)) for name in sorted(self.parameters)}
        key = b"".join(
            f"{n}:{v.dtype}:{v.shape}:".encode() + v.tobytes() for n, v in constants.items()
        )
        if key not in self._compiled:
            self._compiled[key] = self._compile(constants)
        return self._compiled[key]

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        from .runtime.nn_interpreter import run_module

        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            arrays = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            feeds = dict(zip(self.input_names, arrays, strict=True))
        module = self.module_for(feeds)
        results = run_module(module, feeds)
        return tuple(results[name] for name in output_names(entry_function(module)))


class NpucBackend(Backend):
    """npuc's reference execution of ONNX models, on the CPU."""

    pipeline: str = DEFAULT_PIPELINE

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> NpucBackendRep:
        return NpucBackendRep(model, kwargs.get("pipeline", cls.pipeline))

    @classmethod
    def run_model(
        cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Sequence[np.ndarray],
        device: str = "CPU",
        outputs_info: Sequence[tuple[Any, tuple[int, ...]]] | None = None,
        **kwargs: Any,
    ) -> tuple[np.ndarray, ...]:
        raise NotImplementedError("npuc runs whole models; use prepare(model).run(inputs)")

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"
