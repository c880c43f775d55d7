"""Array kernels of the NPU instructions (docs/binary-format.md), on numpy views of the arenas.

The arithmetic is the `qnn` dialect's, from the shared functions (kernels/integer.py,
kernels/qnn_arith.py: requantize, rounding, pooling sums, TFLite softmax, LUTs), with
faster exact forms where they are hot:

- convolutions and matmuls multiply the stored input by the centred weights; the input
  zero point joins the bias as -zp * sum(weights). The GEMM runs in float32 where every
  partial sum provably stays below 2^24, in float32 chunks of K summed in float64, in
  float64 below 2^53, in int64 otherwise (qnn_arith's dtype choice, with a bound from
  the weights' column sums);
- TFLite requantization (`rounding = tflite`, shift >= 31) runs as one float64 floor
  (`tflite_requantize`) when |acc| * multiplier < 2^52, else in int64
  (`tflite_multiply`); tests/runtime/test_executor.py checks both against TFLite's
  two-rounding definition.

Each path gives the exact integers, so the choice only changes the speed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from npuc.diagnostics import NpucError

from .kernels import integer
from .kernels import qnn_arith as qa
from .kernels.qnn_more import tflite_divide

I64 = np.int64
F32 = np.float32
F64 = np.float64
F32_EXACT = 1 << 24  # a float32 sum is exact while every partial sum stays below this
F64_EXACT = 1 << 53
FLOAT_PRODUCT_EXACT = integer.FLOAT_PRODUCT_EXACT
MAX_CHUNKS = 8  # float32 chunks summed in float64 before a float64 GEMM is cheaper
COLS_BUDGET = 1 << 27  # bytes of im2col matrix built at once
BAND_ELEMENTS = 1 << 16  # outputs per band of a convolution (im2col and GEMM)
REQUANT_BLOCK = 1 << 15  # elements requantized at once: the float64 temporaries stay in cache


def exact_dtype(peak: int) -> type:
    """The narrowest of float32, float64 and int64 holding every integer up to `peak`."""
    return F32 if peak < F32_EXACT else F64 if peak < F64_EXACT else I64


# --------------------------------------------------------------------------- parameter tables


@dataclass(frozen=True)
class Table:
    """A decoded bias_scale table: per output channel (bias, multiplier, shift, weight zp),
    plus the float64 constants of `tflite_requantize` when every shift is >= 31."""

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
        if rounding == "tflite" and s.size and int(s.min()) >= 31:
            scale = np.ldexp(m.astype(F64), -s)
            tie = np.where(s > 31, np.ldexp(1.0, 30 - s), 0.0)
        return cls(bias, m, s, wzp, scale, tie)


class Scratch:
    """Reusable work buffers: a fresh array of a few hundred KiB costs page faults on every
    use, more than the arithmetic done in it."""

    def __init__(self) -> None:
        self._buffers: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: Sequence[int], dtype: type) -> np.ndarray:
        size = math.prod(shape) * np.dtype(dtype).itemsize
        buffer = self._buffers.get(name)
        if buffer is None or buffer.size < size:
            buffer = self._buffers[name] = np.empty(max(size, 1 << 12), np.uint8)
        return buffer[:size].view(dtype).reshape(shape)


def tflite_requantize(
    acc: np.ndarray,
    bias: np.ndarray,
    table: Table,
    zero_point: int,
    clamp: tuple[int, int],
    out: np.ndarray,
    scratch: Scratch,
) -> None:
    """out = clamp(zp + MultiplyByQuantizedMultiplier(acc + bias, m, shift)) in float64, exactly.

    With M = m 2^-31 and r = shift - 31 >= 1, TFLite computes h = floor(x M + 1/2)
    (the rounding doubling high multiply, as in integer._tflite_multiply_float) then rounds
    h / 2^r half away from zero. As h is an integer, that is floor(x M 2^-r + 1/2 +
    2^-(r+1)) for h >= 0 and floor(x M 2^-r + 1/2 - 2^-(r+1)) for h < 0; for -1/2 <= x M
    < 0 both give 0, so the sign of x decides (that of x M 2^-r). One floor replaces both
    roundings (r = 0: no second rounding, tie term 0). The caller guarantees |x| m < 2^52
    and (|zp| + 1) 2^shift < 2^52, so every product and sum below is exact in float64.
    The bias joins as bias m 2^-shift per channel; blocks of rows keep the float64
    temporaries in cache.
    """
    channels = acc.shape[-1]
    try:  # blocks of rows small enough for the cache
        acc2, out2 = acc.reshape(-1, channels), out.reshape(-1, channels, copy=False)
    except ValueError:  # a strided output that cannot be flattened: one block
        acc2, out2 = acc[None], out[None]
    step = max(1, REQUANT_BLOCK // channels) if acc2.ndim == 2 else 1
    offset = bias * table.scale  # exact: |bias| m < 2^52
    for r0 in range(0, acc2.shape[0], step):
        a = acc2[r0 : r0 + step]
        p = scratch.get("p", a.shape, F64)
        q = scratch.get("q", a.shape, F64)
        np.multiply(a, table.scale, out=p)
        p += offset
        np.copysign(table.tie, p, out=q)
        p += q
        p += 0.5 + zero_point
        np.clip(p, clamp[0], clamp[1], out=p)
        np.floor(p, out=out2[r0 : r0 + step], casting="unsafe")


def tflite_multiply(x: np.ndarray, multiplier, shift) -> np.ndarray:
    """integer.requantize(x, multiplier, shift, "tflite") for int64 x, in fewer int64 passes.

    Where every shift is >= 31 and |x| m < 2^62: h = (x m + 2^30) >> 31 is TFLite's rounding
    doubling high multiply (floor(x M + 1/2), see tflite_requantize), and (h + 2^(r-1) -
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


def output_stage(
    acc: np.ndarray,
    bound: int,
    bias: np.ndarray,
    table: Table,
    rounding: str,
    zero_point: int,
    clamp: tuple[int, int],
    out: np.ndarray,
    scratch: Scratch,
) -> None:
    """out = clamp(zero_point + R(acc + bias)) with the channels on acc's last axis.

    `bound` bounds |acc|; acc holds exact integers in any dtype and may be overwritten;
    bias (int64) broadcasts.
    """
    bias_peak = int(np.abs(bias).max()) if bias.size else 0
    peak = bound + bias_peak
    if table.scale is not None and table.multiplier.size:
        m = int(table.multiplier.max())
        if peak * m >= FLOAT_PRODUCT_EXACT and acc.size:  # the bound is loose: measure
            peak = max(int(acc.max()), -int(acc.min())) + bias_peak
        fits = peak * m < FLOAT_PRODUCT_EXACT
        if fits and (abs(zero_point) + 1) << int(table.shift.max()) < FLOAT_PRODUCT_EXACT:
            if bias.size == acc.shape[-1]:
                tflite_requantize(acc, bias.reshape(-1), table, zero_point, clamp, out, scratch)
            else:  # a bias per batch: add it first
                total = acc.astype(F64) + bias
                tflite_requantize(total, np.zeros(acc.shape[-1], I64), table, zero_point, clamp,
                                  out, scratch)  # fmt: skip
            return
    total = acc.astype(I64) + bias
    if rounding == "tflite":
        y = tflite_multiply(total, table.multiplier, table.shift) + zero_point
        np.clip(y, clamp[0], clamp[1], out=y)
    else:
        y = qa.output_stage(total, table.multiplier, table.shift, rounding, zero_point, clamp,
                            out.dtype)  # fmt: skip
    np.copyto(out, y, casting="unsafe")


# --------------------------------------------------------------------------- exact GEMMs


def storage_peak(dtype: np.dtype) -> int:
    """The largest magnitude a stored integer of `dtype` can have."""
    info = np.iinfo(dtype)
    return max(-int(info.min), int(info.max))


@dataclass
class Operand:
    """A constant GEMM operand (weights minus their zero points), converted lazily to each
    dtype a GEMM asks for; `sums` holds its sums over K (per output column), which fold
    the other operand's zero point into the bias."""

    values: np.ndarray  # int64 [..., K, N]
    peak: int  # the largest |value|
    reach: int  # the largest sum of |values| of a column: |a . column| <= max|a| * reach
    sums: np.ndarray  # int64 [..., N]

    @classmethod
    def of(cls, values: np.ndarray) -> Operand:
        if not values.size:
            return cls(values, 0, 0, values.sum(axis=-2))
        magnitude = np.abs(values)
        reach = int(magnitude.sum(axis=-2).max())
        return cls(values, int(magnitude.max()), reach, values.sum(axis=-2))

    def __post_init__(self) -> None:
        self._cache: dict[type, np.ndarray] = {}

    def as_(self, dtype: type) -> np.ndarray:
        if dtype not in self._cache:
            self._cache[dtype] = np.ascontiguousarray(self.values.astype(dtype))
        return self._cache[dtype]


def exact_gemm(
    a: np.ndarray, a_peak: int, b: Operand, k: int, scratch: Scratch | None = None
) -> tuple[np.ndarray, int]:
    """(a @ b exactly, a bound on its magnitude) for integer-valued a [..., K], b [..., K, N].

    Float32 when every partial sum stays below 2^24, else float32 chunks of K summed in
    float64, else float64 below 2^53, else int64 (as qnn_arith's exact GEMM dtype choice).
    Every partial sum of a column is at most max|a| * (its sum of |b|) <= a_peak * reach.
    """
    term = a_peak * b.peak
    bound = a_peak * b.reach
    batch = np.broadcast_shapes(a.shape[:-2], b.values.shape[:-2])
    shape = (*batch, a.shape[-2], b.values.shape[-1])
    if term == 0:
        return np.zeros(shape, F32), 0
    if bound >= 1 << 63:
        raise NpucError(f"an accumulator bound of {bound} exceeds the int64 range")
    if bound < F32_EXACT:
        out = scratch.get("acc", shape, F32) if scratch else None
        return np.matmul(a.astype(F32, copy=False), b.as_(F32), out=out), bound
    chunk = (F32_EXACT - 1) // term
    if chunk >= 1 and -(-k // chunk) <= MAX_CHUNKS and bound < F64_EXACT:
        a32, b32 = a.astype(F32, copy=False), b.as_(F32)
        part = scratch.get("acc", shape, F32) if scratch else np.empty(shape, F32)
        acc = scratch.get("acc64", shape, F64) if scratch else np.empty(shape, F64)
        for k0 in range(0, k, chunk):
            np.matmul(a32[..., k0 : k0 + chunk], b32[..., k0 : k0 + chunk, :], out=part)
            if k0:
                acc += part
            else:
                acc[...] = part
        return acc, bound
    dtype = F64 if bound < F64_EXACT else I64
    return np.matmul(a.astype(dtype), b.as_(dtype)), bound


# --------------------------------------------------------------------------- conv2d


@dataclass(frozen=True)
class ConvGeometry:
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]
    dilations: tuple[int, int]
    groups: int
    kernel: tuple[int, int]
    out_hw: tuple[int, int]
    depthwise: bool


def conv_weights(w: np.ndarray, wzp: np.ndarray, geo: ConvGeometry) -> Operand:
    """Centred weights [Co, Cg, KH, KW] as the GEMM operand.

    Depthwise: [KH * KW, Co] (one row per tap); otherwise [groups, KH * KW * Cg, Co / groups]
    with rows in (tap row, tap column, input channel) order, matching the NHWC im2col.
    """
    wc = w.astype(I64) - wzp.reshape(-1, 1, 1, 1)
    co, cg, kh, kw = wc.shape
    if geo.depthwise:
        values = wc.reshape(co, kh * kw).T
    else:
        g = geo.groups
        values = wc.reshape(g, co // g, cg, kh, kw).transpose(0, 3, 4, 2, 1)
        values = values.reshape(g, kh * kw * cg, co // g)
    return Operand.of(np.ascontiguousarray(values))


def _padded_nhwc(
    x: np.ndarray, zero_point: int, dtype: type, pads: Sequence[int], scratch: Scratch
) -> np.ndarray:
    """The stored input as NHWC in `dtype`, bordered with its zero point."""
    xh = x.transpose(0, 2, 3, 1)
    top, left, bottom, right = pads
    n, h, w, c = xh.shape
    out = scratch.get("xp", (n, h + top + bottom, w + left + right, c), dtype)
    for border in (out[:, :top], out[:, top + h :], out[:, :, :left], out[:, :, left + w :]):
        border.fill(zero_point)
    np.copyto(out[:, top : top + h, left : left + w], xh, casting="unsafe")
    return out


def _taps(xp: np.ndarray, geo: ConvGeometry, i: int, j: int, rows: slice) -> np.ndarray:
    """NHWC view of the input pixels that tap (i, j) sees for output rows `rows`."""
    (sh, sw), (dh, dw), ow = geo.strides, geo.dilations, geo.out_hw[1]
    r0 = i * dh + rows.start * sh
    c0 = j * dw
    return xp[
        :, r0 : r0 + sh * (rows.stop - rows.start - 1) + 1 : sh, c0 : c0 + sw * (ow - 1) + 1 : sw
    ]


def conv2d_bands(
    x: np.ndarray, zero_point: int, weights: Operand, geo: ConvGeometry, scratch: Scratch
) -> tuple[np.ndarray, Iterator[tuple[slice, np.ndarray, int]]]:
    """(bias correction, bands of (output rows, sum x * wc as [N, rows, OW, Co], a bound)).

    x holds stored values (NCHW view); the padding holds its zero point, so the exact
    accumulator sum (x - zp)(w - wzp) is each band plus the correction -zp * sum(wc) per
    output channel, which the caller adds with the bias. Bands of about BAND_ELEMENTS
    outputs keep every pass of the output stage in cache.
    """
    peak = storage_peak(x.dtype)
    correction = -zero_point * weights.sums.reshape(-1)
    xp = _padded_nhwc(x, zero_point, exact_dtype(peak), geo.pads, scratch)
    n, oh, ow = xp.shape[0], *geo.out_hw
    co = weights.values.shape[-1] * (1 if geo.depthwise else weights.values.shape[0])
    k = weights.values.shape[-2] if not geo.depthwise else 1
    per_row = n * ow * max(co, k)
    band = max(1, min(BAND_ELEMENTS // per_row, COLS_BUDGET // (per_row * xp.itemsize)))
    rows = (slice(r0, min(oh, r0 + band)) for r0 in range(0, oh, band))
    if geo.depthwise:
        return correction, ((r, *_depthwise(xp, peak, weights, geo, r, scratch)) for r in rows)
    return correction, ((r, *_gemm_rows(xp, peak, weights, geo, r, scratch)) for r in rows)


def _gemm_rows(
    xp: np.ndarray, peak: int, weights: Operand, geo: ConvGeometry, rows: slice, scratch: Scratch
) -> tuple[np.ndarray, int]:
    n, c, ow = xp.shape[0], xp.shape[3], geo.out_hw[1]
    kh, kw = geo.kernel
    g = geo.groups
    cg = c // g
    k = kh * kw * cg
    co = weights.values.shape[0] * weights.values.shape[2]
    band = (n, rows.stop - rows.start, ow)
    if kh == kw == 1:
        cols = _taps(xp, geo, 0, 0, rows)
        if not cols.flags.c_contiguous:
            buffer = scratch.get("cols", cols.shape, xp.dtype)
            np.copyto(buffer, cols)
            cols = buffer
    else:
        taps = [_taps(xp, geo, i, j, rows) for i in range(kh) for j in range(kw)]
        cols = np.stack(taps, axis=3, out=scratch.get("cols", (*band, kh * kw, c), xp.dtype))
    p = math.prod(band)
    if g == 1:
        acc, bound = exact_gemm(cols.reshape(p, k), peak, weights, k, scratch)
    else:
        grouped = cols.reshape(p, kh * kw, g, cg).transpose(2, 0, 1, 3).reshape(g, p, k)
        acc, bound = exact_gemm(grouped, peak, weights, k)
        acc = acc.transpose(1, 0, 2)
    return acc.reshape(n, rows.stop - rows.start, ow, co), bound


def _depthwise(
    xp: np.ndarray, peak: int, weights: Operand, geo: ConvGeometry, rows: slice, scratch: Scratch
) -> tuple[np.ndarray, int]:
    """Depthwise (one input channel per group): one einsum over the window view, NHWC."""
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel, geo.strides, geo.dilations
    co, c = weights.values.shape[1], xp.shape[3]
    if co != c:  # a channel multiplier: output channel o reads input channel o // (co / c)
        xp = xp[..., np.repeat(np.arange(c), co // c)]
    bound = peak * weights.reach
    dtype = exact_dtype(bound)
    xp = xp.astype(dtype, copy=False)
    span = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
    window = np.lib.stride_tricks.sliding_window_view(xp, span, axis=(1, 2))
    ow = geo.out_hw[1]
    window = window[:, rows.start * sh : (rows.stop - 1) * sh + 1 : sh, : (ow - 1) * sw + 1 : sw,
                    :, ::dh, ::dw]  # fmt: skip
    acc = scratch.get("acc", (xp.shape[0], rows.stop - rows.start, ow, co), dtype)
    w = weights.as_(dtype).reshape(kh, kw, co)
    np.einsum("nhwcij,ijc->nhwc", window, w, out=acc)
    return acc, bound


# --------------------------------------------------------------------------- other kinds


def pool(x: np.ndarray, p: dict, out: np.ndarray) -> None:
    """The pool instruction on a stored NCHW x, written into out."""
    kernel, strides, pads = p["kernel"], p["strides"], p["pads"]
    lo, hi = p["clamp_min"], p["clamp_max"]
    if p["mode"] == "max":
        y = qa.max_pool2d(x, kernel, strides=strides, pads=pads, dilations=p["dilations"],
                          ceil_mode=p["ceil_mode"])  # fmt: skip
        np.copyto(out, np.clip(y, lo, hi))
        return
    xc = x.astype(I64) - p["ifm_zero_point"]
    whole = tuple(kernel) == x.shape[2:] and not any(pads)
    if whole:
        total, count = qa.global_avg_pool_sums(xc)
    else:
        total, count = qa.avg_pool2d_sums(xc, kernel, strides=strides, pads=pads,
                                          ceil_mode=p["ceil_mode"],
                                          count_include_pad=p["count_include_pad"])  # fmt: skip
    if p["mode"] == "avg":
        y = qa.pooled_output(total, count, p["multiplier"], p["shift"], p["rounding"],
                             p["ofm_zero_point"], (lo, hi), out.dtype,
                             zero_point_in=p["ifm_zero_point"])  # fmt: skip
    else:
        y = qa.output_stage(total, p["multiplier"], p["shift"], p["rounding"],
                            p["ofm_zero_point"], (lo, hi), out.dtype)  # fmt: skip
    np.copyto(out, y)


def eltwise(lhs: np.ndarray, rhs: np.ndarray, p: dict, out: np.ndarray) -> None:
    """The eltwise instruction (every kind) on stored operands of one shape."""
    kind, rounding = p["kind"], p["rounding"]
    lo, hi = p["clamp_min"], p["clamp_max"]
    if kind in ("maximum", "minimum"):
        y = np.maximum(lhs, rhs) if kind == "maximum" else np.minimum(lhs, rhs)
        np.copyto(out, np.clip(y, lo, hi))
        return
    a = lhs.astype(I64) - p["lhs_zero_point"]
    b = rhs.astype(I64) - p["rhs_zero_point"]
    zp = p["ofm_zero_point"]
    if kind == "prelu":  # as qnn.prelu (kernels/qnn_more.py)
        positive = integer.requantize(a, p["multiplier"], p["shift"], rounding)
        negative = integer.requantize(a * b, p["rhs_multiplier"], p["rhs_shift"], rounding)
        r = np.where(a >= 0, positive, negative)
        np.copyto(out, np.clip(r + zp, lo, hi), casting="unsafe")
        return
    if kind == "div":
        r = tflite_divide(a, b, p["multiplier"], p["shift"], p["overshift"])
        np.copyto(out, np.clip(r + zp, lo, hi), casting="unsafe")
        return
    if kind == "mul":
        acc = qa.exact_multiply(a, b)
    elif rounding == "tflite":  # qa.aligned_sum's steps with the faster tflite_multiply
        shift = p["left_shift"]
        if max(_peak(a), _peak(b)) << shift >= qa.INT64_SAFE:
            raise ValueError(f"operands shifted left by {shift} overflow int64")
        a1 = tflite_multiply(np.left_shift(a, shift), p["lhs_multiplier"], p["lhs_shift"])
        b1 = tflite_multiply(np.left_shift(b, shift), p["rhs_multiplier"], p["rhs_shift"])
        acc = a1 + b1 if kind == "add" else a1 - b1
    else:
        lhs_scale = (p["lhs_multiplier"], p["lhs_shift"])
        rhs_scale = (p["rhs_multiplier"], p["rhs_shift"])
        acc = qa.aligned_sum(a, b, p["left_shift"], lhs_scale, rhs_scale, rounding,
                             subtract=kind != "add")  # fmt: skip
    if kind == "squared_difference":
        acc = qa.exact_multiply(acc, acc)
    if rounding == "tflite":
        y = tflite_multiply(acc, p["multiplier"], p["shift"]) + zp
        np.copyto(out, np.clip(y, lo, hi), casting="unsafe")
    else:
        np.copyto(out, qa.output_stage(acc, p["multiplier"], p["shift"], rounding, zp, (lo, hi),
                                       out.dtype))  # fmt: skip


def _peak(x: np.ndarray) -> int:
    return max(int(x.max()), -int(x.min())) if x.size else 0


def lut(x: np.ndarray, table: np.ndarray, base: int, out: np.ndarray) -> None:
    index_lo, index_hi = (int(x.min()) - base, int(x.max()) - base) if x.size else (0, 0)
    if index_lo < 0 or index_hi >= table.size:
        raise NpucError(
            f"lut: input values outside the table (entries for [{base}, {base + table.size - 1}])"
        )
    np.copyto(out, integer.lut_lookup(x, table, base))


def move(x: np.ndarray, p: dict, out: np.ndarray) -> None:
    """out = pad(reshape(transpose(x, perm), inner), pads, pad_value)."""
    rank = out.ndim
    begins, ends = p["pads"][:rank], p["pads"][rank:]
    inner_shape = tuple(d - b - e for d, b, e in zip(out.shape, begins, ends, strict=True))
    moved = x.transpose(p["perm"]) if tuple(p["perm"]) != tuple(range(x.ndim)) else x
    if moved.shape != inner_shape:
        moved = moved.reshape(inner_shape)
    if any(begins) or any(ends):
        out[...] = p["pad_value"]
        out = out[tuple(slice(b, b + d) for b, d in zip(begins, inner_shape, strict=True))]
    np.copyto(out, moved)
