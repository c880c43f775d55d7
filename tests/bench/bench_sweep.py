"""npu-sweep throughput: points per minute, scaling from 1 to 2 workers, Ray's cost per point.

Run: PYTHONPATH=tests .venv/bin/python tests/bench/bench_sweep.py [--sizes N]

One sweep (LeNet-5 for two targets, both tiling goals and N SRAM sizes: 4 N points sharing
one quantized model) runs three ways from this one process, each into a fresh results
folder: -j 1 (the points in this process), -j 2 (a pool of 2 worker processes) and --ray -j 2
(Ray tasks on a local Ray instance of 2 CPUs). Every way's figures are checked equal.
Printed: wall seconds (worker start-up and the model's quantization included: once a run,
stored in its RESULTS_DIR/shared-stages and read by the other workers), points per minute,
how many times each run quantized the model, the speed-up of -j 2 over -j 1, and Ray's
overhead per point against the -j 2 pool (Ray's own start-up shown apart).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SWEEP = """\
[sweep]
models = ["examples/lenet5.onnx"]
targets = ["mcu-64", "ethos-u55-256-hee"]
[sweep.options]
optimise = ["performance", "size"]
calib-random = 4
[sweep.target]
sram_size = {sizes}
"""
FIGURES = ["key", "status", "total_cycles", "sram_peak_bytes", "flash_bytes"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, default=4, help="SRAM sizes (points: 4 x this)")
    args = parser.parse_args()
    import os

    import ray

    import npuc.sweep
    from npuc.sweep.shared_stages import runs as quantizations

    os.chdir(REPO)
    sizes = [1 << (16 + i) for i in range(args.sizes)]
    work = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    spec = work / "sweep.toml"
    spec.write_text(SWEEP.format(sizes=sizes))
    points = 4 * len(sizes)

    def timed(label: str, **how: object) -> tuple[float, object]:
        start = time.perf_counter()
        frame = npuc.sweep.run(spec, work / label, progress=False, **how)
        return time.perf_counter() - start, frame

    runs: dict[str, tuple[float, object]] = {}
    folders = {"-j 1": "j1", "-j 2": "j2", "--ray -j 2": "ray"}
    runs["-j 1"] = timed(folders["-j 1"], jobs=1)
    runs["-j 2"] = timed(folders["-j 2"], jobs=2)
    start = time.perf_counter()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - start
    runs["--ray -j 2"] = timed(folders["--ray -j 2"], jobs=2, ray=True)
    ray.shutdown()

    reference = runs["-j 1"][1].sort_values("key")[FIGURES].reset_index(drop=True)
    for label, (_, frame) in runs.items():
        same = frame.sort_values("key")[FIGURES].reset_index(drop=True)
        assert same.equals(reference), f"{label}: figures differ from -j 1's"

    print(f"npu-sweep, {points} points (LeNet-5, 2 targets x 2 goals x {len(sizes)} SRAM sizes)")
    print(f"{'how':<18} {'wall s':>8} {'points/min':>11} {'quantized':>10}")
    for label, (seconds, _) in runs.items():
        times = len(quantizations(work / folders[label]))
        print(f"{label:<18} {seconds:8.1f} {60 * points / seconds:11.1f} {times:>10}")
    one, two = runs["-j 1"][0], runs["-j 2"][0]
    print(f"scaling, -j 1 -> -j 2: {one / two:.2f}x")
    overhead = (runs["--ray -j 2"][0] - two) / points
    print(
        f"ray: start-up {ray_start:.1f} s; overhead per point vs the 2-worker pool: "
        f"{overhead * 1e3:+.0f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
