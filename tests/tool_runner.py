"""Runs npuc's command-line tools as a user would, in a subprocess (importable from any test)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "tiny_cnn.onnx"

RELU_MLIR = """\
func.func @main(%x: tensor<1x4xf32> {nn.name = "x"}) -> (tensor<1x4xf32> {nn.name = "y"}) {
  %0 = nn.relu %x : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %0 : tensor<1x4xf32>
}
"""


def run_tool(
    tool: str, *args: str | Path, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `tool` with `args`; `env` adds to (or overrides) this process's environment."""
    module = {
        "npu-opt": "npuc.tools.npu_opt",
        "npu-run": "npuc.tools.npu_run",
        "npu-compile": "npuc.tools.npu_compile",
        "npu-bundle": "npuc.tools.npu_bundle",
        "npu-sweep": "npuc.tools.npu_sweep",
    }[tool]
    return subprocess.run(
        [sys.executable, "-m", module, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
    )
