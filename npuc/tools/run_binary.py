"""`npu-run NAME.npubin`: load and validate a compiled program, execute it (a sequence of calls
carrying a stateful program's state with --sequence N), profile it."""

from __future__ import annotations

import argparse
import json
from collections.abc import Collection
from pathlib import Path

import numpy as np

from ..diagnostics import NpucError, located, working_on
from ..dialects import npu_isa as isa
from ..limits import check_tensor, sequence_of
from ..output_files import write_file


def add_binary_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("compiled programs (.npubin)")
    group.add_argument(
        "--profile", action="store_true", help="print the cycle model's per-layer profile"
    )
    group.add_argument(
        "--target", help="target of the profile (default: the one the binary was compiled for)"
    )
    group.add_argument(
        "--dump-tensors",
        metavar="all|LAYER,...",
        help="also save every tensor the instructions of these layers write (into -o)",
    )
    group.add_argument(
        "--config", metavar="FILE", help="TOML file: [run] options, binary from [build]"
    )


def apply_config(args: argparse.Namespace) -> None:
    """Fill unset options from the config's [run] section; the binary from [build]."""
    from ..config import read_config

    if args.config is None:
        return
    config = read_config(args.config)
    build, run = config["build"], config["run"]
    if args.model is None:
        if "output" not in build:
            raise NpucError(f"{args.config}: give the binary or [build] output (and name)")
        name = build.get("name") or Path(build.get("model", "model")).stem
        from ..backend.bundle import identifier_from

        args.model = str(Path(build["output"]) / f"{identifier_from(name)}.npubin")
    if not args.input and "input" in run:
        args.input = [f"{k}={v}" for k, v in run["input"].items()]
    args.output = args.output or run.get("output")
    if getattr(args, "benchmark", None) is not None:
        return  # [run]'s json, profile and dump_tensors describe a run, not a benchmark
    args.json = args.json or run.get("json")
    args.profile = args.profile or run.get("profile", False)
    args.dump_tensors = args.dump_tensors or run.get("dump_tensors")


def run_binary(args: argparse.Namespace, inputs: dict[str, np.ndarray]) -> int:
    """Run a compiled program once, or `--sequence N` times carrying its state.

    A stateful program (a STATE section) starts from its stored initial state, and each
    call's state outputs become the next call's state inputs; like the IR path, the
    outputs shown and saved leave the state out. Missing inputs get seeded random data of
    their own type, different at each step (seed + step).
    """
    from ..compile_flow import TARGET_KEY
    from .run_model import save_npz, summarise

    steps = args.sequence
    if steps is not None and steps < 1:
        raise NpucError(f"--sequence must be at least 1, not {steps}")
    if args.json and not args.profile:
        raise NpucError("--json with a .npubin writes the profile: add --profile")
    if args.target is not None and not args.profile:
        raise NpucError("--target with a .npubin names the profile's target: add --profile")
    for path in (args.output, args.json):
        if path and not Path(path).resolve().parent.is_dir():
            raise NpucError("cannot write: its directory does not exist", path)
    program, executor, state = load_program(args, inputs)
    layers = None
    if args.dump_tensors:
        layers = None if args.dump_tensors == "all" else set(args.dump_tensors.split(","))
        unknown = sorted((layers or set()) - set(program.layers))
        if unknown:
            raise NpucError(f"--dump-tensors: no layer named {', '.join(unknown)}")
    if steps is not None:
        for name, array in inputs.items():
            if array.ndim < 1 or array.shape[0] != steps:
                raise NpucError(
                    f"input '{name}' has shape {tuple(array.shape)}; with --sequence "
                    f"{steps} it needs a leading axis of length {steps}"
                )
    per_step, dumps = [], []
    current = {name: initial_value(program.inputs[p.input], p) for name, p in state.items()}
    for k in range(steps or 1):
        feeds = {name: array[k] for name, array in inputs.items()} if steps else dict(inputs)
        random = random_inputs(program, skip={*feeds, *state}, seed=args.seed + k)
        if k == 0:
            for name, array in random.items():
                if steps:  # the steps' inputs and outputs are all kept: refuse up front
                    check_tensor((steps, *array.shape), array.itemsize, sequence_of(name, steps))
                print(
                    f"note: no --input for '{name}': using seeded random data "
                    + ("at each step" if steps else f"{array.shape} {array.dtype}")
                )
        with working_on("step", "run" if steps is None else f"run step {k}"), located(args.model):
            outputs, dumped = _call(executor, {**feeds, **random, **current}, args, layers)
        current = {name: outputs[program.outputs[p.output].name] for name, p in state.items()}
        per_step.append(shown_outputs(program, outputs))
        dumps.append(dumped)
    for k, saved in enumerate(per_step):
        for name, array in saved.items():
            print((f"step {k}: " if steps is not None else "") + summarise(name, array))
    if steps is None:
        saved, dumped = per_step[0], dumps[0]
    else:
        saved = {name: np.stack([s[name] for s in per_step]) for name in per_step[0]}
        dumped = {name: np.stack([d[name] for d in dumps]) for name in dumps[0]}
    if dumped:
        print(f"dumped {len(dumped)} tensors" + (f" at each of {steps} steps" if steps else ""))
    if args.output:
        save_npz(args.output, {**saved, **dumped})
        print(f"saved {len(saved)} output(s) to {args.output}")
    if args.profile:
        _profile(args, program, dict(program.debug).get(TARGET_KEY))
    return 0


def load_program(args: argparse.Namespace, inputs: Collection[str]):
    """The loaded and validated program, its Executor, and its state pairs by input name
    (refusing an --input that names a state input)."""
    from ..runtime.executor import Executor
    from ..runtime.loader import load_file

    with working_on("step", "load"), located(args.model):
        limit = getattr(args, "max_tensor_bytes", None)
        program = (
            load_file(args.model)
            if limit is None
            else load_file(args.model, max_region_bytes=limit)
        )
        executor = Executor(program)
    state = {program.inputs[p.input].name: p for p in program.state}
    given = sorted(set(inputs) & set(state))
    if given:
        raise NpucError(
            f"input '{given[0]}' is state: it starts from the binary's initial value "
            "and carries over from call to call (--sequence N)"
        )
    return program, executor, state


def _call(executor, feeds: dict[str, np.ndarray], args: argparse.Namespace, layers):
    from ..runtime.executor import run_with_dump

    if args.dump_tensors:
        return run_with_dump(executor, feeds, layers)
    return executor.run(feeds), {}


def initial_value(desc: isa.IODesc, pair: isa.StatePair) -> np.ndarray:
    """A state input's stored initial value."""
    t = desc.tensor
    return np.frombuffer(pair.initial, isa.DTYPES[t.dtype][1]).reshape(t.shape)


def shown_outputs(program: isa.Program, outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The outputs that are not state: a quantized one as NAME (dequantized) and NAME.q."""
    state = {p.output for p in program.state}
    saved: dict[str, np.ndarray] = {}
    for i, desc in enumerate(program.outputs):
        if i in state:
            continue
        stored = outputs[desc.name]
        if desc.scale:
            real = (stored.astype(np.float64) - desc.zero_point) * desc.scale
            saved[desc.name] = real.astype(np.float32)
            saved[f"{desc.name}.q"] = stored
        else:
            saved[desc.name] = stored
    return saved


def random_inputs(
    program: isa.Program, skip: Collection[str] = (), seed: int = 0
) -> dict[str, np.ndarray]:
    """Seeded random stored values for the inputs not in `skip`, in the program's order.

    Integer inputs span their type's range, except unquantized i32/i64 ones (indices,
    counts: 0 or 1, as the IR path gives them); f32 inputs are standard normal, b8 0 or 1.
    """
    rng = np.random.default_rng(seed)
    feeds = {}
    for desc in program.inputs:
        if desc.name in skip:
            continue
        t = desc.tensor
        dtype = np.dtype(isa.DTYPES[t.dtype][1])
        if t.dtype == "f32":
            feeds[desc.name] = rng.standard_normal(t.shape).astype(dtype)
        elif (t.dtype in ("i32", "i64") and not desc.scale) or t.dtype == "b8":
            feeds[desc.name] = rng.integers(0, 2, t.shape).astype(dtype)
        else:
            lo, hi = isa.dtype_range(t.dtype)
            feeds[desc.name] = rng.integers(lo, hi, t.shape, endpoint=True).astype(dtype)
    return feeds


def _profile(args: argparse.Namespace, program, recorded: str | None) -> None:
    from ..runtime.cycle_model import estimate
    from ..runtime.profile_report import table, to_json
    from ..target import load_target

    name = args.target or recorded
    if name is None:
        raise NpucError("the binary does not name its target: give --target for --profile")
    target = load_target(name)
    with working_on("step", "profile"):
        profile = estimate(program, target)
        print(table(profile))
    if args.json:
        write_file(args.json, json.dumps(to_json(profile), indent=2) + "\n")
        print(f"wrote the profile to {args.json}")
