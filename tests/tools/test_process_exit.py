"""How a tool's process ends (npuc/tools/reporting.py's `finish`): run as the command, it
skips the interpreter's teardown but still runs the exit handlers and delivers all of its
output and its exit status; called in-process, it raises SystemExit."""

from __future__ import annotations

import pstats
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tool_runner import EXAMPLE, RELU_MLIR

from npuc.tools import npu_compile, npu_opt, npu_run
from npuc.tools.reporting import finish

# A command run with an exit handler of its own, which must still run; every object still
# alive reports its deletion, which the skipped teardown never reaches.
SCRIPT = """\
import atexit, sys
from npuc.tools import {module} as tool

class Witness:
    def __del__(self):
        sys.stderr.write("teardown reached\\n")

kept = Witness()
atexit.register(lambda: sys.stderr.write("exit handler ran\\n"))
sys.argv = ["{tool}", *sys.argv[1:]]
tool.main()
"""


def command(module: str, tool: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent(SCRIPT.format(module=module, tool=tool))
    return subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_compile_ends_after_its_exit_handlers_with_all_its_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = [EXAMPLE, "--target", "mcu-64", "--calib-random", "2", "-o", out]
    done = command("npu_compile", "npu-compile", *args)
    assert done.returncode == 0, done.stderr
    assert "exit handler ran" in done.stderr
    assert "teardown reached" not in done.stderr
    lines = done.stdout.splitlines()
    written = sorted(p.name for p in out.iterdir())
    at = lines.index(f"wrote {len(written)} files to {out}/:")
    assert sorted(line.strip() for line in lines[at + 1 :]) == written


def test_npu_opt_ends_the_same_way(tmp_path: Path) -> None:
    source = tmp_path / "relu.mlir"
    source.write_text(RELU_MLIR)
    done = command("npu_opt", "npu-opt", source, "-p", "canonicalize")
    assert done.returncode == 0, done.stderr
    assert "nn.relu" in done.stdout and done.stdout.rstrip().endswith("}")
    assert "exit handler ran" in done.stderr and "teardown reached" not in done.stderr


@pytest.mark.parametrize("status", [0, 3, 70])
def test_the_status_and_buffered_output_survive_the_fast_exit(status: int) -> None:
    script = (
        "import sys\n"
        "from npuc.tools.reporting import finish\n"
        "sys.stdout.write('x' * 100000)\n"  # more than one buffer of a pipe
        "sys.stderr.write('done')\n"
        f"finish({status}, None)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert (done.returncode, len(done.stdout), done.stderr) == (status, 100000, "done")


def test_in_process_calls_raise_system_exit(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as ended:
        finish(3, [])
    assert ended.value.code == 3
    argv = [str(EXAMPLE), "--target", "mcu-64", "--calib-random", "2", "-q", "-o", str(tmp_path)]
    with pytest.raises(SystemExit) as ended:
        npu_compile.main(argv)
    assert ended.value.code == 0
    assert npu_opt.main([str(tmp_path / f"{EXAMPLE.stem}.npu.mlir")]) is None
    with pytest.raises(SystemExit) as ended:
        npu_run.main([str(tmp_path / f"{EXAMPLE.stem}.npubin")])
    assert ended.value.code == 0


def test_a_profiled_command_exits_as_usual_so_the_profile_is_written(tmp_path: Path) -> None:
    profile = tmp_path / "compile.prof"
    out = tmp_path / "out"
    profiled = [sys.executable, "-m", "cProfile", "-o", profile, "-m", "npuc.tools.npu_compile"]
    done = subprocess.run(
        [*profiled, EXAMPLE, "--target", "mcu-64", "--calib-random", "2", "-q", "-o", out],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    stats = pstats.Stats(str(profile))
    assert any(name == "compile_model" for _, _, name in stats.stats)  # type: ignore[attr-defined]
