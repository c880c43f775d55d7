"""Exact GEMMs and convolutions of the NPU runtime, on numpy views of the arenas.

Convolutions multiply the stored input by the centred weights; the input zero point
joins the bias as -zp * sum(weights) (the padding holds the zero point). A GEMM runs in
float32 where every partial sum provably stays below 2^24, in float32 chunks of K summed
in float64, in float64 below 2^53, in int64 otherwise (qnn_arith's dtype choice, with a
bound from the weights' column sums), so each path gives the exact integers.

Ordinary and grouped convolutions run channel-major, as the arenas hold NCHW: the
weights [Co, K] times the im2col matrix [K, output pixels], so neither the input nor the
accumulators are transposed. Depthwise convolutions run channels-last, where one einsum
over the window view vectorizes along the channels.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from npuc.diagnostics import NpucError

from .npu_requant import F32, F32_EXACT, F64, F64_EXACT, I64, OutputStage, Scratch, exact_dtype

MAX_CHUNKS = 8  # float32 chunks summed in float64 before a float64 GEMM is cheaper
COLS_BUDGET = 1 << 27  # bytes of im2col matrix built at once
BAND_ELEMENTS = 1 << 20  # outputs per band of a convolution (im2col, GEMM, output stage)
TAPS_BLOCK = 1 << 16  # accumulators of a depthwise convolution's multiply-adds at once
GEMM_BAND = 1 << 18  # accumulators of a GEMM requantized while they are in cache


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
    a: np.ndarray,
    a_peak: int,
    b: Operand,
    k: int,
    scratch: Scratch | None = None,
    weights_first: bool = False,
    columns: slice = slice(None),
) -> tuple[np.ndarray, int]:
    """(a @ b exactly, a bound on its magnitude) for integer-valued a [..., K], b [..., K, N];
    with `weights_first`, (b^T @ a) for a [..., K, P], giving [..., N, P]; only b's
    `columns` (N) when given.

    Float32 when every partial sum stays below 2^24, else float32 chunks of K summed in
    float64, else float64 below 2^53, else int64 (as qnn_arith's exact GEMM dtype choice).
    Every partial sum of a column is at most max|a| * (its sum of |b|) <= a_peak * reach.
    """
    term = a_peak * b.peak
    bound = a_peak * b.reach
    batch = np.broadcast_shapes(a.shape[:-2], b.values.shape[:-2])
    n = len(range(b.values.shape[-1])[columns])
    shape = (*batch, n, a.shape[-1]) if weights_first else (*batch, a.shape[-2], n)

    def product(x: np.ndarray, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        w = w[..., columns]
        if weights_first:
            return np.matmul(np.swapaxes(w, -1, -2), x, out=out)
        return np.matmul(x, w, out=out)

    def rows(x: np.ndarray, k0: int, k1: int) -> np.ndarray:
        return x[..., k0:k1, :] if weights_first else x[..., k0:k1]

    if term == 0:
        return np.zeros(shape, F32), 0
    if bound >= 1 << 63:
        raise NpucError(f"an accumulator bound of {bound} exceeds the int64 range")
    if bound < F32_EXACT:
        out = scratch.get("acc", shape, F32) if scratch else None
        return product(a.astype(F32, copy=False), b.as_(F32), out), bound
    chunk = (F32_EXACT - 1) // term
    if chunk >= 1 and -(-k // chunk) <= MAX_CHUNKS and bound < F64_EXACT:
        a32, b32 = a.astype(F32, copy=False), b.as_(F32)
        part = scratch.get("acc", shape, F32) if scratch else np.empty(shape, F32)
        acc = scratch.get("acc64", shape, F64) if scratch else np.empty(shape, F64)
        for k0 in range(0, k, chunk):
            product(rows(a32, k0, k0 + chunk), b32[..., k0 : k0 + chunk, :], part)
            if k0:
                acc += part
            else:
                acc[...] = part
        return acc, bound
    dtype = F64 if bound < F64_EXACT else I64
    return product(a.astype(dtype), b.as_(dtype)), bound


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


@dataclass(frozen=True)
class Band:
    """Accumulators of some output rows and channels of one image: [Co, rows, OW] (channels
    first) or [rows, OW, Co] for a depthwise convolution, with a bound on their magnitude;
    with `columns`, [Co, rows, W] of which the first `columns` are outputs."""

    image: int
    rows: slice
    acc: np.ndarray
    bound: int
    channels_first: bool
    columns: int | None = None  # acc's columns past this many are discarded
    channels: slice | None = None  # the output channels of the band, if not all

    def write(self, stage: OutputStage, out: np.ndarray, scratch: Scratch) -> None:
        """Requantize the band into its part of the NCHW output `out`."""
        channels = slice(None) if self.channels is None else self.channels
        view = out[self.image, channels, self.rows]
        if not self.channels_first:
            view = view.transpose(1, 2, 0)
        if self.columns is None:
            stage(self.acc, self.bound, view, scratch, channels)
        else:  # whole rows, then the outputs among them
            rows = scratch.get("rows", self.acc.shape, view.dtype)
            stage(self.acc, self.bound, rows, scratch, channels)
            np.copyto(view, rows[..., : self.columns])


def conv_weights(w: np.ndarray, wzp: np.ndarray, geo: ConvGeometry) -> Operand:
    """Centred weights [Co, Cg, KH, KW] as the GEMM operand.

    Depthwise: [KH * KW, Co] (one row per tap); otherwise [groups, Cg * KH * KW, Co / groups]
    with rows in (input channel, tap row, tap column) order, matching the channel-major
    im2col.
    """
    wc = w.astype(I64) - wzp.reshape(-1, 1, 1, 1)
    co, cg, kh, kw = wc.shape
    if geo.depthwise:
        values = wc.reshape(co, kh * kw).T
    else:
        g = geo.groups
        values = wc.reshape(g, co // g, cg * kh * kw).transpose(0, 2, 1)
    return Operand.of(np.ascontiguousarray(values))


# A depthwise convolution with at least this many channels and at most this many output
# pixels runs as one channels-last einsum; otherwise as multiply-adds per tap, channels
# first (numpy's loops are fastest along a long contiguous axis).
DEPTHWISE_EINSUM_CHANNELS = 48
DEPTHWISE_EINSUM_PIXELS = 2048


def channels_first(geo: ConvGeometry, channels: int) -> bool:
    """Whether `conv2d_bands` gives accumulators channels first ([Co, rows, OW]): all but a
    depthwise convolution with many channels on a small image."""
    pixels = geo.out_hw[0] * geo.out_hw[1]
    einsum = channels >= DEPTHWISE_EINSUM_CHANNELS and pixels <= DEPTHWISE_EINSUM_PIXELS
    return not (geo.depthwise and einsum)


def _out_channels(weights: Operand, geo: ConvGeometry) -> int:
    return weights.values.shape[-1] * (1 if geo.depthwise else weights.values.shape[0])


def conv2d_inputs(
    x: np.ndarray, zero_point: int, weights: Operand, geo: ConvGeometry, scratch: Scratch
) -> list[np.ndarray]:
    """Each image of the stored input x (an NCHW view) as `conv2d_bands` reads it, bordered
    with the zero point: padded [C, H, W] for a GEMM, split by stride phase for a
    depthwise convolution by taps (`_phases`), padded [H, W, C] for one by einsum."""
    dtype = exact_dtype(storage_peak(x.dtype))
    if not geo.depthwise:
        prepare = partial(_padded, pads=geo.pads)
    elif channels_first(geo, _out_channels(weights, geo)):
        dtype = exact_dtype(storage_peak(x.dtype) * weights.reach)
        prepare = partial(_phases, geo=geo)
    else:
        dtype = exact_dtype(storage_peak(x.dtype) * weights.reach)
        prepare = partial(_padded_nhwc, pads=geo.pads)
    if x.shape[0] > 1:  # one scratch buffer per image
        return [prepare(x[i], zero_point, dtype, scratch=Scratch()) for i in range(x.shape[0])]
    return [prepare(x[0], zero_point, dtype, scratch=scratch)]


def conv2d_bands(
    inputs: list[np.ndarray],
    x_dtype: np.dtype,
    weights: Operand,
    geo: ConvGeometry,
    scratch: Scratch,
) -> Iterator[Band]:
    """Bands of sum x * wc over about BAND_ELEMENTS outputs each, from `conv2d_inputs` of a
    stored input of `x_dtype`.

    The padding holds the input zero point, so the exact accumulator sum (x - zp)(w - wzp)
    is each band minus zp * sum(wc) per output channel (`weights.sums`), which the caller
    adds with the bias.
    """
    peak = storage_peak(x_dtype)
    if not geo.depthwise:
        return _gemm_bands(inputs, peak, weights, geo, scratch)
    if channels_first(geo, _out_channels(weights, geo)):
        return _depthwise_taps(inputs, peak, weights, geo, scratch)
    return _depthwise_bands(inputs, peak, weights, geo, scratch)


def _row_bands(rows: int, per_row: int, cols_per_row: int, itemsize: int) -> Iterator[slice]:
    band = max(1, min(BAND_ELEMENTS // per_row, COLS_BUDGET // (cols_per_row * itemsize)))
    return (slice(r0, min(rows, r0 + band)) for r0 in range(0, rows, band))


def _padded(
    x: np.ndarray, zero_point: int, dtype: type, pads: Sequence[int], scratch: Scratch
) -> np.ndarray:
    """The stored input [C, H, W] of one image in `dtype`, bordered with its zero point."""
    top, left, bottom, right = pads
    c, h, w = x.shape
    out = scratch.get("xp", (c, h + top + bottom, w + left + right), dtype)
    for border in (out[:, :top], out[:, top + h :], out[:, :, :left], out[:, :, left + w :]):
        border.fill(zero_point)
    np.copyto(out[:, top : top + h, left : left + w], x, casting="unsafe")
    return out


def _gemm_bands(
    inputs: list[np.ndarray], peak: int, weights: Operand, geo: ConvGeometry, scratch: Scratch
) -> Iterator[Band]:
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel, geo.strides, geo.dilations
    oh, ow = geo.out_hw
    g, k, cog = weights.values.shape
    co = g * cog
    dtype = exact_dtype(peak)
    pointwise = kh == kw == 1 and sh == sw == 1 and not any(geo.pads)
    for image, xp in enumerate(inputs):
        for rows in _row_bands(oh, ow, k * ow, xp.itemsize):
            count = rows.stop - rows.start
            if pointwise:  # the input rows themselves, [C, rows * W]
                cols = xp[:, rows].reshape(g, k, count * ow)
            else:
                cols = scratch.get("cols", (xp.shape[0], kh, kw, count, ow), dtype)
                for i in range(kh):
                    r0 = i * dh + rows.start * sh
                    for j in range(kw):
                        tap = xp[:, r0 : r0 + sh * (count - 1) + 1 : sh,
                                 j * dw : j * dw + sw * (ow - 1) + 1 : sw]  # fmt: skip
                        np.copyto(cols[:, i, j], tap)
                cols = cols.reshape(g, k, count * ow)
            if g > 1:
                acc, bound = exact_gemm(cols, peak, weights, k, scratch, weights_first=True)
                yield Band(image, rows, acc.reshape(co, count, ow), bound, channels_first=True)
                continue
            step = max(1, GEMM_BAND // (count * ow))  # channels whose outputs stay in cache
            for c0 in range(0, co, step):
                channels = slice(c0, min(co, c0 + step))
                acc, bound = exact_gemm(cols, peak, weights, k, scratch, weights_first=True,
                                        columns=channels)  # fmt: skip
                part = acc.reshape(-1, count, ow)
                yield Band(image, rows, part, bound, channels_first=True, channels=channels)


def _depthwise_bands(
    inputs: list[np.ndarray], peak: int, weights: Operand, geo: ConvGeometry, scratch: Scratch
) -> Iterator[Band]:
    """Depthwise (one input channel per group): one einsum over the window view, channels
    last."""
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel, geo.strides, geo.dilations
    bound = peak * weights.reach
    dtype = exact_dtype(bound)
    oh, ow = geo.out_hw
    co = weights.values.shape[1]
    w = weights.as_(dtype).reshape(kh, kw, co)
    span = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
    for image, xh in enumerate(inputs):
        c = xh.shape[-1]
        if co != c:  # a channel multiplier: output channel o reads input channel o // (co / c)
            xh = xh[..., np.repeat(np.arange(c), co // c)]
        window = np.lib.stride_tricks.sliding_window_view(xh, span, axis=(0, 1))
        for rows in _row_bands(oh, co * ow, co * ow, xh.itemsize):
            view = window[rows.start * sh : (rows.stop - 1) * sh + 1 : sh,
                          : (ow - 1) * sw + 1 : sw, :, ::dh, ::dw]  # fmt: skip
            acc = scratch.get("acc", (rows.stop - rows.start, ow, co), dtype)
            np.einsum("hwcij,ijc->hwc", view, w, out=acc)
            yield Band(image, rows, acc, bound, channels_first=False)


def _phases(
    x: np.ndarray, zero_point: int, dtype: type, geo: ConvGeometry, scratch: Scratch
) -> np.ndarray:
    """The padded input [C, H, W] of one image split by stride phase: [SH, SW, C, Hq, Wq]
    with [a, b, c, r, s] = padded[c, a + SH r, b + SW s], bordered with the zero point.

    A tap (i, j) of output (oh, ow) reads phase ((i DH) % SH, (j DW) % SW) at row
    oh + (i DH) // SH, column ow + (j DW) // SW: a shifted window of one phase, so over the
    flattened phase every tap is one contiguous run. One extra row keeps the runs of the
    last outputs (whose tail columns are discarded) inside the buffer.
    """
    (sh, sw), (top, left, bottom, right) = geo.strides, geo.pads
    c, h, w = x.shape
    hp, wp = h + top + bottom, w + left + right
    hq, wq = -(-hp // sh), -(-wp // sw)
    out = scratch.get("phases", (sh, sw, c, hq + 1, wq), dtype)
    for a in range(sh):
        for b in range(sw):
            # the phase's rows r0:r1 and columns c0:c1 hold input pixels, the rest padding
            r0, c0 = max(0, -(-(top - a) // sh)), max(0, -(-(left - b) // sw))
            r1, c1 = -(-(top + h - a) // sh), -(-(left + w - b) // sw)
            phase = out[a, b]
            if r1 <= r0 or c1 <= c0:
                phase.fill(zero_point)
                continue
            for border in (phase[:, :r0], phase[:, r1:], phase[:, r0:r1, :c0],
                           phase[:, r0:r1, c1:]):  # fmt: skip
                border.fill(zero_point)
            rows = slice(a + sh * r0 - top, a + sh * (r1 - 1) - top + 1, sh)
            cols = slice(b + sw * c0 - left, b + sw * (c1 - 1) - left + 1, sw)
            np.copyto(phase[:, r0:r1, c0:c1], x[:, rows, cols], casting="unsafe")
    return out


def _depthwise_taps(
    inputs: list[np.ndarray], peak: int, weights: Operand, geo: ConvGeometry, scratch: Scratch
) -> Iterator[Band]:
    """Depthwise: a multiply-add per tap over [C, OH, Wq] (each tap one contiguous run of a
    stride phase, `_phases`), channels first; the columns past OW are discarded. Blocks of
    channels keep the passes in cache."""
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel, geo.strides, geo.dilations
    bound = peak * weights.reach
    dtype = exact_dtype(bound)
    oh, ow = geo.out_hw
    co = weights.values.shape[1]
    w = weights.as_(dtype).T.reshape(co, kh * kw, 1)
    for image, phases in enumerate(inputs):
        c = phases.shape[2]
        if co != c:  # a channel multiplier: output channel o reads input channel o // (co / c)
            phases = phases[:, :, np.repeat(np.arange(c), co // c)]
        *_, hq, wq = phases.shape
        flat = phases.reshape(sh, sw, co, hq * wq)
        run = oh * wq
        block = max(1, TAPS_BLOCK // run)
        for c0 in range(0, co, block):
            channels = slice(c0, min(co, c0 + block))
            a = scratch.get("acc", (channels.stop - c0, run), dtype)
            term = scratch.get("term", a.shape, dtype)
            for i in range(kh):
                for j in range(kw):
                    start = (i * dh // sh) * wq + j * dw // sw
                    tap = flat[i * dh % sh, j * dw % sw, channels, start : start + run]
                    if i == j == 0:
                        np.multiply(tap, w[channels, 0], out=a)
                    else:
                        np.multiply(tap, w[channels, i * kw + j], out=term)
                        a += term
            part = a.reshape(-1, oh, wq)
            yield Band(image, slice(0, oh), part, bound, True, ow, channels)


def _padded_nhwc(
    x: np.ndarray, zero_point: int, dtype: type, pads: Sequence[int], scratch: Scratch
) -> np.ndarray:
    """The stored input [C, H, W] of one image as [H, W, C] in `dtype`, bordered with its
    zero point."""
    top, left, bottom, right = pads
    c, h, w = x.shape
    out = scratch.get("xh", (h + top + bottom, w + left + right, c), dtype)
    for border in (out[:top], out[top + h :], out[:, :left], out[:, left + w :]):
        border.fill(zero_point)
    np.copyto(out[top : top + h, left : left + w], x.transpose(1, 2, 0), casting="unsafe")
    return out
