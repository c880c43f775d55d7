"""`npu-compile --compare-vela`: npuc's memory and cycle figures next to Arm Vela's for the
same int8 TFLite model, on a target that mirrors a Vela configuration (its [source] `mirrors`
names Vela's --accelerator-config, --system-config and --memory-mode, as
targets/ethos-u55-256-hee.toml does)."""

from __future__ import annotations

import csv
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..diagnostics import NpucError
from ..target import Target

VELA_OPTIONS = ("--accelerator-config", "--system-config", "--memory-mode")
# Vela's summary columns of the memory each kind of target memory is.
VELA_MEMORY = {
    "sram": "sram_memory_used",
    "dram": "dram_memory_used",
    "onchip_flash": "on_chip_flash_memory_used",
    "offchip_flash": "off_chip_flash_memory_used",
}


def find_vela() -> str | None:
    """The vela command: on PATH, or installed beside this Python (a virtual environment)."""
    beside = Path(sys.executable).parent / "vela"
    return shutil.which("vela") or (str(beside) if beside.is_file() else None)


def vela_arguments(target: Target) -> list[str]:
    """Vela's options for the configuration `target` mirrors (NpucError if it mirrors none)."""
    found = []
    for option in VELA_OPTIONS:
        match = re.search(rf"{option}[ =](\S+)", target.source.mirrors)
        if match is None:
            raise NpucError(
                f"--compare-vela: target '{target.name}' mirrors no Vela configuration (its "
                f"[source] mirrors names no {option}); ethos-u55-256-hee does"
            )
        found += [option, match.group(1)]
    return found


def check_comparable(model: Path, target: Target) -> str:
    """The vela command, once the model and target can be compared (NpucError otherwise)."""
    if model.suffix.lower() != ".tflite":
        raise NpucError(f"--compare-vela needs an int8 TFLite model (Vela reads no {model.suffix})")
    vela_arguments(target)
    vela = find_vela()
    if vela is None:
        raise NpucError(
            "--compare-vela: vela is not installed (pip install ethos-u-vela, or npuc's "
            "'bench' extra)"
        )
    return vela


def run_vela(vela: str, model: Path, target: Target, optimise: str) -> dict[str, str]:
    """Vela's summary CSV for `model` (one line: column -> value)."""
    import subprocess  # only with --compare-vela (a few ms of every npu-compile otherwise)

    with tempfile.TemporaryDirectory(prefix="npuc-vela-") as out:
        command = [vela, str(model), *vela_arguments(target), "--optimise", optimise.capitalize()]
        done = subprocess.run(
            [*command, "--output-dir", out], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:]
            raise NpucError(f"--compare-vela: vela failed: {' '.join(last) or done.returncode}")
        (summary,) = Path(out).glob("*_summary_*.csv")
        with summary.open(newline="") as f:
            return next(csv.DictReader(f))


def comparison(ours: Mapping[str, str], vela: Mapping[str, str], target: Target) -> list[str]:
    """Lines of a table: each memory of the target (KiB used), the cycles and the inference
    time, npuc's (a line of NAME.summary.csv) beside Vela's (its summary CSV)."""
    rows: list[tuple[str, str, str]] = []
    for memory in target.memories:
        used = ours.get(f"{memory.name}_used_bytes")
        theirs = vela.get(VELA_MEMORY.get(memory.kind, ""))
        if used is None and theirs is None:
            continue
        npuc_kib = f"{int(used) / 1024:,.1f}" if used is not None else "-"
        vela_kib = f"{float(theirs):,.1f}" if theirs is not None else "-"
        rows.append((f"{memory.name} used (KiB)", npuc_kib, vela_kib))
    cycles = (int(ours["cycles_total"]), int(float(vela["cycles_total"])))
    rows.append(("cycles", f"{cycles[0]:,}", f"{cycles[1]:,}"))
    ms = (float(ours["inference_time_ms"]), float(vela["inference_time"]) * 1e3)
    rows.append(("inference (ms)", f"{ms[0]:.3f}", f"{ms[1]:.3f}"))
    width = max(len(r[0]) for r in rows)
    lines = [f"{'':<{width}}  {'npuc':>14}  {'Vela':>14}"]
    lines += [f"{name:<{width}}  {a:>14}  {b:>14}" for name, a, b in rows]
    return lines
