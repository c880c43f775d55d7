"""The NPU runtime's compiled kernels never index outside their arrays: the kernel-path
tests again, in a process of their own under numba's bounds checking (NUMBA_BOUNDSCHECK=1,
with a kernel cache of its own). Without it, numba does not check indices: a store past a
view's end lands wherever the address falls, which can even be right (a stride-2 phase
split whose slice end was divided instead of multiplied made empty views and still gave
the right outputs, docs/testing.md)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def test_compiled_kernels_stay_inside_their_arrays(tmp_path: Path) -> None:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    env = {
        **os.environ,
        "NUMBA_BOUNDSCHECK": "1",
        # its own cache: kernels compiled with and without the checks must not mix
        "NUMBA_CACHE_DIR": str(Path(base) / "npuc" / "numba-boundscheck"),
        "NPUC_KERNELS": "numba",
    }
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--basetemp={tmp_path / 'inner'}",
        str(HERE / "test_kernel_paths.py"),
        "-k",
        "not mobilenet",  # every kernel is in the small cases; MobileNetV2 adds only time
    ]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    tail = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed and int(passed[1]) >= 20, tail  # the cases ran (exit code 5 would be none)
