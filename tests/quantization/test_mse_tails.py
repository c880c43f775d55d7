"""The mse range search's tail sums (`ranges._tails`): for each threshold, the count and the
summed squared clipping error of the values beyond it, the values spread uniformly inside
each histogram bin. Checked against the integrals written bin by bin, at thresholds inside
bins (where a bin is cut), on bin edges and past the data, on both sides."""

from __future__ import annotations

import numpy as np
import pytest

from npuc.passes.quantization.ranges import _tails


def beyond(counts, lower, width, t, above):
    """(count, squared error) beyond t: each bin [a, a + w) holds c values spread evenly,
    so the part beyond t holds c * length / w of them and adds c / w * integral of (x - t)^2."""
    n = e = 0.0
    for c, a in zip(counts, lower, strict=True):
        lo, hi = (max(a, t), a + width) if above else (a, min(a + width, t))
        if hi <= lo:
            continue
        n += c * (hi - lo) / width
        if above:
            e += c / width * ((hi - t) ** 3 - (lo - t) ** 3) / 3
        else:
            e += c / width * ((t - lo) ** 3 - (t - hi) ** 3) / 3
    return n, e


@pytest.mark.parametrize("above", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_tail_counts_and_errors_are_the_bin_integrals(above, seed):
    rng = np.random.default_rng(seed)
    width = float(rng.uniform(0.01, 0.5))
    start = int(rng.integers(-40, 10))
    size = int(rng.integers(5, 40))
    counts = rng.integers(0, 50, size).astype(np.float64)
    counts[rng.random(size) < 0.3] = 0  # empty bins, as after a histogram's gaps
    counts[0] = counts[-1] = 7  # the data's extreme bins are not empty
    keep = counts > 0
    lower = (start + np.arange(size))[keep] * width
    c = counts[keep]
    top = lower[-1] + width
    inside = rng.uniform(lower[0], top, 12)  # mostly inside bins: cut bins
    edges = lower[rng.integers(0, lower.size, 3)]
    thresholds = np.sort(np.concatenate([inside, edges, [lower[0] - width, top + width]]))
    n, e = _tails(c, lower, width, thresholds, above=above)
    for k, t in enumerate(thresholds):
        want_n, want_e = beyond(c, lower, width, t, above)
        assert n[k] == pytest.approx(want_n, rel=1e-9, abs=1e-9), (t, above)
        assert e[k] == pytest.approx(want_e, rel=1e-7, abs=1e-12 * width**2), (t, above)
