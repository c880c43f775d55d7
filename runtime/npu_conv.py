"""Exact convolutions of the NPU runtime, on numpy views of the arenas.

Convolutions multiply the stored input by the centred weights; the input zero point
joins the bias as -zp * sum(weights) (the padding holds the zero point). The GEMMs are
exact (runtime/npu_gemm.py).

A convolution is planned once (`conv2d_plan`) into numpy calls on fixed buffers.
Ordinary and grouped convolutions run channel-major, as the arenas hold NCHW: the
weights [Co, K] times the input itself (1x1) or im2col rows cut from the input split by
stride phase, so neither the input nor the accumulators are transposed. Depthwise
convolutions read the stride phases too: the taps side by side and one batched matmul,
or, many channels on a small image, one channels-last einsum (docs/runtime.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

import numpy as np

from . import npu_jit
from .npu_gemm import Operand, gemm_actions, storage_peak
from .npu_requant import (
    F64,
    I64,
    WRAP,
    Action,
    OutputStage,
    Scratch,
    exact_dtype,
)

COLS_BUDGET = 1 << 27  # bytes of im2col matrix built at once
BAND_ELEMENTS = 1 << 20  # outputs per band of a convolution (im2col, GEMM, output stage)
# accumulators of a depthwise convolution at once: its taps side by side (KH * KW times as
# many floats) stay in cache
TAPS_BLOCK = 1 << 14
PLAN_BAND_BYTES = 1 << 20  # a pointwise convolution's input and accumulators a band
# pointwise convolutions with at most this many input channels run their GEMM in float64
# with the output stage's scale and offset folded into the weights (`_folded_plan`)
FOLDED_CHANNELS = 32
REQUANT_ELEMENTS = 1 << 16  # float64 outputs of a folded GEMM at once: they stay in cache
GEMM_BAND = 1 << 18  # accumulators of a GEMM requantized while they are in cache


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
# pixels runs as one channels-last einsum; otherwise as a batched matmul of its taps,
# channels first (numpy's loops are fastest along a long contiguous axis).
DEPTHWISE_EINSUM_CHANNELS = 64
DEPTHWISE_EINSUM_PIXELS = 512


def channels_first(geo: ConvGeometry, channels: int) -> bool:
    """Whether a convolution accumulates channels first ([Co, rows, OW]): all but a
    depthwise convolution with many channels on a small image (`_einsum_plan`)."""
    pixels = geo.out_hw[0] * geo.out_hw[1]
    einsum = channels >= DEPTHWISE_EINSUM_CHANNELS and pixels <= DEPTHWISE_EINSUM_PIXELS
    return not (geo.depthwise and einsum)


def _out_channels(weights: Operand, geo: ConvGeometry) -> int:
    return weights.values.shape[-1] * (1 if geo.depthwise else weights.values.shape[0])


def conv2d_plan(
    x: np.ndarray,
    out: np.ndarray,
    zero_point: int,
    weights: Operand,
    stage: OutputStage,
    geo: ConvGeometry,
    scratch: Scratch,
    converted: tuple[object, bool] | None = None,
) -> list[Action]:
    """The conv2d instruction from the stored input x into the stored output out (NCHW
    views of the arenas) as numpy calls on fixed buffers, to run whenever x changes.

    `converted` = (key, current): a pointwise convolution converts its input into a
    buffer of the key's own, and skips that when an earlier plan with the key did and
    x has not changed since (current).

    The padding holds the input zero point, so the exact accumulator sum (x - zp)(w - wzp)
    is the product of the stored input and the centred weights minus zp * sum(wc) per
    output channel (`weights.sums`), which `stage` adds with the bias. Accumulators are
    requantized a channel group or block at a time, while they are in cache.
    """
    if not geo.depthwise:
        planner = _gemm_plan
    elif channels_first(geo, _out_channels(weights, geo)):
        planner = _taps_plan
    else:
        planner = _einsum_plan
    actions: list[Action] = []
    if geo.depthwise:
        bound = storage_peak(x.dtype) * weights.reach
        form = stage.exact_form(out.dtype, bound)
        wrap = form is not None and form.lift == WRAP.get(out.dtype)
        compiled = [
            npu_jit.depthwise_actions(
                x[i], out[i], zero_point, weights, form, stage.clamp, wrap, geo
            )
            for i in range(x.shape[0])
        ]
        if all(c is not None for c in compiled):
            return [action for c in compiled if c is not None for action in c]
    for image in range(x.shape[0]):
        plan = planner
        if planner is _gemm_plan and converted is not None:  # a buffer per image
            plan = partial(_gemm_plan, converted=((converted[0], image), converted[1]))
        actions += plan(x[image], out[image], zero_point, weights, stage, geo, scratch)
    return actions


def pointwise(geo: ConvGeometry) -> bool:
    """A 1x1 convolution with unit strides and no padding: a GEMM of the input itself."""
    return (
        geo.kernel == (1, 1) and geo.strides == (1, 1) and not any(geo.pads) and (not geo.depthwise)
    )


def _row_bands(
    rows: int, per_row: int, cols_per_row: int, itemsize: int, elements: int = BAND_ELEMENTS
) -> Iterator[slice]:
    band = max(1, min(elements // per_row, COLS_BUDGET // (cols_per_row * itemsize)))
    return (slice(r0, min(rows, r0 + band)) for r0 in range(0, rows, band))


def _gemm_plan(
    x: np.ndarray,
    out: np.ndarray,
    zero_point: int,
    weights: Operand,
    stage: OutputStage,
    geo: ConvGeometry,
    scratch: Scratch,
    converted: tuple[object, bool] | None = None,
) -> list[Action]:
    """Weights [Co, K] times the input: itself for a pointwise convolution, else im2col
    rows cut as contiguous runs from the stride phases (`_phases`), whose rows' tail
    columns the output stage drops."""
    peak = storage_peak(x.dtype)
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel, geo.strides, geo.dilations
    oh, ow = geo.out_hw
    g, k, cog = weights.values.shape
    co = g * cog
    dtype = exact_dtype(peak)
    itemsize = np.dtype(dtype).itemsize
    banded = pointwise(geo) and converted is None
    # the compiled output stage costs less than the folded GEMM's extra work
    if banded and g == 1 and k <= FOLDED_CHANNELS and not npu_jit.enabled():
        folded = stage.folded_weights(weights.values[0], peak * weights.reach, out.dtype)
        if folded is not None:
            return _folded_plan(x, out, folded, stage, scratch)
    if banded:  # the input rows themselves, converted a band at a time that stays in cache
        actions: list[Action] = []
        width, flat, xp = ow, None, None
        per_row = (x.shape[0] + co) * ow
        bands = _row_bands(oh, per_row, x.shape[0] * ow, itemsize, PLAN_BAND_BYTES // itemsize)
    elif pointwise(geo):  # converted whole into a buffer of its own, which others reuse
        xp = scratch.bordered(x.shape, dtype, 0, ("converted", converted[0]))
        current = converted[1]
        actions = [] if current else [npu_jit.convert_action(xp, x)]
        width, flat = ow, None
        bands = _row_bands(oh, ow, k * ow, itemsize)
    else:
        actions, phases = _phases(x, zero_point, dtype, geo, scratch)
        width = phases.shape[-1]
        flat = phases.reshape(sh, sw, x.shape[0], -1)
        bands = _row_bands(oh, ow, k * width, itemsize)
    for rows in bands:
        count = rows.stop - rows.start
        run = count * width
        if banded:
            band = scratch.get("xp", (x.shape[0], count, ow), dtype)
            actions.append(npu_jit.convert_action(band, x[:, rows]))
            cols = band.reshape(g, k, run)
        elif flat is None:
            cols = xp[:, rows].reshape(g, k, run)
        else:
            cols = scratch.get("cols", (x.shape[0], kh, kw, run), dtype)
            for i in range(kh):
                for j in range(kw):
                    start = (rows.start + i * dh // sh) * width + j * dw // sw
                    tap = flat[i * dh % sh, j * dw % sw, :, start : start + run]
                    actions.append(partial(np.copyto, cols[:, i, j], tap))
            cols = cols.reshape(g, k, run)
        if g > 1:
            gemm, acc, bound = gemm_actions(cols, peak, weights, k, scratch, weights_first=True)
            actions += gemm + stage.actions(
                acc.reshape(co, count, width), bound, out[:, rows], scratch
            )
            continue
        step = max(1, GEMM_BAND // run)  # channels whose outputs stay in cache
        for c0 in range(0, co, step):
            channels = slice(c0, min(co, c0 + step))
            gemm, acc, bound = gemm_actions(
                cols, peak, weights, k, scratch, weights_first=True, columns=channels
            )
            part = acc.reshape(-1, count, width)
            actions += gemm + stage.actions(part, bound, out[channels, rows], scratch, channels)
    return actions


def _folded_plan(
    x: np.ndarray, out: np.ndarray, folded: np.ndarray, stage: OutputStage, scratch: Scratch
) -> list[Action]:
    """A pointwise convolution with few input channels as float64 GEMMs of the folded
    weights [Co, K + 1] (`OutputStage.folded_weights`) and the input over a row of ones,
    a band of rows at a time: the GEMM costs less extra than the output stage's
    conversion, multiply and add it replaces."""
    c, h, w = x.shape
    co = folded.shape[0]
    actions: list[Action] = []
    for rows in _row_bands(h, (c + co) * w, c * w, 8, PLAN_BAND_BYTES // 8):
        run = (rows.stop - rows.start) * w
        band = scratch.bordered((c + 1, run), F64, 1, "folded")  # the last row stays ones
        actions.append(partial(np.copyto, band[:c].reshape(c, -1, w), x[:, rows]))
        step = max(1, REQUANT_ELEMENTS // run)
        for c0 in range(0, co, step):
            channels = slice(c0, min(co, c0 + step))
            p = scratch.get("p", (channels.stop - c0, run), F64)
            actions.append(partial(np.matmul, folded[channels], band, out=p))
            actions += stage.folded_actions(p, out[channels, rows], scratch, channels)
    return actions


def _einsum_plan(
    x: np.ndarray,
    out: np.ndarray,
    zero_point: int,
    weights: Operand,
    stage: OutputStage,
    geo: ConvGeometry,
    scratch: Scratch,
) -> list[Action]:
    """Depthwise (one input channel per group): one einsum over the window view, channels
    last."""
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel, geo.strides, geo.dilations
    bound = storage_peak(x.dtype) * weights.reach
    dtype = exact_dtype(bound)
    oh, ow = geo.out_hw
    co = weights.values.shape[1]
    w = weights.as_(dtype).reshape(kh, kw, co)
    top, left, bottom, right = geo.pads
    c, h, wd = x.shape
    shape = (h + top + bottom, wd + left + right, c)
    xh = scratch.bordered(shape, dtype, zero_point, ("nhwc", geo.pads))
    interior = xh[top : top + h, left : left + wd]
    actions: list[Action] = [partial(np.copyto, interior, x.transpose(1, 2, 0), casting="unsafe")]
    if co != c:  # a channel multiplier: output channel o reads input channel o // (co / c)
        repeated = scratch.get("repeated", (*shape[:2], co), dtype)
        index = np.repeat(np.arange(c), co // c)
        actions.append(partial(np.take, xh, index, axis=2, out=repeated))
        xh = repeated
    span = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
    window = np.lib.stride_tricks.sliding_window_view(xh, span, axis=(0, 1))
    for rows in _row_bands(oh, co * ow, co * ow, xh.itemsize):
        view = window[
            rows.start * sh : (rows.stop - 1) * sh + 1 : sh, : (ow - 1) * sw + 1 : sw, :, ::dh, ::dw
        ]
        acc = scratch.get("acc", (rows.stop - rows.start, ow, co), dtype)
        actions.append(partial(np.einsum, "hwcij,ijc->hwc", view, w, out=acc))
        actions += stage.actions(acc, bound, out[:, rows].transpose(1, 2, 0), scratch)
    return actions


def _phases(
    x: np.ndarray, zero_point: int, dtype: type, geo: ConvGeometry, scratch: Scratch
) -> tuple[list[Action], np.ndarray]:
    """(the copies, the buffer): the padded input [C, H, W] of one image split by stride
    phase, [SH, SW, C, Hq, Wq] with [a, b, c, r, s] = padded[c, a + SH r, b + SW s],
    bordered with the zero point.

    A tap (i, j) of output (oh, ow) reads phase ((i DH) % SH, (j DW) % SW) at row
    oh + (i DH) // SH, column ow + (j DW) // SW: a shifted window of one phase, so over the
    flattened phase every tap is one contiguous run. One extra row keeps the runs of the
    last outputs (whose tail columns are discarded) inside the buffer.
    """
    (sh, sw), (top, left, bottom, right) = geo.strides, geo.pads
    c, h, w = x.shape
    hp, wp = h + top + bottom, w + left + right
    hq, wq = -(-hp // sh), -(-wp // sw)
    out = scratch.bordered((sh, sw, c, hq + 1, wq), dtype, zero_point, ("phases", geo))
    words = _byte_pairs(x) if sw == 2 else None
    actions: list[Action] = []
    for a in range(sh):
        for b in range(sw):
            # the phase's rows r0:r1 and columns c0:c1 hold input pixels, the rest padding
            r0, c0 = max(0, -(-(top - a) // sh)), max(0, -(-(left - b) // sw))
            r1, c1 = -(-(top + h - a) // sh), -(-(left + w - b) // sw)
            if r1 <= r0 or c1 <= c0:
                continue
            rows = slice(a + sh * r0 - top, a + sh * (r1 - 1) - top + 1, sh)
            first, target = b + sw * c0 - left, out[a, b, :, r0:r1, c0:c1]
            if words is None:
                source = x[:, rows, first : b + sw * (c1 - 1) - left + 1 : sw]
                actions.append(partial(np.copyto, target, source, casting="unsafe"))
            else:
                pairs = words[:, rows, first // 2 : first // 2 + c1 - c0]
                actions += _byte_of_pairs(pairs, first % 2, target, scratch)
    return actions, out


def _byte_pairs(x: np.ndarray) -> np.ndarray | None:
    """An 8-bit input [C, H, W] with contiguous rows of even width as 16-bit words [C, H,
    W / 2], each holding two neighbouring columns (little-endian: the even one low), or
    None: splitting words with shifts beats numpy's every-other-byte copies."""
    if x.dtype.itemsize != 1 or x.shape[2] % 2 or x.strides[2] != 1 or x.strides[1] % 2:
        return None
    return x.view(np.int16 if x.dtype == np.int8 else np.uint16)


def _byte_of_pairs(
    pairs: np.ndarray, high: int, target: np.ndarray, scratch: Scratch
) -> list[Action]:
    """Steps writing the low (high = 0) or high byte of each 16-bit word into target, as
    the 8-bit value it stores: arithmetic shifts sign-extend int8 bytes."""
    if high:
        return [partial(np.right_shift, pairs, 8, out=target, casting="unsafe")]
    if pairs.dtype == np.uint16:
        return [partial(np.bitwise_and, pairs, 0xFF, out=target, casting="unsafe")]
    shifted = scratch.get("low_bytes", pairs.shape, np.int16)
    return [
        partial(np.left_shift, pairs, 8, out=shifted),
        partial(np.right_shift, shifted, 8, out=target, casting="unsafe"),
    ]


def _gather_taps(
    flat: np.ndarray, channels: slice, geo: ConvGeometry, wq: int, run: int, cols: np.ndarray
) -> list[Action]:
    """Copies filling cols [C, KH * KW, run] with each tap's run of the flattened stride
    phases `flat`, one strided copy a phase: the taps i with i DH = a (mod SH) step by
    SH / gcd(DH, SH), and their phase rows i DH // SH evenly too (columns alike)."""
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel, geo.strides, geo.dilations
    grid = cols.reshape(cols.shape[0], kh, kw, run)
    actions: list[Action] = []
    for a in range(sh):
        for b in range(sw):
            rows = [i for i in range(kh) if i * dh % sh == a]
            columns = [j for j in range(kw) if j * dw % sw == b]
            if not rows or not columns:
                continue
            source = flat[a, b, channels]
            i_step = rows[1] - rows[0] if len(rows) > 1 else 1
            j_step = columns[1] - columns[0] if len(columns) > 1 else 1
            start = (rows[0] * dh // sh) * wq + columns[0] * dw // sw
            item = source.itemsize
            view = np.lib.stride_tricks.as_strided(
                source[:, start:],
                (source.shape[0], len(rows), len(columns), run),
                (source.strides[0], i_step * dh // sh * wq * item, j_step * dw // sw * item, item),
                writeable=False,
            )
            target = grid[:, rows[0] : rows[-1] + 1 : i_step, columns[0] : columns[-1] + 1 : j_step]
            actions.append(partial(np.copyto, target, view))
    return actions


def _taps_plan(
    x: np.ndarray,
    out: np.ndarray,
    zero_point: int,
    weights: Operand,
    stage: OutputStage,
    geo: ConvGeometry,
    scratch: Scratch,
) -> list[Action]:
    """Depthwise, channels first, a block of channels at a time: the taps of each output
    of [C, OH, Wq] side by side (`_gather_taps`, each tap one contiguous run of a stride
    phase, `_phases`) and one batched matmul with each channel's weights, then the first
    OW columns of each row. Fewer passes over memory than a multiply-add per tap, in
    blocks small enough that the taps stay in cache."""
    (kh, kw), (sh, sw) = geo.kernel, geo.strides
    bound = storage_peak(x.dtype) * weights.reach
    dtype = exact_dtype(bound)
    oh = geo.out_hw[0]
    co, c = weights.values.shape[1], x.shape[0]
    if (sh, sw) != (1, 1) and co == c:
        return _strided_taps_plan(x, out, zero_point, weights, stage, geo, scratch)
    wq = -(-(x.shape[2] + geo.pads[1] + geo.pads[3]) // sw)  # as `_phases` lays them out
    run = oh * wq
    block = max(1, TAPS_BLOCK // run)
    # split by phase a block at a time, so the phases stay in cache, unless a channel
    # multiplier repeats input channels (then all at once)
    actions: list[Action] = []
    if co != c:  # output channel o reads input channel o // (co / c)
        prepare, whole = _phases(x, zero_point, dtype, geo, scratch)
        repeated = scratch.get("repeated", (sh, sw, co, *whole.shape[3:]), dtype)
        index = np.repeat(np.arange(c), co // c)
        actions += [*prepare, partial(np.take, whole, index, axis=2, out=repeated)]
        everything = repeated.reshape(sh, sw, co, -1)
    rows = weights.as_(dtype).T.reshape(co, 1, kh * kw)  # each channel's taps
    for c0 in range(0, co, block):
        channels = slice(c0, min(co, c0 + block))
        count = channels.stop - c0
        if co != c:
            flat, local = everything, channels
        else:
            prepare, phases = _phases(x[channels], zero_point, dtype, geo, scratch)
            actions += prepare
            flat, local = phases.reshape(sh, sw, count, -1), slice(None)
        acc = scratch.get("acc", (count, 1, run), dtype)
        cols = scratch.get("taps", (count, kh * kw, run), dtype)
        actions += _gather_taps(flat, local, geo, wq, run, cols)
        actions.append(partial(np.matmul, rows[channels], cols, out=acc))
        actions += stage.actions(acc.reshape(-1, oh, wq), bound, out[channels], scratch, channels)
    return actions


def _strided_taps_plan(
    x: np.ndarray,
    out: np.ndarray,
    zero_point: int,
    weights: Operand,
    stage: OutputStage,
    geo: ConvGeometry,
    scratch: Scratch,
) -> list[Action]:
    """Depthwise with strides and no channel multiplier, a block of channels at a time: the
    input converted into a buffer bordered with the zero point, then every output's taps
    copied side by side from one strided view of it (a stride phase split would move
    the input twice) and one batched matmul with each channel's weights."""
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel, geo.strides, geo.dilations
    top, left, bottom, right = geo.pads
    bound = storage_peak(x.dtype) * weights.reach
    dtype = exact_dtype(bound)
    oh, ow = geo.out_hw
    c, h, w = x.shape
    block = max(1, TAPS_BLOCK // (oh * ow))
    rows = weights.as_(dtype).T.reshape(c, 1, kh * kw)  # each channel's taps
    actions: list[Action] = []
    for c0 in range(0, c, block):
        channels = slice(c0, min(c, c0 + block))
        count = channels.stop - c0
        padded = scratch.bordered(
            (count, h + top + bottom, w + left + right), dtype, zero_point, ("padded", geo)
        )
        s0, s1, s2 = padded.strides
        taps = np.lib.stride_tricks.as_strided(
            padded,
            (count, kh, kw, oh, ow),
            (s0, dh * s1, dw * s2, sh * s1, sw * s2),
            writeable=False,
        )
        cols = scratch.get("taps", (count, kh, kw, oh, ow), dtype)
        acc = scratch.get("acc", (count, 1, oh * ow), dtype)
        actions += [
            partial(
                np.copyto, padded[:, top : top + h, left : left + w], x[channels], casting="unsafe"
            ),
            partial(np.copyto, cols, taps),
            partial(np.matmul, rows[channels], cols.reshape(count, kh * kw, -1), out=acc),
        ]
        actions += stage.actions(
            acc.reshape(count, oh, ow), bound, out[channels], scratch, channels
        )
    return actions
