"""Calibration statistics and ranges against numpy written from docs/calibration.md.

Data of every kind a calibration meets: signed, skewed, one-signed, constant, zero, few
samples, several arrays per batch, non-finite values. The references compute on the raw
values (numpy), not on the code's structures: the histogram is re-binned from the values
at the width the growth rule gives, percentiles are read off those bins, the moving
averages follow the recurrence, and every strategy's result goes through the documented
final rule (zero inside, symmetric if asked, at least 1e-8 wide).
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from npuc.blockwise import BLOCK
from npuc.diagnostics import NpucError
from npuc.passes.quantization.entropy import kl_threshold
from npuc.passes.quantization.ranges import activation_range, weight_range
from npuc.passes.quantization.statistics import OutlierPolicy, TensorStatistics

MIN_SPAN = 1e-8


def batches_of(kind: str, rng: np.random.Generator) -> list[list[np.ndarray]]:
    """Batches, each a list of arrays (one per model call)."""
    n = int(rng.integers(1, 6))
    calls = [int(rng.integers(1, 3)) for _ in range(n)]

    def draw(size: int) -> np.ndarray:
        if kind == "signed":
            return rng.standard_normal(size) * rng.uniform(0.5, 3) + rng.uniform(-1, 1)
        if kind == "skewed":
            return rng.exponential(2.0, size) ** 2 - 0.5
        if kind == "positive":
            return np.maximum(rng.standard_normal(size), 0.0) * 6
        if kind == "negative":
            return -rng.gamma(2.0, 1.5, size) - 0.25
        if kind == "constant":
            return np.full(size, 2.5)
        if kind == "zeros":
            return np.zeros(size)
        if kind == "few":
            return rng.uniform(-3, 7, size)
        if kind == "large":  # arrays of more than a block: recorded a block at a time
            return rng.standard_normal(size) * 4 + rng.uniform(-1, 1)
        assert kind == "growing"  # each batch wider than the last: the bins coarsen
        return rng.standard_normal(size) * 10.0 ** rng.uniform(-2, 3)

    sizes = {"few": (1, 4), "large": (BLOCK + 1, 4 * BLOCK)}.get(kind, (50, 3000))
    return [[draw(int(rng.integers(*sizes))) for _ in range(c)] for c in calls]


KINDS = ["signed", "skewed", "positive", "negative", "constant", "zeros", "few", "growing", "large"]


def gather(batches: list[list[np.ndarray]], bins: int = 2048, momentum: float = 0.9):
    stats = TensorStatistics("t", bins=bins, momentum=momentum)
    for batch in batches:
        for array in batch:
            stats.add(array)
        stats.end_batch()
    return stats


def finish(lo: float, hi: float, symmetric: bool) -> tuple[float, float]:
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if symmetric:
        t = max(-lo, hi, MIN_SPAN)
        return -t, t
    return (lo, lo + MIN_SPAN) if hi - lo < MIN_SPAN else (lo, hi)


def abs_bins(x: np.ndarray, width: float) -> dict[int, int]:
    """Absolute bin k -> count: bin k covers [k * width, (k + 1) * width)."""
    k, counts = np.unique(np.floor(x / width).astype(np.int64), return_counts=True)
    return dict(zip(k.tolist(), counts.tolist(), strict=True))


def grown_width(batches: list[np.ndarray], bins: int) -> float:
    """The growth rule: the first batch sets (max - min) / (bins - 2) (a constant one
    |value| / (bins - 2), zeros 1 / (bins - 2)); the width doubles, as little as it
    must, whenever the recorded values stop fitting in `bins` bins or an absolute bin
    index k of theirs leaves -2^52 < k < 2^52 - 1 (x / w exact in float64)."""
    first = batches[0]
    span = float(first.max() - first.min())
    width = (span if span > 0 else (abs(float(first.max())) or 1.0)) / (bins - 2)
    seen = np.zeros(0)
    for x in batches:
        seen = np.concatenate([seen, x])
        while True:
            k = np.floor(seen / width)
            if k.max() - k.min() + 1 <= bins and max(-k.min(), k.max() + 1) < 2**52:
                break
            width *= 2
    return width


def percentile_of_bins(bins: dict[int, int], width: float, p: float) -> float | None:
    """P(p) read off the bins, linear inside the bin that holds rank p * N / 100; None at
    rank 0 (the caller clamps it to the minimum)."""
    total = sum(bins.values())
    rank = p / 100 * total
    if rank <= 0:
        return None
    below = 0
    for k in sorted(bins):
        if below + bins[k] >= rank:
            return (k + (rank - below) / bins[k]) * width
        below += bins[k]
    raise AssertionError("rank beyond the total")


# --------------------------------------------------------------------------- statistics


@pytest.mark.parametrize("kind", KINDS)
def test_moments_extrema_batches_and_moving_averages_match_numpy(kind):
    rng = np.random.default_rng(KINDS.index(kind))
    for _ in range(4):
        batches = batches_of(kind, rng)
        momentum = float(rng.choice([0.0, 0.5, 0.9, 0.99]))
        stats = gather(batches, momentum=momentum)
        x = np.concatenate([a for b in batches for a in b]).astype(np.float64)
        assert stats.count == x.size
        assert (stats.min, stats.max) == (x.min(), x.max())
        assert stats.mean == pytest.approx(x.mean(), rel=1e-12, abs=1e-12)
        assert stats.std == pytest.approx(x.std(), rel=1e-9, abs=1e-12)
        ranges = [(float(min(a.min() for a in b)), float(max(a.max() for a in b))) for b in batches]
        assert stats.batch_ranges == ranges
        ema = ranges[0]
        for lo, hi in ranges[1:]:
            ema = (momentum * ema[0] + (1 - momentum) * lo, momentum * ema[1] + (1 - momentum) * hi)
        assert (stats.ema_min, stats.ema_max) == pytest.approx(ema, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("bins", [8, 64, 2048])
@pytest.mark.parametrize("kind", KINDS)
def test_histogram_is_the_values_binned_at_the_grown_width(kind, bins):
    rng = np.random.default_rng(10 + KINDS.index(kind) + bins)
    batches = batches_of(kind, rng)
    stats = gather(batches, bins=bins)
    arrays = [a for b in batches for a in b]
    hist = stats.histogram
    assert hist.width == grown_width(arrays, bins)
    x = np.concatenate(arrays)
    got = {hist.start + j: int(c) for j, c in enumerate(hist.counts) if c}
    assert got == abs_bins(x, hist.width)
    assert hist.counts.size == bins
    lo, hi = hist.range
    assert (lo, hi) == (hist.start * hist.width, (hist.start + bins) * hist.width)


@pytest.mark.parametrize("centre", [1e12, -3e13, 7.5e15, 2.0**60])
@pytest.mark.parametrize("bins", [1024, 2048])
def test_data_far_from_zero_is_binned_with_indices_below_two_to_the_52(centre, bins):
    """A narrow batch far from zero (an offset feature, a timestamp) gets a first width
    so small that its bin indices pass 2^52: the width doubles until they fit."""
    rng = np.random.default_rng(int(abs(centre)) % 1000 + bins)
    spread = abs(centre) * 1e-14  # a few dozen float64 steps
    batches = [centre + spread * rng.standard_normal(64) for _ in range(3)]
    first = batches[0]
    assert abs(centre) / ((first.max() - first.min()) / (bins - 2)) >= 2**52  # the premise
    hist = gather([[x] for x in batches], bins=bins).histogram
    assert hist.width == grown_width(batches, bins)
    x = np.concatenate(batches)
    got = {hist.start + j: int(c) for j, c in enumerate(hist.counts) if c}
    assert got == abs_bins(x, hist.width)


@pytest.mark.parametrize("step", [1 / 255, 0.1, 1 / 3, 0.02, 0.7])
@pytest.mark.parametrize("bins", [8, 10, 12, 16])
def test_histogram_of_values_on_a_grid_is_binned_at_the_grown_width(step, bins):
    """Quantized data (pixels / 255, integer codes times a scale) puts values on bin edges
    or a rounding away from them: the window and the bins must agree on each one's bin."""
    rng = np.random.default_rng(int(bins + 1000 * step))
    for _ in range(40):
        first = rng.integers(-5, 6, size=int(rng.integers(2, 6))) * step
        arrays = [first]
        width = grown_width(arrays, bins)
        for _ in range(int(rng.integers(0, 3))):
            arrays.append(rng.integers(-30, 31, size=int(rng.integers(1, 6))) * width)
            width = grown_width(arrays, bins)
        hist = gather([[a] for a in arrays], bins=bins).histogram
        assert hist.width == grown_width(arrays, bins)
        got = {hist.start + j: int(c) for j, c in enumerate(hist.counts) if c}
        assert got == abs_bins(np.concatenate(arrays), hist.width)


@pytest.mark.parametrize("bins", [7, 9, 2049, 6, 0])
def test_a_histogram_needs_an_even_number_of_bins_from_8(bins):
    with pytest.raises(NpucError, match="even number of bins >= 8"):
        TensorStatistics("t", bins=bins)


def test_nonfinite_values_are_dropped_and_counted_per_array():
    stats = TensorStatistics("t")
    stats.add(np.array([1.0, np.nan, -np.inf, 3.0]))
    stats.add(np.array([np.inf]))
    stats.end_batch()
    stats.update(np.array([np.nan, -2.0]))
    assert (stats.count, stats.nonfinite) == (3, 4)
    assert stats.batch_ranges == [(1.0, 3.0), (-2.0, -2.0)]
    assert (stats.min, stats.max) == (-2.0, 3.0)


def test_nonfinite_values_in_an_array_of_many_blocks_are_dropped_and_counted():
    x = np.linspace(-2.0, 5.0, 3 * BLOCK, dtype=np.float32)
    x[[7, BLOCK + 3]] = np.nan, np.inf
    stats = TensorStatistics("t")
    stats.add(x)
    finite = np.delete(x, [7, BLOCK + 3]).astype(np.float64)
    assert (stats.count, stats.nonfinite) == (finite.size, 2)
    assert (stats.min, stats.max) == (finite.min(), finite.max())
    assert stats.mean == pytest.approx(finite.mean(), rel=1e-12)
    assert stats.histogram.total == finite.size


@pytest.mark.parametrize(
    "policy", [OutlierPolicy(num_std=1.5), OutlierPolicy(percentile=90.0), OutlierPolicy(2.0, 95.0)]
)
def test_outlier_policy_keeps_what_numpy_keeps(policy):
    rng = np.random.default_rng(4)
    stats = TensorStatistics("t")
    kept = []
    for size in (500, 80, 3):
        x = rng.standard_normal(size) * np.where(rng.random(size) < 0.05, 10, 1)
        stats.update(x.astype(np.float32), policy)
        x = x.astype(np.float32).astype(np.float64)
        if policy.percentile is not None:
            lo, hi = np.percentile(x, [100 - policy.percentile, policy.percentile])
            x = x[(x >= lo) & (x <= hi)]
        if policy.num_std is not None:
            x = x[np.abs(x - x.mean()) <= policy.num_std * x.std()]
        kept.append(x)
    x = np.concatenate(kept)
    assert stats.count == x.size
    assert stats.outliers == 583 - x.size
    assert (stats.min, stats.max) == (x.min(), x.max())


# --------------------------------------------------------------------------- ranges


def reference_range(stats, x, ranges, strategy, symmetric, **options):
    vmin, vmax = float(x.min()), float(x.max())
    amax = max(-vmin, vmax)
    if strategy == "extrema":
        lo, hi = vmin, vmax
    elif strategy == "batch_mean":
        lo, hi = np.mean(np.asarray(ranges), axis=0)
    elif strategy == "moving_average":
        lo, hi = stats.ema_min, stats.ema_max  # checked against the recurrence above
    elif strategy == "mean_std":
        spread = options.get("num_std", 3.0) * x.std()
        if symmetric:
            t = min(abs(x.mean()) + spread, amax)
            lo, hi = -t, t
        else:
            lo, hi = max(x.mean() - spread, vmin), min(x.mean() + spread, vmax)
    else:
        assert strategy == "percentile"
        p = options.get("percentile", 99.99)
        w = stats.histogram.width
        if symmetric:
            t = percentile_of_bins(abs_bins(np.abs(x), w), w, p)
            t = min(t if t is not None else 0.0, amax)
            lo, hi = -t, t
        else:
            bins = abs_bins(x, w)
            low, high = percentile_of_bins(bins, w, 100 - p), percentile_of_bins(bins, w, p)
            lo = vmin if low is None else max(low, vmin)
            hi = min(high, vmax)
    return finish(float(lo), float(hi), symmetric)


SIMPLE = [
    ("extrema", {}),
    ("batch_mean", {}),
    ("moving_average", {}),
    ("mean_std", {}),
    ("mean_std", {"num_std": 1.5}),
    ("percentile", {}),
    ("percentile", {"percentile": 99.0}),
    ("percentile", {"percentile": 75.0}),
    ("percentile", {"percentile": 100.0}),
]


@pytest.mark.parametrize("kind", KINDS)
def test_simple_strategies_match_the_reference(kind):
    rng = np.random.default_rng(30 + KINDS.index(kind))
    for _ in range(3):
        batches = batches_of(kind, rng)
        stats = gather(batches, bins=int(rng.choice([64, 2048])))
        x = np.concatenate([a for b in batches for a in b])
        ranges = [(np.concatenate(b).min(), np.concatenate(b).max()) for b in batches]
        for strategy, options in SIMPLE:
            for symmetric in (False, True):
                got = activation_range(stats, strategy, symmetric=symmetric, **options)
                want = reference_range(stats, x, ranges, strategy, symmetric, **options)
                assert got == pytest.approx(want, rel=1e-9, abs=1e-12), (strategy, options)


@pytest.mark.parametrize("kind", ["zeros", "constant", "few"])
@pytest.mark.parametrize("symmetric", [False, True])
def test_kl_and_mse_on_degenerate_data_keep_the_range_rules(kind, symmetric):
    """All values in one bin (zeros), one value (constant), a handful: the searches still
    return a range inside the extrema that holds zero and is at least 1e-8 wide."""
    rng = np.random.default_rng(7)
    batches = batches_of(kind, rng)
    stats = gather(batches)
    x = np.concatenate([a for b in batches for a in b])
    for strategy in ("kl", "mse"):
        lo, hi = activation_range(stats, strategy, symmetric=symmetric)
        want_lo, want_hi = finish(float(x.min()), float(x.max()), symmetric)
        assert lo <= 0 <= hi and hi - lo >= MIN_SPAN
        assert want_lo <= lo and hi <= want_hi
        if kind == "zeros":
            assert (lo, hi) == (want_lo, want_hi)


def test_kl_of_a_histogram_of_one_bin_is_its_end():
    # No candidate lies past first + levels: the threshold keeps the whole histogram.
    assert kl_threshold(np.array([7]), 0.25, 128, 1) == 0.25
    assert kl_threshold(np.array([0, 3]), 0.5, 1, 1) == 1.0


@pytest.mark.parametrize("kind", ["skewed", "positive", "negative", "signed"])
@pytest.mark.parametrize("bits", [4, 8])
def test_kl_asymmetric_searches_the_longer_side_with_its_share_of_levels(kind, bits):
    rng = np.random.default_rng(50 + bits)
    batches = batches_of(kind, rng)
    stats = gather(batches, bins=512)
    x = np.concatenate([a for b in batches for a in b])
    w = stats.histogram.width
    vmin, vmax = float(x.min()), float(x.max())
    positive = vmax >= -vmin
    long, short = (max(vmax, 0.0), max(-vmin, 0.0)) if positive else (-vmin, max(vmax, 0.0))
    levels = max(2, round(2**bits * long / (long + short)))
    side = x[x >= 0] if positive else -x[x < 0]
    k = np.floor(side / w).astype(np.int64) if positive else np.floor(-side / w).astype(np.int64)
    k = k if positive else -k - 1  # bin [j w, (j+1) w) of -x holds x in (-(j+1) w, -j w]
    counts = np.bincount(k) if k.size else np.zeros(0, np.int64)
    t = min(kl_threshold(counts, w, levels, 1), long) if counts.size else 0.0
    want = (vmin, t) if positive else (-t, vmax)
    assert activation_range(stats, "kl", bits=bits) == pytest.approx(finish(*want, False))


def test_ranges_survive_the_file_round_trip():
    rng = np.random.default_rng(9)
    batches = batches_of("skewed", rng)
    stats = gather(batches)
    text = json.dumps(stats.to_dict())
    again = TensorStatistics.from_dict("t", json.loads(text))
    for strategy in (
        "extrema",
        "batch_mean",
        "moving_average",
        "mean_std",
        "percentile",
        "kl",
        "mse",
    ):
        for symmetric in (False, True):
            want = activation_range(stats, strategy, symmetric=symmetric)
            got = activation_range(again, strategy, symmetric=symmetric)
            assert got == pytest.approx(want, rel=1e-12), strategy


# --------------------------------------------------------------------------- weights


def fake_quantize(x, lo, hi, bits, symmetric):
    if symmetric:
        qmax = 2 ** (bits - 1) - 1
        s = max(-lo, hi) / qmax
        return np.clip(np.round(x / s), -qmax, qmax) * s
    s = (hi - lo) / (2**bits - 1)
    z = np.round(-lo / s)
    return (np.clip(np.round(x / s) + z, 0, 2**bits - 1) - z) * s


def weight_rows(w: np.ndarray, axis: int | None) -> np.ndarray:
    return w.reshape(1, -1) if axis is None else np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)


def finish_rows(lo, hi, symmetric):
    pairs = [finish(float(a), float(b), symmetric) for a, b in zip(lo, hi, strict=True)]
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_weight_ranges_match_numpy_per_tensor_and_per_channel(axis, symmetric):
    rng = np.random.default_rng(60 + (axis or 0) + 3 * symmetric)
    w = rng.standard_normal((6, 5, 3)) * rng.uniform(0.1, 2, (6, 1, 1)) + rng.uniform(0, 0.5)
    w[2] = np.abs(w[2])  # a one-signed channel
    rows = weight_rows(w, axis)
    lo0, hi0 = rows.min(axis=1), rows.max(axis=1)
    mean, std = rows.mean(axis=1), rows.std(axis=1)
    amax = np.maximum(-lo0, hi0)
    expected = {
        "extrema": (lo0, hi0),
        "percentile": (
            (
                -np.percentile(np.abs(rows), 99.99, axis=1),
                np.percentile(np.abs(rows), 99.99, axis=1),
            )
            if symmetric
            else tuple(np.percentile(rows, [0.01, 99.99], axis=1))
        ),
        "mean_std": (
            (-np.minimum(abs(mean) + 3 * std, amax), np.minimum(abs(mean) + 3 * std, amax))
            if symmetric
            else (np.maximum(mean - 3 * std, lo0), np.minimum(mean + 3 * std, hi0))
        ),
    }
    for strategy, (lo, hi) in expected.items():
        got_lo, got_hi = weight_range(w, strategy, axis=axis, symmetric=symmetric)
        want_lo, want_hi = finish_rows(lo, hi, symmetric)
        np.testing.assert_allclose(np.atleast_1d(got_lo), want_lo, rtol=1e-12, err_msg=strategy)
        np.testing.assert_allclose(np.atleast_1d(got_hi), want_hi, rtol=1e-12, err_msg=strategy)


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
def test_weight_mse_picks_the_least_error_clip_ratio_of_the_extrema(symmetric, bits):
    rng = np.random.default_rng(70 + bits + symmetric)
    w = rng.standard_normal((4, 300)) * np.where(rng.random((4, 300)) < 0.02, 6, 1)
    w[1] = np.abs(w[1]) + 0.3  # never negative
    w[3] = -np.abs(w[3])  # never positive
    for n in (100, 7):
        options = {} if n == 100 else {"num_candidates": n}
        lo, hi = weight_range(w, "mse", axis=0, bits=bits, symmetric=symmetric, **options)
        for row, got_lo, got_hi in zip(w, lo, hi, strict=True):
            lo0, hi0 = min(row.min(), 0.0), max(row.max(), 0.0)
            if symmetric:
                lo0, hi0 = -max(-lo0, hi0), max(-lo0, hi0)
            errors = [
                np.mean((fake_quantize(row, k / n * lo0, k / n * hi0, bits, symmetric) - row) ** 2)
                for k in range(1, n + 1)
            ]
            ratio = (got_hi - got_lo) / (hi0 - lo0)
            k = round(ratio * n)
            assert ratio == pytest.approx(k / n, rel=1e-12)
            assert errors[k - 1] <= min(errors) * (1 + 1e-9)
            assert math.isclose(got_lo, k / n * lo0, rel_tol=1e-12, abs_tol=1e-15)


@pytest.mark.parametrize(
    ("strategy", "weights", "accepted"),
    [
        ("percentile", False, "(options: percentile)"),
        ("kl", False, "(options: stride)"),
        ("extrema", False, "(options: none)"),
        ("mse", True, "(options: num_candidates)"),
    ],
)
def test_an_unknown_option_is_named_with_the_accepted_ones(strategy, weights, accepted):
    stats = gather([[np.arange(5.0)]])
    with pytest.raises(NpucError) as error:
        if weights:
            weight_range(np.arange(5.0), strategy, bogus=1)
        else:
            activation_range(stats, strategy, bogus=1)
    assert str(error.value).endswith(f"strategy '{strategy}' has no option bogus {accepted}")


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        ({"ema_min": 2.0, "ema_max": 1.0}, "'ema_min' (2.0) is greater than 'ema_max' (1.0)"),
        ({"min": 3.0, "max": -1.0}, "'min' (3.0) is greater than 'max' (-1.0)"),
        ({"ema_min": 1.0, "ema_max": None}, "'ema_min' and 'ema_max' must both be"),
        ({"std": -0.5}, "'std' must not be negative"),
    ],
)
def test_a_hand_edited_file_entry_breaking_an_order_is_refused(edit, key):
    stats = gather([[np.arange(-3.0, 4.0)], [np.arange(5.0)]])
    data = {**stats.to_dict(), **edit}
    with pytest.raises(NpucError, match=re.escape(key)):
        TensorStatistics.from_dict("t", data)
    assert TensorStatistics.from_dict("t", stats.to_dict()).to_dict() == stats.to_dict()
