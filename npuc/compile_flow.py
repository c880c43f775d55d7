"""The one-shot compilation flow behind `npu-compile`: model in, deployable files out.

Stages: import, optimise (the default float pipeline), quantize (calibrate a float
model, or keep a quantized model's own parameters), tile, plan memory, lower to NPU
instructions, and emit (binary, bundle, reports, cycle-model profile).
Every stage is timed; nothing is written until all of them succeeded.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from xdsl.dialects.builtin import ModuleOp

from .diagnostics import NpucError, located, working_on
from .limits import MAX_COUNT

OPTIMISE = ("performance", "size")
TARGET_KEY = "target"  # debug-section key naming the target a binary was compiled for


@dataclass
class CompileOptions:
    """Everything `npu-compile` takes (flags or a config file's [build] section)."""

    model: Path
    target: str
    output: Path
    name: str | None = None
    optimise: str = "performance"
    scheme: str | None = None  # None: int8 for a float model, the model's own if quantized
    calib: str | None = None
    calib_random: int | None = None
    tiling: str = ""
    host_fallback: bool = True  # ops without an NPU instruction run on the target's host CPU
    import_options: dict = field(default_factory=dict)


@dataclass
class CompileResult:
    name: str
    files: dict[str, bytes]
    summary: list[str]
    timings: list[tuple[str, float]]
    host_ops: list[str] = field(default_factory=list)  # one line per op run on the host


class Stages:
    """Times each stage and reports it on `stream` as `[i/n] stage: detail (t s)`."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool = True):
        self.total, self.index, self.enabled = total, 0, enabled
        self.stream = stream
        self.timings: list[tuple[str, float]] = []

    @contextmanager
    def stage(self, label: str, detail: str = "") -> Iterator[None]:
        self.index += 1
        out = self.stream or sys.stderr
        if self.enabled:
            print(
                f"[{self.index}/{self.total}] {label}{': ' + detail if detail else ''} ...",
                end="",
                file=out,
                flush=True,
            )
        start = time.perf_counter()
        try:
            with working_on("stage", label):
                yield
        except BaseException:
            if self.enabled:  # end the progress line before the error is reported
                print(" failed", file=out, flush=True)
            raise
        seconds = time.perf_counter() - start
        self.timings.append((label, seconds))
        if self.enabled:
            print(f" {seconds:.2f} s", file=out, flush=True)


def is_quantized(module: ModuleOp) -> bool:
    return any(op.name.startswith("qnn.") for op in module.walk())


def check_options(options: CompileOptions) -> None:
    if options.optimise not in OPTIMISE:
        raise NpucError(f"--optimise must be size or performance, got '{options.optimise}'")
    if options.calib is not None and options.calib_random is not None:
        raise NpucError("give one of --calib DIR and --calib-random N, not both")
    if options.calib_random is not None and options.calib_random < 1:
        raise NpucError("--calib-random needs a positive number of samples")
    if options.calib_random is not None and options.calib_random > MAX_COUNT:
        raise NpucError(
            f"--calib-random takes at most {MAX_COUNT} samples, got {options.calib_random}"
        )
    if options.calib is not None and not Path(options.calib).is_dir():
        raise NpucError(f"--calib: no such directory: {options.calib}")
    if options.tiling and options.tiling != "none":
        from .passes.tiling.manual import parse_manual

        try:
            parse_manual(options.tiling)  # its syntax, before any work
        except NpucError as e:
            raise NpucError(f"--tiling: {e.message.removeprefix('manual: ')}") from None


def compile_model(
    options: CompileOptions, progress: bool = True, stream: TextIO | None = None
) -> CompileResult:
    """Run every stage; returns the files to write (name -> bytes) and a summary."""
    from .api import apply_pipeline, load_model
    from .backend.bundle import check_name, identifier_from
    from .backend.npubin import encode_program
    from .backend.outputs import memory_files, memory_summary, with_program_constants
    from .passes.lower_to_npu import program_of
    from .passes.memory.ir import read_plan
    from .printing import print_module
    from .registry import DEFAULT_PIPELINE
    from .runtime.cycle_model import estimate
    from .target import load_target

    check_options(options)
    target = load_target(options.target)
    name = check_name(options.name) if options.name else identifier_from(options.model.stem)
    spec = json.dumps(options.target)
    stages = Stages(7, stream, progress)
    files: dict[str, bytes] = {}
    summary: list[str] = []
    import_options = dict(options.import_options)
    if options.calib is not None and options.model.suffix.lower() != ".mlir":
        from .input_shapes import calibration_shapes, declared_inputs, shapes_from_data

        arrays = calibration_shapes(options.calib, list(declared_inputs(options.model)))
        import_options["input_shapes"], notes = shapes_from_data(
            options.model,
            arrays,
            import_options.get("input_shapes"),
            "the first calibration sample",
        )
        summary += notes
    with stages.stage("import", str(options.model)), located(options.model):
        module = load_model(options.model, **import_options)
    with stages.stage("optimise", "default pipeline"), located(options.model):
        apply_pipeline(module, DEFAULT_PIPELINE)
    with stages.stage("quantize", _quantize_detail(module, options)):
        module, accuracy, warnings = _quantize(module, options)
    summary += [f"warning: {w}" for w in warnings]
    if accuracy is not None:
        files[f"{name}.accuracy.txt"], files[f"{name}.accuracy.json"] = accuracy
    if options.tiling == "none":  # one instruction a layer: the plan must fit as it is
        with stages.stage("tile", "none (--tiling none)"):
            pass
    else:
        tile = f"tile{{target={spec} optimise={options.optimise}"
        tile += f" manual={json.dumps(options.tiling)}}}" if options.tiling else "}"
        with stages.stage("tile", f"{target.name}, optimise for {options.optimise}"):
            try:
                apply_pipeline(module, tile)
            except NpucError as e:  # an entry that does not fit the model's layers
                if not e.message.startswith("manual: "):
                    raise
                raise NpucError(f"--tiling: {e.message.removeprefix('manual: ')}") from None
    io = "arena" if target.placement.io == target.placement.arena else "separate"
    with stages.stage(
        "plan memory", f"inputs and outputs {'in the arena' if io == 'arena' else 'apart'}"
    ):
        apply_pipeline(module, f"plan-memory{{target={spec} io={io}}}")
        planned = read_plan(module)
    host = "all" if options.host_fallback else "float"
    with stages.stage(
        "lower", "npu instructions" + ("" if options.host_fallback else ", no host fallback")
    ):
        apply_pipeline(module, f"lower-to-npu{{host={host}}}")
        program = _with_target(program_of(module), options.target)
    with stages.stage("emit", str(options.output)):
        files.update(
            memory_files(
                name, module, planned, target, options.model.name, with_ir=False, program=program
            )
        )
        files[f"{name}.npubin"] = encode_program(program)
        files[f"{name}.npu.mlir"] = print_module(module).encode()
        profile = estimate(program, target)
        files.update(profile_files(name, profile))
    summary.append(
        f"{len(program.instructions)} instructions; estimated {profile.total_cycles:,} cycles, "
        f"{profile.inference_ms:.2f} ms at {target.clock_mhz:g} MHz"
    )
    summary += profile.share.lines(target.host.name)
    summary += memory_summary(with_program_constants(planned, program)[0], target)
    return CompileResult(name, files, summary, stages.timings, profile.share.host_table())


def _with_target(program, target: str):
    """The program with the target it was compiled for in its debug section (for profiling)."""
    from dataclasses import replace

    return replace(program, debug=(*program.debug, (TARGET_KEY, target)))


def profile_files(name: str, profile) -> dict[str, bytes]:
    """NAME.profile.txt/.json/.html and NAME.trace.json of a cycle-model profile."""
    from .runtime.profile_report import chrome_trace, html, table, to_json

    return {
        f"{name}.profile.txt": (table(profile) + "\n").encode(),
        f"{name}.profile.json": (json.dumps(to_json(profile), indent=2) + "\n").encode(),
        f"{name}.profile.html": html(profile, f"{name}: npuc profile").encode(),
        f"{name}.trace.json": (json.dumps(chrome_trace(profile)) + "\n").encode(),
    }


def _quantize_detail(module: ModuleOp, options: CompileOptions) -> str:
    if is_quantized(module):
        return "keeping the model's own quantization"
    if options.calib is None and options.calib_random is None:
        return "a float model, without calibration data"
    source = f"{options.calib_random} random samples" if options.calib_random else options.calib
    return f"{options.scheme or 'int8'}, calibrated on {source}"


def _quantize(
    module: ModuleOp, options: CompileOptions
) -> tuple[ModuleOp, tuple[bytes, bytes] | None, list[str]]:
    """The quantized module, a float model's accuracy report (text, JSON), warnings."""
    if is_quantized(module):
        if options.scheme is not None:
            raise NpucError(
                f"{options.model.name} is already quantized: it keeps its own quantization "
                "(drop --scheme)"
            )
        return module, None, []
    if options.calib is None and options.calib_random is None:
        raise NpucError(
            f"{options.model.name} is a float model: give calibration data with --calib DIR "
            "or --calib-random N"
        )
    from .passes.quantization.datasets import folder_dataset, random_dataset
    from .passes.quantize import QuantizeConfig
    from .quantize_flow import calibrate, compare, quantize
    from .runtime.accuracy import to_json, to_table

    def data() -> Callable[[], object]:
        if options.calib is not None:
            return folder_dataset(module, options.calib)
        return random_dataset(module, options.calib_random, seed=0)

    statistics = calibrate(module, data(), progress=False)
    config = QuantizeConfig(scheme=options.scheme or "int8", io="quantized")
    quantized, report = quantize(module, statistics, config)
    outputs, tensors = compare(module, quantized, list(data()))
    meta = {"model": str(options.model), "scheme": config.scheme}
    text = to_table(outputs, tensors) + "\n"
    accuracy = (text.encode(), to_json(outputs, tensors, meta).encode())
    return quantized, accuracy, list(report.warnings)
