"""The NPU runtime's output stage: exact integer accumulators to clamped stored outputs.

The arithmetic is `integer.requantize` (docs/quantization.md), in faster exact forms:
TFLite requantization (`rounding = tflite`, every shift >= 31), rounding half away from
zero (the rounding of the models npuc quantizes) and half up (every shift >= 1) run as one
float64 floor (`float_requantize`) when every product and sum provably stays exact, else
in int64 (`tflite_multiply`, `qnn_arith.output_stage`);
tests/runtime/test_executor_requant.py checks them against TFLite's two-rounding
definition and against exact rationals. Each path gives the same integers, so the choice
only changes the speed.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from npuc import integer
from npuc.diagnostics import NpucError

try:  # the clip ufunc itself: np.clip's Python wrapper costs more than a small clip
    from numpy._core.umath import clip as clip_ufunc
except ImportError:  # pragma: no cover - other numpy layouts
    clip_ufunc = np.clip
from . import npu_jit
from .kernels import qnn_arith as qa

I64 = np.int64
F32 = np.float32
F64 = np.float64
F32_EXACT = 1 << 24  # a float32 sum is exact while every partial sum stays below this
F64_EXACT = 1 << 53
FLOAT_ROUNDINGS = ("tflite", "half_away_from_zero", "half_up")  # `float_requantize` has these
REQUANT_BLOCK = 1 << 16  # elements requantized at once: the float64 temporaries stay in cache


def exact_dtype(peak: int) -> type:
    """The narrowest of float32, float64 and int64 holding every integer up to `peak`."""
    return F32 if peak < F32_EXACT else F64 if peak < F64_EXACT else I64


@dataclass(frozen=True)
class Table:
    """A decoded bias_scale table: per output channel (bias, multiplier, shift, weight zp),
    plus the float64 constants of `float_requantize` for TFLite's rounding when every
    shift is >= 31, and for rounding half away from zero or half up when every shift is
    >= 1."""

    bias: np.ndarray  # int64 [C]
    multiplier: np.ndarray  # int64 [C]
    shift: np.ndarray  # int64 [C]
    weight_zero_point: np.ndarray  # int64 [C]
    scale: np.ndarray | None  # m * 2^-shift (float64, exact)
    tie: np.ndarray | None  # 2^-(shift - 30), or 0 where shift == 31

    @classmethod
    def decode(cls, rows: np.ndarray, weights_range: tuple[int, int], rounding: str) -> Table:
        rows = np.asarray(rows, I64).reshape(-1, 4)
        bias, m, s, wzp = (np.ascontiguousarray(rows[:, i]) for i in range(4))
        checks = (
            (m, "multiplier", (0, (1 << 31) - 1)),
            (s, "shift", (-31, 62)),
            (wzp, "weight zero point", weights_range),
        )
        for values, name, (lo, hi) in checks:
            bad = np.flatnonzero((values < lo) | (values > hi))
            if bad.size:
                raise NpucError(
                    f"bias_scale row {bad[0]}: {name} {values[bad[0]]} is outside [{lo}, {hi}]"
                )
        scale = tie = None
        # TFLite's left shifts (shift < 31) saturate first, which the float64 form does not;
        # a single rounding's form holds for any positive shift (`OutputStage._lift`)
        least = 31 if rounding == "tflite" else 1
        if s.size and int(s.min()) >= least and rounding in FLOAT_ROUNDINGS:
            scale = np.ldexp(m.astype(F64), -s)
            if rounding == "tflite":
                tie = np.where(s > 31, np.ldexp(1.0, 30 - s), 0.0)
            elif rounding == "half_away_from_zero":  # half a unit of 2^-shift
                tie = np.ldexp(1.0, -s - 1)
            else:  # half up: floor(p + 1/2) itself
                tie = np.zeros(s.shape)
        return cls(bias, m, s, wzp, scale, tie)

    def part(self, channels: slice) -> Table:
        """The rows of some output channels."""
        return Table(
            *(
                None if v is None else v[channels]
                for v in (
                    self.bias,
                    self.multiplier,
                    self.shift,
                    self.weight_zero_point,
                    self.scale,
                    self.tie,
                )
            )
        )


class Scratch:
    """Reusable work buffers: a fresh array of a few hundred KiB costs page faults on every
    use, more than the arithmetic done in it."""

    def __init__(self) -> None:
        self._buffers: dict[str, np.ndarray] = {}
        self._bordered: dict[tuple, np.ndarray] = {}

    def get(self, name: str, shape: Sequence[int], dtype: type) -> np.ndarray:
        """A view of the buffer `name`, grown when too small (views taken before keep the
        old buffer)."""
        size = math.prod(shape) * np.dtype(dtype).itemsize
        buffer = self._buffers.get(name)
        if buffer is None or buffer.size < size:
            buffer = self._buffers[name] = np.empty(max(size, 1 << 12), np.uint8)
        return buffer[:size].view(dtype).reshape(shape)

    def bordered(self, shape: tuple[int, ...], dtype: type, fill: int, key: object) -> np.ndarray:
        """A buffer of its own for (shape, dtype, fill, key), filled with `fill` once: users
        that only write the same interior (`key` tells it) find the border still there."""
        name = ("bordered", tuple(shape), np.dtype(dtype).str, fill, key)
        if name not in self._bordered:
            self._bordered[name] = np.full(shape, fill, dtype)
        return self._bordered[name]


# 8- and 16-bit outputs are computed shifted up by this much, a multiple of their range
WRAP = {
    np.dtype(t): 1 << (8 * np.dtype(t).itemsize) for t in (np.int8, np.uint8, np.int16, np.uint16)
}


def _blocks(acc: np.ndarray, out: np.ndarray, channels_first: bool):
    """acc and out split into blocks along axis 0 that keep the float64 temporaries in
    cache: (acc, out, rows per block). Channels first, acc becomes [C, elements] when it
    is contiguous; channels last, the leading axes are flattened."""
    if channels_first:
        if acc.flags.c_contiguous and out.ndim == acc.ndim:
            acc = acc.reshape(acc.shape[0], -1)
            # fewer columns or strided: written as it is (`scaled_actions`)
            with contextlib.suppress(ValueError):
                out = out.reshape(acc.shape, copy=False)
    else:
        channels = acc.shape[-1]
        try:
            acc, out = acc.reshape(-1, channels), out.reshape(-1, channels, copy=False)
        except ValueError:  # a strided output that cannot be flattened: one block
            acc, out = acc[None], out[None]
    inner = math.prod(acc.shape[1:])
    return acc, out, max(1, REQUANT_BLOCK // max(inner, 1))


@dataclass(frozen=True)
class FloatForm:
    """The per-channel float64 constants of `float_requantize`, shaped [C, 1, ...] for
    channels first or [C] for channels last.

    The result is computed shifted up by `lift`, so that every value the clamp keeps is
    positive and the conversion to int32 (truncation) is its floor; for 8- and 16-bit
    outputs the lift is the type's range, which the conversion to the output wraps away.
    """

    scale: np.ndarray
    offset: np.ndarray  # bias m 2^-shift, plus tie + 1/2 + zp - lo when `signed` is False
    tie: np.ndarray
    half: float  # 1/2 + zp + lift
    signed: bool  # negative values can reach the output: ties need their sign
    channels_first: bool
    lift: int

    @classmethod
    def of(
        cls,
        table: Table,
        bias: np.ndarray,
        zero_point: int,
        clamp: tuple[int, int],
        channels_first: bool,
        ndim: int,
        lift: int,
    ) -> FloatForm:
        shape = (-1,) + (1,) * (ndim - 1) if channels_first else (-1,)
        half = 0.5 + zero_point + lift
        signed = clamp[0] < zero_point
        offset = bias * table.scale  # exact: |bias| m < 2^53 (`OutputStage.float_limit`)
        if not signed:
            offset = offset + table.tie + half
        return cls(
            table.scale.reshape(shape),
            offset.reshape(shape),
            table.tie.reshape(shape),
            half,
            signed,
            channels_first,
            lift,
        )


Action = Callable[[], object]


def float_requantize(
    acc: np.ndarray, form: FloatForm, clamp: tuple[int, int], out: np.ndarray, scratch: Scratch
) -> None:
    """out = clamp(zp + R(acc + bias)) in float64, exactly: floor(p + 1/2 + copysign(tie,
    p)) + zp with p = (acc + bias) m 2^-shift and a tie per channel.

    TFLite (MultiplyByQuantizedMultiplier): with M = m 2^-31 and r = shift - 31 >= 1,
    TFLite computes h = floor(x M + 1/2) (the rounding doubling high multiply, as in
    integer._tflite_multiply_float) then rounds h / 2^r half away from zero. As h is an
    integer, that is floor(x M 2^-r + 1/2 + 2^-(r+1)) for h >= 0 and floor(x M 2^-r + 1/2 -
    2^-(r+1)) for h < 0; for -1/2 <= x M < 0 both give 0, so the sign of x decides (that
    of x M 2^-r). One floor replaces both roundings (r = 0: no second rounding, tie 0).

    Half away from zero: tie = 2^-(shift+1), half of p's unit 2^-shift. p + 1/2 is a
    multiple of that unit, so half a unit either way moves no floor but at a tie: p = k +
    1/2 gives k + 1 (k >= 0) and p = -k - 1/2 gives -k - 1, away from zero both.

    Half up (ties toward +infinity, TFLite's 16x8 rounding): floor(p + 1/2) itself, tie 0.

    When the clamp's lower bound is at or above the zero point (a fused ReLU), every x < 0
    clamps to it under either tie term, so the sign test is skipped. The caller
    guarantees that every value and sum below is an integer multiple of the tie's unit
    below 2^53 of them (`OutputStage.float_limit`), so all are exact in float64.
    """
    for action in float_actions(acc, form, clamp, out, scratch):
        action()


def float_actions(
    acc: np.ndarray, form: FloatForm, clamp: tuple[int, int], out: np.ndarray, scratch: Scratch
) -> list[Action]:
    """`float_requantize` of these arrays as a list of numpy calls on fixed buffers, to run
    whenever acc holds new accumulators."""
    acc2, out2, step = _blocks(acc, out, form.channels_first)
    actions: list[Action] = []
    for r0 in range(0, acc2.shape[0], step):
        rows = slice(r0, r0 + step)
        a = acc2[rows]
        p = scratch.get("p", a.shape, F64)
        scale, offset, tie = form.scale, form.offset, form.tie
        if form.channels_first:  # [C, 1, ...] as deep as the block
            shape = (-1,) + (1,) * (a.ndim - 1)
            scale, offset, tie = (v.reshape(shape)[rows] for v in (scale, offset, tie))
        # converted first: numpy multiplies float32 by float64 slower than it converts
        actions += [
            partial(np.copyto, p, a),
            partial(np.multiply, p, scale, out=p),
            partial(np.add, p, offset, out=p),
        ]
        actions += scaled_actions(p, tie, form, clamp, out2[rows], scratch)
    return actions


def scaled_actions(
    p: np.ndarray,
    tie: np.ndarray,
    form: FloatForm,
    clamp: tuple[int, int],
    out: np.ndarray,
    scratch: Scratch,
) -> list[Action]:
    """The rest of `float_requantize` once p holds (acc + bias) * scale + form.offset
    (float64, exact; may be overwritten), with `tie` shaped to broadcast against it.

    `out` is p's shape, or has fewer elements a row (p's rows reshaped as out's rows, the
    tail of each dropped: the junk columns of a phase-split convolution).
    """
    lo, hi = clamp
    actions: list[Action] = []
    if form.signed:
        q = scratch.get("q", p.shape, F64)
        actions += [
            partial(np.copysign, tie, p, out=q),
            partial(np.add, p, q, out=p),
            partial(np.add, p, form.half, out=p),
        ]

    def outputs(values: np.ndarray) -> np.ndarray:
        if values.shape == out.shape:
            return values
        return values.reshape(*out.shape[:-1], -1)[..., : out.shape[-1]]

    if form.lift != WRAP.get(out.dtype):  # other outputs: clamp and floor in their own range
        return [
            *actions,
            partial(clip_ufunc, p, float(lo), float(hi), out=p),
            partial(np.floor, outputs(p), out=out, casting="unsafe"),
        ]
    # |p| < 2^22 (`OutputStage.float_limit`): the conversion to int32 truncates, which is the floor
    # from 0 up, and anything below 0 clamps up to lo + lift > 0 either way; the
    # conversion to the output then drops the lift (two's complement wrap-around)
    whole = scratch.get("whole", p.shape, np.int32)
    bounds = np.int32(lo + form.lift), np.int32(hi + form.lift)
    actions.append(partial(np.copyto, whole, p, casting="unsafe"))
    if out.strides[-1] == out.itemsize:  # rows written in order: clamped in place, narrowed
        return [
            *actions,
            partial(clip_ufunc, whole, *bounds, out=whole),
            partial(np.copyto, out, outputs(whole), casting="unsafe"),
        ]
    return [*actions, partial(clip_ufunc, outputs(whole), *bounds, out=out, casting="unsafe")]


OUTPUT_STAGE = "output_stage"


def output_stage_calls(actions: list[Action]) -> list[Action]:
    """The calls, marked as the output stage's for runtime/host_time.py."""
    for action in actions:
        with contextlib.suppress(AttributeError):  # a partial takes attributes
            setattr(action, OUTPUT_STAGE, True)
    return actions


def _wraps(form: FloatForm, out: np.ndarray) -> bool:
    """Whether `scaled_actions` takes its int32 path: the lift is the output type's range."""
    return form.lift == WRAP.get(out.dtype)


def lift_for(dtype: np.dtype, clamp: tuple[int, int]) -> int:
    """The lift of `FloatForm` for outputs of `dtype`: its range when the clamp lies in it."""
    wrap = WRAP.get(np.dtype(dtype), 0)
    return wrap if wrap and clamp[0] + wrap > 0 and clamp[1] - clamp[0] < wrap else 0


def tflite_multiply(x: np.ndarray, multiplier, shift) -> np.ndarray:
    """integer.requantize(x, multiplier, shift, "tflite") for int64 x, in fewer int64 passes.

    Where every shift is >= 31 and |x| m < 2^62: h = (x m + 2^30) >> 31 is TFLite's rounding
    doubling high multiply (floor(x M + 1/2), see float_requantize), and (h + 2^(r-1) -
    [h < 0]) >> r its rounding divide by 2^r, ties away from zero. Otherwise the shared
    function.
    """
    m = np.asarray(multiplier, I64)
    s = np.asarray(shift, I64)
    peak = max(int(x.max()), -int(x.min())) if x.size else 0
    if not m.size or int(s.min()) < 31 or peak * int(m.max()) >= 1 << 62:
        return integer.requantize(x, m, s, "tflite")
    h = x * m
    h += 1 << 30
    h >>= 31
    r = s - 31
    if not r.any():
        return h
    down = (h < 0) & (r > 0)  # ties of negative values round down
    h += np.where(r > 0, np.left_shift(1, np.maximum(r - 1, 0)), 0)
    h -= down
    h >>= r
    return h


def _measured(acc: np.ndarray, limit: int, planned: list[Action], general: list[Action]) -> None:
    """Runs `planned` when every accumulator is within `limit`, else `general`."""
    fits = max(float(acc.max()), -float(acc.min())) <= limit
    for action in planned if fits else general:
        action()


class OutputStage:
    """out = clamp(zero_point + R(acc + bias)) for one instruction's parameters, with the
    channels on acc's last axis, or on its first with `channels_first`.

    `bias` (int64) is one value per channel, or broadcasts against acc (channels last).
    Built once per instruction when its table is constant, so each call only runs the
    array passes.
    """

    def __init__(
        self,
        table: Table,
        bias: np.ndarray,
        rounding: str,
        zero_point: int,
        clamp: tuple[int, int],
        channels_first: bool = False,
    ) -> None:
        self.table, self.bias, self.rounding = table, bias, rounding
        self.zero_point, self.clamp, self.channels_first = zero_point, clamp, channels_first
        self.bias_peak = int(np.abs(bias).max()) if bias.size else 0
        self.per_channel = bias.size == table.multiplier.size
        self.floats = table.scale is not None and table.multiplier.size > 0
        self._forms: dict[tuple[int, int], FloatForm] = {}
        self._parts: dict[tuple[int, int], OutputStage] = {}

    def part(self, channels: slice) -> OutputStage:
        """The stage of some output channels (channels first, a bias per channel)."""
        start, stop, _ = channels.indices(self.table.multiplier.size)
        if (start, stop) not in self._parts:
            self._parts[start, stop] = OutputStage(
                self.table.part(channels),
                self.bias.reshape(-1)[channels],
                self.rounding,
                self.zero_point,
                self.clamp,
                self.channels_first,
            )
        return self._parts[start, stop]

    def _form(self, ndim: int, lift: int) -> FloatForm:
        if (ndim, lift) not in self._forms:
            bias = self.bias.reshape(-1) if self.per_channel else np.zeros_like(self.table.bias)
            self._forms[ndim, lift] = FloatForm.of(
                self.table, bias, self.zero_point, self.clamp, self.channels_first, ndim, lift
            )
        return self._forms[ndim, lift]

    def actions(
        self,
        acc: np.ndarray,
        bound: int,
        out: np.ndarray,
        scratch: Scratch,
        channels: slice | None = None,
    ) -> list[Action]:
        """The stage for these arrays as numpy calls on fixed buffers (`float_actions`,
        or one compiled call: runtime/npu_jit.py) when the bound makes the float64 form
        exact; when the bound is too loose for it but smaller accumulators would fit, the
        same calls behind a measurement of acc; else one call of the stage. Channels
        first, out may have fewer columns than acc: the rest of each row is dropped."""
        return output_stage_calls(self._actions(acc, bound, out, scratch, channels))

    def _actions(
        self,
        acc: np.ndarray,
        bound: int,
        out: np.ndarray,
        scratch: Scratch,
        channels: slice | None,
    ) -> list[Action]:
        stage = self if channels is None else self.part(channels)
        if out.shape == acc.shape:
            general: list[Action] = [partial(stage, acc, bound, out, scratch)]
        else:
            rows = scratch.get("rows", acc.shape, out.dtype)
            general = [
                partial(stage, acc, bound, rows, scratch),
                partial(np.copyto, out, rows[..., : out.shape[-1]]),
            ]
        limit = stage.float_limit(out.dtype) if stage.per_channel else -1
        if limit < 0 or not acc.size:
            return general
        form = stage._form(acc.ndim, stage._lift(out.dtype))
        compiled = npu_jit.requant_action(acc, out, form, stage.clamp, _wraps(form, out))
        if compiled is not None:
            planned = [compiled]
        else:
            planned = float_actions(acc, form, stage.clamp, out, scratch)
        if bound <= limit:
            return planned
        return [partial(_measured, acc, limit, planned, general)]

    def exact_form(self, dtype: np.dtype, bound: int) -> FloatForm | None:
        """The float64 stage's constants for outputs of `dtype` (a bias per channel), or
        None unless the float64 stage is exact for |acc| <= bound."""
        limit = self.float_limit(dtype) if self.per_channel else -1
        if limit < 0 or bound > limit:
            return None
        return self._form(3, self._lift(dtype))

    def folded_weights(self, weights: np.ndarray, bound: int, dtype: np.dtype) -> np.ndarray | None:
        """Channels first, per channel: [C, K + 1] float64, each output channel's centred
        weights (int64 [K, C]) times its scale, then its offset, so that their product
        with the input over a row of ones is the float64 stage's (acc + bias) * scale +
        offset; None unless the float64 stage is exact for |acc| <= bound into `dtype`.

        The product is exact in any order of summation: every term is an integer
        multiple of 2^-shift, and the sum of their magnitudes is within `float_limit`.
        """
        limit = self.float_limit(dtype) if self.per_channel and self.channels_first else -1
        if limit < 0 or bound > limit:
            return None
        form = self._form(2, self._lift(dtype))
        return np.concatenate([weights.T * form.scale, form.offset], axis=1)

    def folded_actions(
        self, p: np.ndarray, out: np.ndarray, scratch: Scratch, channels: slice
    ) -> list[Action]:
        """The rest of the stage for the channels' rows p [c, ...] of a product with
        `folded_weights`."""
        form = self._form(2, self._lift(out.dtype))
        actions = scaled_actions(p, form.tie[channels], form, self.clamp, out, scratch)
        return output_stage_calls(actions)

    def _lift(self, dtype: np.dtype) -> int:
        """The float64 form's lift for outputs of `dtype` (`lift_for`), none while a shift is
        below 31: |p| may then pass the int32 range, so the stage clamps before it converts
        (the lifted form converts first, which is exact while |p| < 2^22)."""
        if int(self.table.shift.min(initial=31)) < 31:
            return 0
        return lift_for(dtype, self.clamp)

    def float_limit(self, dtype: np.dtype) -> int:
        """The largest accumulator magnitude (bias not included) for which the float64
        form is exact into outputs of `dtype`, -1 for none: |x| m, the tie, 1/2, the zero
        point and the lift, in units of 2^-shift, must sum below 2^53 (2^52 when rounding
        half away from zero: its tie is half that unit)."""
        if not self.floats:
            return -1
        m, s = int(self.table.multiplier.max()), int(self.table.shift.max())
        if m == 0:
            return -1
        extra = (abs(self.zero_point) + self._lift(dtype) + 2) << s
        units = F64_EXACT >> 1 if self.rounding == "half_away_from_zero" else F64_EXACT
        return (units - 1 - extra) // m - self.bias_peak

    def __call__(
        self,
        acc: np.ndarray,
        bound: int,
        out: np.ndarray,
        scratch: Scratch,
        channels: slice = slice(None),
    ) -> None:
        """Requantize acc (exact integers in any dtype, |acc| <= bound; may be overwritten),
        the accumulators of `channels` (channels first) or of every channel."""
        if channels != slice(None):
            self.part(channels)(acc, bound, out, scratch)
            return
        limit = self.float_limit(out.dtype)
        if limit >= 0 and acc.size:
            if bound > limit:  # the bound is loose: measure
                bound = max(int(acc.max()), -int(acc.min()))
            if bound <= limit:
                if not self.per_channel:  # a bias per batch: add it first
                    acc = acc.astype(F64) + self.bias
                lift = self._lift(out.dtype)
                float_requantize(acc, self._form(acc.ndim, lift), self.clamp, out, scratch)
                return
        if self.channels_first:  # the shared functions take the channels last
            acc, out = np.moveaxis(acc, 0, -1), np.moveaxis(out, 0, -1)
        total = acc.astype(I64) + self.bias
        t, zp, (lo, hi) = self.table, self.zero_point, self.clamp
        if self.rounding == "tflite":
            y = tflite_multiply(total, t.multiplier, t.shift) + zp
            np.clip(y, lo, hi, out=y)
        else:
            y = qa.output_stage(
                total, t.multiplier, t.shift, self.rounding, zp, (lo, hi), out.dtype
            )
        np.copyto(out, y, casting="unsafe")
