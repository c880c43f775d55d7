"""Models into IR and pass pipelines over it: what the flows and the Python API share."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from .diagnostics import NpucError, pipeline_error
from .dialects.context import make_context
from .registry import DEFAULT_PIPELINE, applying, pass_factories, verify_after

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
    module: ModuleOp,
    pipeline: str = DEFAULT_PIPELINE,
    ctx: Context | None = None,
    *,
    verify: bool = True,
) -> ModuleOp:
    """Run a pass pipeline (`npu-opt -p` syntax, or "default") on a module in place and
    verify the result (`verify=False`: the caller verifies after a later pipeline that
    keeps these ops)."""
    if pipeline == "default":
        pipeline = DEFAULT_PIPELINE
    if pipeline:
        passes = parse_pipeline(pipeline)
        from .locations import name_locations

        ctx = ctx or make_context()
        for p in passes.passes:
            with applying(p):
                p.apply(ctx, module)
            name_locations(module)  # the ops the pass built, located by their layer
        if verify:
            verify_after(passes.passes[-1] if len(passes.passes) == 1 else pipeline, module)
    return module


def parse_pipeline(pipeline: str) -> PassPipeline:
    """The passes of a pipeline (`npu-opt -p` syntax); an NpucError if it does not parse."""
    from xdsl.utils.exceptions import ArgSpecParseError

    try:
        return PassPipeline.parse_spec(pass_factories(pipeline), pipeline)
    except (ValueError, ArgSpecParseError) as e:
        raise NpucError(f"bad pass pipeline '{pipeline}': {pipeline_error(e)}") from None
