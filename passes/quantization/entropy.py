"""Entropy (kl) calibration: TensorRT's threshold search on a histogram of |x|."""

from __future__ import annotations

import functools
import math

import numpy as np

KL_BINS = 2048
EPS = 1e-4  # the mass smoothing moves into each empty bin
SERIES = 24  # terms of the smoothing series: (d / c)^k / (k (k - 1)) < 1e-18 for d / c <= 0.21
SERIES_TOLERANCE = 1e-18  # the series stops at the first term below this, relative to c
BLOCK = 128  # candidates whose groups kl_divergences handles at once (64: 6-9 % slower)
_TINY = float(np.finfo(np.float64).tiny)
TIE = 1e-12  # kl values this close (absolute, plus 1e-9 relative) are equal: the first wins


def kl_threshold(counts: np.ndarray, width: float, levels: int, stride: int) -> float:
    """TensorRT's entropy calibration on the |x| histogram `counts` (bins of `width`).

    A histogram of more than KL_BINS bins (data far from zero) first merges groups
    of consecutive bins down to at most KL_BINS. The zero bin is clamped to the
    count of the next (as NVIDIA's pytorch-quantization does): the spike of exact
    zeros after a ReLU would otherwise dominate P and pull the threshold to the
    first candidate. Candidates i run from f + levels (f: the first non-empty bin,
    so data far from zero is never clipped below its minimum) to the last bin,
    every `stride`-th, and the last. For each, P is counts[:i] with every count
    beyond folded into its last bin; Q quantizes counts[:i] into `levels` groups of
    consecutive bins (bin j in group floor(j * levels / i)) and spreads each group's
    total evenly over its non-empty bins. Both are smoothed (empty bins get 1e-4
    counts) and normalised; the threshold is i * width for the i minimising
    KL(P || Q).
    """
    if counts.size > KL_BINS:  # data far from zero: merge bins, as TensorRT has 2048
        factor = -(-counts.size // KL_BINS)
        counts = np.bincount(np.arange(counts.size) // factor, weights=counts).astype(np.int64)
        width *= factor
    size = counts.size
    if size == 0:
        return 0.0
    counts = counts.copy()
    if size > 1:
        counts[0] = min(counts[0], counts[1])
    first = int(np.flatnonzero(counts)[0]) if counts.any() else 0
    if size <= first + levels:
        return size * width
    candidates = np.arange(first + levels, size + 1, stride)
    if candidates[-1] != size:
        candidates = np.append(candidates, size)
    kl = kl_divergences(counts.astype(np.float64), candidates, levels)
    finite = kl[np.isfinite(kl)]
    if finite.size == 0:
        return size * width
    least = finite.min()
    best = int(np.flatnonzero(kl <= least + TIE + 1e-9 * abs(least))[0])
    return int(candidates[best]) * width


def kl_divergences(c: np.ndarray, candidates: np.ndarray, levels: int) -> np.ndarray:
    """KL(P || Q) of each candidate i of `kl_threshold` (inf where Q is empty), from prefix
    sums in O(len(candidates) * levels) instead of O(len(candidates) * len(c)).

    Q is constant over the non-empty bins of a group, so a group's log terms collapse
    into one. Smoothing lowers every non-empty P bin by the same d = EPS * empty /
    non-empty (d <= 0.21, counts >= 1), and the sum of (c - d) log(c - d) over them is
    sum(c log c) - d sum(log c) - d n + sum_k d^k sum(c^(1-k)) / (k (k - 1)). Empty bins
    get EPS in both P and Q and add nothing. Counts must be integers.
    """
    nonzero = c > 0
    safe = np.where(nonzero, c, 1.0)
    logc = np.where(nonzero, np.log(safe), 0.0)

    def prefix(values: np.ndarray) -> np.ndarray:
        return np.concatenate(([0.0], np.cumsum(values)))

    kept_prefix, filled_prefix = prefix(c), prefix(nonzero.astype(np.float64))
    clogc, sum_logc = prefix(c * logc), prefix(logc)
    total = kept_prefix[-1]
    i = candidates.astype(np.int64)
    kept, filled = kept_prefix[i], filled_prefix[i]
    beyond = total - kept  # folded into P's last bin
    empty = i - filled
    dq = EPS * empty / np.maximum(filled, 1.0)
    last = c[i - 1]
    spike = (last == 0) & (beyond > 0)  # the last bin of P holds only what lies beyond
    zp = empty - spike
    dp = EPS * zp / np.maximum(i - zp, 1.0)

    plogp = clogc[i] - dp * sum_logc[i] - dp * filled
    inverse = np.where(nonzero, 1.0 / safe, 0.0)
    power, inverse_power = dp * dp, inverse
    for k in range(2, _series_terms(float(dp.max(initial=0.0))) + 1):
        plogp += power * prefix(inverse_power)[i] / (k * (k - 1))
        power = power * dp
        inverse_power = inverse_power * inverse

    def xlogx(x: np.ndarray) -> np.ndarray:
        return x * np.log(np.where(x > 0, x, 1.0))

    has_last = last > 0
    plogp += np.where(has_last, xlogx(last + beyond - dp) - xlogx(last - dp), 0.0)
    plogp += np.where(spike, xlogx(beyond - dp), 0.0)

    plogq = np.empty(i.size)
    last_logq = np.empty(i.size)
    bounds = _group_bounds(levels, i)
    # Unmasked ufuncs, in place, are faster than `where=` ones: an empty group (no count,
    # no non-empty bin) gets q = 0 / 0, which fmax turns into the smallest normal float, so
    # its log is finite and its weight (0) makes its term 0 (cheaper than masking it). Every
    # other q is at least 1 - 0.21 (integer counts), which fmax leaves as it is.
    with np.errstate(divide="ignore", invalid="ignore"):
        for start in range(0, i.size, BLOCK):  # rows of groups a cache can hold
            rows = slice(start, start + BLOCK)
            at = bounds[rows]
            # Groups as differences of the prefix sums at their bounds, taken along the
            # flattened rows (contiguous, so vectorised); the last column is not a group
            # and stays out of the sums below.
            group_total = _differences(kept_prefix, at)
            group_filled = _differences(filled_prefix, at)
            q = group_total / group_filled
            q -= dq[rows, None]
            np.fmax(q, _TINY, out=q)
            logq = np.log(q, out=q)
            group_filled *= dp[rows, None]
            group_total -= group_filled
            group_total *= logq
            plogq[rows] = group_total[:, :levels].sum(axis=1)
            last_logq[rows] = logq[:, levels - 1]
    plogq += np.where(has_last, beyond * last_logq, 0.0)
    plogq += np.where(spike, (beyond - dp) * math.log(EPS), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = (plogp - plogq) / total + np.log(kept / total)
    return np.where(filled > 0, kl, np.inf)


def _differences(prefix: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Rows of prefix[at[:, g + 1]] - prefix[at[:, g]] in columns 0..levels-1 (`at`
    C-contiguous, one row of levels + 1 bounds per candidate); the last column is not a
    group (it spans two rows; its last element is 0) and callers leave it out."""
    values = np.take(prefix, at, mode="clip")  # in range: "clip" skips take's bounds errors
    out = np.empty_like(values)
    flat, inner = out.reshape(-1), values.reshape(-1)
    np.subtract(inner[1:], inner[:-1], out=flat[:-1])
    flat[-1] = 0.0  # not left uninitialised: the block's arithmetic runs over it too
    return out


def _series_terms(shift: float) -> int:
    """The last k of the smoothing series that matters for shifts d <= `shift` (counts
    >= 1, so d / c <= shift): later terms are below SERIES_TOLERANCE, and SERIES is
    enough for the largest shift smoothing makes (0.21)."""
    k = 2
    while k < SERIES and shift ** (k + 1) / ((k + 1) * k) >= SERIES_TOLERANCE:
        k += 1
    return k


def _group_bounds(levels: int, candidates: np.ndarray) -> np.ndarray:
    """Row r: the first bin of each of the `levels` groups of candidate r, and its end.
    A row depends only on its candidate, so for the levels of a symmetric grid (a power of
    two, the same for every tensor) the rows of every candidate from `levels` to KL_BINS
    (all kl_threshold tries) are computed once and picked. An asymmetric grid's levels are
    one side's share, different from tensor to tensor (60 values for palm_detection's 105
    tensors), so only its candidates' rows are computed."""
    i = np.asarray(candidates, np.int64)
    if levels & (levels - 1) or i.size == 0 or i.min() < levels or i.max() > KL_BINS:
        return _rows(levels, i)
    rows = i - levels
    if (np.diff(rows) == 1).all():  # stride 1: a view of the table
        return _table(levels)[rows[0] : rows[-1] + 1]
    return _table(levels)[rows]


@functools.lru_cache(maxsize=4)
def _table(levels: int) -> np.ndarray:
    table = _rows(levels, np.arange(levels, KL_BINS + 1))
    table.flags.writeable = False
    return table


def _rows(levels: int, i: np.ndarray) -> np.ndarray:
    """Group g of candidate i: bins [bounds_g, bounds_g+1), bounds_g = ceil(g * i / levels);
    in int32 where g * i fits (twice as fast), returned as int64 (take's index type)."""
    wide = levels * int(i.max(initial=0)) + levels >= 2**31
    dtype = np.int64 if wide else np.int32
    bounds = np.multiply(np.arange(levels + 1, dtype=dtype)[None, :], i.astype(dtype)[:, None])
    bounds += levels - 1
    bounds //= levels
    return bounds.astype(np.int64, copy=False)
