"""An `onnx.backend.base.Backend` for npuc: import, default pipeline, reference interpreter.

This lets ONNX's own backend test suite (`onnx.backend.test.BackendTest`) run
against npuc, and gives users the familiar `prepare(model).run(inputs)` API.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep
from xdsl.dialects.builtin import ModuleOp

from .api import apply_pipeline
from .graph_io import entry_function, input_names, output_names
from .registry import DEFAULT_PIPELINE


class NpucBackendRep(BackendRep):
    """A model imported into `nn` and optimised, ready to run."""

    def __init__(self, module: ModuleOp):
        self.module = module
        func = entry_function(module)
        self.input_names = input_names(func)
        self.output_names = output_names(func)

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        from .runtime.nn_interpreter import run_module

        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            arrays = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            feeds = dict(zip(self.input_names, arrays, strict=True))
        results = run_module(self.module, feeds)
        return tuple(results[name] for name in self.output_names)


class NpucBackend(Backend):
    """npuc's reference execution of ONNX models, on the CPU."""

    pipeline: str = DEFAULT_PIPELINE

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> NpucBackendRep:
        from .frontends.onnx import import_onnx

        module = import_onnx(model)
        apply_pipeline(module, kwargs.get("pipeline", cls.pipeline))
        return NpucBackendRep(module)

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
