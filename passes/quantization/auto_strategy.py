"""The `auto` activation range strategy: for each tensor, the candidate strategy whose
quantization disturbs the tensor's consumers least on calibration samples.

For a quantization grid (bits, symmetric), every tensor with statistics gets the
range of each candidate strategy (CANDIDATES). On the first PROBE_CALLS model
calls of the calibration set, the float graph runs op by op; at each op, each
activation operand in turn is quantized to the grid with each candidate range
(the other operands stay float) and the op is evaluated again. A candidate's
error is the squared error of the op's results relative to their energy, summed
over the tensor's consumers and the calls. The result of data movement (reshape,
transpose, max pool, ...: MOVEMENT, whose output keeps its input's type) is not a
consumer: the tensor is moved like it and judged at its consumers. The candidate
with the least error is chosen, a clipping one only if it has less than half the
error of `extrema` (CLIP_COST), ties going to the earlier candidate; a tensor
with no float consumer (a returned one) has nothing to judge by and keeps
`extrema`, so outputs such as logits or box coordinates are never clipped.

Choices are made per grid on first use and recorded in each tensor's statistics
(`auto`, saved in the statistics file).

Whole-model comparisons on the calibration samples were tried and dropped: the
extrema range never clips the samples it was computed from, so such comparisons
favour it, and a confident classifier's saturated outputs hide the differences.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from npuc import graph_io
from npuc.runtime.nn_interpreter import FunctionRunner

from .lowering import MOVEMENT
from .ranges import AUTO_FALLBACK, activation_range, fake_quantize_grid, grid_key

if TYPE_CHECKING:
    from .statistics import TensorStatistics

CANDIDATES = ("extrema", "percentile", "mse", "kl")
PROBE_CALLS = 8
# A clipping candidate must cut the consumers' error by this factor to beat extrema: the
# probe calls are calibration samples, which the extrema never clip but new data may
# exceed, and smaller gains did not carry over to test data (docs/quantization.md).
CLIP_COST = 2.0
Range = tuple[float, float]


def fake_quantize(x: np.ndarray, lo: float, hi: float, bits: int, symmetric: bool) -> np.ndarray:
    """`x` quantized to the grid of [lo, hi] (as ranges.py describes it) and back, in x's dtype."""
    lo_, hi_ = np.float64(lo), np.float64(hi)
    return fake_quantize_grid(np.asarray(x, np.float64), lo_, hi_, bits, symmetric).astype(x.dtype)


class StrategyProbe:
    """Chooses `auto` strategies for the tensors of one calibration run (see the module doc)."""

    def __init__(
        self,
        module: ModuleOp,
        runner: FunctionRunner,
        stats: Mapping[str, TensorStatistics],
        calls: Sequence[list[np.ndarray]],
    ):
        self.module = module  # the float module calibrated (runner runs its entry function)
        self.runner = runner
        self.stats = stats
        self.calls = list(calls)
        self.keys: dict[SSAValue, str] = dict(runner.keys)
        args = runner.func.body.block.args
        self.keys.update(zip(args, graph_io.input_names(runner.func), strict=False))

    def choose(self, bits: int, symmetric: bool) -> None:
        """Record the choice for grid (bits, symmetric) in every probed tensor's `auto`."""
        key = grid_key(bits, symmetric)
        candidates: dict[str, list[Range]] = {}
        for name in self.keys.values():
            stats = self.stats.get(name)
            if stats is None or stats.count == 0 or name in candidates:
                continue
            candidates[name] = [
                activation_range(stats, s, bits=bits, symmetric=symmetric) for s in CANDIDATES
            ]
        errors = {name: np.zeros(len(CANDIDATES)) for name in candidates}
        for call in self.calls:
            self._probe(call, candidates, errors, bits, symmetric)
        for name, ranges in candidates.items():
            weighted = errors[name] * np.where(np.arange(len(CANDIDATES)) == 0, 1.0, CLIP_COST)
            choice = CANDIDATES[int(np.argmin(weighted))]
            if all(r == ranges[0] for r in ranges):  # nothing to choose between
                choice = CANDIDATES[0]
            self.stats[name].auto[key] = choice
        for stats in self.stats.values():  # tensors never probed (no float consumer)
            stats.auto.setdefault(key, AUTO_FALLBACK)

    def _probe(
        self,
        call: list[np.ndarray],
        candidates: Mapping[str, list[Range]],
        errors: Mapping[str, np.ndarray],
        bits: int,
        symmetric: bool,
    ) -> None:
        runner = self.runner
        # Results of data movement (reshape, max pool, ...) keep their input's type, so
        # their input's candidates are judged at their consumers: value -> the source.
        moved: dict[SSAValue, _Source] = {}
        for op, env in runner.steps(call):
            if isinstance(op, runner.CONSTANTS):
                continue
            outputs = [env[r] for r in op.results]
            if not all(np.asarray(y).dtype.kind == "f" for y in outputs):
                continue
            for value in dict.fromkeys(op.operands):
                source = moved.get(value) or self._source(value, env, candidates)
                if source is None:
                    continue
                if type(op) in MOVEMENT and op.operands[0] is value and len(op.results) == 1:
                    args = [env[v] for v in op.operands]
                    moved[op.results[0]] = _Source(source.name, source.array,
                                                   (*source.chain, (op, args)))  # fmt: skip
                    continue
                errors[source.name] += self._errors(
                    op, env, value, source, candidates[source.name], outputs, bits, symmetric
                )

    def _source(
        self, value: SSAValue, env: Mapping[SSAValue, np.ndarray], candidates: Mapping
    ) -> _Source | None:
        name = self.keys.get(value)
        if name not in candidates or np.asarray(env[value]).dtype.kind != "f":
            return None
        return _Source(name, env[value], ())

    def _quantized(self, source: _Source, lo: float, hi: float, bits: int, symmetric: bool):
        """The source quantized to [lo, hi] and moved like the value it stands for."""
        q = fake_quantize(source.array, lo, hi, bits, symmetric)
        for op, args in source.chain:
            q = self.runner.evaluate(op, [q, *args[1:]])[0]
        return q

    def _errors(
        self,
        op: Operation,
        env: Mapping[SSAValue, np.ndarray],
        value: SSAValue,
        source: _Source,
        ranges: Sequence[Range],
        outputs: Sequence[np.ndarray],
        bits: int,
        symmetric: bool,
    ) -> np.ndarray:
        """The relative output error of `op` with `value` quantized to each of `ranges`."""
        errors = np.zeros(len(ranges))
        done: dict[Range, float] = {}
        for i, (lo, hi) in enumerate(ranges):
            if (lo, hi) not in done:
                q = self._quantized(source, lo, hi, bits, symmetric)
                args = [q if v is value else env[v] for v in op.operands]
                results = self.runner.evaluate(op, args)
                done[lo, hi] = sum(_error(r, y) for r, y in zip(results, outputs, strict=True))
            errors[i] = done[lo, hi]
        return errors


@dataclass(frozen=True)
class _Source:
    """A probed tensor (by name and array) and the data movement applied to it since."""

    name: str
    array: np.ndarray
    chain: tuple[tuple[Operation, list[np.ndarray]], ...]


def _error(got: np.ndarray, exact: np.ndarray) -> float:
    """The squared error of `got` relative to the energy of `exact`, over the elements where
    `exact` is finite (any other value there makes it infinite)."""
    exact = np.asarray(exact, np.float64)
    finite = np.isfinite(exact)
    diff = np.asarray(got, np.float64)[finite] - exact[finite]
    if not np.isfinite(diff).all():
        return math.inf
    return _energy(diff) / _energy(exact[finite])


def _energy(x: np.ndarray) -> float:
    """The sum of squares of `x` (at least 1e-30, so that it can divide)."""
    return max(float(np.square(x, dtype=np.float64).sum()), 1e-30)
