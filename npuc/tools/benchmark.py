"""`npu-run MODEL --benchmark N [--warmup K] [--json FILE]`: time a model's execution.

Like LiteRT's `benchmark_model`: the model is prepared once, then run K times untimed
(warm-up: the reference interpreter converts its constants on its first call) and N
times timed, every call on the same inputs (the --input arrays, the others seeded random
data, a stateful model's state its initial value). Only the call is timed, with
`time.perf_counter_ns`:

- a compiled `.npubin`: loaded, validated and given one `Executor` (the "init" time);
  each call is `Executor.run` (inputs into the arenas, the program, outputs copied out);
- a `.onnx`, `.tflite` or `.mlir` model: imported, passed through -p and --quantize, and
  given one reference-interpreter runner (the "init" time); each call is the runner's
  `run` (the float/qnn interpreter npu-run uses otherwise).

"init" starts once npuc's modules are imported; "first" is the first call's time.

The summary gives the count and the min, median, mean, max and standard deviation of
the N timed calls in ms; --json FILE writes them (with --benchmark, --json holds the
timings, not a --quantize comparison or a --profile).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..diagnostics import NpucError, located, working_on
from ..limits import MAX_COUNT

DEFAULT_WARMUP = 1
ENGINES = {"npu-runtime": "the NPU runtime", "reference-interpreter": "the reference interpreter"}

#: Options of another kind of run, refused with --benchmark (dest -> why).
_OTHER_RUNS = {
    "sequence": "--benchmark times single calls (a stateful model's from its initial state)",
    "profile": "the profile is the cycle model's estimate; run it separately",
    "target": "--target names the profile's target; run the profile separately",
    "dump_tensors": "dumping tensors would be timed; run it separately",
    "compare": "the accuracy comparison is a separate run",
    "target_cosine": "the mixed-precision search is a separate run",
    "max_top1_drop": "the mixed-precision search is a separate run",
}


def _count(minimum: int) -> Callable[[str], int]:
    kind = "a positive" if minimum else "a non-negative"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"expected {kind} integer, got '{text}'")
        if value > MAX_COUNT:
            raise argparse.ArgumentTypeError(f"must be at most {MAX_COUNT}, got {value}")
        return value

    return parse


def add_benchmark_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "benchmarking",
        "Time the model's execution like LiteRT's benchmark_model: prepare it once, run it "
        "--warmup K times untimed, then N times timed on the same inputs (--input arrays, "
        "the rest seeded random data), and print the count and the min, median, mean, max "
        "and standard deviation of the latency in ms. A .npubin runs on the NPU runtime, a "
        ".onnx, .tflite or .mlir model on the reference interpreter. With --benchmark, "
        "--json FILE writes these figures (latency_ms, runs, warmup, model, engine, ...) "
        "instead of a comparison or profile, and the outputs are not printed (-o saves the "
        "last run's).",
    )
    group.add_argument(
        "--benchmark",
        type=_count(1),
        metavar="N",
        help="time N runs of the model (a positive integer)",
    )
    group.add_argument(
        "--warmup",
        type=_count(0),
        metavar="K",
        help=f"untimed runs before the timed ones (default {DEFAULT_WARMUP}; needs --benchmark)",
    )


def check_benchmark_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse --warmup without --benchmark, and --benchmark with another kind of run (exit 2)."""
    if args.benchmark is None:
        if args.warmup is not None:
            parser.error("--warmup needs --benchmark N")
        return
    for dest, why in _OTHER_RUNS.items():
        if getattr(args, dest) not in (None, False):
            parser.error(f"--{dest.replace('_', '-')} cannot be combined with --benchmark: {why}")
    if args.warmup is None:
        args.warmup = DEFAULT_WARMUP


def benchmark_binary(args: argparse.Namespace, inputs: dict[str, np.ndarray]) -> int:
    """Time `Executor.run` on a compiled program."""
    from .run_binary import initial_value, load_program, random_inputs, shown_outputs

    _check_outputs(args)
    _preload("npuc.runtime.executor", "npuc.runtime.loader")
    start = time.perf_counter_ns()
    program, executor, state = load_program(args, inputs)
    init = time.perf_counter_ns() - start
    generated = random_inputs(program, skip={*inputs, *state}, seed=args.seed)
    _notes(generated)
    initial = {name: initial_value(program.inputs[p.input], p) for name, p in state.items()}
    feeds = {**inputs, **generated, **initial}
    with working_on("step", "benchmark"), located(args.model):
        timings, outputs = _time(lambda: executor.run(feeds), args.warmup, args.benchmark)
    described = _inputs(inputs, generated, initial)
    _report(args, "npu-runtime", init, timings, described, shown_outputs(program, outputs))
    return 0


def benchmark_model(args: argparse.Namespace, feeds: dict[str, np.ndarray]) -> int:
    """Time the reference interpreter's runner on an imported (and quantized) model."""
    from ..graph_io import entry_function, initial_state, input_names, output_names, state_names
    from ..runtime.qnn_interpreter import (
        QuantizedFunctionRunner,
        dequantized_outputs,
        random_inputs,
    )
    from .run_model import prepare_module

    _check_outputs(args)
    frontend = {".onnx": "onnx", ".tflite": "tflite"}.get(Path(args.model).suffix.lower())
    _preload("npuc.api", *([f"npuc.frontends.{frontend}"] if frontend else []))
    start = time.perf_counter_ns()
    module = prepare_module(args, feeds)
    assert module is not None  # --compare is refused with --benchmark
    with located(args.model):
        func = entry_function(module)
        names, results = input_names(func), output_names(func)
        pairs = state_names(func)
        state = {names[arg]: name for arg, _, name in pairs}
        given = sorted(set(feeds) & set(state))
        if given:
            raise NpucError(
                f"input '{given[0]}' is state: each call starts from the model's initial value"
            )
        unknown = sorted(set(feeds) - set(names))
        if unknown:
            listed, expected = (", ".join(f"'{n}'" for n in group) for group in (unknown, names))
            raise NpucError(f"unknown input(s) {listed}; the model's inputs are {expected}")
        generated = random_inputs(module, skip={*feeds, *state}, seed=args.seed)
        values = initial_state(module)
        initial = {arg: values[name] for arg, name in state.items()}
        runner = QuantizedFunctionRunner(func)
    init = time.perf_counter_ns() - start
    _notes(generated)
    ordered = [{**feeds, **generated, **initial}[name] for name in names]
    with working_on("step", "benchmark"), located(args.model):
        timings, last = _time(lambda: runner.run(ordered)[0], args.warmup, args.benchmark)
    carried = {results[r] for _, r, _ in pairs}
    outputs = {n: a for n, a in zip(results, last, strict=True) if n not in carried}
    described = _inputs(feeds, generated, initial)
    _report(
        args,
        "reference-interpreter",
        init,
        timings,
        described,
        dequantized_outputs(module, outputs),
    )
    return 0


def _preload(*modules: str) -> None:
    """Import these modules before the clock starts: "init" times preparing the model,
    not loading npuc's Python modules."""
    import importlib

    for module in modules:
        importlib.import_module(module)


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse an output file that cannot be written before preparing and timing anything."""
    for path in (args.output, args.json):
        if path and not Path(path).resolve().parent.is_dir():
            raise NpucError("cannot write: its directory does not exist", path)


def _notes(generated: Mapping[str, np.ndarray]) -> None:
    for name, array in generated.items():
        print(
            f"note: no --input for '{name}': using seeded random data "
            f"{tuple(array.shape)} {array.dtype}"
        )


def _inputs(given, generated, initial) -> dict[str, dict[str, Any]]:
    """Each input's shape, dtype and source (file, random or state), for the JSON."""
    described = {}
    for source, arrays in (("file", given), ("random", generated), ("state", initial)):
        for name, array in arrays.items():
            described[name] = {
                "shape": list(np.shape(array)),
                "dtype": str(np.asarray(array).dtype),
                "source": source,
            }
    return described


class Timings:
    """Nanoseconds of the first call (warm-up or timed) and of each timed call."""

    def __init__(self, first: int, samples: list[int]) -> None:
        self.first, self.samples = first, samples

    def summary_ms(self) -> dict[str, float]:
        ms = [ns / 1e6 for ns in self.samples]
        return {
            "min": min(ms),
            "median": statistics.median(ms),
            "mean": statistics.fmean(ms),
            "max": max(ms),
            "std": statistics.pstdev(ms),
        }


def _time(call: Callable[[], Any], warmup: int, runs: int) -> tuple[Timings, Any]:
    """Call `warmup` times untimed (but for the first call's time), then `runs` times timed;
    the timings and the last call's result."""
    clock = time.perf_counter_ns
    first = None
    for _ in range(warmup):
        start = clock()
        call()
        if first is None:
            first = clock() - start
    gc.collect()  # no garbage of the preparation or the warm-up collected while timing
    samples = []
    result = None
    for _ in range(runs):
        start = clock()
        result = call()
        samples.append(clock() - start)
    return Timings(samples[0] if first is None else first, samples), result


def _report(
    args: argparse.Namespace,
    engine: str,
    init: int,
    timings: Timings,
    inputs: dict[str, dict[str, Any]],
    outputs: dict[str, np.ndarray],
) -> None:
    summary = timings.summary_ms()
    runs, warmup = len(timings.samples), args.warmup
    print(f"benchmark: {args.model} on {ENGINES[engine]}")
    if engine == "npu-runtime":
        prepared = "load the program, build the executor"
    else:
        steps = [
            "import",
            "passes" * bool(args.passes or args.quantize),
            "quantization" * bool(args.quantize),
            "build the interpreter",
        ]
        prepared = ", ".join(step for step in steps if step)
    rows = [
        ("init", f"{init / 1e6:10.3f} ms", f"once: {prepared}"),
        (
            "first",
            f"{timings.first / 1e6:10.3f} ms",
            "the first call" + (" (warm-up)" if warmup else ""),
        ),
        ("runs", f"{runs:6d}", f"timed, after {warmup} warm-up run{'s' * (warmup != 1)}"),
        *((key, f"{summary[key]:10.3f} ms", "") for key in ("min", "median", "mean", "max")),
        ("std", f"{summary['std']:10.3f} ms", ""),
    ]
    for key, value, note in rows:
        print(f"  {key + ':':8}{value:14}{'  ' + note if note else ''}".rstrip())
    if args.output:
        from .run_model import save_npz

        save_npz(args.output, outputs)
        print(f"saved the last run's {len(outputs)} output(s) to {args.output}")
    if args.json:
        from ..output_files import write_file

        record = {
            "model": str(args.model),
            "engine": engine,
            "runs": runs,
            "warmup": warmup,
            "latency_ms": summary,
            "first_ms": timings.first / 1e6,
            "init_ms": init / 1e6,
            "seed": args.seed,
            "inputs": inputs,
        }
        with working_on("step", "write the benchmark"):
            write_file(args.json, json.dumps(record, indent=2) + "\n")
        print(f"wrote the benchmark to {args.json}")
