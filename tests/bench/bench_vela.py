"""The cycle model next to Vela's estimate, per network and per layer (issue 6, section 4).

Run: PYTHONPATH=tests .venv/bin/python tests/bench/bench_vela.py [--model M.tflite] [--optimise ...]
Needs Vela (ethos-u-vela, in the lock's bench extra: `make setup` installs it). Both
compile the same int8 TFLite model for Arm Ethos-U55-256 in the Ethos_U55_High_End_Embedded
system config with the Shared_Sram memory mode (npuc: targets/ethos-u55-256-hee.toml); Vela's
per-operator "Op Cycles" (--verbose-performance) are summed per layer name and set
against npuc's per-layer cycles.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np
from shared_models import MBV2, VELA_ARGS

from npuc.api import apply_pipeline, load_model
from npuc.passes.lower_to_npu import program_of
from npuc.runtime.cycle_model import estimate
from npuc.target import load_target

MODEL = MBV2
TARGET = "ethos-u55-256-hee"


def vela_layers(model: Path, optimise: str) -> dict[str, int]:
    """Vela's cycles per layer name, from its --verbose-performance table."""
    vela = shutil.which("vela") or str(Path(__file__).parents[2] / ".venv" / "bin" / "vela")
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [
                vela,
                str(model),
                *VELA_ARGS,
                "--optimise",
                optimise.capitalize(),
                "--verbose-performance",
                "--output-dir",
                out,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    lines = done.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("Original Operator"))
    # The dashed line under the header gives each column's character span.
    spans = [m.span() for m in re.finditer(r"-+", lines[header + 1])]
    titles = [lines[header][a:b].strip() for a, b in spans]
    cycles_at, name_at = titles.index("Op Cycles"), titles.index("Name")
    layers: dict[str, int] = defaultdict(int)
    for line in lines[header + 2 :]:
        if not line.strip():
            break
        cells = [line[a:b].strip() for a, b in spans[:-1]] + [line[spans[-1][0] :].strip()]
        layers[_layer(cells[name_at])] += int(cells[cycles_at])
    return dict(layers)


def _layer(name: str) -> str:
    """Vela's helper operators (logits_softmax_20, ..._broadcasted) belong to their layer."""
    return re.sub(r"(_softmax)?(_\d+)?(_broadcasted)?$", "", name) or name


def npuc_layers(model: Path, optimise: str) -> tuple[dict[str, int], int]:
    module = load_model(model)
    apply_pipeline(
        module,
        f"tile{{target={TARGET} optimise={optimise}}},"
        f"plan-memory{{target={TARGET} io=arena}},lower-to-npu",
    )
    profile = estimate(program_of(module), load_target(TARGET))
    return {layer.name: layer.cycles for layer in profile.layers}, profile.total_cycles


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", type=Path, default=MODEL)
    parser.add_argument("--optimise", choices=("performance", "size"), default="performance")
    args = parser.parse_args()
    theirs = vela_layers(args.model, args.optimise)
    ours, total = npuc_layers(args.model, args.optimise)
    vela_total = sum(theirs.values())
    print(f"{args.model.name} on {TARGET}, optimise {args.optimise}")
    print(f"network cycles: npuc {total:,}  Vela {vela_total:,}  ratio {total / vela_total:.3f}")
    common = [name for name in theirs if name in ours]
    missing = sorted(set(theirs) ^ set(ours))
    a = np.array([ours[n] for n in common], float)
    b = np.array([theirs[n] for n in common], float)
    pearson = float(np.corrcoef(a, b)[0, 1])
    ranks = float(np.corrcoef(np.argsort(np.argsort(a)), np.argsort(np.argsort(b)))[0, 1])
    unmatched = f"; unmatched names: {missing}" if missing else ""
    print(
        f"per-layer correlation over {len(common)} layers: Pearson {pearson:.3f}, "
        f"Spearman {ranks:.3f}{unmatched}"
    )
    worst = sorted(common, key=lambda n: -abs(np.log(max(ours[n], 1) / max(theirs[n], 1))))
    print("largest per-layer differences (npuc / Vela):")
    for name in worst[:8]:
        print(
            f"  {name:24s} {ours[name]:>10,} {theirs[name]:>10,}  {ours[name] / theirs[name]:6.2f}"
        )


if __name__ == "__main__":
    main()
