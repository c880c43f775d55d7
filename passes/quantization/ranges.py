"""Quantization ranges from calibration statistics (activations) or constant arrays (weights).

Every range returned satisfies lo <= 0 <= hi (a quantized range must hold an
exact zero) and hi - lo >= MIN_SPAN: a tensor with no finite values or only
zeros gets [0, MIN_SPAN] (asymmetric) or [-MIN_SPAN, MIN_SPAN] (symmetric).
Symmetric ranges are (-t, t). Clip ranges found by a search (percentile, kl,
mse, mean_std) never exceed the recorded extrema, so editing `min`/`max` in a
statistics file bounds them too.

Quantization grids assumed by the `mse` search: symmetric b-bit values use the
restricted range +-(2^(b-1) - 1) steps of t / (2^(b-1) - 1); asymmetric ones use
2^b - 1 steps of (hi - lo) / (2^b - 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from npuc.diagnostics import NpucError

from .entropy import kl_threshold

if TYPE_CHECKING:
    from .statistics import Histogram, TensorStatistics

MIN_SPAN = 1e-8
# The kl strategy works on at most this many bins of |x| (TensorRT's histogram size).


# Each strategy's options and their defaults.
_ACTIVATION_OPTIONS: dict[str, dict[str, Any]] = {
    "extrema": {},
    "batch_mean": {},
    "moving_average": {},
    "mean_std": {"num_std": 3.0},
    "percentile": {"percentile": 99.99},
    "kl": {"stride": 1},
    "mse": {},
    "auto": {},
}
# A tensor with no `auto` choice recorded for a grid (statistics saved before any
# choice was made for it, or read back without probe samples) uses this strategy.
AUTO_FALLBACK = "extrema"
_WEIGHT_OPTIONS: dict[str, dict[str, Any]] = {
    "extrema": {},
    "percentile": {"percentile": 99.99},
    "mean_std": {"num_std": 3.0},
    "mse": {"num_candidates": 100},
}


def check_strategy(name: str, weights: bool = False) -> None:
    """NpucError unless `name` is a known activation (or weight) range strategy."""
    _options(name, _WEIGHT_OPTIONS if weights else _ACTIVATION_OPTIONS, {})


def _options(
    strategy: str, table: dict[str, dict[str, Any]], given: dict[str, Any]
) -> dict[str, Any]:
    if strategy not in table:
        raise NpucError(f"unknown range strategy '{strategy}' (expected one of {', '.join(table)})")
    defaults = table[strategy]
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        accepted = ", ".join(defaults) or "none"
        raise NpucError(
            f"strategy '{strategy}' has no option {', '.join(unknown)} (options: {accepted})"
        )
    options = {**defaults, **given}
    if "num_std" in options and not options["num_std"] > 0:
        raise NpucError(f"num_std must be positive, got {options['num_std']}")
    if "percentile" in options and not 50 < options["percentile"] <= 100:
        raise NpucError(f"percentile must be in (50, 100], got {options['percentile']}")
    for key in ("stride", "num_candidates"):
        if key in options and (not isinstance(options[key], int) or options[key] < 1):
            raise NpucError(f"{key} must be a positive integer, got {options[key]}")
    return options


ACTIVATION_STRATEGIES = tuple(_ACTIVATION_OPTIONS)
WEIGHT_STRATEGIES = tuple(_WEIGHT_OPTIONS)


def _check_bits(bits: int) -> None:
    if not isinstance(bits, int) or not 2 <= bits <= 32:
        raise NpucError(f"bits must be an integer in [2, 32], got {bits}")


def _finish(lo: float, hi: float, symmetric: bool) -> tuple[float, float]:
    """The final range: containing zero, symmetric if asked, at least MIN_SPAN wide."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if symmetric:
        t = max(-lo, hi, MIN_SPAN)
        return -t, t
    if hi - lo < MIN_SPAN:
        hi = lo + MIN_SPAN
    return lo, hi


# ---------------------------------------------------------------------------- activations


def activation_range(
    stats: TensorStatistics,
    strategy: str,
    *,
    bits: int = 8,
    symmetric: bool = False,
    **options: Any,
) -> tuple[float, float]:
    """The (lo, hi) range of an activation for `strategy`:

    extrema: (min, max); batch_mean: the mean of per-batch minima and maxima;
    moving_average: (ema_min, ema_max); mean_std: mean -+ num_std * std (default 3);
    percentile: P(100 - p) and P(p) of x, or P(p) of |x| when symmetric (p default
    99.99), from the histogram; kl: TensorRT's entropy calibration (`_kl_threshold`),
    on the histogram of |x| with 2^(bits-1) levels when symmetric, else on the
    histogram of the longer side of zero with that side's share of the 2^bits levels,
    the shorter side keeping its extremum; option `stride` tries every stride-th
    threshold; mse: the clip range minimising expected quantization plus clipping error
    under the histogram; auto: the strategy chosen for this tensor and grid by
    auto_strategy.py, made on first use while the calibration's probe is attached.
    Results are cached on `stats` until it records more values.
    """
    opts = _options(strategy, _ACTIVATION_OPTIONS, options)
    _check_bits(bits)
    if strategy == "auto":
        return activation_range(
            stats, auto_choice(stats, bits, symmetric), bits=bits, symmetric=symmetric
        )
    request = (strategy, bits, symmetric, *sorted(opts.items()))
    if request not in stats.ranges:
        stats.ranges[request] = _activation_range(stats, strategy, bits, symmetric, opts)
    return stats.ranges[request]


def _activation_range(
    stats: TensorStatistics, strategy: str, bits: int, symmetric: bool, opts: dict[str, Any]
) -> tuple[float, float]:
    if stats.count == 0:
        return _finish(0.0, 0.0, symmetric)
    vmin, vmax = stats.min, stats.max
    if strategy == "extrema":
        lo, hi = vmin, vmax
    elif strategy == "batch_mean":
        if not stats.batch_ranges:
            raise NpucError(f"tensor '{stats.name}' has no per-batch ranges recorded")
        lo, hi = np.mean(np.asarray(stats.batch_ranges, np.float64), axis=0)
    elif strategy == "moving_average":
        if stats.ema_min is None or stats.ema_max is None:
            raise NpucError(f"tensor '{stats.name}' has no moving-average range recorded")
        lo, hi = stats.ema_min, stats.ema_max
    elif strategy == "mean_std":
        spread = opts["num_std"] * stats.std
        lo, hi = max(stats.mean - spread, vmin), min(stats.mean + spread, vmax)
        if symmetric:
            t = min(abs(stats.mean) + spread, max(-vmin, vmax))
            lo, hi = -t, t
    else:
        hist = stats.histogram
        if hist.width is None or not hist.counts.any():
            raise NpucError(f"tensor '{stats.name}' has no histogram recorded")
        edges, counts = hist.edges(), hist.counts
        amax = max(-vmin, vmax)
        if strategy == "percentile":
            p = opts["percentile"]
            if symmetric:
                abs_counts, width = hist.abs_counts()
                t = _hist_percentile(abs_counts, width * np.arange(abs_counts.size + 1), p)
                lo, hi = -min(t, amax), min(t, amax)
            else:
                lo = max(_hist_percentile(counts, edges, 100.0 - p), vmin)
                hi = min(_hist_percentile(counts, edges, p), vmax)
        elif strategy == "kl":
            if symmetric:
                abs_counts, width = hist.abs_counts()
                t = kl_threshold(abs_counts, width, 2 ** (bits - 1), opts["stride"])
                lo, hi = -min(t, amax), min(t, amax)
            else:
                lo, hi = _kl_asymmetric(hist, vmin, vmax, bits, opts["stride"])
        else:
            lo, hi = _mse_range(counts, edges, vmin, vmax, bits, symmetric)
    return _finish(lo, hi, symmetric)


def grid_key(bits: int, symmetric: bool) -> str:
    """The key of a quantization grid in `TensorStatistics.auto`: 'a8', 's16', ..."""
    return f"{'s' if symmetric else 'a'}{bits}"


def auto_choice(stats: TensorStatistics, bits: int, symmetric: bool) -> str:
    """The strategy `auto` stands for on this tensor at (bits, symmetric)."""
    key = grid_key(bits, symmetric)
    if key not in stats.auto and stats.probe is not None:
        stats.probe.choose(bits, symmetric)
    return stats.auto.get(key, AUTO_FALLBACK)


def _hist_percentile(counts: np.ndarray, edges: np.ndarray, p: float) -> float:
    """The p-th percentile, interpolating linearly inside the bin that holds it."""
    cumulative = np.concatenate(([0], np.cumsum(counts, dtype=np.float64)))
    rank = p / 100.0 * cumulative[-1]
    j = int(np.searchsorted(cumulative, rank, side="left"))
    j = min(max(j, 1), counts.size)
    inside = counts[j - 1]
    fraction = (rank - cumulative[j - 1]) / inside if inside else 0.0
    return float(edges[j - 1] + fraction * (edges[j] - edges[j - 1]))


def _kl_asymmetric(
    hist: Histogram, vmin: float, vmax: float, bits: int, stride: int
) -> tuple[float, float]:
    """The kl range of an asymmetric tensor: the longer side of zero is clipped at its
    entropy threshold with round(2^bits * long / (long + short)) levels (its share of
    the grid at the extrema), the shorter side keeps its extremum. Folding both sides
    onto |x| instead would clip the long side of a lopsided tensor (hard-swish:
    [-0.375, 6]) to fit levels it does not get."""
    positive = vmax >= -vmin
    long, short = (max(vmax, 0.0), max(-vmin, 0.0)) if positive else (-vmin, max(vmax, 0.0))
    if long <= 0:  # only zeros
        return 0.0, 0.0
    levels = max(2, round(2**bits * long / (long + short)))
    counts, width = hist.side_counts(positive)
    t = min(kl_threshold(counts, width, levels, stride), long)
    return (vmin, t) if positive else (-t, vmax)


def _tails(
    counts: np.ndarray, lower: np.ndarray, width: float, thresholds: np.ndarray, above: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(count, summed squared clipping error) of the values beyond each threshold, with the
    values spread uniformly inside each bin [lower, lower + width) (`lower` ascending).

    A bin wholly beyond t contributes c * (u^2 + u * w + w^2 / 3) (u: the distance from t
    to its near edge), summed for all such bins at once from prefix sums of c, c * u0 and
    c * u0^2 (u0 in bins from the first bin, so the sums stay small and exact enough); the
    bin that t cuts contributes the part beyond t.
    """
    w = float(width)
    c = counts.astype(np.float64)
    j = (lower - lower[0]) / w  # bin positions, in bins
    tau = (thresholds - lower[0]) / w  # thresholds, in bins
    s0, s1, s2 = (np.concatenate(([0.0], np.cumsum(c * j**k))) for k in range(3))
    if above:  # bins with lower >= t are wholly beyond; the bin before may be cut
        k = np.searchsorted(lower, thresholds, side="left")
        n0, n1, n2 = s0[-1] - s0[k], s1[-1] - s1[k], s2[-1] - s2[k]
        # u = (j - tau) * w
        full_e = (n2 - 2 * tau * n1 + tau**2 * n0) + (n1 - tau * n0) + n0 / 3.0
        cut = np.maximum(k - 1, 0)
        part = np.where((k > 0) & (lower[cut] + w > thresholds), lower[cut] + w - thresholds, 0.0)
    else:  # bins with lower + w <= t are wholly beyond; the next may be cut
        k = np.searchsorted(lower + w, thresholds, side="right")
        n0, n1, n2 = s0[k], s1[k], s2[k]
        # u = (tau - j - 1) * w
        a = tau - 1.0
        full_e = (a**2 * n0 - 2 * a * n1 + n2) + (a * n0 - n1) + n0 / 3.0
        cut = np.minimum(k, lower.size - 1)
        part = np.where((k < lower.size) & (lower[cut] < thresholds), thresholds - lower[cut], 0.0)
    part = np.maximum(part, 0.0)
    count = n0 + part * c[cut] / w
    error = full_e * w * w + part**3 / 3.0 * c[cut] / w
    return count, error


MSE_BLOCK = 1 << 14  # grid elements _mse_range evaluates at once


def _mse_range(
    counts: np.ndarray, edges: np.ndarray, vmin: float, vmax: float, bits: int, symmetric: bool
) -> tuple[float, float]:
    """The clip range minimising clipping error + (values inside) * step^2 / 12, over
    thresholds at every nonzero bin edge inside the data and the extrema (zero where a
    side holds no data)."""
    width = float(edges[1] - edges[0])
    nonzero = counts > 0
    c, lower = counts[nonzero].astype(np.float64), edges[:-1][nonzero]
    total = c.sum()
    if symmetric:
        amax = max(-vmin, vmax)
        t = np.unique(np.append(np.abs(edges[(np.abs(edges) < amax) & (edges != 0)]), amax))
        above_n, above_e = _tails(c, lower, width, t, above=True)
        below_n, below_e = _tails(c, lower, width, -t, above=False)
        step = t / (2 ** (bits - 1) - 1)
        loss = above_e + below_e + (total - above_n - below_n) * step**2 / 12.0
        best = float(t[int(np.argmin(loss))])
        return -best, best
    his = np.unique(np.concatenate((edges[(edges > 0) & (edges < vmax)], [max(vmax, 0.0)])))
    los = np.unique(np.concatenate((edges[(edges < 0) & (edges > vmin)], [min(vmin, 0.0)])))
    above_n, above_e = _tails(c, lower, width, his, above=True)
    below_n, below_e = _tails(c, lower, width, los, above=False)
    levels = 2**bits - 1

    def losses(rows: Any, cols: Any) -> np.ndarray:
        """below_e + above_e + inside * step**2 / 12 on the (lo, hi) cells rows x cols, in
        place (the same arithmetic with fewer passes). step > 0 but where his = lo = 0,
        which only data that is all zero has, in a grid of that one cell."""
        step = np.subtract(his[None, cols], los[rows, None])
        step /= levels
        np.square(step, out=step)
        inside = (total - below_n[rows])[:, None] - above_n[None, cols]
        inside *= step
        inside /= 12.0
        loss = below_e[rows, None] + above_e[None, cols]
        loss += inside
        return loss

    rows, cols = np.arange(los.size), np.arange(his.size)
    tails = (above_n, above_e, below_n, below_e)
    if all(np.isfinite(t).all() for t in tails):
        # Only cells whose clipping error alone stays within the loss of an edge cell (no
        # clipping below, or none above) can be least: the rest (most of the grid) are
        # left out. The margin covers rounding, and an inside count a few ulps below
        # zero, so every cell left out is strictly worse and the first least is the
        # whole grid's.
        bound = min(losses(rows[:1], cols).min(), losses(rows, cols[-1:]).min())
        bound += 1e-9 * (abs(bound) + total * ((his[-1] - los[0]) / levels) ** 2)
        rows = rows[below_e + above_e.min() <= bound]
        cols = cols[above_e + below_e.min() <= bound]
    # the (lo, hi) cells a block of rows at a time (cache-sized), in the grid's row-major
    # order: the first least wins
    best, a, b = np.inf, 0, 0
    per_block = max(1, MSE_BLOCK // max(cols.size, 1))
    for start in range(0, rows.size, per_block):
        block = rows[start : start + per_block]
        loss = losses(block, cols)
        k = int(np.argmin(loss))
        if loss.flat[k] < best or np.isnan(loss.flat[k]):
            best, a, b = loss.flat[k], int(block[k // cols.size]), int(cols[k % cols.size])
            if np.isnan(best):
                break  # argmin's answer over the whole grid: its first nan
    return float(los[a]), float(his[b])


# -------------------------------------------------------------------------------- weights


def weight_range(
    array: np.ndarray,
    strategy: str,
    *,
    axis: int | None = None,
    bits: int = 8,
    symmetric: bool = True,
    **options: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-tensor (axis None: 0-d arrays) or per-channel (along `axis`) ranges of a weight.

    extrema: min/max; percentile: P(100 - p)/P(p) of x or P(p) of |x| when symmetric
    (numpy's linear interpolation, p default 99.99); mean_std: mean -+ num_std * std
    clamped to the extrema; mse: for clip ratios r = k / num_candidates
    (k = 1..num_candidates, default 100) of the extrema, the ratio whose quantized
    weights (round to nearest, saturate, integer zero point when asymmetric) have
    the least squared error, per channel.
    """
    opts = _options(strategy, _WEIGHT_OPTIONS, options)
    _check_bits(bits)
    w = np.asarray(array, dtype=np.float64)
    if not np.isfinite(w).all():
        raise NpucError("cannot compute the range of a weight with non-finite values")
    if axis is None:
        rows = w.reshape(1, -1)
    else:
        if not -w.ndim <= axis < w.ndim:
            raise NpucError(f"axis {axis} is out of range for a weight of rank {w.ndim}")
        rows = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
    if rows.shape[1] == 0:
        rows = np.zeros((rows.shape[0], 1))
    vmin, vmax = rows.min(axis=1), rows.max(axis=1)
    if strategy == "extrema":
        lo, hi = vmin, vmax
    elif strategy == "percentile":
        p = opts["percentile"]
        if symmetric:
            hi = np.percentile(np.abs(rows), p, axis=1)
            lo = -hi
        else:
            lo, hi = np.percentile(rows, [100.0 - p, p], axis=1)
    elif strategy == "mean_std":
        mean, spread = rows.mean(axis=1), opts["num_std"] * rows.std(axis=1)
        lo, hi = np.maximum(mean - spread, vmin), np.minimum(mean + spread, vmax)
        if symmetric:
            hi = np.minimum(np.abs(mean) + spread, np.maximum(-vmin, vmax))
            lo = -hi
    else:
        lo, hi = _weight_mse(rows, vmin, vmax, bits, symmetric, opts["num_candidates"])
    lo, hi = np.minimum(lo, 0.0), np.maximum(hi, 0.0)
    if symmetric:
        hi = np.maximum(np.maximum(-lo, hi), MIN_SPAN)
        lo = -hi
    else:
        hi = np.where(hi - lo < MIN_SPAN, lo + MIN_SPAN, hi)
    if axis is None:
        return np.asarray(lo[0], np.float64), np.asarray(hi[0], np.float64)
    return lo.astype(np.float64), hi.astype(np.float64)


Steps = np.ndarray | np.float64  # one value, or one per row of a weight


def fake_quantize_grid(
    x: np.ndarray, lo: np.ndarray, hi: np.ndarray, bits: int, symmetric: bool
) -> np.ndarray:
    """x quantized to `bits` in [lo, hi] and dequantized (lo, hi broadcast against x); the
    grids are those of the module docstring, with an integer zero point when asymmetric."""
    scale, low, high = grid_steps(lo, hi, bits, symmetric)
    q = np.divide(x, scale, out=np.empty(np.broadcast_shapes(np.shape(x), np.shape(scale))))
    np.rint(q, out=q)
    np.clip(q, low, high, out=q)
    q *= scale
    return q


def grid_steps(
    lo: np.ndarray | np.float64, hi: np.ndarray | np.float64, bits: int, symmetric: bool
) -> tuple[Steps, Steps, Steps]:
    """The grid of [lo, hi] as (scale, low, high): x is quantized to
    clip(rint(x / scale), low, high) * scale, low and high being the clip of q + zero to
    the integer range, shifted by the zero point (float64, broadcast like lo and hi)."""
    lo, hi = np.minimum(lo, 0.0), np.maximum(hi, 0.0)
    if symmetric:
        qmax = 2 ** (bits - 1) - 1
        scale = np.maximum(np.maximum(-lo, hi), MIN_SPAN) / qmax
        return scale, np.float64(-qmax), np.float64(qmax)
    levels = 2**bits - 1
    scale = np.maximum(hi - lo, MIN_SPAN) / levels
    zero = np.rint(-lo / scale)
    return scale, -zero, levels - zero


def _weight_mse(
    rows: np.ndarray, vmin: np.ndarray, vmax: np.ndarray, bits: int, symmetric: bool, n: int
) -> tuple[np.ndarray, np.ndarray]:
    lo0, hi0 = np.minimum(vmin, 0.0), np.maximum(vmax, 0.0)
    if symmetric:
        hi0 = np.maximum(-lo0, hi0)
        lo0 = -hi0
    best = np.full(rows.shape[0], np.inf)
    best_ratio = np.ones(rows.shape[0])
    for k in range(1, n + 1):
        r = k / n
        error = np.square(
            fake_quantize_grid(rows, r * lo0[:, None], r * hi0[:, None], bits, symmetric) - rows
        ).mean(axis=1)
        better = error < best
        best = np.where(better, error, best)
        best_ratio = np.where(better, r, best_ratio)
    return best_ratio * lo0, best_ratio * hi0
