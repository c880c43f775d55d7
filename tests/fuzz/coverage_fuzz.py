"""Coverage-guided fuzzing of the structured targets (tests/fuzz/structured.py) with atheris.

    PYTHONPATH=tests .venv/bin/python tests/fuzz/coverage_fuzz.py --target tflite --runs 2000

atheris (libFuzzer for Python) mutates bytes toward new coverage of npuc's code; hypothesis'
`fuzz_one_input` turns each byte string into a draw of the target's strategy, so the
mutations stay structured (a TFLite field, an .npubin table entry, a quantized type, an
option value). A draw that breaks the rules (structured.check) stops the run with the
failing case printed and the input saved by libFuzzer (crash-<sha1>).

atheris is not in requirements.lock: it is a native extension that only this open-ended
fuzzing needs. Its 3.0.0 release has a CPython 3.11 wheel for Linux x86-64 on PyPI
(`pip install atheris`); without it this script says so and exits 0, and `make fuzz` still
runs the same targets through hypothesis' own generator.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from fuzz import run, structured  # noqa: E402

TARGETS = ("tflite", "npubin", "quant", "cli")


def target_function(name: str, corpus):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    root = str(corpus.root)
    strategies = {
        "tflite": lambda: structured.tflite_edits(corpus),
        "npubin": lambda: structured.npubin_edits(corpus),
        "cli": structured.cli_values,
    }

    if name == "quant":

        @given(structured.quantized_types())
        @settings(database=None, deadline=None)
        def quant(quantized) -> None:
            case = structured.quantized_type_case(*quantized)
            result = structured.check(case, root)
            assert (result.outcome == "ok") == (not case.bad), case.description

        return quant

    strategy = strategies[name]()

    @given(st.data())
    @settings(database=None, deadline=None)
    def draw_and_check(data) -> None:
        structured.check(data.draw(strategy), root)

    return draw_and_check


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=TARGETS, action="append", help="default: all")
    parser.add_argument("--runs", type=int, default=1000, help="inputs per target")
    parser.add_argument("--seed", type=int, default=0)
    args, libfuzzer = parser.parse_known_args(argv)
    try:
        import atheris
    except ImportError:
        print(
            "coverage_fuzz: atheris is not installed (pip install atheris: 3.0.0 has a "
            "CPython 3.11 wheel for Linux x86-64); the structured targets ran through "
            "hypothesis only"
        )
        return 0
    targets = args.target or list(TARGETS)
    if len(targets) > 1:  # libFuzzer ends the process after a run: one process a target
        for name in targets:
            command = [sys.executable, __file__, "--target", name, f"--runs={args.runs}"]
            done = subprocess.run([*command, f"--seed={args.seed}", *libfuzzer])
            if done.returncode:
                return done.returncode
        return 0
    with tempfile.TemporaryDirectory(prefix="npuc-atheris-") as root:
        corpus = run.build_corpus(Path(root))
        atheris.instrument_all()
        print(f"coverage_fuzz: {targets[0]}, {args.runs} runs, seed {args.seed}", flush=True)
        test = target_function(targets[0], corpus)
        # hypothesis draws from the byte string: libFuzzer's default of growing inputs from
        # a few bytes would keep the draws near their minimal (all-zero) example.
        sizes = (
            []
            if any(o.startswith("-max_len=") for o in libfuzzer)
            else ["-max_len=4096", "-len_control=0"]
        )
        options = [sys.argv[0], f"-runs={args.runs}", f"-seed={args.seed}", *sizes, *libfuzzer]
        atheris.Setup(options, test.hypothesis.fuzz_one_input)
        atheris.Fuzz()  # exits when the runs are done or a draw fails
    return 0


if __name__ == "__main__":
    sys.exit(main())
