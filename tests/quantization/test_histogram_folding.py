"""The signed calibration histogram folded onto |x| and onto each side equals numpy's own
histogram of |x|, of x >= 0 and of -x for x < 0, on the bins [j * width, (j + 1) * width)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from npuc.passes.quantization.statistics import Histogram

BINS = 64
FRACTIONS = 64


def numpy_counts(values: np.ndarray, width: float) -> np.ndarray:
    """numpy's histogram of non-negative `values` on edges j * width, up to the last
    non-empty bin (none for no values)."""
    if values.size == 0:
        return np.zeros(0, np.int64)
    n = int(np.floor(values.max() / width)) + 1
    counts, _ = np.histogram(values, bins=np.arange(n + 1) * width)
    assert counts.sum() == values.size  # every value fell in a bin
    return counts


def assert_folds_like_numpy(hist: Histogram, x: np.ndarray) -> None:
    counts, width = hist.abs_counts()
    assert width == hist.width
    np.testing.assert_array_equal(counts, numpy_counts(np.abs(x), width))
    positive, width = hist.side_counts(True)
    np.testing.assert_array_equal(positive, numpy_counts(x[x >= 0], width))
    negative, width = hist.side_counts(False)
    np.testing.assert_array_equal(negative, numpy_counts(-x[x < 0], width))


# Values (k + m / FRACTIONS) * 2^e with 0 < m < FRACTIONS: never on an edge of any width
# 2^(e + d) the histogram coarsens to, and every product and quotient is exact in float64.
off_edge = st.builds(
    lambda k, m: k + m / FRACTIONS, st.integers(-300, 300), st.integers(1, FRACTIONS - 1)
)


@settings(max_examples=200, deadline=None)
@given(
    batches=st.lists(st.lists(off_edge, min_size=1, max_size=40), min_size=1, max_size=4),
    exponent=st.integers(-12, 4),
)
def test_folding_matches_numpy_exactly(batches: list[list[float]], exponent: int) -> None:
    width = 2.0**exponent
    hist = Histogram.from_range(-BINS // 2 * width, BINS // 2 * width, [0] * BINS)
    for batch in batches:
        hist.add(np.array(batch) * width)
    assert_folds_like_numpy(hist, np.concatenate(batches) * width)


def mirrored_counts(x: np.ndarray, width: float) -> tuple[np.ndarray, np.ndarray]:
    """numpy's histograms of the signed values on the histogram's own bins
    [k * width, (k + 1) * width): bin j of each side is [j, j + 1) widths from zero for
    x >= 0 and [-(j + 1), -j) widths for x < 0 (a negative edge value -m * width lies in
    [-m, -m + 1), so its magnitude counts in bin m - 1)."""
    positive = numpy_counts(x[x >= 0], width)
    negative = x[x < 0]
    if negative.size == 0:
        return positive, np.zeros(0, np.int64)
    n = int(np.ceil(-negative.min() / width))
    counts, _ = np.histogram(negative, bins=-np.arange(n, -1, -1) * width)
    assert counts.sum() == negative.size
    return positive, counts[::-1]


fractions = st.integers(-200 * FRACTIONS, 200 * FRACTIONS)  # in width / FRACTIONS


@settings(max_examples=200, deadline=None)
@given(
    anchor=st.integers(0, BINS - 2),
    batches=st.lists(st.lists(fractions, max_size=40), max_size=3),
    exponent=st.integers(-12, 4),
)
def test_folding_matches_numpy_after_the_first_batch_sets_the_width(
    anchor: int, batches: list[list[int]], exponent: int
) -> None:
    # The first batch spans [-anchor, BINS - 2 - anchor] widths: the width is 2^exponent.
    # Values are multiples of width / FRACTIONS, bin edges included, all exact in float64.
    width = 2.0**exponent
    first = [-anchor * FRACTIONS, (BINS - 2 - anchor) * FRACTIONS]
    first += [v for v in (batches[0] if batches else []) if first[0] <= v <= first[1]]
    hist = Histogram(BINS)
    for batch in [first, *batches[1:]]:
        hist.add(np.array(batch) / FRACTIONS * width)
    x = np.concatenate([first, *batches[1:]]) / FRACTIONS * width
    positive, negative = mirrored_counts(x, hist.width)
    np.testing.assert_array_equal(hist.side_counts(True)[0], positive)
    np.testing.assert_array_equal(hist.side_counts(False)[0], negative)
    folded = np.zeros(max(positive.size, negative.size), np.int64)
    folded[: positive.size] += positive
    folded[: negative.size] += negative
    np.testing.assert_array_equal(hist.abs_counts()[0], folded)


def test_a_negative_value_folds_into_the_first_bins_of_its_magnitude() -> None:
    hist = Histogram.from_range(-8.0, 8.0, [0] * 16)  # width 1
    x = np.array([-0.5, -0.25, -1.5, -3.75, 0.5, 2.25])
    hist.add(x)
    np.testing.assert_array_equal(hist.abs_counts()[0], [3, 1, 1, 1])
    np.testing.assert_array_equal(hist.side_counts(False)[0], [2, 1, 0, 1])
    np.testing.assert_array_equal(hist.side_counts(True)[0], [1, 0, 1])
