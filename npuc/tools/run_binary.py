"""`npu-run NAME.npubin`: load and validate a compiled program, execute it, profile it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from ..diagnostics import NpucError, user_file, working_on


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
    args.json = args.json or run.get("json")
    args.profile = args.profile or run.get("profile", False)
    args.dump_tensors = args.dump_tensors or run.get("dump_tensors")


def run_binary(args: argparse.Namespace, inputs: dict[str, np.ndarray]) -> int:
    from ..compile_flow import TARGET_KEY
    from ..runtime.executor import Executor, run_with_dump
    from ..runtime.loader import load_file
    from .npu_run import save_npz, summarise

    if args.json and not args.profile:
        raise NpucError("--json with a .npubin writes the profile: add --profile")
    for path in (args.output, args.json):
        if path and not Path(path).resolve().parent.is_dir():
            raise NpucError(f"output directory does not exist: {Path(path).parent}")
    with working_on("step", "load"):
        program = load_file(args.model)
        executor = Executor(program)
    rng = np.random.default_rng(args.seed)
    for desc in program.inputs:
        if desc.name not in inputs:
            t = desc.tensor
            lo, hi = (-128, 128) if t.dtype == "i8" else (0, 2)
            dtype = np.dtype(np.int8) if t.dtype == "i8" else np.float32
            inputs[desc.name] = rng.integers(lo, hi, t.shape).astype(dtype)
            print(f"note: no --input for '{desc.name}': using seeded random data "
                  f"{tuple(t.shape)} {dtype}")  # fmt: skip
    if args.dump_tensors:
        layers = None if args.dump_tensors == "all" else set(args.dump_tensors.split(","))
        unknown = sorted((layers or set()) - set(program.layers))
        if unknown:
            raise NpucError(f"--dump-tensors: no layer named {', '.join(unknown)}")
        with working_on("step", "run"):
            outputs, dumped = run_with_dump(executor, inputs, layers)
    else:
        with working_on("step", "run"):
            outputs, dumped = executor.run(inputs), {}
    saved: dict[str, np.ndarray] = {}
    for desc in program.outputs:
        stored = outputs[desc.name]
        if desc.scale:
            saved[desc.name] = ((stored.astype(np.float64) - desc.zero_point) * desc.scale).astype(
                np.float32
            )
            saved[f"{desc.name}.q"] = stored
        else:
            saved[desc.name] = stored
    for name, array in saved.items():
        print(summarise(name, array))
    if dumped:
        print(f"dumped {len(dumped)} tensors")
    if args.output:
        save_npz(args.output, {**saved, **dumped})
        print(f"saved {len(saved)} output(s) to {args.output}")
    if args.profile:
        _profile(args, program, dict(program.debug).get(TARGET_KEY))
    return 0


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
        with user_file(args.json, "write"):
            Path(args.json).write_text(json.dumps(to_json(profile), indent=2) + "\n")
        print(f"wrote the profile to {args.json}")
