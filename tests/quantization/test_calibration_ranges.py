"""Range strategies against independent computations on the raw samples."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import onnx
import pytest
from onnx import helper

from npuc.diagnostics import NpucError
from npuc.passes.quantization.ranges import (
    ACTIVATION_STRATEGIES,
    MIN_SPAN,
    WEIGHT_STRATEGIES,
    activation_range,
    weight_range,
)
from npuc.passes.quantization.statistics import TensorStatistics


def gather(batches: list[np.ndarray], bins: int = 2048) -> TensorStatistics:
    stats = TensorStatistics("t", bins=bins)
    for b in batches:
        stats.update(b)
    return stats


def gaussian_with_outliers(seed: int, n: int = 2**18) -> np.ndarray:
    """N(0, 1) with 1% of the values scaled by 8."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    x[rng.random(n) < 0.01] *= 8
    return x.astype(np.float32)


def qdq(x: np.ndarray, lo: float, hi: float, bits: int, symmetric: bool) -> np.ndarray:
    """Reference fake quantization, written out for the tests."""
    if symmetric:
        qmax = 2 ** (bits - 1) - 1
        s = hi / qmax
        return np.clip(np.round(x / s), -qmax, qmax) * s
    s = (hi - lo) / (2**bits - 1)
    z = np.round(-lo / s)
    return (np.clip(np.round(x / s) + z, 0, 2**bits - 1) - z) * s


def mse(x, lo, hi, bits, symmetric) -> float:
    return float(np.mean((qdq(x, lo, hi, bits, symmetric) - x) ** 2))


# --------------------------------------------------------------------- simple strategies

R = np.random.default_rng(5)
BATCHES = [R.standard_normal(1000) * s + m for s, m in ((1, 0), (2, 1), (0.5, -1), (3, 2))]
X = np.concatenate(BATCHES)


def test_extrema():
    stats = gather(BATCHES)
    assert activation_range(stats, "extrema") == (X.min(), X.max())
    t = np.abs(X).max()
    assert activation_range(stats, "extrema", symmetric=True) == (-t, t)


def test_batch_mean_is_mean_of_per_batch_ranges():
    stats = gather(BATCHES)
    lo = np.mean([b.min() for b in BATCHES])
    hi = np.mean([b.max() for b in BATCHES])
    assert activation_range(stats, "batch_mean") == pytest.approx((lo, hi), rel=1e-12)


def test_moving_average_uses_the_ema():
    stats = gather(BATCHES)
    lo, hi = BATCHES[0].min(), BATCHES[0].max()
    for b in BATCHES[1:]:
        lo, hi = 0.9 * lo + 0.1 * b.min(), 0.9 * hi + 0.1 * b.max()
    assert activation_range(stats, "moving_average") == pytest.approx((lo, hi), rel=1e-12)


def test_mean_std_and_its_clamp_to_extrema():
    stats = gather(BATCHES)
    m, s = X.mean(), X.std()
    assert activation_range(stats, "mean_std", num_std=2) == pytest.approx(
        (m - 2 * s, m + 2 * s), rel=1e-9
    )
    lo, hi = activation_range(stats, "mean_std", num_std=50)
    assert (lo, hi) == (X.min(), X.max())
    t = activation_range(stats, "mean_std", num_std=2, symmetric=True)[1]
    assert t == pytest.approx(abs(m) + 2 * s, rel=1e-9)


def order_statistics_around(x: np.ndarray, p: float) -> tuple[float, float]:
    """The order statistics around numpy's percentile position (N - 1) * p / 100, one rank
    either side (our rank p * N / 100 differs from it by less than one)."""
    s = np.sort(x)
    h = (x.size - 1) * p / 100
    return s[max(int(np.floor(h)) - 1, 0)], s[min(int(np.ceil(h)) + 1, x.size - 1)]


@pytest.mark.parametrize("p", [99.99, 99.9, 99.0, 95.0, 90.0, 75.0])
def test_percentile_within_one_bin_of_numpy(p):
    x = np.concatenate([gaussian_with_outliers(1, 20000), np.abs(R.standard_normal(5000)) * 4])
    stats = gather(np.array_split(x, 7))
    width = stats.histogram.width
    lo, hi = activation_range(stats, "percentile", percentile=p)
    t = activation_range(stats, "percentile", percentile=p, symmetric=True)[1]
    for value, data, q in ((lo, x, 100 - p), (hi, x, p), (t, np.abs(x), p)):
        below, above = order_statistics_around(data, q)
        # Always within a bin of the neighbouring order statistics; where those are dense
        # (they share a bin), within a bin of numpy's interpolated percentile.
        assert below - width <= value <= above + width
        if above - below <= width:
            assert value == pytest.approx(np.percentile(data, q), abs=width)
        else:
            assert p >= 99  # sparse tails only at the extreme percentiles


# ------------------------------------------------------------------------------------- kl


def trt_entropy_reference(bins: np.ndarray, levels: int, stride: int = 1) -> int:
    """TensorRT / MXNet entropy calibration written as plain loops: returns the best i.
    Like NVIDIA's pytorch-quantization, bin 0 is capped at bin 1's count (no zero spike);
    candidates start `levels` bins past the first non-empty bin and go every `stride`-th
    bin, the last bin always included."""
    bins = bins.copy()
    bins[0] = min(bins[0], bins[1])
    first = next(j for j in range(len(bins)) if bins[j] > 0)
    best_i, best_kl = len(bins), np.inf
    candidates = list(range(first + levels, len(bins) + 1, stride))
    if candidates[-1] != len(bins):
        candidates.append(len(bins))
    for i in candidates:
        ref = bins[:i].astype(np.float64).copy()
        ref[i - 1] += bins[i:].sum()
        total, filled = [0] * levels, [0] * levels
        for j in range(i):
            total[j * levels // i] += int(bins[j])
            filled[j * levels // i] += int(bins[j] > 0)
        cand = np.zeros(i)
        for j in range(i):
            if bins[j] > 0:
                cand[j] = total[j * levels // i] / filled[j * levels // i]

        def smooth(d):
            zeros = d == 0
            eps1 = 1e-4 * zeros.sum() / (~zeros).sum()
            return d + 1e-4 * zeros - eps1 * (~zeros)

        p, q = smooth(ref), smooth(cand)
        p, q = p / p.sum(), q / q.sum()
        kl = sum(pj * np.log(pj / qj) for pj, qj in zip(p, q, strict=True) if pj > 0)
        if kl < best_kl:
            best_i, best_kl = i, kl
    return best_i


@pytest.mark.parametrize("symmetric", [True, False])
def test_kl_matches_a_loop_implementation_of_tensorrts_algorithm(symmetric):
    rng = np.random.default_rng(3)
    x = np.abs(rng.standard_normal(30000) * np.where(rng.random(30000) < 0.02, 6, 1))
    stats = gather([x], bins=512)
    hist = stats.histogram
    counts, _ = np.histogram(x, hist.edges())
    first = -hist.start  # bin [0, width)
    abs_bins = counts[first:]
    abs_bins = abs_bins[: np.flatnonzero(abs_bins)[-1] + 1]
    levels = 128 if symmetric else 256  # non-negative tensor, asymmetric: unsigned levels
    i = trt_entropy_reference(abs_bins, levels)
    lo, hi = activation_range(stats, "kl", symmetric=symmetric)
    assert hi == pytest.approx(min(i * hist.width, x.max()), rel=1e-12)
    assert lo == (-hi if symmetric else 0.0)


@pytest.mark.parametrize("case", range(24))
def test_kl_prefix_sum_search_picks_the_loop_references_threshold(case):
    """entropy.kl_threshold sums the divergences from prefix sums (a series for the
    smoothing); on histograms with gaps, spikes, sparse tails and empty last bins it must
    pick the bin the plain loops pick."""
    from npuc.passes.quantization.entropy import kl_threshold

    rng = np.random.default_rng(100 + case)
    size, levels = int(rng.integers(200, 420)), int(rng.choice([32, 64, 128]))
    if case % 3 == 0:  # a heavy tail with gaps between its bins
        x = np.abs(rng.standard_normal(20000) * np.where(rng.random(20000) < 0.01, 8, 1))
    elif case % 3 == 1:  # few samples: many empty bins, the last kept bin often empty
        x = rng.exponential(1.0, int(rng.integers(50, 400)))
    else:  # a spike of zeros and a uniform body
        x = np.concatenate([np.zeros(3000), rng.uniform(0, 1, 500)])
    bins = np.histogram(x, size, (0, x.max()))[0].astype(np.int64)
    assert np.count_nonzero(bins[1:]) > 1 and size > levels + 50
    expected = trt_entropy_reference(bins, levels)
    assert kl_threshold(bins, 1.0, levels, 1) == expected


@pytest.mark.parametrize("case", range(6))
def test_kl_caps_the_zero_bin_at_the_next_bins_count(case):
    """A spike of zeros before a density that falls fast over the first bins (an
    exponential, with sparse outliers making the bins wide): bin 1 holds more than twice
    bin 2, so capping bin 0 at either one differs."""
    from npuc.passes.quantization.entropy import kl_threshold

    rng = np.random.default_rng(200 + case)
    x = np.concatenate([np.zeros(5000), rng.exponential(1.0, 8000), rng.uniform(0, 300, 200)])
    levels = int(rng.choice([32, 64]))
    bins = np.histogram(x, 300, (0, x.max()))[0].astype(np.int64)
    assert bins[0] > bins[1] > 2 * bins[2]
    assert kl_threshold(bins, 1.0, levels, 1) == trt_entropy_reference(bins, levels)


@pytest.mark.parametrize("stride", [3, 7, 16])
def test_kl_with_a_stride_still_tries_the_last_bin(stride):
    """With a stride the candidates skip bins but always include the last one: on a
    uniform body with no tail, keeping every bin is the best threshold, and the bin count
    is chosen off the stride's grid."""
    from npuc.passes.quantization.entropy import kl_threshold

    rng = np.random.default_rng(stride)
    levels = 64
    size = levels + 5 * stride + stride // 2 + 1  # not first + levels + k * stride
    x = rng.uniform(0, 1, 40000)
    bins = np.histogram(x, size, (0, 1))[0].astype(np.int64)
    assert (size - levels) % stride  # the last bin is off the grid
    expected = trt_entropy_reference(bins, levels, stride)
    assert expected == size  # the case this test is about: the last bin wins
    assert kl_threshold(bins, 1.0, levels, stride) == expected


@pytest.mark.parametrize("case", range(6))
def test_kl_with_a_stride_picks_the_loop_references_threshold(case):
    from npuc.passes.quantization.entropy import kl_threshold

    rng = np.random.default_rng(200 + case)
    stride, levels = int(rng.integers(2, 9)), 64
    x = np.abs(rng.standard_normal(20000) * np.where(rng.random(20000) < 0.01, 8, 1))
    bins = np.histogram(x, int(rng.integers(200, 420)), (0, x.max()))[0].astype(np.int64)
    expected = trt_entropy_reference(bins, levels, stride)
    assert kl_threshold(bins, 1.0, levels, stride) == expected


def loop_divergence(bins: np.ndarray, levels: int, i: int) -> float:
    """KL(P || Q) of candidate i, as trt_entropy_reference computes it (bin 0 as given)."""
    ref = bins[:i].astype(np.float64).copy()
    ref[i - 1] += bins[i:].sum()
    group = np.arange(i) * levels // i
    total = np.bincount(group, bins[:i], minlength=levels)
    filled = np.bincount(group, bins[:i] > 0, minlength=levels)
    cand = np.where(bins[:i] > 0, total[group] / np.maximum(filled[group], 1), 0.0)

    def smooth(d):
        zeros = d == 0
        return d + 1e-4 * zeros - 1e-4 * zeros.sum() / (~zeros).sum() * (~zeros)

    p, q = smooth(ref), smooth(cand)
    p, q = p / p.sum(), q / q.sum()
    return float(sum(pj * np.log(pj / qj) for pj, qj in zip(p, q, strict=True) if pj > 0))


@pytest.mark.parametrize("case", range(6))
def test_kl_prefix_sum_divergences_equal_the_direct_sums(case):
    """Every candidate's divergence, not only the winner: the smoothing terms (a series
    in the prefix-sum form) move values by less than they move the argmin."""
    from npuc.passes.quantization.entropy import kl_divergences

    rng = np.random.default_rng(200 + case)
    size, levels = 300, int(rng.choice([32, 64, 128]))
    x = [
        np.abs(rng.standard_normal(20000) * np.where(rng.random(20000) < 0.01, 8, 1)),
        rng.exponential(1.0, 120),
        np.concatenate([np.zeros(3000), rng.uniform(0, 1, 200)]),
    ][case % 3]
    bins = np.histogram(x, size, (0, x.max() * 1.2))[0].astype(np.int64)  # empty last bins
    candidates = np.arange(levels + 1, size + 1)
    got = kl_divergences(bins.astype(np.float64), candidates, levels)
    want = [loop_divergence(bins, levels, int(i)) for i in candidates]
    np.testing.assert_allclose(got, want, rtol=1e-11)


@pytest.mark.parametrize(
    ("levels", "top"), [(128, 2048), (181, 2048), (2**15, 2048), (2**15, 2**17), (3, 2**31)]
)
def test_kl_group_bounds_are_the_ceilings_of_g_i_over_levels(levels, top):
    """Group g of candidate i starts at ceil(g * i / levels), in exact integers, whether the
    products fit int32 (the fast path) or not; the table the search slices agrees."""
    from npuc.passes.quantization.entropy import KL_BINS, _group_bounds, _rows

    i = np.unique(np.linspace(levels, top, 40, dtype=np.int64))
    want = [[-(-g * int(k) // levels) for g in range(levels + 1)] for k in i]
    got = _rows(levels, i)
    assert got.dtype == np.int64
    assert got.tolist() == want
    if top <= KL_BINS:
        assert _group_bounds(levels, i).tolist() == want


@pytest.mark.parametrize("shift", [0.0, 1e-9, 1e-4, 3e-3, 0.05, 0.21])
def test_kl_smoothing_series_keeps_every_term_above_the_tolerance(shift):
    """The series (d / c)^k / (k (k - 1)), c >= 1, stops before its first term below the
    tolerance, and keeps every term above it."""
    from npuc.passes.quantization.entropy import SERIES, SERIES_TOLERANCE, _series_terms

    last = _series_terms(shift)
    assert 2 <= last <= SERIES
    assert shift ** (last + 1) / ((last + 1) * last) < SERIES_TOLERANCE
    kept = [shift**k / (k * (k - 1)) for k in range(3, last + 1)]
    assert all(term >= SERIES_TOLERANCE for term in kept)


@pytest.mark.parametrize("k", [3, 4, 7, 12, 20])
def test_kl_smoothing_series_ends_just_before_a_term_below_the_tolerance(k):
    """At shifts on either side of where term k reaches the tolerance, term k is dropped
    or kept; past SERIES terms the series is cut whatever the shift."""
    from npuc.passes.quantization.entropy import SERIES, SERIES_TOLERANCE, _series_terms

    edge = (SERIES_TOLERANCE * k * (k - 1)) ** (1 / k)  # shift**k / (k (k - 1)) == tolerance
    assert _series_terms(edge * (1 - 1e-6)) == k - 1
    assert _series_terms(edge * (1 + 1e-6)) >= k
    assert _series_terms(0.9) == SERIES


def test_kl_on_gaussian_with_outliers_clips_the_tail():
    x = gaussian_with_outliers(1)
    stats = gather(np.array_split(x, 4))
    lo, hi = activation_range(stats, "kl", symmetric=True)
    a = np.abs(x)
    assert lo == -hi
    assert np.percentile(a, 99) < hi < 0.85 * a.max()


def test_kl_never_clips_a_tensor_far_from_zero_below_its_minimum():
    """An SE block's hard-sigmoid gate: every value in [0.1, 0.35]. Thresholds counted from
    zero once clipped it near its minimum, and the gate collapsed."""
    rng = np.random.default_rng(5)
    x = rng.uniform(0.105, 0.347, 20000)
    lo, hi = activation_range(gather(np.array_split(x, 4)), "kl")
    assert lo == 0.0
    assert hi >= np.percentile(x, 99.9)


def test_kl_of_relu_output_ignores_the_spike_of_zeros():
    """Half of a ReLU's outputs are exact zeros; the threshold must follow the positive values
    as it does without the zeros, not collapse to the first candidate."""
    rng = np.random.default_rng(6)
    positive = np.abs(rng.standard_normal(40000))
    with_zeros = np.concatenate((positive, np.zeros(40000)))
    _, alone = activation_range(gather([positive]), "kl")
    _, spiked = activation_range(gather([with_zeros]), "kl")
    assert spiked == pytest.approx(alone, rel=0.05)
    assert spiked > np.percentile(positive, 99)


def test_kl_of_a_lopsided_asymmetric_tensor_keeps_the_short_side():
    """Hard-swish outputs: [-0.375, large]. The short negative side keeps its extremum, the long
    side is clipped with its share of the 256 levels, so less than |x| with 128 levels would."""
    rng = np.random.default_rng(7)
    z = rng.standard_normal(50000) * 2
    x = z * np.clip(z + 3, 0, 6) / 6
    x[rng.random(x.size) < 0.001] *= 4  # rare outliers for the threshold to clip
    stats = gather([x])
    lo, hi = activation_range(stats, "kl")
    assert lo == pytest.approx(x.min())
    _, folded = activation_range(stats, "kl", symmetric=True)
    assert np.percentile(x, 99) < hi <= x.max()
    assert hi > folded


def ort_entropy_threshold(x: np.ndarray, num_bins: int, num_quantized_bins: int, tmp_path):
    from onnxruntime.quantization.calibrate import (
        CalibrationDataReader,
        CalibrationMethod,
        create_calibrator,
    )

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([{"x": x}])

        def get_next(self):
            return next(self.feeds, None)

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "one_node",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, list(x.shape))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    path = tmp_path / f"model_{num_bins}_{num_quantized_bins}.onnx"
    onnx.save(model, path)
    with contextlib.redirect_stdout(io.StringIO()):
        calibrator = create_calibrator(
            path,
            None,
            str(tmp_path / "augmented.onnx"),
            calibrate_method=CalibrationMethod.Entropy,
            extra_options={
                "num_bins": num_bins,
                "num_quantized_bins": num_quantized_bins,
                "symmetric": True,
            },
        )
        calibrator.collect_data(Reader())
        ranges = calibrator.compute_data()
    return float(ranges["x"].range_value[1])


def test_kl_agrees_with_onnxruntime_entropy_calibration(tmp_path):
    """onnxruntime's entropy calibrator windows a signed histogram of `num_bins` bins
    symmetric about zero and quantizes each window into `num_quantized_bins` levels; ours
    works on |x| with 128 levels for int8, so the equivalent settings are 2048 signed bins
    (1024 per side, as our 2048-bin signed histogram of symmetric data) and
    num_quantized_bins=256. Remaining differences: onnxruntime spreads each level's count
    over all bins of the level (TensorRT and ours only over the non-empty ones) and
    truncates Q to integers. The default settings (128/128, i.e. 7 bits) are printed for
    reference only."""
    x = gaussian_with_outliers(1).reshape(1, 1, -1, 64)
    ours = activation_range(gather([x]), "kl", symmetric=True)[1]
    ratios = {}
    for bins, levels in ((2048, 256), (128, 128)):
        ratios[bins, levels] = ours / ort_entropy_threshold(x, bins, levels, tmp_path)
    print("ours / onnxruntime thresholds:", ratios)
    assert 0.9 < ratios[2048, 256] < 1.1


# ------------------------------------------------------------------------------------ mse


@pytest.mark.parametrize("bits", [8, 4])
def test_mse_symmetric_close_to_brute_force_on_samples(bits):
    x = gaussian_with_outliers(2, 50000).astype(np.float64)
    stats = gather(np.array_split(x, 3))
    t = activation_range(stats, "mse", bits=bits, symmetric=True)[1]
    amax = np.abs(x).max()
    grid = np.linspace(amax / 400, amax, 400)
    losses = np.array([mse(x, -g, g, bits, True) for g in grid])
    assert mse(x, -t, t, bits, True) <= 1.05 * losses.min()
    assert t < amax  # the outliers get clipped


def test_mse_asymmetric_close_to_brute_force_on_samples():
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.gamma(2.0, 1.0, 40000) - 0.5, rng.uniform(10, 30, 40)])
    stats = gather(np.array_split(x, 5))
    lo, hi = activation_range(stats, "mse", bits=8)
    his = np.linspace(x.max() / 60, x.max(), 60)
    los = np.linspace(x.min(), 0, 12)
    best = min(mse(x, a, b, 8, False) for a in los for b in his)
    assert mse(x, lo, hi, 8, False) <= 1.1 * best
    assert x.min() <= lo <= 0 < hi < x.max()


# ------------------------------------------------------------------------- invariants


@pytest.mark.parametrize("strategy", ACTIVATION_STRATEGIES)
@pytest.mark.parametrize("symmetric", [False, True])
def test_every_range_contains_zero_and_is_not_empty(strategy, symmetric):
    cases = [
        [np.zeros(100)],
        [np.full(50, 3.0)],
        [np.full(50, -2.0), np.full(10, -1.0)],
        [R.uniform(5, 6, 1000), R.uniform(5, 7, 1000)],
    ]
    for batches in cases:
        lo, hi = activation_range(gather(batches), strategy, symmetric=symmetric)
        assert isinstance(lo, float) and isinstance(hi, float)
        assert lo <= 0 <= hi and hi - lo >= MIN_SPAN
        if symmetric:
            assert lo == -hi
    empty = TensorStatistics("e")
    assert activation_range(empty, strategy, symmetric=symmetric)[1] == MIN_SPAN


def test_unknown_strategy_and_option_are_errors():
    stats = gather(BATCHES)
    with pytest.raises(NpucError, match="unknown range strategy 'minmax'"):
        activation_range(stats, "minmax")
    with pytest.raises(NpucError, match="no option num_std"):
        activation_range(stats, "percentile", num_std=2)
    with pytest.raises(NpucError, match="percentile must be"):
        activation_range(stats, "percentile", percentile=120)
    with pytest.raises(NpucError, match="unknown range strategy 'kl'"):
        weight_range(np.ones(3), "kl")


@pytest.mark.parametrize(
    ("percentile", "valid"), [(50, False), (50.5, True), (100, True), (100.5, False)]
)
def test_the_percentile_option_is_checked_at_its_bounds(percentile, valid):
    """(50, 100]: the median is no outlier bound, all of the data is."""
    stats = gather(BATCHES)
    if valid:
        lo, hi = activation_range(stats, "percentile", percentile=percentile)
        assert lo < hi
    else:
        with pytest.raises(NpucError, match=r"percentile must be in \(50, 100\]"):
            activation_range(stats, "percentile", percentile=percentile)


# -------------------------------------------------------------------------------- weights

W = np.random.default_rng(8).standard_normal((6, 3, 3, 3)) * np.arange(1, 7)[:, None, None, None]
W[2, 0, 0, 0] = 40.0  # an outlier in channel 2


def rows(w: np.ndarray, axis: int) -> np.ndarray:
    return np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)


def test_weight_extrema_per_tensor_and_per_channel():
    lo, hi = weight_range(W, "extrema", symmetric=False)
    assert lo.shape == () and (lo, hi) == (W.min(), W.max())
    lo, hi = weight_range(W, "extrema", axis=0)
    t = np.abs(rows(W, 0)).max(axis=1)
    assert np.array_equal(hi, t) and np.array_equal(lo, -t)
    lo, hi = weight_range(W, "extrema", axis=1, symmetric=False)
    assert np.array_equal(lo, rows(W, 1).min(axis=1)) and lo.dtype == np.float64


def test_weight_percentile_and_mean_std():
    lo, hi = weight_range(W, "percentile", axis=0, percentile=95, symmetric=False)
    assert np.allclose(lo, np.minimum(np.percentile(rows(W, 0), 5, axis=1), 0))
    assert np.allclose(hi, np.percentile(rows(W, 0), 95, axis=1))
    _, t = weight_range(W, "percentile", axis=0, percentile=95)
    assert np.allclose(t, np.percentile(np.abs(rows(W, 0)), 95, axis=1))
    lo, hi = weight_range(W, "mean_std", num_std=1, symmetric=False)
    assert (lo, hi) == pytest.approx((W.mean() - W.std(), W.mean() + W.std()))


@pytest.mark.parametrize("symmetric", [True, False])
def test_weight_mse_beats_extrema_and_matches_a_fine_search(symmetric):
    lo, hi = weight_range(W, "mse", axis=0, bits=4, symmetric=symmetric)
    for c, row in enumerate(rows(W, 0)):
        ours = mse(row, lo[c], hi[c], 4, symmetric)
        vlo, vhi = min(row.min(), 0), max(row.max(), 0)
        if symmetric:
            vhi = max(-vlo, vhi)
            vlo = -vhi
        fine = min(mse(row, r * vlo, r * vhi, 4, symmetric) for r in np.linspace(0.005, 1, 400))
        assert ours <= 1.02 * fine
        assert ours <= mse(row, vlo, vhi, 4, symmetric)
    gaussian = np.random.default_rng(9).standard_normal((2, 20000))
    _, t = weight_range(gaussian, "mse", axis=0, bits=4, symmetric=symmetric)
    assert np.all(t < 0.8 * np.abs(gaussian).max(axis=1))  # 4-bit Gaussians get clipped


def test_weight_range_invariants_and_errors():
    lo, hi = weight_range(np.zeros((3, 4)), "extrema", axis=0, symmetric=False)
    assert np.all(lo == 0) and np.all(hi == MIN_SPAN)
    for strategy in WEIGHT_STRATEGIES:
        lo, hi = weight_range(np.abs(W) + 1, strategy, axis=0, symmetric=False)
        assert np.all(lo == 0) and np.all(hi > 1)
    with pytest.raises(NpucError, match="non-finite"):
        weight_range(np.array([1.0, np.nan]), "extrema")
    with pytest.raises(NpucError, match="axis 4"):
        weight_range(W, "extrema", axis=4)


def _mse_histogram(case: int) -> tuple[np.ndarray, np.ndarray, float, float, int]:
    """A histogram for the asymmetric mse search: a spread with outliers, two values, and
    (cases 8 on) the wide heavy-tailed, lopsided and shifted ones activations have."""
    rng = np.random.default_rng(300 + case)
    bins = int(rng.integers(20, 90))
    if case < 8:
        x = np.concatenate([rng.normal(0, 1, 5000), rng.uniform(-9, 12, 30)])
        x = x if case % 2 else np.repeat([-1.0, 2.0], 50)
    else:
        bins = int(rng.choice([256, 1024, 2048]))
        kind = case % 4
        if kind == 0:  # heavy tails both sides
            x = rng.standard_t(2, 20000) * rng.uniform(0.1, 5)
        elif kind == 1:  # hard-swish-like: a short negative side, a long positive one
            x = rng.normal(0, 3, 20000)
            x = x * np.clip(x + 3, 0, 6) / 6
        elif kind == 2:  # mostly one side, a few values past zero
            x = np.concatenate([rng.exponential(2, 20000), -rng.exponential(0.05, 40)])
        else:  # a shifted Laplacian with sparse outliers
            x = np.concatenate([rng.laplace(1, 0.5, 20000), rng.uniform(-40, 60, 8)])
    counts, edges = np.histogram(x, bins)
    return counts, edges, float(x.min()), float(x.max()), int(rng.choice([4, 8]))


@pytest.mark.parametrize("case", range(24))
def test_mse_asymmetric_search_picks_the_whole_grids_first_least(case, monkeypatch):
    """_mse_range evaluates only the (lo, hi) cells whose clipping error can beat an edge
    cell's loss, a block of rows at a time: it must pick what np.argmin over the whole grid
    picks (the first least in row-major order), with its usual blocks and with blocks of a
    few elements."""
    from npuc.passes.quantization import ranges

    counts, edges, vmin, vmax, bits = _mse_histogram(case)
    c = counts[counts > 0].astype(np.float64)
    lower = edges[:-1][counts > 0]
    width = float(edges[1] - edges[0])
    his = np.unique(np.concatenate((edges[(edges > 0) & (edges < vmax)], [max(vmax, 0.0)])))
    los = np.unique(np.concatenate((edges[(edges < 0) & (edges > vmin)], [min(vmin, 0.0)])))
    above_n, above_e = ranges._tails(c, lower, width, his, above=True)
    below_n, below_e = ranges._tails(c, lower, width, los, above=False)
    step = (his[None, :] - los[:, None]) / (2**bits - 1)
    inside = c.sum() - below_n[:, None] - above_n[None, :]
    loss = below_e[:, None] + above_e[None, :] + inside * step**2 / 12.0
    loss = np.where(step > 0, loss, np.inf)
    a, b = np.unravel_index(int(np.argmin(loss)), loss.shape)
    assert ranges._mse_range(counts, edges, vmin, vmax, bits, False) == (los[a], his[b])
    monkeypatch.setattr(ranges, "MSE_BLOCK", 3)
    assert ranges._mse_range(counts, edges, vmin, vmax, bits, False) == (los[a], his[b])


# ------------------------------------------------- mse: the histogram objective, bin by bin


def uniform_bin_loss(counts, edges, lo: float, hi: float, step: float) -> float:
    """The mse objective the module docstring states, written bin by bin: each bin's values
    spread uniformly over it; the squared distance to the clip bound of the parts beyond
    [lo, hi], plus step^2 / 12 for each value inside."""
    a, b = edges[:-1], edges[1:]
    density = counts / (b - a)
    top = np.clip(a, hi, None), np.clip(b, hi, None)  # the part of each bin above hi
    bottom = np.clip(a, None, lo), np.clip(b, None, lo)  # the part below lo
    clipped = density * (((top[1] - hi) ** 3 - (top[0] - hi) ** 3) / 3)
    clipped += density * (((lo - bottom[0]) ** 3 - (lo - bottom[1]) ** 3) / 3)
    outside = density * ((top[1] - top[0]) + (bottom[1] - bottom[0]))
    inside = counts.sum() - outside.sum()
    return float(clipped.sum() + inside * step**2 / 12.0)


def mse_candidates(edges, vmin: float, vmax: float) -> tuple[list[float], list[float]]:
    """Clip bounds tried: the bin edges inside the data, zero and the extrema; a bound must
    keep zero inside the range."""
    inner = [float(e) for e in edges if vmin < e < vmax]
    his = sorted({e for e in inner if e > 0} | {max(vmax, 0.0)})
    los = sorted({e for e in inner if e < 0} | {min(vmin, 0.0)})
    return los, his


MSE_SIDES = {
    "all negative": lambda rng: np.concatenate([rng.normal(-4, 1, 3000), [-13.0, -11.5]]),
    "all negative, a tail": lambda rng: (
        -np.concatenate([rng.uniform(1.5, 2.5, 3000), rng.exponential(1.0, 300) + 2.5])
    ),
    "all negative, close to zero": lambda rng: -np.abs(rng.normal(0.6, 0.3, 3000)) - 0.05,
    "all positive": lambda rng: np.concatenate([rng.normal(5, 1, 3000), [16.0, 14.0]]),
    "both signs": lambda rng: np.concatenate([rng.normal(0.5, 1, 3000), [-9.0, 12.0]]),
}


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("case", list(MSE_SIDES))
def test_mse_asymmetric_range_is_the_least_of_the_bin_by_bin_objective(case, bits):
    """The chosen range minimises the documented objective over every candidate pair, for
    tensors on one side of zero too, where the other bound can only be zero."""
    x = MSE_SIDES[case](np.random.default_rng(bits))
    stats = gather(np.array_split(x, 3), bins=64)
    lo, hi = activation_range(stats, "mse", bits=bits)
    counts, edges = stats.histogram.counts, stats.histogram.edges()
    los, his = mse_candidates(edges, float(x.min()), float(x.max()))
    assert lo in los and hi in his
    levels = 2**bits - 1
    best = min(uniform_bin_loss(counts, edges, a, b, (b - a) / levels) for a in los for b in his)
    assert uniform_bin_loss(counts, edges, lo, hi, (hi - lo) / levels) <= best * (1 + 1e-9)


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("case", list(MSE_SIDES))
def test_mse_symmetric_range_is_the_least_of_the_bin_by_bin_objective(case, bits):
    x = MSE_SIDES[case](np.random.default_rng(bits))
    stats = gather(np.array_split(x, 3), bins=64)
    lo, t = activation_range(stats, "mse", bits=bits, symmetric=True)
    counts, edges = stats.histogram.counts, stats.histogram.edges()
    amax = float(np.abs(x).max())
    ts = sorted({abs(float(e)) for e in edges if 0 < abs(e) < amax} | {amax})
    assert lo == -t and t in ts
    levels = 2 ** (bits - 1) - 1
    best = min(uniform_bin_loss(counts, edges, -c, c, c / levels) for c in ts)
    assert uniform_bin_loss(counts, edges, -t, t, t / levels) <= best * (1 + 1e-9)
