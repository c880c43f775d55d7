"""Element-wise passes done a block at a time (npuc/blockwise.py) against the whole-array
formulas written out in numpy: dequantization, the auto probe's fake quantization and
its relative errors, on sizes around the block."""

from __future__ import annotations

import numpy as np
import pytest

from npuc.blockwise import BLOCK, float64_blocks, spans
from npuc.integer import dequantize
from npuc.passes.quantization.auto_strategy import _Exact, fake_quantize

SIZES = [1, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 7]
RNG = np.random.default_rng(5)


@pytest.mark.parametrize("size", [0, *SIZES])
def test_spans_cover_the_range_in_order_once(size):
    covered = [i for span in spans(size) for i in range(size)[span]]
    assert covered == list(range(size))
    assert all(s.stop - s.start <= BLOCK for s in spans(size))


def test_float64_blocks_are_the_array_in_float64():
    x = RNG.integers(-128, 128, (3, BLOCK + 5), dtype=np.int8)
    got = np.concatenate([b.copy() for b in float64_blocks(x)])
    assert got.dtype == np.float64
    assert np.array_equal(got, x.ravel().astype(np.float64))


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32])
def test_dequantize_is_scale_times_the_centred_integer(size, dtype):
    info = np.iinfo(dtype)
    q = RNG.integers(max(info.min, -(2**20)), min(info.max, 2**20), size, dtype=dtype)
    scale, zero_point = 0.0371, int(q[0] // 2)
    want = ((q.astype(np.int64) - zero_point) * np.float64(scale)).astype(np.float32)
    got = dequantize(q.reshape(1, -1), scale, zero_point)
    assert got.shape == (1, size) and got.dtype == np.float32
    assert np.array_equal(got.ravel(), want)


def grid_reference(x, lo, hi, bits, symmetric):
    """The grid of ranges.py's docstring, with the zero point added and clipped explicitly."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if symmetric:
        qmax = 2 ** (bits - 1) - 1
        scale = max(-lo, hi, 1e-8) / qmax
        q = np.clip(np.rint(x.astype(np.float64) / scale), -qmax, qmax)
        return (q * scale).astype(x.dtype)
    levels = 2**bits - 1
    scale = max(hi - lo, 1e-8) / levels
    zero = np.rint(-lo / scale)
    q = np.clip(np.rint(x.astype(np.float64) / scale) + zero, 0, levels)
    return ((q - zero) * scale).astype(x.dtype)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(
    ("lo", "hi", "bits", "symmetric"),
    [(-1.5, 2.25, 8, False), (0.3, 4.0, 8, False), (-2.0, 1.0, 8, True), (-3.0, 3.5, 16, False)],
)
def test_fake_quantize_is_the_grid_of_the_range(size, lo, hi, bits, symmetric):
    x = (RNG.standard_normal((size,)) * 2).astype(np.float32).reshape(1, size, 1)
    got = fake_quantize(x, lo, hi, bits, symmetric)
    assert got.shape == x.shape and got.dtype == np.float32
    assert np.array_equal(got, grid_reference(x, lo, hi, bits, symmetric))


@pytest.mark.parametrize("size", SIZES)
def test_relative_error_is_the_squared_error_over_the_exact_energy(size):
    exact = RNG.standard_normal(size).astype(np.float32)
    got = (exact + RNG.normal(0, 0.05, size)).astype(np.float32)
    e, g = exact.astype(np.float64), got.astype(np.float64)
    want = ((g - e) ** 2).sum() / (e**2).sum()
    assert _Exact(exact).error(got) == pytest.approx(want, rel=1e-12)


def test_relative_error_skips_the_elements_where_the_exact_output_is_not_finite():
    exact = RNG.standard_normal(2 * BLOCK + 3).astype(np.float32)
    exact[[5, BLOCK + 1]] = np.inf, np.nan
    got = (exact + 0.5).astype(np.float32)
    finite = np.isfinite(exact)
    e, g = exact[finite].astype(np.float64), got[finite].astype(np.float64)
    want = ((g - e) ** 2).sum() / (e**2).sum()
    assert _Exact(exact).error(got) == pytest.approx(want, rel=1e-12)
    got[7] = np.inf  # a non-finite candidate where the exact output is finite: no bound
    assert _Exact(exact).error(got) == np.inf
