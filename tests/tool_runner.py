"""Runs npuc's command-line tools as a user would, in a subprocess (importable from any test)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "tiny_cnn.onnx"

# Set by the mutation map's coverage run (tests/mutation/coverage_map.py) to the folders it
# measures: each tool then runs under coverage too, with the running test as its context,
# so the map knows the lines a CLI test reaches through its subprocess.
COVERAGE_SOURCES = "NPUC_TOOL_COVERAGE"

RELU_MLIR = """\
func.func @main(%x: tensor<1x4xf32> {nn.name = "x"}) -> (tensor<1x4xf32> {nn.name = "y"}) {
  %0 = nn.relu %x : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %0 : tensor<1x4xf32>
}
"""

MODULES = {
    "npu-opt": "npuc.tools.npu_opt",
    "npu-run": "npuc.tools.npu_run",
    "npu-compile": "npuc.tools.npu_compile",
    "npu-bundle": "npuc.tools.npu_bundle",
    "npu-sweep": "npuc.tools.npu_sweep",
}


def tool_command(tool: str) -> list[str]:
    """The command line that starts `tool` (its arguments follow)."""
    sources = os.environ.get(COVERAGE_SOURCES)
    if not sources:
        return [sys.executable, "-m", MODULES[tool]]
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
    measured = ["coverage", "run", "--parallel-mode", f"--context={test}", f"--source={sources}"]
    return [sys.executable, "-m", *measured, "-m", MODULES[tool]]


def run_tool(
    tool: str, *args: str | Path, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `tool` with `args`; `env` adds to (or overrides) this process's environment."""
    return subprocess.run(
        [*tool_command(tool), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
    )
