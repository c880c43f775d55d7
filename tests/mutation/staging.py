"""Staging for mutation testing: the areas under test, the worktree of the commit to
mutate, and the pytest processes run in it (each in a process group of its own)."""

from __future__ import annotations

import fnmatch
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "build" / "mutate"
TREE = WORK / "tree"
PKG = WORK / "pkg"

# area -> its modules (globs relative to the checkout). Every test of the suite may kill a
# mutant: coverage says which ones execute its line.
AREAS: dict[str, list[str]] = {
    "integer": ["npuc/integer.py"],
    "kernels": [
        "runtime/kernels/*.py",
        "runtime/npu_conv.py",
        "runtime/npu_gemm.py",
        "runtime/npu_requant.py",
        "runtime/npu_jit.py",
        "runtime/jit_kernels.py",
    ],
    "calibration": [
        "passes/quantization/statistics.py",
        "passes/quantization/ranges.py",
        "passes/quantization/entropy.py",
    ],
    "tiling": ["passes/tiling/*.py"],
    "memory": ["passes/memory/*.py"],
    "lowering": ["passes/npu_lowering/*.py", "passes/lower_to_npu.py"],
    "loader": ["runtime/loader.py"],
    "cycle_model": ["runtime/cycle_model.py"],
}
# The suite without what never reaches the core modules' logic through new code paths and
# costs most of the coverage run's time: the fuzz smoke pass (its crash replay stays).
COVERAGE_IGNORES = ["tests/fuzz/test_fuzz_smoke.py"]
# Modules whose functions numba compiles: coverage never sees their bodies run, so a mutant
# there runs these tests whole (they check each compiled kernel against the numpy path).
COMPILED_TESTS = {"runtime/jit_kernels.py": ["tests/runtime/test_kernel_paths.py"]}
# Coverage's context for lines run at import (collection), outside any test.
IMPORTED = "<import>"


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def stage(commit: str = "HEAD") -> str:
    """The worktree of `commit` and the package map onto it; returns the commit's hash."""
    head = git("rev-parse", commit)
    WORK.mkdir(parents=True, exist_ok=True)
    if TREE.exists() and git("rev-parse", "HEAD", cwd=TREE) != head:
        git("worktree", "remove", "--force", str(TREE))
    if not TREE.exists():
        git("worktree", "add", "--detach", str(TREE), head)
    git("checkout", "--", ".", cwd=TREE)  # undo a mutant left by an interrupted run
    for name, target in (("shared", ROOT.parent / "shared"), (".corpus", ROOT / ".corpus")):
        link = (WORK if name == "shared" else TREE) / name
        if not link.exists() and target.exists():
            link.symlink_to(target)
    if PKG.exists():
        shutil.rmtree(PKG)
    package = PKG / "npuc"
    package.mkdir(parents=True)
    for entry in (TREE / "npuc").iterdir():
        (package / entry.name).symlink_to(entry)
    for sub in ("dialects", "passes", "frontends", "backend", "runtime", "targets"):
        (package / sub).symlink_to(TREE / sub)
    return head


def environment() -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(PKG), str(TREE / "tests"), str(TREE / "tests" / "models")]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a mutant must never be read back from a .pyc
    env["PYTHONSAFEPATH"] = "1"  # not the worktree itself first: its npuc/ holds no subpackages
    env.pop("NPUC_DEBUG", None)
    return env


def pytest_command(*args: str) -> list[str]:
    options = ["-q", "-p", "no:cacheprovider", "--import-mode=importlib", "--benchmark-disable"]
    return [sys.executable, "-m", "pytest", *options, *args]


def area_modules(area: str) -> list[str]:
    found = []
    for pattern in AREAS[area]:
        found += sorted(
            str(p.relative_to(TREE))
            for p in TREE.glob(pattern)
            if p.name != "__init__.py" and fnmatch.fnmatch(str(p.relative_to(TREE)), pattern)
        )
    return list(dict.fromkeys(found))


def run_group(
    command: list[str], env: dict[str, str], timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    """`command` run in the worktree in a process group of its own, which is killed whatever
    ends the wait (a timeout, ^C, a SIGTERM to this script): no pytest is left running."""
    child = subprocess.Popen(
        command,
        cwd=TREE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = child.communicate(timeout=timeout)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
    return subprocess.CompletedProcess(command, child.returncode, stdout, stderr)
