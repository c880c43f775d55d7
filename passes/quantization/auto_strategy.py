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

Local choices ignore how errors add up downstream, so when calibration held out
some batches (every fourth from the eighth on, at most HOLDOUT_BATCHES), the first
quantization with `auto` also compares whole models (`select_for_model`):
quantized with the statistics of the other batches, once with every tensor's
local choice and once per candidate strategy for all tensors, with the
quantization's own scheme and settings, each run by the qnn interpreter on the
held-out calls. Held out, because the extrema never clip the samples they were
computed from. A single strategy replaces the local choices only if its model
has no more relative squared error than theirs on every held-out call (errors
within float32 rounding, FLOAT_NOISE, tie), and less in total; of those, the
least in total wins, and every tensor takes it. (The total alone picked by
chance: on the PP-OCR recognizer one call in five carried most of it, and the
strategy it chose read 3 % fewer time steps right on the test lines than the
local choices, docs/quantization.md.) An output made by a softmax
or a sigmoid is compared through that float op applied to the quantized model's
dequantized operand: on confident samples the output's own 8-bit grid
(probabilities in steps of 1/256) rounds every candidate to the same values, and
the choice would fall to the tie. (Comparing the logits
themselves picked worse models on the PP-OCR recognizer, whose 6625-class logits
are mostly noise the softmax discards.)

Choices are made per grid on first use and recorded in each tensor's statistics
(`auto`, saved in the statistics file).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from npuc import graph_io
from npuc.blockwise import scratch_spans
from npuc.dialects.nn import SigmoidOp, SoftmaxOp
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.integer import dequantize
from npuc.progress import progress
from npuc.runtime.nn_interpreter import FunctionRunner
from npuc.runtime.qnn_interpreter import QuantizedFunctionRunner

from .lowering import MOVEMENT
from .ranges import AUTO_FALLBACK, activation_range, grid_key, grid_steps

if TYPE_CHECKING:
    from .float_runs import FloatRun
    from .statistics import TensorStatistics

CANDIDATES = ("extrema", "percentile", "mse", "kl")
PROBE_CALLS = 8
HOLDOUT_BATCHES = 8
# A clipping candidate must cut the consumers' error by this factor to beat extrema: the
# probe calls are calibration samples, which the extrema never clip but new data may
# exceed, and smaller gains did not carry over to test data (docs/quantization.md).
CLIP_COST = 2.0
# Relative squared errors at or below this are float32 rounding, not quantization: a held-out
# call on which both models are this close to the float one is a tie.
FLOAT_NOISE = 1e-12
Range = tuple[float, float]
RECENT = 8  # fake-quantized candidates kept for the next consumers: two tensors' four each


def fake_quantize(x: np.ndarray, lo: float, hi: float, bits: int, symmetric: bool) -> np.ndarray:
    """`x` quantized to the grid of [lo, hi] (as ranges.py describes it) and back, in x's dtype:
    fake_quantize_grid's values, computed in float64 a block at a time."""
    scale, low, high = grid_steps(np.float64(lo), np.float64(hi), bits, symmetric)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, flat.dtype)
    for span, block in scratch_spans(flat.size):
        np.divide(flat[span], scale, out=block)
        np.rint(block, out=block)
        np.clip(block, low, high, out=block)
        np.multiply(block, scale, out=out[span], casting="same_kind")
    return out.reshape(np.shape(x))


class StrategyProbe:
    """Chooses `auto` strategies for the tensors of one calibration run (see the module doc)."""

    def __init__(
        self,
        module: ModuleOp,
        runner: FunctionRunner,
        stats: Mapping[str, TensorStatistics],
        calls: Sequence[list[np.ndarray]],
        replays: Sequence[FloatRun | None],
        selection: Selection | None = None,
    ):
        self.module = module  # the float module calibrated (runner runs its entry function)
        self.runner = runner
        self.stats = stats
        self.calls = list(calls)
        # calibration's run of each call, where it kept it: replayed, not run again
        self.replays = list(replays)
        self.selection = selection
        self.winner: str | None = None  # select_for_model's: "local" or a strategy
        self.errors: dict[str, float] = {}  # and its figures, by candidate: in total
        self.call_errors: dict[str, list[float]] = {}  # and per held-out call
        self.keys: dict[SSAValue, str] = dict(runner.keys)
        # the last RECENT fake-quantized tensors of this call, by (name, lo, hi), least
        # recent first: the consumers of a tensor (x and sigmoid(x) of a SiLU) come together
        self._recent: dict[tuple[str, float, float], np.ndarray] = {}
        args = runner.func.body.block.args
        self.keys.update(zip(args, graph_io.input_names(runner.func), strict=False))

    def choose(self, bits: int, symmetric: bool) -> None:
        """Record the choice for grid (bits, symmetric) in every probed tensor's `auto`."""
        key = grid_key(bits, symmetric)
        if self.winner not in (None, "local"):  # one strategy won for the whole model
            for stats in self.stats.values():
                stats.auto[key] = self.winner
            return
        eligible = set()
        for name in self.keys.values():
            found = self.stats.get(name)
            if found is not None and found.count:
                eligible.add(name)
        # Each tensor's candidate ranges and errors, from when the probe first meets it at a
        # consumer. A tensor it never judges (a returned one, or one moved on by data
        # movement, judged as its source: 121 of iris_landmark's 280) would choose the
        # first candidate on errors of zero whatever its ranges are, so they are not
        # computed.
        candidates: dict[str, list[Range]] = {}
        errors: dict[str, np.ndarray] = {}
        for call, replay in zip(self.calls, self.replays, strict=True):
            self._probe(call, replay, eligible, candidates, errors, bits, symmetric)
        self._recent.clear()  # not held while the probe stays attached to the statistics
        for name, ranges in candidates.items():
            weighted = errors[name] * np.where(np.arange(len(CANDIDATES)) == 0, 1.0, CLIP_COST)
            choice = CANDIDATES[int(np.argmin(weighted))]
            if all(r == ranges[0] for r in ranges):  # nothing to choose between
                choice = CANDIDATES[0]
            self.stats[name].auto[key] = choice
        for name in eligible.difference(candidates):
            self.stats[name].auto[key] = CANDIDATES[0]
        for stats in self.stats.values():  # not in its function, or no values recorded
            stats.auto.setdefault(key, AUTO_FALLBACK)

    def _probe(
        self,
        call: list[np.ndarray],
        replay: FloatRun | None,
        eligible: set[str],
        candidates: dict[str, list[Range]],
        errors: dict[str, np.ndarray],
        bits: int,
        symmetric: bool,
    ) -> None:
        runner = self.runner
        # Results of data movement (reshape, max pool, ...) keep their input's type, so
        # their input's candidates are judged at their consumers: value -> the source.
        moved: dict[SSAValue, _Source] = {}
        self._recent.clear()  # the previous call's
        for op, env in runner.steps(call, None if replay is None else replay.intermediates):
            if runner.is_constant(op):
                continue
            outputs = [env[r] for r in op.results]
            if not all(np.asarray(y).dtype.kind == "f" for y in outputs):
                continue
            exact: list[_Exact] | None = None  # the outputs, measured once for every operand
            for value in dict.fromkeys(op.operands):
                source = moved.get(value) or self._source(value, env, eligible)
                if source is None:
                    continue
                if type(op) in MOVEMENT and op.operands[0] is value and len(op.results) == 1:
                    args = [env[v] for v in op.operands]
                    moved[op.results[0]] = _Source(
                        source.name, source.array, (*source.chain, (op, args))
                    )
                    continue
                ranges = candidates.get(source.name)
                if ranges is None:
                    stats = self.stats[source.name]
                    ranges = candidates[source.name] = [
                        activation_range(stats, s, bits=bits, symmetric=symmetric)
                        for s in CANDIDATES
                    ]
                    errors[source.name] = np.zeros(len(CANDIDATES))
                if exact is None:
                    exact = [_Exact(y) for y in outputs]
                errors[source.name] += self._errors(
                    op, env, value, source, ranges, exact, bits, symmetric
                )

    def _source(
        self, value: SSAValue, env: Mapping[SSAValue, np.ndarray], eligible: set[str]
    ) -> _Source | None:
        name = self.keys.get(value)
        if name is None or name not in eligible or np.asarray(env[value]).dtype.kind != "f":
            return None
        return _Source(name, env[value], ())

    def _quantized(
        self, source: _Source, lo: float, hi: float, bits: int, symmetric: bool
    ) -> np.ndarray:
        """The source quantized to [lo, hi] and moved like the value it stands for."""
        key = (source.name, lo, hi)
        q = self._recent.pop(key, None)
        if q is None:
            q = fake_quantize(source.array, lo, hi, bits, symmetric)
            q.flags.writeable = False  # shared by the consumers
        self._recent[key] = q
        while len(self._recent) > RECENT:
            del self._recent[next(iter(self._recent))]
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
        exact: Sequence[_Exact],
        bits: int,
        symmetric: bool,
    ) -> np.ndarray:
        """The relative output error of `op` (its float outputs `exact`) with `value`
        quantized to each of `ranges`."""
        errors = np.zeros(len(ranges))
        done: dict[Range, float] = {}
        for i, (lo, hi) in enumerate(ranges):
            if (lo, hi) not in done:
                q = self._quantized(source, lo, hi, bits, symmetric)
                args = [q if v is value else env[v] for v in op.operands]
                results = self.runner.evaluate(op, args)
                done[lo, hi] = sum(e.error(r) for r, e in zip(results, exact, strict=True))
            errors[i] = done[lo, hi]
        return errors


@dataclass
class Selection:
    """What whole-model selection needs: statistics without the held-out batches (with
    their own probe), the held-out model calls and calibration's runs of them, where it
    kept them (float_runs.py)."""

    train: Mapping[str, TensorStatistics]
    calls: list[list[np.ndarray]]
    replays: Sequence[FloatRun | None]  # one per call


def select_for_model(
    stats: Mapping[str, TensorStatistics],
    config: Any,
    quantize: Callable[[ModuleOp, Mapping[str, TensorStatistics], Any], object],
) -> None:
    """Compare whole models on the held-out calls (see the module doc) and record the winner
    in the tensors' `auto` choices. `quantize(module, stats, config)` quantizes `module` in
    place from `stats`; `config` is the QuantizeConfig of the quantization asking. Does
    nothing without a selection (no batch held out) or once a winner is known."""
    probe = next((s.probe for s in stats.values() if s.probe is not None), None)
    if probe is None or probe.selection is None or probe.winner is not None:
        return
    selection, runner = probe.selection, probe.runner
    compared = _compared_outputs(runner)
    keys = [c.key for c in compared]
    reference = [
        _float_outputs(runner, call, replay, keys)
        for call, replay in zip(selection.calls, selection.replays, strict=True)
    ]
    candidates = ("local", *CANDIDATES)
    for candidate in progress(candidates, desc="auto strategy: whole models", unit="candidate"):
        strategy = "auto" if candidate == "local" else candidate
        quantized = probe.module.clone()
        config_for = replace(config, activation_strategy=strategy, io="float", adaround=False)
        quantize(quantized, selection.train, config_for)
        run = QuantizedFunctionRunner(graph_io.entry_function(quantized))
        types = {key: value.type for value, key in run.keys.items()}
        errors, energies = [], []
        for call, ref in zip(selection.calls, reference, strict=True):
            keep = [k for c in compared for k in (c.key, c.inner_key) if k in types]
            got = run.run(call, keep=keep)[1]
            error = energy = 0.0
            for c in compared:
                r = ref.get(c.key)
                y = c.real(got, types, runner)
                if r is not None and y is not None and y.shape == r.shape:
                    error += _energy(y - r)
                    energy += _energy(r)
            errors.append(error)
            energies.append(energy)
        pairs = zip(errors, energies, strict=True)
        probe.call_errors[candidate] = [e / max(n, 1e-30) for e, n in pairs]
        probe.errors[candidate] = sum(errors) / max(sum(energies), 1e-30)
    probe.winner = whole_model_winner(probe.errors, probe.call_errors)
    if probe.winner != "local":
        for tensor in stats.values():
            for key in tensor.auto:
                tensor.auto[key] = probe.winner


def whole_model_winner(errors: Mapping[str, float], call_errors: Mapping[str, list[float]]) -> str:
    """The strategy of least total error among those whose model is no worse than the
    local choices' on any held-out call (up to FLOAT_NOISE) and better in total; else
    "local"."""
    local = call_errors["local"]
    better = [
        c
        for c in CANDIDATES
        if errors[c] < errors["local"]
        and all(e <= max(mine, FLOAT_NOISE) for e, mine in zip(call_errors[c], local, strict=True))
    ]
    return min(better, key=errors.__getitem__, default="local")


# Outputs made by these ops are compared through the float op applied to the quantized
# model's operand: the output's own 8-bit grid (probabilities in steps of 1/256) would
# otherwise hide every other difference on confident samples.
OUTPUT_ACTIVATIONS = (SoftmaxOp, SigmoidOp)


@dataclass(frozen=True)
class _Compared:
    """A returned tensor whole models are compared on (by key), and for one made by an
    OUTPUT_ACTIVATIONS op, that op and the key of its operand."""

    key: str
    op: Operation | None = None
    inner_key: str | None = None

    def real(
        self, got: Mapping[str, np.ndarray], types: Mapping[str, Attribute], runner: FunctionRunner
    ) -> np.ndarray | None:
        """The quantized run's value of the tensor, as float64 reals."""
        if self.inner_key is not None and self.inner_key in got:
            inner = _real(got[self.inner_key], types[self.inner_key])
            if inner is not None:
                assert self.op is not None
                return np.asarray(
                    runner.evaluate(self.op, [inner.astype(np.float32)])[0], np.float64
                )
        if self.key in got:
            return _real(got[self.key], types[self.key])
        return None


def _float_outputs(
    runner: FunctionRunner, call: list[np.ndarray], replay: FloatRun | None, keys: list[str]
) -> Mapping[str, np.ndarray]:
    """The float model's tensors `keys` on `call`: from calibration's run of it when kept
    and holding them all, else from running it again."""
    if replay is not None and all(k in replay.intermediates for k in keys):
        return {k: replay.intermediates[k] for k in keys}
    return runner.run(call, keep=keys)[1]


def _compared_outputs(runner: FunctionRunner) -> list[_Compared]:
    """The returned op results whole models are compared on."""
    compared: dict[str, _Compared] = {}
    for value in runner.results:
        key = runner.keys.get(value)
        if key is None or key in compared:
            continue
        op = value.owner
        if isinstance(op, OUTPUT_ACTIVATIONS) and op.operands[0] in runner.keys:
            inner = op.operands[0]
            compared[key] = _Compared(key, op, runner.keys[inner])
        else:
            compared[key] = _Compared(key)
    return list(compared.values())


def _real(array: np.ndarray, ty: Attribute) -> np.ndarray | None:
    """A tensor of a quantized run as float64 reals (None for integer tensors)."""
    element = ty.element_type if isinstance(ty, TensorType) else None
    if isinstance(element, UniformQuantizedType):
        scale, zero_point = element.broadcast_params(array.ndim)
        return np.asarray(dequantize(array, scale, zero_point), np.float64)
    return np.asarray(array, np.float64) if np.asarray(array).dtype.kind == "f" else None


@dataclass(frozen=True)
class _Source:
    """A probed tensor (by name and array) and the data movement applied to it since."""

    name: str
    array: np.ndarray
    chain: tuple[tuple[Operation, list[np.ndarray]], ...]


class _Exact:
    """An op's float output, ready to measure candidates against (once per op, not per
    candidate): restricted to its finite elements when some are not."""

    def __init__(self, exact: np.ndarray):
        exact = np.asarray(exact)
        finite = np.isfinite(exact)
        self.finite = None if finite.all() else finite
        self.values = exact.reshape(-1) if self.finite is None else exact[finite]
        self.energy = _energy(self.values)

    def error(self, got: np.ndarray) -> float:
        """The squared error of `got` relative to the energy of the exact output, over the
        elements where that is finite (any other value there makes it infinite)."""
        got = np.asarray(got)
        error = _squared_difference(
            got.reshape(-1) if self.finite is None else got[self.finite], self.values
        )
        return error / self.energy if math.isfinite(error) else math.inf


def _squared_difference(a: np.ndarray, b: np.ndarray) -> float:
    """The sum of squares of a - b, in float64 a block at a time (at least 1e-30, as
    `_energy`; inf or nan when a or b holds such values)."""
    total = 0.0
    for span, block in scratch_spans(a.size):
        np.subtract(a[span], b[span], out=block, dtype=np.float64)
        total += float(np.einsum("i,i->", block, block))
    return max(total, 1e-30)


def _energy(x: np.ndarray) -> float:
    """The sum of squares of `x` (at least 1e-30, so that it can divide; inf or nan when
    `x` holds such values)."""
    flat = np.asarray(x, np.float64).ravel()
    return max(float(np.einsum("i,i->", flat, flat)), 1e-30)
