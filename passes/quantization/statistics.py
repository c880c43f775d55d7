"""Per-tensor statistics over a calibration data set, and the JSON file that stores them.

`collect_statistics` runs the float `nn` graph with the reference interpreter on
every batch and records, for every graph input, every op result and every graph
output, a `TensorStatistics`: value count, extrema, moving-average extrema, mean,
standard deviation, per-batch ranges and a histogram. Range strategies
(`ranges.py`) turn these into quantization ranges. The file format is
described in docs/calibration.md.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from npuc.blockwise import BLOCK, float64_blocks
from npuc.diagnostics import NpucError
from npuc.graph_io import entry_function, input_names, output_names
from npuc.progress import progress as progress_bar
from npuc.runtime.nn_interpreter import FunctionRunner

from .auto_strategy import CANDIDATES, HOLDOUT_BATCHES, PROBE_CALLS, Selection, StrategyProbe
from .datasets import InputSpec, model_inputs
from .float_runs import FloatRun, FloatRuns
from .state import StateCarrier

BINS = 2048
MOMENTUM = 0.9
FILE_VERSION = 1
# Bin indices stay below 2**52 so that float64 arithmetic on them is exact.
_MAX_INDEX = 2**52
_MIN_WIDTH = float(np.finfo(np.float64).tiny)  # a subnormal width loses x / width


@dataclass(frozen=True)
class OutlierPolicy:
    """Values dropped before statistics, in addition to non-finite values (always dropped).

    `num_std`: drop values farther than `num_std` standard deviations from the mean.
    `percentile`: keep only values within [P(100 - percentile), P(percentile)].
    Both are computed on each recorded array (one tensor of one model run) and
    may be combined (percentile first). Dropped values are counted in `outliers`.
    """

    num_std: float | None = None
    percentile: float | None = None

    def __post_init__(self) -> None:
        if self.num_std is not None and not self.num_std > 0:
            raise NpucError(f"outlier num_std must be positive, got {self.num_std}")
        if self.percentile is not None and not 50 < self.percentile <= 100:
            raise NpucError(f"outlier percentile must be in (50, 100], got {self.percentile}")

    def keep(self, x: np.ndarray) -> np.ndarray:
        """The values of the finite float64 vector `x` that are not outliers."""
        if self.percentile is not None and x.size:
            lo, hi = np.percentile(x, [100.0 - self.percentile, self.percentile])
            x = x[(x >= lo) & (x <= hi)]
        if self.num_std is not None and x.size:
            mean, std = x.mean(), x.std()
            x = x[np.abs(x - mean) <= self.num_std * std]
        return x


class Histogram:
    """Counts of values in `bins` equal bins whose edges are multiples of `width`.

    Bin j covers [(start + j) * width, (start + j + 1) * width), so zero is always
    a bin edge and the bins fold exactly onto a histogram of |x|.

    Growth rule: the first batch sets width = (max - min) / (bins - 2), so its
    values span at most `bins` bins. When the bins occupied by the recorded values
    and a new batch together span more than `bins` bins, or an absolute index k
    leaves -2^52 < k < 2^52 - 1 (x / width exact in float64), the width is multiplied
    by the smallest power of two 2^d that makes them fit; each old bin k (absolute
    index, k * width its lower edge) merges into bin floor(k / 2^d), which is
    exact (every old bin lies inside one new bin), so counts are preserved. The
    window of `bins` bins is then re-centred on the occupied bins. float64 data the
    float32 tensors of a model never hold (spans below the smallest normal float64,
    values whose x / width overflows) coarsen the same way, by as many doublings as
    bring x / width below 2^52.
    """

    def __init__(self, bins: int = BINS):
        if bins < 8 or bins % 2:
            raise NpucError(f"the histogram needs an even number of bins >= 8, got {bins}")
        self.bins = bins
        self.width: float | None = None
        self.start = 0
        self.counts = np.zeros(bins, np.int64)
        self.aligned = True

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    @property
    def range(self) -> tuple[float, float] | None:
        if self.width is None:
            return None
        return self.start * self.width, (self.start + self.bins) * self.width

    def edges(self) -> np.ndarray:
        assert self.width is not None
        with np.errstate(over="ignore"):  # edges past the float64 maximum are infinite
            return (self.start + np.arange(self.bins + 1, dtype=np.float64)) * self.width

    @classmethod
    def from_range(cls, lo: float, hi: float, counts: Sequence[int]) -> Histogram:
        """A histogram read back from (range, counts); see `aligned`."""
        hist = cls.__new__(cls)
        hist.bins = len(counts)
        hist.counts = np.asarray(counts, np.int64)
        hist.width = (hi - lo) / hist.bins
        start = lo / hist.width
        hist.start = round(start)
        # A hand-made range whose lower edge is not a multiple of the width still
        # serves range strategies, but cannot take more batches.
        hist.aligned = abs(start - hist.start) <= 1e-6 * max(1.0, abs(start))
        return hist

    def add(self, x: np.ndarray, extrema: tuple[float, float] | None = None) -> None:
        """Add the finite float64 vector `x` (`extrema`: its min and max, if known)."""
        if x.size == 0:
            return
        self.fit(*(extrema if extrema is not None else (float(x.min()), float(x.max()))))
        self.count(x)

    def fit(self, vmin: float, vmax: float) -> None:
        """Widen or move the bins (the growth rule) so that they hold [vmin, vmax] too."""
        if not self.aligned:
            raise NpucError("cannot add values to a histogram whose range is not zero-aligned")
        if self.width is None:
            self.width = self._first_width(vmin, vmax)
        nonzero = np.flatnonzero(self.counts)
        while True:
            low, high = vmin / self.width, vmax / self.width
            if not (math.isfinite(low) and math.isfinite(high)):  # float64 data far out
                excess = math.log2(max(-vmin, vmax)) - math.log2(self.width) - 51
                self._coarsen(max(1, math.ceil(excess)))
                nonzero = np.flatnonzero(self.counts)
                continue
            lo, hi = math.floor(low), math.floor(high)
            if nonzero.size:
                lo = min(lo, self.start + int(nonzero[0]))
                hi = max(hi, self.start + int(nonzero[-1]))
            span = hi - lo + 1
            if span <= self.bins and max(-lo, hi + 1) < _MAX_INDEX:
                break
            doublings = max(1, math.ceil(math.log2(span / self.bins)))
            if max(-lo, hi + 1) >= _MAX_INDEX:
                doublings = max(doublings, math.ceil(math.log2(max(-lo, hi + 1) / _MAX_INDEX)))
            self._coarsen(doublings)
            nonzero = np.flatnonzero(self.counts)
        if not (self.start <= lo and hi < self.start + self.bins):
            self._move(lo - (self.bins - span) // 2)

    def count(self, x: np.ndarray) -> None:
        """Count the finite float64 vector `x`, whose extrema `fit` was given."""
        assert self.width is not None
        # No clip: x / width rounds monotonically, so every value's bin lies between the
        # extrema's, which the window holds.
        index = np.divide(x, self.width)
        np.floor(index, out=index)
        index -= self.start
        self.counts += np.bincount(index.astype(np.int64), minlength=self.bins)

    def _first_width(self, vmin: float, vmax: float) -> float:
        """(vmax - vmin) / (bins - 2), or for one value |v| / (bins - 2) (1 for zero); for
        float64 data, without overflowing and at least the smallest normal float64."""
        span = vmax - vmin
        width = (span if span > 0 else (abs(vmax) or 1.0)) / (self.bins - 2)
        if math.isinf(width):
            width = vmax / (self.bins - 2) - vmin / (self.bins - 2)
        return max(width, _MIN_WIDTH)

    def _coarsen(self, doublings: int) -> None:
        """Merge bins 2^doublings at a time (bin k -> floor(k / 2^doublings))."""
        shift = min(doublings, 63)
        absolute = self.start + np.arange(self.bins, dtype=np.int64)
        new_start = self.start >> shift
        merged = (absolute >> shift) - new_start
        self.counts = np.bincount(merged, weights=self.counts, minlength=self.bins).astype(
            np.int64
        )[: self.bins]
        self.start = new_start
        assert self.width is not None
        self.width = math.ldexp(self.width, doublings)  # exact, no 2^d overflow

    def _move(self, start: int) -> None:
        """Re-place the window to begin at absolute bin `start` (occupied bins stay inside)."""
        counts = np.zeros(self.bins, np.int64)
        nonzero = np.flatnonzero(self.counts)
        counts[nonzero + self.start - start] = self.counts[nonzero]
        self.counts, self.start = counts, start

    def side_counts(self, positive: bool) -> tuple[np.ndarray, float]:
        """The histogram of x >= 0 (or of -x for x < 0): counts of bins
        [j * width, (j + 1) * width) up to the last non-empty bin, and the width."""
        if self.width is None or not self.counts.any():
            return np.zeros(0, np.int64), self.width or 0.0
        absolute = self.start + np.arange(self.bins, dtype=np.int64)
        keep = (absolute >= 0 if positive else absolute < 0) & (self.counts > 0)
        if not keep.any():
            return np.zeros(0, np.int64), self.width
        index = absolute[keep] if positive else -absolute[keep] - 1
        return np.bincount(index, weights=self.counts[keep]).astype(np.int64), self.width

    def abs_counts(self) -> tuple[np.ndarray, float]:
        """The histogram of |x|: counts of bins [j * width, (j + 1) * width), up to the last
        non-empty bin, and the width."""
        if self.width is None or not self.counts.any():
            return np.zeros(0, np.int64), self.width or 0.0
        absolute = self.start + np.arange(self.bins, dtype=np.int64)
        folded = np.where(absolute >= 0, absolute, -absolute - 1)
        nonzero = self.counts > 0
        counts = np.bincount(folded[nonzero], weights=self.counts[nonzero]).astype(np.int64)
        return counts, self.width


class TensorStatistics:
    """Running statistics of one tensor over calibration batches.

    count: finite values recorded (after outlier removal); min, max: global extrema;
    ema_min, ema_max: moving averages of the per-batch extrema,
    `m = momentum * m + (1 - momentum) * batch_value`, started at the first batch;
    mean, std: over all recorded values (population std, merged per array with
    Chan's parallel update); batch_ranges: (min, max) of each batch; histogram: a
    signed `Histogram`; nonfinite, outliers: values dropped; auto: the strategy the
    `auto` strategy chose per grid ('a8': 8-bit asymmetric, 's16', ...), made on first
    use by `probe` (auto_strategy.py, attached by `collect_statistics`).

    Values arrive through `add` (any number of arrays per batch) and `end_batch`;
    `update` does both for a batch held in one array.
    """

    def __init__(self, name: str = "", *, bins: int = BINS, momentum: float = MOMENTUM):
        if not 0 <= momentum < 1:
            raise NpucError(f"momentum must be in [0, 1), got {momentum}")
        self.name = name
        self.momentum = momentum
        self.count = 0
        self.min = math.inf
        self.max = -math.inf
        self.ema_min: float | None = None
        self.ema_max: float | None = None
        self.mean = 0.0
        self._m2 = 0.0
        self.batch_ranges: list[tuple[float, float]] = []
        self.histogram = Histogram(bins)
        self.nonfinite = 0
        self.outliers = 0
        self.auto: dict[str, str] = {}
        self.probe: StrategyProbe | None = None
        self.ranges: dict[
            tuple[Any, ...], tuple[float, float]
        ] = {}  # activation_range's, by request
        self._batch: tuple[float, float] | None = None

    @property
    def std(self) -> float:
        return math.sqrt(self._m2 / self.count) if self.count else 0.0

    def __repr__(self) -> str:
        return (
            f"TensorStatistics({self.name!r}, count={self.count}, min={self.min:.6g}, "
            f"max={self.max:.6g}, mean={self.mean:.6g}, std={self.std:.6g})"
        )

    def add(self, values: np.ndarray, outlier_policy: OutlierPolicy | None = None) -> None:
        """Record one array of the current batch."""
        self.ranges.clear()
        values = np.asarray(values)
        if values.size > BLOCK and outlier_policy is None and self._add_blocks(values):
            return
        x = values.astype(np.float64, copy=False).ravel()
        with np.errstate(invalid="ignore", over="ignore"):  # non-finite sums are handled
            x_sum = x.sum()  # finite only if every value is (or, rarely, they overflow)
        if not np.isfinite(x_sum):
            finite = np.isfinite(x)
            if not finite.all():
                self.nonfinite += int(x.size - np.count_nonzero(finite))
                x = x[finite]
            x_sum = x.sum()
        if outlier_policy is not None:
            kept = outlier_policy.keep(x)
            self.outliers += x.size - kept.size
            x = kept
            x_sum = x.sum()
        if x.size == 0:
            return
        n = x.size
        mean = float(x_sum / n)  # what x.mean() computes
        deviation = np.subtract(x, mean)
        deviation *= deviation
        m2 = float(deviation.sum())
        del deviation
        extrema = float(x.min()), float(x.max())
        self._record(n, mean, m2, *extrema)
        self.histogram.add(x, extrema)

    def _add_blocks(self, values: np.ndarray) -> bool:
        """`add` for a large array of finite values, a block at a time (npuc/blockwise.py);
        False, recording nothing, if some value is not finite."""
        total, lo, hi = 0.0, math.inf, -math.inf
        with np.errstate(invalid="ignore", over="ignore"):
            for x in float64_blocks(values):
                total += float(x.sum())
                lo, hi = min(lo, float(x.min())), max(hi, float(x.max()))
        if not math.isfinite(total):
            return False
        n = values.size
        mean = total / n
        m2 = 0.0
        for x in float64_blocks(values):
            x -= mean
            m2 += float(x @ x)
        self._record(n, mean, m2, lo, hi)
        self.histogram.fit(lo, hi)
        for x in float64_blocks(values):
            self.histogram.count(x)
        return True

    def _record(self, n: int, mean: float, m2: float, lo: float, hi: float) -> None:
        """Merge the count, mean, summed squared deviation and extrema of n new values."""
        total = self.count + n
        delta = mean - self.mean
        self.mean += delta * n / total
        self._m2 += m2 + delta * delta * self.count * n / total
        self.count = total
        self.min, self.max = min(self.min, lo), max(self.max, hi)
        if self._batch is not None:
            lo, hi = min(lo, self._batch[0]), max(hi, self._batch[1])
        self._batch = (lo, hi)

    def end_batch(self) -> None:
        """Close the current batch: record its range and update the moving averages."""
        if self._batch is None:
            return
        lo, hi = self._batch
        self._batch = None
        self.batch_ranges.append((lo, hi))
        if self.ema_min is None or self.ema_max is None:
            self.ema_min, self.ema_max = lo, hi
        else:
            m = self.momentum
            self.ema_min = m * self.ema_min + (1 - m) * lo
            self.ema_max = m * self.ema_max + (1 - m) * hi

    def update(self, values: np.ndarray, outlier_policy: OutlierPolicy | None = None) -> None:
        """Record a whole batch held in one array."""
        self.add(values, outlier_policy)
        self.end_batch()

    # ------------------------------------------------------------------ file form

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this tensor (see docs/calibration.md)."""
        empty = self.count == 0
        hist_range = self.histogram.range
        return {
            "count": self.count,
            "min": None if empty else self.min,
            "max": None if empty else self.max,
            "ema_min": self.ema_min,
            "ema_max": self.ema_max,
            "mean": None if empty else self.mean,
            "std": None if empty else self.std,
            "batch_ranges": [[lo, hi] for lo, hi in self.batch_ranges],
            "histogram": None
            if hist_range is None
            else {"range": list(hist_range), "counts": self.histogram.counts.tolist()},
            "nonfinite": self.nonfinite,
            "outliers": self.outliers,
            "auto": dict(sorted(self.auto.items())),
        }

    @classmethod
    def from_dict(
        cls, name: str, data: Any, location: str | None = None, *, momentum: float = MOMENTUM
    ) -> TensorStatistics:
        """Statistics read back from `to_dict`'s form, validated (NpucError naming the key)."""
        check = _Checker(name, location)
        if not isinstance(data, dict):
            check.fail("", "must be an object")
        known = {
            "count",
            "min",
            "max",
            "ema_min",
            "ema_max",
            "mean",
            "std",
            "batch_ranges",
            "histogram",
            "nonfinite",
            "outliers",
            "auto",
        }
        unknown = sorted(set(data) - known)
        if unknown:
            check.fail(unknown[0], "is not a statistics key")
        stats = cls(name, momentum=momentum)
        stats.count = check.count(data, "count")
        stats.nonfinite = check.count(data, "nonfinite", optional=True)
        stats.outliers = check.count(data, "outliers", optional=True)
        empty = stats.count == 0
        lo, hi, mean, std = (check.number(data, k, empty) for k in ("min", "max", "mean", "std"))
        if not empty:
            assert lo is not None and hi is not None and mean is not None and std is not None
            if lo > hi:
                check.fail("min", f"({lo}) is greater than 'max' ({hi})")
            if std < 0:
                check.fail("std", "must not be negative")
            stats.min, stats.max, stats.mean = lo, hi, mean
            stats._m2 = std * std * stats.count
        ema_lo, ema_hi = check.number(data, "ema_min", True), check.number(data, "ema_max", True)
        if (ema_lo is None) != (ema_hi is None):
            check.fail("ema_min", "and 'ema_max' must both be numbers or both be null")
        if ema_lo is not None and ema_hi is not None and ema_lo > ema_hi:
            check.fail("ema_min", f"({ema_lo}) is greater than 'ema_max' ({ema_hi})")
        stats.ema_min, stats.ema_max = ema_lo, ema_hi
        stats.batch_ranges = check.ranges(data.get("batch_ranges", []))
        hist = data.get("histogram")
        if hist is not None:
            stats.histogram = check.histogram(hist)
        stats.auto = check.auto(data.get("auto", {}))
        return stats


class _Checker:
    """Validation of one tensor's JSON object, failing with the tensor and key named."""

    def __init__(self, name: str, location: str | None):
        self.name, self.location = name, location

    def fail(self, key: str, problem: str) -> NoReturn:
        what = f"'{key}' " if key else ""
        raise NpucError(f"statistics of tensor '{self.name}': {what}{problem}", self.location)

    def value(self, key: str, value: Any, optional: bool = False) -> float | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(key, "must be a number" + (" or null" if optional else ""))
        try:
            return float(value)
        except OverflowError:  # an integer beyond the float range
            self.fail(key, "is out of the range of a float")

    def number(self, data: dict[str, Any], key: str, optional: bool = False) -> float | None:
        return self.value(key, data.get(key), optional)

    def count(self, data: dict[str, Any], key: str, optional: bool = False) -> int:
        value = data.get(key, 0 if optional else None)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
            self.fail(key, "must be a non-negative integer (below 2**63)")
        return value

    def ranges(self, value: Any) -> list[tuple[float, float]]:
        if not isinstance(value, list):
            self.fail("batch_ranges", "must be a list of [min, max] pairs")
        pairs = []
        for i, pair in enumerate(value):
            if not (isinstance(pair, list) and len(pair) == 2):
                self.fail("batch_ranges", f"entry {i} must be a [min, max] pair")
            lo, hi = (self.value(f"batch_ranges[{i}]", v) for v in pair)
            assert lo is not None and hi is not None
            if lo > hi:
                self.fail("batch_ranges", f"entry {i} has min {lo} greater than max {hi}")
            pairs.append((lo, hi))
        return pairs

    def auto(self, value: Any) -> dict[str, str]:
        if not isinstance(value, dict):
            self.fail("auto", "must be an object mapping grids ('a8', 's16') to strategies")
        for grid, strategy in value.items():
            if not re.fullmatch(r"[as](?:[2-9]|[12][0-9]|3[0-2])", grid):
                self.fail("auto", f"has grid '{grid}' (expected 'a' or 's' and 2 to 32 bits)")
            if strategy not in CANDIDATES:
                self.fail("auto", f"'{grid}' is '{strategy}' (expected {', '.join(CANDIDATES)})")
        return dict(value)

    def histogram(self, value: Any) -> Histogram:
        if not isinstance(value, dict) or set(value) != {"range", "counts"}:
            self.fail("histogram", "must be an object with exactly 'range' and 'counts'")
        bounds, counts = value["range"], value["counts"]
        if not (isinstance(bounds, list) and len(bounds) == 2):
            self.fail("histogram", "'range' must be a [low, high] pair")
        lo, hi = (self.value("histogram.range", v) for v in bounds)
        assert lo is not None and hi is not None
        if not lo < hi:
            self.fail("histogram", f"range [{lo}, {hi}] is empty")
        if not isinstance(counts, list) or len(counts) < 2:
            self.fail("histogram", "'counts' must be a list of at least 2 counts")
        if not all(
            isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 2**63 for c in counts
        ):
            self.fail("histogram", "'counts' must hold non-negative integers (below 2**63)")
        return Histogram.from_range(lo, hi, counts)


# ------------------------------------------------------------------------- collection


def collect_statistics(
    module: ModuleOp,
    batches: Iterable[Mapping[str, np.ndarray]],
    *,
    bins: int = BINS,
    momentum: float = MOMENTUM,
    outlier_policy: OutlierPolicy | None = None,
    progress: bool = True,
    probe_calls: int = PROBE_CALLS,
    holdout: int = HOLDOUT_BATCHES,
    float_runs: FloatRuns | None = None,
) -> dict[str, TensorStatistics]:
    """Run the float graph on every batch and record statistics of every tensor.

    Each batch maps input names to arrays shaped like the inputs except for the
    first dimension, which may be any multiple k of the model's batch dimension:
    the batch is run as k model calls and counts as one batch for the per-batch
    statistics (datasets.py makes such batches). Keys: input names, the
    interpreter's intermediate keys (op `name`, `name:i`, `%N`) and output names
    (an output shares the statistics object of the tensor it returns). The first
    `probe_calls` model calls are kept for the `auto` strategy's probe; every fourth
    batch from the eighth on, up to `holdout` of them (none for a stateful model), is
    also kept with statistics of the other batches, for auto's whole-model selection
    (auto_strategy.py). `float_runs`, if given, keeps the runs (float_runs.py): the
    probe replays those of its calls instead of running them again.
    """
    try:
        func = entry_function(module)
    except NpucError:  # ModelStructureError: a user error as it is
        raise
    except ValueError as e:
        raise NpucError(str(e)) from e
    runner = FunctionRunner(func)
    specs = model_inputs(module)
    state = StateCarrier(module)  # a stateful model is calibrated as one stream of calls
    names = [spec.name for spec in specs]
    outputs = output_names(func)
    stats: dict[str, TensorStatistics] = {}
    # Without the held-out batches: a copy of stats made at the first one (equal until then,
    # so the batches before it are recorded once).
    train: dict[str, TensorStatistics] | None = None
    held: list[list[np.ndarray]] = []  # their model calls
    held_runs: list[FloatRun | None] = []  # and those calls' runs, where float_runs kept them
    holding = False

    def record(key: str, array: np.ndarray) -> None:
        if np.asarray(array).dtype.kind != "f":
            return  # integer and bool tensors are never quantized, so never observed
        for table in (stats,) if holding or train is None else (stats, train):
            if key not in table:
                table[key] = TensorStatistics(key, bins=bins, momentum=momentum)
            table[key].add(array, outlier_policy)

    aliases: dict[str, str] | None = None
    kept_calls: list[list[np.ndarray]] = []
    replays: list[FloatRun | None] = []  # kept_calls' runs, where float_runs kept them
    total = len(batches) if hasattr(batches, "__len__") else None  # type: ignore[arg-type]
    seen = 0
    with progress_bar(desc="calibrating", total=total, unit="batch", enabled=progress) as bar:
        for batch in batches:
            holding = seen >= 7 and seen % 4 == 3 and len(held) < holdout and not state.pairs
            if holding and train is None:
                train = copy.deepcopy(stats)
            for feeds in _model_calls(batch, specs, seen):
                for name, array in state.state.items():
                    record(name, array)
                arguments = state.arguments(feeds)
                results, intermediates = runner.run(arguments, keep="all")
                run = (
                    None
                    if float_runs is None
                    else float_runs.keep(arguments, results, intermediates)
                )
                if holding:
                    held.append(list(arguments))
                    held_runs.append(run)
                elif len(kept_calls) < probe_calls:
                    kept_calls.append(list(arguments))
                    replays.append(run)
                state.update(results)
                if aliases is None:
                    aliases = _output_aliases(runner, input_names(func), outputs, intermediates)
                for name, array in zip(names, feeds, strict=True):
                    record(name, array)
                for key, array in intermediates.items():
                    record(key, array)
                for name, array in zip(outputs, results, strict=True):
                    if name not in aliases:
                        record(name, array)
            for tensor in (*stats.values(), *(train or {}).values()):
                tensor.end_batch()
            seen += 1
            bar.update()
    if not seen:
        raise NpucError("the calibration data set is empty")
    selection = None
    if held:
        assert train is not None
        train_stats = _probed(module, runner, _aliased(train, aliases), kept_calls, replays)
        selection = Selection(train_stats, held, held_runs)
    _probed(module, runner, _aliased(stats, aliases), kept_calls, replays, selection)
    return stats


def _aliased(
    stats: dict[str, TensorStatistics], aliases: Mapping[str, str] | None
) -> dict[str, TensorStatistics]:
    for name, key in (aliases or {}).items():
        if key in stats:  # not for integer tensors
            stats.setdefault(name, stats[key])
    return stats


def _probed(
    module: ModuleOp,
    runner: FunctionRunner,
    stats: dict[str, TensorStatistics],
    calls: list[list[np.ndarray]],
    replays: list[FloatRun | None],
    selection: Selection | None = None,
) -> dict[str, TensorStatistics]:
    """`stats`, each tensor given one probe over `calls` (auto_strategy.py)."""
    probe = StrategyProbe(module, runner, stats, calls, replays, selection)
    for tensor in stats.values():
        tensor.probe = probe
    return stats


def _model_calls(
    batch: Mapping[str, np.ndarray], specs: list[InputSpec], index: int
) -> list[list[np.ndarray]]:
    """The model calls of one batch: each input split along dim 0 into model-batch slices."""
    missing = [s.name for s in specs if s.name not in batch]
    if missing:
        raise NpucError(f"calibration batch {index} lacks input(s) {', '.join(missing)}")
    arrays, calls = [], None
    for spec in specs:
        array = np.asarray(batch[spec.name])
        model_batch = spec.shape[0]
        if (
            array.shape[1:] != spec.shape[1:]
            or array.ndim != len(spec.shape)
            or array.shape[0] % model_batch
            or not array.shape[0]
        ):
            raise NpucError(
                f"calibration batch {index}: input '{spec.name}' has shape {array.shape}, "
                f"expected k x {model_batch} samples of shape {spec.shape[1:]}"
            )
        if array.dtype != spec.dtype and np.can_cast(array.dtype, spec.dtype, "same_kind"):
            array = array.astype(spec.dtype)
        count = array.shape[0] // model_batch
        if calls is not None and count != calls:
            raise NpucError(f"calibration batch {index}: inputs hold different sample counts")
        calls = count
        arrays.append(array)
    assert calls is not None
    return [
        [a[i * s.shape[0] : (i + 1) * s.shape[0]] for a, s in zip(arrays, specs, strict=True)]
        for i in range(calls)
    ]


def _output_aliases(
    runner: FunctionRunner,
    inputs: list[str],
    outputs: list[str],
    intermediates: Mapping[str, np.ndarray],
) -> dict[str, str]:
    """Output name -> the key of the input or intermediate it returns (when unambiguous)."""
    args = runner.func.body.block.args
    aliases = {}
    for name, value in zip(outputs, runner.results, strict=True):
        if value in args:
            key = inputs[args.index(value)]
        else:
            named = runner.keys.get(value)
            if named is None or named not in intermediates:
                continue  # a returned constant: recorded under its output name
            key = named
        if name == key or name in intermediates or name in inputs:
            continue  # same key, or the name belongs to another tensor
        aliases[name] = key
    return aliases


# ------------------------------------------------------------------------------ file


def save_statistics(
    path: str | os.PathLike[str],
    stats: Mapping[str, TensorStatistics],
    meta: Mapping[str, Any] | None = None,
) -> None:
    """Write statistics (and free-form JSON `meta`) to a JSON file. The `auto` choice
    for 8-bit asymmetric tensors (the default schemes') is made first if it can be."""
    for tensor in stats.values():
        if tensor.probe is not None and "a8" not in tensor.auto:
            tensor.probe.choose(8, False)
    document = {
        "version": FILE_VERSION,
        "tensors": {name: s.to_dict() for name, s in stats.items()},
        "meta": dict(meta or {}),
    }
    from npuc.output_files import write_file

    try:
        text = json.dumps(document, indent=1, allow_nan=False) + "\n"
    except (TypeError, ValueError) as e:
        raise NpucError(f"cannot write statistics: {e}", os.fspath(path)) from None
    write_file(path, text)


def load_statistics(
    path: str | os.PathLike[str],
) -> tuple[dict[str, TensorStatistics], dict[str, Any]]:
    """Read a statistics file; returns (statistics by tensor name, meta)."""
    location = os.fspath(path)
    from npuc.input_files import read_json

    document = read_json(path, "a statistics file", parse_constant=_reject_constant)
    if not isinstance(document, dict):
        raise NpucError("a statistics file must hold a JSON object", location)
    version = document.get("version")
    if version != FILE_VERSION:
        raise NpucError(
            f"unsupported statistics file version {version!r} (expected {FILE_VERSION})",
            location,
        )
    tensors, meta = document.get("tensors"), document.get("meta", {})
    if not isinstance(tensors, dict):
        raise NpucError("'tensors' must be an object mapping tensor names to statistics", location)
    if not isinstance(meta, dict):
        raise NpucError("'meta' must be an object", location)
    stats = {
        name: TensorStatistics.from_dict(name, data, location) for name, data in tensors.items()
    }
    return stats, meta


def _reject_constant(name: str) -> float:
    raise ValueError(f"'{name}' is not allowed in a statistics file (values must be finite)")
