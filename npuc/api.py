"""The Python API: everything the command-line tools do, as functions."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from .diagnostics import NpucError, pipeline_error, working_on
from .dialects.context import make_context
from .registry import DEFAULT_PIPELINE, PASSES

ModelSource = str | os.PathLike[str] | ModuleOp


def parse_mlir(
    text: str | bytes, location: str = "<input>", ctx: Context | None = None
) -> ModuleOp:
    """Parse and verify textual IR (npuc/ir_text.py: every failure an NpucError at `location`)."""
    from .ir_text import parse_module, verify_module

    module = parse_module(ctx or make_context(), text, location)
    verify_module(module, location)
    return module


def load_model(
    source: ModelSource,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    inputs: Sequence[str] | None = None,
    outputs: Sequence[str] | None = None,
    prequantized: str = "keep",
) -> ModuleOp:
    """Import a model file (.onnx or .mlir) into IR, or pass a module through.

    `prequantized` decides how a pre-quantized ONNX model imports: "keep" (into
    qnn, with the model's own parameters) or "dequantize" (float, to re-calibrate).
    """
    if isinstance(source, ModuleOp):
        return source
    path = Path(source)
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        from .frontends.onnx import import_onnx

        return import_onnx(
            path,
            input_shapes=input_shapes,
            inputs=inputs,
            outputs=outputs,
            prequantized=prequantized,
        )
    if suffix == ".tflite":
        from .frontends.tflite import import_tflite

        return import_tflite(path, input_shapes=input_shapes, inputs=inputs, outputs=outputs)
    if suffix == ".mlir":
        if input_shapes or inputs or outputs:
            raise NpucError(
                "--input-shape/--inputs/--outputs apply to model imports, not .mlir", str(path)
            )
        try:
            data = path.read_bytes()
        except OSError as e:
            raise NpucError(e.strerror or str(e), str(path)) from None
        return parse_mlir(data, str(path))
    raise NpucError(
        f"unrecognised model format '{suffix or path.name}' (expected .onnx, .tflite or .mlir)",
        str(path),
    )


def apply_pipeline(
    module: ModuleOp, pipeline: str = DEFAULT_PIPELINE, ctx: Context | None = None
) -> ModuleOp:
    """Run a pass pipeline (`npu-opt -p` syntax, or "default") on a module in place and
    verify the result."""
    if pipeline == "default":
        pipeline = DEFAULT_PIPELINE
    if pipeline:
        from xdsl.utils.exceptions import ArgSpecParseError

        try:
            passes = PassPipeline.parse_spec(PASSES, pipeline)
        except (ValueError, ArgSpecParseError) as e:
            raise NpucError(f"bad pass pipeline '{pipeline}': {pipeline_error(e)}") from None
        ctx = ctx or make_context()
        for p in passes.passes:
            with working_on("pass", p):
                p.apply(ctx, module)
        module.verify()
    return module


def run(
    model: ModelSource,
    inputs: Mapping[str, np.ndarray] | None = None,
    *,
    pipeline: str | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Import (if needed), optionally optimise, and execute a model with the reference interpreter.

    Works on `nn`, `qnn` and mixed modules; quantized outputs are stored integers.
    Inputs not given are filled with deterministic random data (see `random_inputs`).
    A model file's dynamic input dimensions take their sizes from the `inputs` arrays.
    """
    from .input_shapes import shapes_from_data
    from .runtime.qnn_interpreter import run_module

    if inputs and not isinstance(model, ModuleOp):
        shapes = {name: np.shape(array) for name, array in inputs.items()}
        input_shapes, _ = shapes_from_data(model, shapes, input_shapes, "its input array")
    module = load_model(model, input_shapes=input_shapes)
    if pipeline:
        apply_pipeline(module, pipeline)
    feeds = dict(inputs or {})
    feeds.update(random_inputs(module, skip=feeds.keys(), seed=seed))
    return run_module(module, feeds)


def export_qdq(module: ModuleOp, path: str | os.PathLike[str]) -> None:
    """Write a qnn (or mixed) module as ONNX QDQ, to run in onnxruntime or view in Netron."""
    from .backend.onnx_export import save_qdq

    save_qdq(module, path)


def random_inputs(module: ModuleOp, skip=(), seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic standard-normal data for every entry-function input not in `skip`.

    A quantized input gets reals too (quantized on entry), drawn from the same
    stream, so a float model and its quantized version see the same data.
    """
    from .runtime.qnn_interpreter import random_inputs as generate

    return generate(module, skip, seed)
