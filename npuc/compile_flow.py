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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

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
    pipeline: str | None = None  # the optimise stage's float pipeline; None: the default


@dataclass
class CompileResult:
    """What a compilation made: the files to write and the objects they describe."""

    name: str
    files: dict[str, bytes]  # file name -> contents (nothing is written yet)
    summary: list[str]
    timings: list[tuple[str, float]]  # (stage, seconds)
    host_ops: list[str] = field(default_factory=list)  # one line per op run on the host
    program: Any = None  # npu_isa.Program, the binary's contents
    plan: Any = None  # passes.memory.ir.PlannedModule, constants as in the binary
    profile: Any = None  # runtime.cycle_model.Profile, with the SRAM in use per layer
    layers: list = field(default_factory=list)  # runtime.layer_table.LayerRow per layer
    target: Any = None  # npuc.target.Target

    def write(self, folder: str | Path) -> list[Path]:
        """Write every file into `folder` (created if missing), all or none."""
        from .output_files import check_output_dir, write_folder

        check_output_dir(Path(folder))
        return write_folder(Path(folder), self.files)


class Stages:
    """Times each stage and reports it on `stream` as `[i/n] stage: detail ... (t s)`.

    On a terminal the line is drawn again when the stage ends, since a progress bar
    (npuc/progress.py) may have used it meanwhile."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool = True):
        self.total, self.index, self.enabled = total, 0, enabled
        self.stream = stream
        self.timings: list[tuple[str, float]] = []

    @contextmanager
    def stage(self, label: str, detail: str = "") -> Iterator[None]:
        self.index += 1
        out = self.stream or sys.stderr
        head = f"[{self.index}/{self.total}] {label}{': ' + detail if detail else ''} ..."
        again = "\r\x1b[K" + head if getattr(out, "isatty", lambda: False)() else ""
        if self.enabled:
            print(head, end="", file=out, flush=True)
        start = time.perf_counter()
        try:
            with working_on("stage", label):
                yield
        except BaseException:
            if self.enabled:  # end the progress line before the error is reported
                print(f"{again} failed", file=out, flush=True)
            raise
        seconds = time.perf_counter() - start
        self.timings.append((label, seconds))
        if self.enabled:
            print(f"{again} {seconds:.2f} s", file=out, flush=True)


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
    """Run every stage; returns the files to write (name -> bytes) and a summary.
    `progress=False`: no stage lines and no progress bars."""
    from .progress import quiet

    with quiet(not progress):
        return _compile(options, Stages(7, stream, progress))


def _compile(options: CompileOptions, stages: Stages) -> CompileResult:
    from .backend.bundle import check_name, identifier_from
    from .target import load_target

    check_options(options)
    target = load_target(options.target)
    name = check_name(options.name) if options.name else identifier_from(options.model.stem)
    return lower_model(quantized_model(options, stages), options, target, name, stages)


@dataclass
class QuantizedModel:
    """The model after the stages that depend on no target: import, optimise, quantize
    (what points of a sweep that differ only in target or tiling share)."""

    module: ModuleOp  # qnn
    float_module: ModuleOp | None  # the optimised float model; None if it came quantized
    accuracy: tuple[bytes, bytes] | None  # a float model's accuracy report (text, JSON)
    summary: list[str]
    timings: list[tuple[str, float]]


def quantized_model(options: CompileOptions, stages: Stages) -> QuantizedModel:
    """Import, optimise (`options.pipeline`, or the default float pipeline) and quantize."""
    from .pipeline import apply_pipeline, load_model
    from .registry import DEFAULT_PIPELINE

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
    start = len(stages.timings)
    with stages.stage("import", str(options.model)), located(options.model):
        module = load_model(options.model, **import_options)
    pipeline = DEFAULT_PIPELINE if options.pipeline is None else options.pipeline
    with stages.stage("optimise", options.pipeline or "default pipeline"), located(options.model):
        apply_pipeline(module, pipeline)
    with stages.stage("quantize", _quantize_detail(module, options)):
        quantized, accuracy, warnings = _quantize(module, options)
    summary += [f"warning: {w}" for w in warnings]
    float_module = None if quantized is module else module
    return QuantizedModel(quantized, float_module, accuracy, summary, stages.timings[start:])


def lower_model(
    front: QuantizedModel,
    options: CompileOptions,
    target,
    name: str,
    stages: Stages,
    files: bool = True,
) -> CompileResult:
    """Tile, plan memory, lower and emit `front.module` (changed in place) for `target`
    (an npuc.target.Target; `options.target` names it in the binary). `files=False`: only
    the binary and the figures, not the reports (what a sweep needs)."""
    from .backend.npubin import constants_section, encode_program
    from .backend.outputs import memory_files, memory_summary, with_program_constants
    from .passes.memory.ir import read_plan
    from .passes.memory.usage import layer_peaks
    from .pipeline import apply_pipeline
    from .printing import print_module
    from .runtime.cycle_model import estimate
    from .runtime.layer_table import layer_rows

    module = front.module
    spec = json.dumps(options.target)
    outputs: dict[str, bytes] = {}
    if front.accuracy is not None:
        outputs[f"{name}.accuracy.txt"], outputs[f"{name}.accuracy.json"] = front.accuracy
    summary = list(front.summary)
    start = len(stages.timings)
    if options.tiling == "none":  # one instruction a layer: the plan must fit as it is
        with stages.stage("tile", "none (--tiling none)"):
            pass
    else:
        tile = f"tile{{target={spec} optimise={options.optimise}"
        tile += f" manual={json.dumps(options.tiling)}}}" if options.tiling else "}"
        with stages.stage("tile", f"{target.name}, optimise for {options.optimise}"):
            # verified with the placements: plan-memory keeps every tile op
            try:
                apply_pipeline(module, tile, verify=False)
            except NpucError as e:  # an entry that does not fit the model's layers
                if not e.message.startswith("manual: "):
                    raise
                raise NpucError(f"--tiling: {e.message.removeprefix('manual: ')}") from None
    io = "arena" if target.placement.io == target.placement.arena else "separate"
    with stages.stage(
        "plan memory", f"inputs and outputs {'in the arena' if io == 'arena' else 'apart'}"
    ):
        # Performance mode spends SRAM on double-buffered loads so DMA overlaps compute.
        double = str(options.optimise == "performance").lower()
        apply_pipeline(module, f"plan-memory{{target={spec} io={io} double_buffer={double}}}")
        planned = read_plan(module)
    host = "all" if options.host_fallback else "float"
    with stages.stage(
        "lower", "npu instructions" + ("" if options.host_fallback else ", no host fallback")
    ):
        program = _lower(module, host, target.weight_decoder is not None, options.target)
    with stages.stage("emit", str(options.output)):
        section = constants_section(program)  # encoded once for the binary and the reports
        if files:
            outputs.update(
                memory_files(
                    name,
                    module,
                    planned,
                    target,
                    options.model.name,
                    with_ir=False,
                    program=program,
                    section=section,
                )
            )
        # lowering checked every instruction; streams and debug entries came after
        outputs[f"{name}.npubin"] = encode_program(program, section, instructions_checked=True)
        if files:  # reassembles to the binary
            outputs[f"{name}.npu.mlir"] = print_module(module).encode()
        profile = estimate(program, target)
        profile.sram = layer_peaks(planned, target.sram.name)
        binary_plan = with_program_constants(planned, program, section)[0]
        rows = layer_rows(profile, program)
        if files:
            figures = plan_figures(planned, binary_plan, target, program)
            outputs.update(profile_files(name, profile, rows, figures))
    summary.append(
        f"{len(program.instructions)} instructions; estimated {profile.total_cycles:,} cycles, "
        f"{profile.inference_ms:.2f} ms at {target.clock_mhz:g} MHz"
    )
    summary += profile.share.lines(target.host.name)
    summary += memory_summary(binary_plan, target)
    return CompileResult(
        name,
        outputs,
        summary,
        [*front.timings, *stages.timings[start:]],
        profile.share.host_table(),
        program,
        binary_plan,
        profile,
        rows,
        target,
    )


def plan_figures(planned, binary_plan, target, program) -> dict[str, object]:
    """The memory plan's figures for NAME.summary.csv: region sizes (the constants as the
    flash holds them, and decoded: the planned weights and what lowering appends) and each
    memory's use against its capacity."""
    from .passes.memory.report import memory_usage

    def size(plan, region: str) -> int:
        return plan.regions[region].size if region in plan.regions else 0

    decoded = program.region("constants")
    decoded_size = decoded.size if decoded is not None else 0
    figures: dict[str, object] = {
        "constants_bytes": size(binary_plan, "constants"),
        "constants_decoded_bytes": decoded_size,
        "weights_bytes": size(planned, "constants"),
        "tables_bytes": decoded_size - size(planned, "constants"),
        "mutable_bytes": size(binary_plan, "mutable"),
        "activations_bytes": size(binary_plan, "activations"),
    }
    for memory, used, capacity in memory_usage(binary_plan, target):
        figures[f"{memory}_used_bytes"] = used
        figures[f"{memory}_capacity_bytes"] = capacity
    return figures


def _lower(module: ModuleOp, host: str, decoder: bool, target: str):
    """What `lower-to-npu{host=...}` and, for a target that decodes constants,
    `compress-constants` make of the module, with the target recorded in the program's debug
    section (for profiling; in the IR too, so that NAME.npu.mlir and NAME.npubin state the
    same program). Returns the program without reading it back from the IR it became."""
    from xdsl.dialects.builtin import DictionaryAttr, StringAttr

    from .dialects.npu import program_op
    from .passes.compress_constants import CompressConstantsPass, choose_streams, mark_streams
    from .passes.lower_to_npu import LowerToNpuPass, install_program, lower_program
    from .registry import applying

    # the lowering checks its program against every rule (check_instruction,
    # check_program, check_hazards) before it becomes npu ops: not again as ops
    with applying(LowerToNpuPass(host=host)):  # named in an internal error, as the pass is
        program, host_bodies = lower_program(module, host)
        install_program(module, program, host_bodies)
    op = program_op(module)
    if decoder:  # it only marks streams, which encode_program checks with the whole program
        with applying(CompressConstantsPass()):
            program = replace(program, streams=choose_streams(program))
            mark_streams(op, program.streams)
    debug = {**dict(program.debug), TARGET_KEY: target}
    program = replace(program, debug=tuple(debug.items()))
    op.debug = DictionaryAttr({k: StringAttr(v) for k, v in debug.items()})
    return program


def profile_files(name: str, profile, rows, figures: dict[str, object]) -> dict[str, bytes]:
    """NAME.profile.txt/.json/.html, NAME.trace.json, NAME.layers.csv and NAME.summary.csv
    of a cycle-model profile (`rows`: its layer_table rows; `figures`: the plan's)."""
    from .runtime.profile_csv import layers_csv, summary_csv
    from .runtime.profile_report import chrome_trace, html, table, to_json

    return {
        f"{name}.profile.txt": (table(profile) + "\n").encode(),
        f"{name}.profile.json": (json.dumps(to_json(profile), indent=2) + "\n").encode(),
        f"{name}.profile.html": html(profile, f"{name}: npuc profile", rows).encode(),
        f"{name}.trace.json": (json.dumps(chrome_trace(profile)) + "\n").encode(),
        f"{name}.layers.csv": layers_csv(rows, profile).encode(),
        f"{name}.summary.csv": summary_csv(profile, name, figures).encode(),
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
    from .passes.quantization.float_runs import FloatRuns
    from .passes.quantize import QuantizeConfig
    from .quantize_flow import calibrate, compare, quantize
    from .runtime.accuracy import to_json, to_table

    def data() -> Callable[[], object]:
        if options.calib is not None:
            return folder_dataset(module, options.calib)
        return random_dataset(module, options.calib_random, seed=0)

    runs = FloatRuns()  # calibration's float runs, replayed by the probe and the report
    statistics = calibrate(module, data(), float_runs=runs)
    config = QuantizeConfig(scheme=options.scheme or "int8", io="quantized")
    quantized, report = quantize(module, statistics, config)
    outputs, tensors = compare(module, quantized, list(data()), float_runs=runs)
    meta = {"model": str(options.model), "scheme": config.scheme}
    text = to_table(outputs, tensors) + "\n"
    accuracy = (text.encode(), to_json(outputs, tensors, meta).encode())
    return quantized, accuracy, list(report.warnings)
