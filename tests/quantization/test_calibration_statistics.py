"""TensorStatistics and Histogram against numpy on the concatenated raw samples."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npuc.diagnostics import NpucError
from npuc.passes.quantization.statistics import Histogram, OutlierPolicy, TensorStatistics

R = np.random.default_rng(11)


def batches_widening() -> list[np.ndarray]:
    """Batches whose range grows (forcing histogram coarsening) and shifts sign."""
    return [
        R.standard_normal((4, 50)).astype(np.float32),
        (3 * R.standard_normal(300) + 1).astype(np.float32),
        R.uniform(0, 40, 500).astype(np.float32),
        R.uniform(-100, -20, 70).astype(np.float32),
        R.standard_normal((2, 3, 7)).astype(np.float32) * 0.01,
    ]


def test_moments_and_extrema_match_numpy_on_concatenation():
    batches = batches_widening()
    stats = TensorStatistics("t")
    for b in batches:
        stats.update(b)
    x = np.concatenate([b.ravel() for b in batches]).astype(np.float64)
    assert stats.count == x.size
    assert stats.min == x.min() and stats.max == x.max()
    assert stats.mean == pytest.approx(x.mean(), rel=1e-12, abs=1e-12)
    assert stats.std == pytest.approx(x.std(), rel=1e-12)
    assert stats.batch_ranges == [(float(b.min()), float(b.max())) for b in batches]


def test_moments_are_stable_with_a_large_offset():
    # Naive sum-of-squares variance loses all digits here; a Chan/Welford merge does not.
    batches = [1e8 + R.standard_normal(1000) for _ in range(20)]
    stats = TensorStatistics("t")
    for b in batches:
        stats.update(b)
    x = np.concatenate(batches)
    assert stats.std == pytest.approx(x.std(), rel=1e-6)
    assert stats.mean == pytest.approx(x.mean(), rel=1e-15)


def test_moving_average_follows_the_recurrence():
    batches = batches_widening()
    for momentum in (0.9, 0.5, 0.0):
        stats = TensorStatistics("t", momentum=momentum)
        for b in batches:
            stats.update(b)
        lo, hi = float(batches[0].min()), float(batches[0].max())
        for b in batches[1:]:
            lo = momentum * lo + (1 - momentum) * float(b.min())
            hi = momentum * hi + (1 - momentum) * float(b.max())
        assert stats.ema_min == pytest.approx(lo, rel=1e-12)
        assert stats.ema_max == pytest.approx(hi, rel=1e-12)


def test_several_arrays_make_one_batch():
    parts = [R.standard_normal(40), R.standard_normal(30) * 5, R.standard_normal(10) - 7]
    stats = TensorStatistics("t")
    for p in parts:
        stats.add(p)
    stats.end_batch()
    stats.update(np.array([0.5, 0.25]))
    joined = np.concatenate(parts)
    assert stats.batch_ranges == [(joined.min(), joined.max()), (0.25, 0.5)]
    assert stats.ema_min == pytest.approx(0.9 * joined.min() + 0.1 * 0.25)


def test_histogram_counts_sum_to_count_and_track_numpy_within_one_bin():
    batches = batches_widening()
    stats = TensorStatistics("t", bins=256)
    for b in batches:
        stats.update(b)
    hist = stats.histogram
    x = np.concatenate([b.ravel() for b in batches]).astype(np.float64)
    assert hist.total == stats.count == x.size
    lo, hi = hist.range
    assert lo <= x.min() and x.max() < hi
    # Zero is an edge and edges are multiples of the width.
    edges = hist.edges()
    assert np.allclose(edges / hist.width, np.round(edges / hist.width))
    # Cumulative counts at each edge equal numpy's counts of values below it up to one bin.
    ours = np.concatenate(([0], np.cumsum(hist.counts)))
    below = np.searchsorted(np.sort(x), edges, side="left")
    below_prev = np.concatenate(([0], below[:-1]))
    below_next = np.concatenate((below[1:], [x.size]))
    assert np.all((ours >= below_prev) & (ours <= below_next))
    ref, _ = np.histogram(x, edges)
    assert np.abs(ref - hist.counts).sum() <= 2  # at most a value on an edge moves


def test_rebinning_preserves_counts_exactly():
    hist = Histogram(16)
    first = np.linspace(-1, 1, 101)
    hist.add(first)
    before_width, before = hist.width, hist.counts.copy()
    before_edges = hist.edges()
    hist.add(np.array([9.0]))  # needs a coarser grid
    assert hist.total == 102
    factor = hist.width / before_width
    assert factor >= 2 and factor == 2 ** round(np.log2(factor))
    # Each old bin lies inside exactly one new bin: regrouping the old counts by new bin
    # reproduces the new counts (without the added value).
    new_edges = hist.edges()
    owner = np.searchsorted(new_edges, before_edges[:-1] + before_width / 2, side="right") - 1
    regrouped = np.bincount(owner[before > 0], before[before > 0], minlength=16)
    regrouped[np.searchsorted(new_edges, 9.0, side="right") - 1] += 1
    assert np.array_equal(regrouped.astype(np.int64), hist.counts)


def test_histogram_from_all_zero_batch_then_data():
    stats = TensorStatistics("t", bins=64)
    stats.update(np.zeros(10))
    stats.update(np.array([1e6, -3.0, 2.5]))
    assert stats.histogram.total == 13
    assert stats.min == -3.0 and stats.max == 1e6
    lo, hi = stats.histogram.range
    assert lo <= -3.0 and hi > 1e6
    # A coarse grid here is still no wider than needed: 64 bins of at most twice the span.
    assert stats.histogram.width <= 2 * (1e6 + 3) / 62


def test_huge_value_after_tiny_range_does_not_overflow_indices():
    hist = Histogram(32)
    hist.add(np.array([1.0, 1.0 + 1e-12]))
    hist.add(np.array([1e30]))
    assert hist.total == 3
    assert hist.range[1] > 1e30


@pytest.mark.filterwarnings("error")  # dropped quietly: +inf and -inf in one sum warn
def test_nonfinite_values_are_dropped_and_counted():
    stats = TensorStatistics("t")
    stats.update(np.array([1.0, np.nan, np.inf, -np.inf, -2.0]))
    assert stats.count == 2 and stats.nonfinite == 3
    assert (stats.min, stats.max) == (-2.0, 1.0)
    assert stats.histogram.total == 2
    both_infinities = TensorStatistics("u")
    both_infinities.update(np.array([1.0, np.inf, -np.inf, -2.0]))
    assert both_infinities.count == 2 and both_infinities.nonfinite == 2


def test_all_nonfinite_batch_records_no_range():
    stats = TensorStatistics("t")
    stats.update(np.array([np.nan, np.nan]))
    assert stats.count == 0 and stats.batch_ranges == [] and stats.ema_min is None


def test_outlier_policy_num_std():
    x = np.concatenate((R.standard_normal(10000), [50.0, -60.0]))
    stats = TensorStatistics("t")
    stats.update(x, OutlierPolicy(num_std=4))
    keep = np.abs(x - x.mean()) <= 4 * x.std()
    assert stats.outliers == int((~keep).sum()) >= 2
    assert stats.max == x[keep].max() and stats.count == keep.sum()
    assert stats.mean == pytest.approx(x[keep].mean(), rel=1e-12)  # of the kept values only
    assert stats.std == pytest.approx(x[keep].std(), rel=1e-12)


def test_outlier_policy_percentile():
    x = R.standard_normal(10000)
    stats = TensorStatistics("t")
    stats.update(x, OutlierPolicy(percentile=99))
    lo, hi = np.percentile(x, [1, 99])
    kept = x[(x >= lo) & (x <= hi)]
    assert stats.count == kept.size and stats.max == kept.max() and stats.min == kept.min()
    assert stats.mean == pytest.approx(kept.mean(), rel=1e-12)


@pytest.mark.parametrize("kwargs", [{"num_std": 0}, {"percentile": 40}, {"percentile": 101}])
def test_outlier_policy_rejects_bad_options(kwargs):
    with pytest.raises(NpucError):
        OutlierPolicy(**kwargs)


def test_bad_histogram_and_momentum_options():
    with pytest.raises(NpucError, match="even number of bins"):
        Histogram(7)
    with pytest.raises(NpucError, match="momentum"):
        TensorStatistics("t", momentum=1.0)


def test_any_positive_num_std_is_a_policy():
    # within half a standard deviation of the mean: the central values only
    x = np.array([-2.0, -0.4, 0.0, 0.4, 2.0])
    assert OutlierPolicy(num_std=0.5).keep(x).tolist() == [-0.4, 0.0, 0.4]
    with pytest.raises(NpucError, match="outlier num_std must be positive, got 0"):
        OutlierPolicy(num_std=0)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=6),
        min_size=1,
        max_size=3,
    )
)
def test_histogram_holds_any_finite_float64(batches: list[list[float]]) -> None:
    # Subnormal spans (a width of 0) and spans near the float64 maximum (a width that
    # overflows, or a later value whose bin index does) used to raise.
    hist = Histogram(16)
    for batch in batches:
        hist.add(np.array(batch, np.float64))
    x = np.sort(np.concatenate([np.array(b, np.float64) for b in batches]))
    assert hist.total == x.size
    assert np.isfinite(hist.width) and hist.width >= np.finfo(np.float64).tiny
    # Cumulative counts at each edge (infinite past the float64 maximum) equal numpy's
    # counts of values below it, up to one bin.
    edges = hist.edges()
    ours = np.concatenate(([0], np.cumsum(hist.counts)))
    below = np.searchsorted(x, edges, side="left")
    assert np.all(ours >= np.concatenate(([0], below[:-1])))
    assert np.all(ours <= np.concatenate((below[1:], [x.size])))
