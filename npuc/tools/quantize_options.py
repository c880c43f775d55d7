"""`npu-run --quantize ...`: calibrate, quantize, compare with float, search mixed precision."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from ..diagnostics import NpucError
from ..limits import MAX_COUNT
from ..output_files import write_file

SCHEMES = ("int8", "int8-per-channel", "uint8", "int16", "pow2")


def add_quantize_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "quantization",
        "Quantize the float model, then run or compare it. Schemes: int8 (per-tensor "
        "weights), int8-per-channel, uint8 (asymmetric), int16 (16-bit activations, "
        "8-bit weights), pow2 (power-of-two scales). See docs/quantization.md.",
    )
    group.add_argument("--quantize", choices=SCHEMES, metavar="SCHEME", help=", ".join(SCHEMES))
    source = group.add_mutually_exclusive_group()
    source.add_argument("--calib", metavar="DIR", help="calibration data: .npy/.npz/image files")
    source.add_argument("--calib-random", type=int, metavar="N", help="N seeded random samples")
    source.add_argument("--stats", metavar="FILE", help="load statistics instead of calibrating")
    group.add_argument("--save-stats", metavar="FILE", help="write the calibration statistics")
    group.add_argument(
        "--outlier-std", type=float, metavar="N", help="drop values beyond N std before statistics"
    )
    group.add_argument(
        "--outlier-percentile",
        type=float,
        metavar="P",
        help="keep values within the P-th percentiles (e.g. 99.99) before statistics",
    )
    group.add_argument("--activation-strategy", default="auto", metavar="NAME")
    group.add_argument("--weight-strategy", default="extrema", metavar="NAME")
    group.add_argument(
        "--bias-correction",
        action="store_true",
        help="subtract each weighted layer's mean output shift from weight quantization",
    )
    group.add_argument(
        "--adaround",
        nargs="?",
        type=int,
        const=1000,
        metavar="ITERATIONS",
        help="learn each weight's rounding on the calibration samples (AdaRound; default 1000 "
        "iterations a layer)",
    )
    group.add_argument("--io", choices=("float", "quantized"), default="float")
    group.add_argument("--batch-size", type=int, metavar="N", help="calibration batch size")
    group.add_argument("--mean", metavar="M[,M...]", help="image preprocessing: subtract")
    group.add_argument("--scale", metavar="S[,S...]", help="image preprocessing: multiply")
    group.add_argument("--reverse-channels", action="store_true", help="images are fed BGR")
    group.add_argument("--layer-config", metavar="FILE", help="per-layer settings to apply")
    group.add_argument(
        "--write-layer-config", metavar="FILE", help="write the per-layer configuration"
    )
    group.add_argument("--compare", action="store_true", help="report accuracy against float")
    group.add_argument("--data", metavar="DIR", help="comparison data (default: calibration)")
    group.add_argument(
        "--json",
        metavar="FILE",
        help="write the comparison as JSON (with a .npubin and --profile: the profile; with "
        "--benchmark: the timings)",
    )
    group.add_argument("--target-cosine", type=float, help="promote layers until reached")
    group.add_argument("--max-top1-drop", type=float, metavar="PERCENT")
    group.add_argument("--promote-to", choices=("int16", "float"), default="int16")
    group.add_argument(
        "--cost-target",
        metavar="TARGET",
        help="with a mixed-precision search: each step's estimated cycles and SRAM on TARGET",
    )


def _floats(text: str | None, what: str) -> float | tuple[float, ...] | None:
    if text is None:
        return None
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise NpucError(f"--{what} takes comma-separated numbers, got '{text}'") from None
    if not all(math.isfinite(v) and (v != 0 or what != "scale") for v in values):
        nonzero = " and non-zero" if what == "scale" else ""
        raise NpucError(f"--{what} takes finite{nonzero} numbers, got '{text}'")
    return values[0] if len(values) == 1 else values


#: Options that only mean something with --quantize, and their defaults.
_QUANTIZE_ONLY = {
    "calib": None,
    "calib_random": None,
    "stats": None,
    "compare": False,
    "target_cosine": None,
    "max_top1_drop": None,
    "save_stats": None,
    "outlier_std": None,
    "outlier_percentile": None,
    "batch_size": None,
    "mean": None,
    "scale": None,
    "reverse_channels": False,
    "layer_config": None,
    "write_layer_config": None,
    "data": None,
    "json": None,
    "activation_strategy": "auto",
    "weight_strategy": "extrema",
    "cost_target": None,
    "bias_correction": False,
    "adaround": None,
}


def _option(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _dataset(module: ModuleOp, args: argparse.Namespace, folder: str | None):
    from npuc.passes.quantization.datasets import Preprocessing, folder_dataset, random_dataset

    if folder:
        mean, scale = _floats(args.mean, "mean"), _floats(args.scale, "scale")
        pre = Preprocessing(
            mean=0.0 if mean is None else mean,
            scale=1.0 if scale is None else scale,
            reverse_channels=args.reverse_channels,
        )
        return folder_dataset(module, folder, batch_size=args.batch_size, preprocessing=pre)
    return random_dataset(module, args.calib_random, seed=args.seed, batch_size=args.batch_size)


def check_options(args: argparse.Namespace) -> None:
    """Refuse option values that are out of range, or that nothing would use."""
    if args.quantize is None:
        used = [o for o, default in _QUANTIZE_ONLY.items() if getattr(args, o) != default]
        if used:
            raise NpucError(f"{_option(used[0])} needs --quantize SCHEME")
        return
    if args.calib is None and args.calib_random is None and args.stats is None:
        raise NpucError(
            "--quantize needs calibration: --calib DIR, --calib-random N or --stats FILE"
        )
    if args.calib_random is not None and args.calib_random < 1:
        raise NpucError("--calib-random needs a positive number of samples")
    for option in ("calib_random", "batch_size"):
        value = getattr(args, option)
        if value is not None and not 1 <= value <= MAX_COUNT:
            raise NpucError(f"{_option(option)} must be in [1, {MAX_COUNT}], got {value}")
    _floats(args.mean, "mean")
    _floats(args.scale, "scale")
    images = [o for o in ("mean", "scale", "reverse_channels") if getattr(args, o)]
    if images and not (args.calib or args.data):
        raise NpucError(f"{_option(images[0])} applies to image folders (--calib DIR, --data DIR)")
    if args.outlier_std is not None and not 0 < args.outlier_std < math.inf:
        raise NpucError(f"--outlier-std must be a positive number, got {args.outlier_std}")
    if args.outlier_percentile is not None and not 50 < args.outlier_percentile <= 100:
        raise NpucError(f"--outlier-percentile must be in (50, 100], got {args.outlier_percentile}")
    from npuc.passes.quantization.ranges import check_strategy

    for option in ("activation_strategy", "weight_strategy"):
        try:
            check_strategy(getattr(args, option), weights=option == "weight_strategy")
        except NpucError as e:
            raise NpucError(f"{_option(option)}: {e.message}") from None
    if args.target_cosine is not None and not -1 < args.target_cosine <= 1:
        raise NpucError(f"--target-cosine must be in (-1, 1], got {args.target_cosine}")
    if args.cost_target and args.target_cosine is None and args.max_top1_drop is None:
        raise NpucError(
            "--cost-target applies to a mixed-precision search (--target-cosine or --max-top1-drop)"
        )
    if args.max_top1_drop is not None and not 0 <= args.max_top1_drop <= 100:
        raise NpucError(f"--max-top1-drop is a percentage in [0, 100], got {args.max_top1_drop}")
    if args.compare and args.stats and not args.data:
        raise NpucError("--compare with --stats needs --data DIR (no calibration data to reuse)")
    for option in ("json", "save_stats", "write_layer_config"):
        path = getattr(args, option)
        if path and not Path(path).resolve().parent.is_dir():
            raise NpucError(f"{_option(option)}: cannot write: its directory does not exist", path)


def quantize_and_report(module: ModuleOp, args: argparse.Namespace) -> ModuleOp:
    """The quantized module; prints the comparison when asked for it."""
    from npuc.passes.quantization.float_runs import FloatRuns
    from npuc.passes.quantization.layer_config import LayerOverrides, read_layer_config
    from npuc.passes.quantization.statistics import (
        OutlierPolicy,
        load_statistics,
        save_statistics,
    )
    from npuc.passes.quantize import QuantizeConfig
    from npuc.quantize_flow import calibrate, compare, quantize, search_mixed_precision
    from npuc.runtime.accuracy import to_json, to_table

    runs = None  # calibration's float runs, which serve the comparisons on the same data
    if args.stats:
        statistics, _ = load_statistics(args.stats)
    else:
        policy = None
        if args.outlier_std is not None or args.outlier_percentile is not None:
            policy = OutlierPolicy(num_std=args.outlier_std, percentile=args.outlier_percentile)
        runs = FloatRuns()
        statistics = calibrate(
            module, _dataset(module, args, args.calib), outlier_policy=policy, float_runs=runs
        )
    if args.save_stats:
        save_statistics(args.save_stats, statistics, {"model": str(args.model)})
        print(f"saved calibration statistics to {args.save_stats}")
    overrides = read_layer_config(args.layer_config) if args.layer_config else LayerOverrides()
    config = QuantizeConfig(
        scheme=args.quantize,
        io=args.io,
        activation_strategy=args.activation_strategy,
        weight_strategy=args.weight_strategy,
        overrides=overrides,
        bias_correction=args.bias_correction,
        adaround=args.adaround is not None,
        adaround_iterations=1000 if args.adaround is None else args.adaround,
    )
    searching = args.target_cosine is not None or args.max_top1_drop is not None
    needs_data = args.compare or searching
    data = list(_dataset(module, args, args.data or args.calib)) if needs_data else []
    if searching:
        found = search_mixed_precision(
            module,
            statistics,
            config,
            data,
            target_cosine=args.target_cosine,
            max_top1_drop=args.max_top1_drop,
            promote_to=args.promote_to,
            cost_target=args.cost_target,
            float_runs=runs,
        )
        quantized, report = found.module, found.report
        chosen = ", ".join(found.promoted) or "none"
        print(f"mixed precision: promoted to {args.promote_to}: {chosen}")
        if args.cost_target:
            print(f"  (cost on {args.cost_target}: estimated cycles, activation SRAM)")
        first = found.history[0].cost
        for step in found.history:
            top = "" if step.top1 is None else f", top-1 agreement {100 * step.top1:.1f}%"
            what = f"+ {step.promoted[-1]}" if step.promoted else "none promoted"
            undone = "" if step.kept else " (lower: undone)"
            cost = "" if step.cost is None or first is None else _cost_text(step.cost, first)
            print(f"  {what}: worst output cosine {step.worst_cosine:.6f}{top}{cost}{undone}")
        if not found.met:
            wanted = " and ".join(
                text
                for text, given in (
                    (f"cosine >= {args.target_cosine}", args.target_cosine),
                    (f"top-1 drop <= {args.max_top1_drop}%", args.max_top1_drop),
                )
                if given is not None
            )
            raise NpucError(
                f"mixed precision: the target ({wanted}) is not met: {found.stopped}; "
                f"output '{found.limiting_output}' stays furthest from it"
            )
    else:
        from npuc.passes.quantize import MissingRanges

        try:
            quantized, report = quantize(module, statistics, config)
        except MissingRanges as e:  # statistics from a file that lacks some tensors
            e.location = e.location or args.stats
            raise
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    similarity = {}
    if args.compare or searching:
        outputs, tensors = compare(module, quantized, data, float_runs=runs)
        similarity = {t.name: t.cosine for t in tensors}
        if args.compare:
            print(to_table(outputs, tensors))
        if args.json:
            meta = {"model": str(args.model), "scheme": args.quantize, "samples": len(data)}
            write_file(args.json, to_json(outputs, tensors, meta))
            print(f"wrote {args.json}")
    if args.write_layer_config:
        text = json.dumps(report.to_config(similarity), indent=2)
        write_file(args.write_layer_config, text)
        print(f"wrote the per-layer configuration to {args.write_layer_config}")
    return quantized


def _cost_text(cost, first) -> str:
    """'; 1,234 cycles (+5.0%), SRAM 12.0 KiB (+2.0 KiB)' against the unpromoted model."""
    cycles = 100 * (cost.cycles - first.cycles) / max(first.cycles, 1)
    sram = (cost.sram_bytes - first.sram_bytes) / 1024
    return (
        f"; {cost.cycles:,} cycles ({cycles:+.1f}%), SRAM {cost.sram_bytes / 1024:.1f} KiB "
        f"({sram:+.1f} KiB)"
    )
