"""npu-run on a model (.onnx, .tflite, .mlir): import, passes, quantization, then the reference
interpreters; the outputs printed and saved. run_binary.py runs compiled programs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..diagnostics import NpucError, located, working_on
from .cli_options import import_options
from .quantize_options import quantize_and_report

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp


def summarise(name: str, array: np.ndarray) -> str:
    stats = ""
    if array.size:
        values = array.astype(np.float64)
        stats = f"  min {values.min():.6g}  max {values.max():.6g}  mean {values.mean():.6g}"
    return f"{name}: shape {tuple(array.shape)} {array.dtype}{stats}"


def save_npz(path: str, arrays: dict[str, np.ndarray]) -> None:
    """Write the arrays as an .npz (npuc/output_files.py: atomic, harmless to devices)."""
    from ..output_files import write_file

    with working_on("step", "save outputs"):
        write_file(path, lambda f: np.savez(f, **arrays))


def run_model(args: argparse.Namespace, feeds: dict[str, np.ndarray]) -> int:
    from ..graph_io import entry_function, state_names
    from ..runtime.qnn_interpreter import dequantized_outputs, random_inputs, run_module

    module = prepare_module(args, feeds)
    if module is None:
        return 0
    with located(args.model):  # a module without an entry function
        stateful = bool(state_names(entry_function(module)))
    if args.sequence is not None or stateful:
        return run_steps(module, feeds, args)
    with located(args.model):
        generated = random_inputs(module, skip=feeds.keys(), seed=args.seed)
    for name, array in generated.items():
        print(
            f"note: no --input for '{name}': using seeded random data "
            f"{tuple(array.shape)} {array.dtype}"
        )
    with working_on("step", "run"), located(args.model):
        outputs = dequantized_outputs(module, run_module(module, {**feeds, **generated}))
    for name, array in outputs.items():
        print(summarise(name, array))
    if args.output:
        save_npz(args.output, outputs)
        print(f"saved {len(outputs)} output(s) to {args.output}")
    return 0


def prepare_module(args: argparse.Namespace, feeds: dict[str, np.ndarray]) -> ModuleOp | None:
    """The module to run: imported, passed through -p, quantized, checked against --level
    (None when --quantize --compare was all there was to do)."""
    from ..api import apply_pipeline, export_qdq, load_model
    from ..printing import print_module
    from ..registry import DEFAULT_PIPELINE
    from ..runtime.qnn_interpreter import check_level

    if args.output and not Path(args.output).resolve().parent.is_dir():
        raise NpucError("cannot write: its directory does not exist", args.output)
    options = import_options(args)
    if feeds and not args.model.endswith(".mlir"):
        from ..input_shapes import shapes_from_data

        shapes = {name: array.shape for name, array in feeds.items()}
        options["input_shapes"], notes = shapes_from_data(
            args.model, shapes, options["input_shapes"], "its --input array"
        )
        for note in notes:
            print(note)
    with working_on("step", "import"), located(args.model):
        module = load_model(args.model, **options)
    if args.passes or args.quantize:
        # Quantize the optimised float graph (batch norms folded, activations fused).
        passes = args.passes or "default"
        with working_on("step", "passes"), located(args.model):
            apply_pipeline(module, DEFAULT_PIPELINE if passes == "default" else passes)
    if args.export_qdq and not Path(args.export_qdq).resolve().parent.is_dir():
        raise NpucError("--export-qdq: cannot write: its directory does not exist", args.export_qdq)
    if args.quantize:
        with working_on("step", "quantize"), located(args.model):
            module = quantize_and_report(module, args)
    if args.export_qdq:
        with working_on("step", "export ONNX QDQ"), located(args.export_qdq):
            export_qdq(module, args.export_qdq)
        print(f"wrote the ONNX QDQ model to {args.export_qdq}")
    if args.quantize and args.compare:
        return None
    if args.level:
        with located(args.model):
            check_level(module, args.level)
    if args.print_ir:
        print(print_module(module, args.elide_above, debuginfo=args.print_debuginfo))
    return module


def run_steps(module: ModuleOp, feeds: dict[str, np.ndarray], args: argparse.Namespace) -> int:
    """A stateful model (one call unless --sequence), starting from its initial state."""
    from ..frontends.tflite_state import run_sequence, sequence_feeds
    from ..runtime.qnn_interpreter import dequantized_outputs

    steps = args.sequence
    if steps is None:  # one call: inputs have no sequence axis
        feeds = {name: array[None] for name, array in feeds.items()}
    with located(args.model):
        per_step, generated = sequence_feeds(module, feeds, steps or 1, args.seed)
    for name in generated:
        print(f"note: no --input for '{name}': using seeded random data at each step")
    with working_on("step", "run"), located(args.model):
        results = [dequantized_outputs(module, o) for o in run_sequence(module, per_step)[0]]
    for k, outputs in enumerate(results):
        for name, array in outputs.items():
            print((f"step {k}: " if steps is not None else "") + summarise(name, array))
    if args.output:
        if steps is None:
            saved = results[0]
        else:
            saved = {name: np.stack([o[name] for o in results]) for name in results[0]}
        save_npz(args.output, saved)
        print(f"saved {len(saved)} output(s) to {args.output}")
    return 0
