"""Compile time of this checkout against an earlier commit: the same `npu-compile` cases
(compare_compiled.py's, more corpus models, other targets) as whole processes, the two
versions run in turn (new old new old ...), CPU seconds and peak RSS, and the median of
the per-pair ratios new/old (whole_process.py). Pairs taken in turn share the machine's
load of their moment: on a shared 2-core machine single figures move by 10-25 %, their
ratios far less.

The earlier commit is checked out in a temporary git worktree and imported as the
`npuc` package by a launcher that puts it first on the path and takes this checkout's
editable finder off `sys.meta_path` (the top-level folders map to npuc's subpackages as
pyproject.toml's package-dir says); the worktree is removed afterwards.

Run: PYTHONPATH=tests:tests/bench .venv/bin/python tests/bench/compare_commits.py COMMIT
         [--only NAME,...] [--repeat N] [--target NAME]
     (names: compare_compiled.py's cases and any corpus model, with `_size` for
     --optimise size, e.g. palm_detection_size)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from bench_compile import shape_flags
from compare_compiled import cases
from whole_process import VENV_BIN, paired

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from corpus import MODELS

ROOT = Path(__file__).resolve().parents[2]

LAUNCHER = """import sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path.insert(0, {package!r})
import npuc
if not npuc.__file__.startswith({package!r}):
    sys.exit(f"compare_commits: imported npuc from {{npuc.__file__}}, not the old commit")
from npuc.tools.start import npu_compile
sys.exit(npu_compile())
"""


def old_package(commit: str, folder: Path) -> Path:
    """A checkout of `commit` laid out as the `npuc` package, under `folder`."""
    tree = folder / "tree"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), commit],
        check=True,
    )
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package = folder / "package" / "npuc"
    package.mkdir(parents=True)
    for entry in (tree / "npuc").iterdir():
        (package / entry.name).symlink_to(entry)
    for name, path in config["tool"]["setuptools"]["package-dir"].items():
        if name != "npuc":
            (package / name.split(".", 1)[1]).symlink_to(tree / path)
    return package.parent


def all_cases(folder: Path) -> dict[str, list[str]]:
    """npu-compile arguments (before -o) by case name."""
    found = dict(cases([], folder))
    for model in MODELS:
        if model.name not in found:
            calib = [] if model.kind in ("tflite-int8", "onnx-qdq") else ["--calib-random", "2"]
            found[model.name] = [str(model.file), *calib, *shape_flags(model.name)]
    for name, arguments in list(found.items()):
        if not name.startswith("mbv2"):
            found[f"{name}_size"] = [*arguments, "--optimise", "size"]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commit", help="the earlier commit (any git revision)")
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--target", default="ethos-u55-256-hee")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        found = all_cases(folder)
        names = args.only.split(",") if args.only else list(cases([], folder))[:2]
        unknown = [n for n in names if n not in found]
        if unknown:
            parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(found)}")
        launcher = folder / "old-npu-compile"
        try:
            launcher.write_text(LAUNCHER.format(package=str(old_package(args.commit, folder))))
            print(f"new: this checkout; old: {args.commit}; target {args.target}; CPU seconds")
            heads = ("new s", "old s", "new/old", "new MiB", "old MiB")
            print(f"{'case':<28} " + " ".join(f"{h:>8}" for h in heads))
            for name in names:
                tail = [*found[name], "--target", args.target, "-q", "-o"]
                new = [str(VENV_BIN / "npu-compile"), *tail, str(folder / "new")]
                old = [str(VENV_BIN / "python"), str(launcher), *tail, str(folder / "old")]
                pair = paired(new, old, args.repeat)
                assert pair.b is not None and pair.ratio is not None
                failed = "  (a run failed)" if pair.a.status or pair.b.status else ""
                print(
                    f"{name:<28} {pair.a.cpu:>8.2f} {pair.b.cpu:>8.2f} {pair.ratio:>8.3f} "
                    f"{pair.a.peak_mib:>8.0f} {pair.b.peak_mib:>8.0f}{failed}",
                    flush=True,
                )
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(folder / "tree")],
                check=False,
            )


if __name__ == "__main__":
    main()
