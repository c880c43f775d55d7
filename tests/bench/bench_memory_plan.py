"""Memory planner figures on random instances of 200-400 buffers.

Run: .venv/bin/python tests/bench/bench_memory_plan.py [--iterations N] [--seconds S]

Two families, 5 seeded instances each, 16-byte alignment (as the peers'
MobileNetV2 figures in ../shared/models/README.md):
- "network": buffer i is written at step i and read 1-3 steps later, 10% are
  skip connections read up to 30 steps later; sizes log-uniform 1 KiB-600 KiB
  (shaped like a CNN's activations);
- "uniform": start uniform over the steps, lifetimes 1-30 steps, sizes
  1-10_000 bytes (the property tests' distribution, scaled up).
Columns are KiB; "gap" is (plan - lower bound) / lower bound.
"""

from __future__ import annotations

import argparse
import random
import time

from npuc.passes.memory.plan import (
    Buffer,
    greedy_by_conflicts,
    greedy_by_size,
    lower_bound,
    naive_size,
    plan,
)
from npuc.passes.memory.report import verify_placement


def network_instance(rng: random.Random, n: int) -> list[Buffer]:
    bufs = []
    for i in range(n):
        life = rng.randint(10, 30) if rng.random() < 0.1 else rng.randint(1, 3)
        size = int(2 ** rng.uniform(10, 19.2))
        bufs.append(Buffer(f"t{i}", size, i, min(i + life, n)))
    return bufs


def uniform_instance(rng: random.Random, n: int) -> list[Buffer]:
    steps = n // 2
    bufs = []
    for i in range(n):
        start = rng.randrange(steps)
        bufs.append(Buffer(f"t{i}", rng.randint(1, 10_000), start, start + rng.randint(0, 29)))
    return bufs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=2000, help="hill-climbing iterations")
    ap.add_argument("--seconds", type=float, default=None, help="time budget per instance")
    ap.add_argument("--alignment", type=int, default=16)
    args = ap.parse_args()
    a = args.alignment
    kib = 1024
    print(f"alignment {a}, improve: {args.iterations} iterations, budget {args.seconds} s")
    head = (
        f"{'instance':<14} {'n':>4} {'lower':>9} {'tflite':>9} {'usmp':>9} {'confl':>9} "
        f"{'plan':>9} {'naive':>9} {'gap':>6} {'greedy ms':>9} {'plan ms':>8}"
    )
    print(head)
    for family, make in (("network", network_instance), ("uniform", uniform_instance)):
        for seed in range(5):
            rng = random.Random(seed)
            bufs = make(rng, rng.randint(200, 400))
            lb, naive = lower_bound(bufs, a), naive_size(bufs, a)
            t0 = time.perf_counter()
            tfl = greedy_by_size(bufs, a)
            t_greedy = time.perf_counter() - t0
            usmp = greedy_by_size(bufs, a, best_fit=False)
            confl = greedy_by_conflicts(bufs, a)
            t0 = time.perf_counter()
            p = plan(
                bufs, a, max_iterations=args.iterations, budget_seconds=args.seconds, seed=seed
            )
            t_plan = time.perf_counter() - t0
            verify_placement(bufs, p, a)
            gap = 100 * (p.total_size - lb) / lb
            print(
                f"{family}-{seed:<6} {len(bufs):>4} {lb / kib:>9.1f} {tfl.total_size / kib:>9.1f} "
                f"{usmp.total_size / kib:>9.1f} {confl.total_size / kib:>9.1f} "
                f"{p.total_size / kib:>9.1f} {naive / kib:>9.1f} {gap:>5.2f}% "
                f"{t_greedy * 1000:>9.1f} {t_plan * 1000:>8.0f}"
            )


if __name__ == "__main__":
    main()
