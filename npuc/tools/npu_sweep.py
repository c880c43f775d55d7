"""`npu-sweep`: design-space sweeps over npu-compile's options, pass pipelines, targets and
target fields (docs/sweeps.md); `npu-sweep report RESULTS_DIR` draws their results."""

from __future__ import annotations

import argparse
import sys

from .cli_options import add_debug_option
from .reporting import reported_errors


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npu-sweep",
        description="Compile models over the points a SWEEP.toml describes and tabulate what "
        "each costs (results.csv, results.parquet); 'npu-sweep report RESULTS_DIR' writes "
        "an HTML page of them.",
    )
    parser.add_argument("sweep", metavar="SWEEP.toml", help="the sweep file (docs/sweeps.md)")
    parser.add_argument(
        "-j", "--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)"
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="run the points as Ray tasks: on the cluster at ADDRESS, or on a local Ray "
        "instance of N CPUs",
    )
    parser.add_argument(
        "-o",
        "--output-dir",
        metavar="RESULTS_DIR",
        help="results folder (default: SWEEP-results); a rerun resumes there",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_debug_option(parser)
    return parser


def report_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npu-sweep report",
        description="Write RESULTS_DIR/report.html: Pareto plots and per-axis effect tables.",
    )
    parser.add_argument("results", metavar="RESULTS_DIR")
    add_debug_option(parser)
    return parser


def run(argv: list[str]) -> int:
    from ..diagnostics import NpucError
    from ..sweep import run as run_sweep
    from ..sweep import write_report

    if argv[:1] == ["report"]:
        args = report_parser().parse_args(argv[1:])
        print(f"wrote {write_report(args.results)}")
        return 0
    args = build_parser().parse_args(argv)
    if args.jobs < 1:
        raise NpucError(f"-j needs a positive number of jobs, got {args.jobs}")
    frame = run_sweep(
        args.sweep,
        args.output_dir,
        jobs=args.jobs,
        ray=args.ray is not None,
        address=args.ray or None,
        progress=not args.quiet,
        stream=sys.stdout,
    )
    ok = frame["status"] == "ok"
    print(f"{int(ok.sum())} of {len(frame)} points compiled; Pareto front:")
    axes = [c for c in frame.columns if c not in ("key", "error", "pareto")]
    print(frame[frame["pareto"]][axes].to_string(index=False))
    for _, row in frame[~ok].iterrows():
        print(f"{row['status']}: {row['model']} on {row['target']} ({row['key']}): {row['error']}")
    return 0


def main(argv: list[str] | None = None) -> None:
    with reported_errors("npu-sweep"):
        sys.exit(run(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
