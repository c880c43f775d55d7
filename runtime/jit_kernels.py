"""The NPU runtime's compiled kernels (numba), imported only through runtime/npu_jit.py.

Each kernel does, element by element, the same float64 or float32 operations as the
numpy path it replaces (npu_requant.float_actions / scaled_actions, the depthwise
accumulators of npu_conv), so the results are the same integers; it only saves the passes
over memory and the temporaries between them. Every product and sum there is exact (the
callers check the bounds), which is also why fused multiply-adds (fastmath "contract")
cannot change a result. Compiled on first use and cached on disk.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

EXACT = {"contract"}  # fused multiply-adds: exact operands give exact results either way
#: The output stage's scalars: (half, signed, wrap, lo, hi, lift) of `npu_requant.FloatForm`
#: and the clamp; its per-channel constants travel as [scale, offset, tie] rows [3, C].
Stage = tuple[float, bool, bool, int, int, int]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _output(v: float, scale: float, offset: float, tie: float, stage: Stage) -> int:
    """One output of `npu_requant.float_actions` from its accumulator v (any numeric
    type): p = v * scale + offset in float64, the tie's sign, then the int32 path (`wrap`,
    the lift being the output type's range) or the clamp and floor."""
    half, signed, wrap, lo, hi, lift = stage
    p = np.float64(v) * scale + offset
    if signed:
        p = p + math.copysign(tie, p)
        p = p + half
    if wrap:
        # clamped before the truncation, which then gives the same values; the store into
        # the output type drops the lift (a multiple of its range)
        p = min(max(p, np.float64(lo + lift)), np.float64(hi + lift))
        return np.int32(p)
    p = min(max(p, np.float64(lo)), np.float64(hi))
    return math.floor(p)


@njit(cache=True, nogil=True, error_model="numpy", fastmath=EXACT)
def requantize_rows(
    acc: np.ndarray,
    out: np.ndarray,
    constants: np.ndarray,
    stage: Stage,
) -> None:
    """out[c, r, w] from acc[c, r, w] for the w < out's width (acc's tail columns are
    junk), channel c's constants at [c]."""
    channels, rows, width = out.shape
    for c in range(channels):
        s, o, t = constants[0, c], constants[1, c], constants[2, c]
        for r in range(rows):
            source, target = acc[c, r], out[c, r]
            for w in range(width):
                target[w] = _output(source[w], s, o, t, stage)


@njit(cache=True, nogil=True, error_model="numpy", fastmath=EXACT)
def depthwise(
    x: np.ndarray,
    weights: np.ndarray,
    geometry: tuple[int, int, int, int, int, int],
    phases: np.ndarray,
    padded_row: np.ndarray,
    acc: np.ndarray,
    staged: np.ndarray,
    out: np.ndarray,
    constants: np.ndarray,
    stage: Stage,
) -> None:
    """A depthwise convolution of stored x [Ci, H, W] into stored out [Co, OH, OW]
    (output channel c reads input channel c // (Co / Ci)), a channel at a time.

    The input channel is copied into `phases` [SH * SW, Hq * Wq] as float32: the padded
    image split by stride phase, [a SW + b, r Wq + q] holding padded[a + SH r, b + SW q]
    (the caller filled it and `padded_row` [SW * Wq] with the zero point, and only the
    interior is written; `_split_phases`). A tap
    (i, j) of output (oy, ox) reads phase ((i DH) % SH, (j DW) % SW) at (oy + (i DH) //
    SH) Wq + ox + (j DW) // SW, so each tap of a row of outputs is one contiguous run. The
    sums of x * w (float32: the caller bounds every partial sum below 2^24, so they are
    exact in any order) are those of the numpy path. A 3x3 kernel sums its nine taps and
    requantizes in one pass (into `staged` [OH * Wq], of out's type); others accumulate
    tap by tap into acc [OH * Wq] first.
    `geometry` = (SH, SW, DH, DW, top, left).
    """
    sh, sw, dh, dw, _, _ = geometry
    co, oh, ow = out.shape
    ci = x.shape[0]
    kh, kw = weights.shape[1], weights.shape[2]
    wq = acc.shape[0] // oh
    hq = phases.shape[1] // wq
    run = oh * wq
    multiplier = co // ci
    for c in range(co):
        if c % multiplier == 0:
            _split_phases(x[c // multiplier], geometry, wq, hq, padded_row, phases)
        if kh == 3 and kw == 3:
            _depthwise_3x3(phases, weights[c], geometry, wq, staged, out[c], constants[:, c], stage)
            continue
        acc[:] = 0
        for i in range(kh):
            for j in range(kw):
                tap = weights[c, i, j]
                base = (i * dh // sh) * wq + j * dw // sw
                source = phases[(i * dh) % sh * sw + (j * dw) % sw, base : base + run]
                for k in range(run):
                    acc[k] += tap * source[k]
        s, o, t = constants[0, c], constants[1, c], constants[2, c]
        for oy in range(oh):
            line = acc[oy * wq : oy * wq + ow]
            target = out[c, oy]
            for ox in range(ow):
                target[ox] = _output(line[ox], s, o, t, stage)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _split_phases(
    plane: np.ndarray,
    geometry: tuple[int, int, int, int, int, int],
    wq: int,
    hq: int,
    padded_row: np.ndarray,
    phases: np.ndarray,
) -> None:
    """One input channel [H, W] into the stride phases of `depthwise`, a row at a time:
    converted into the interior of `padded_row`, then dealt to the column phases (two
    phases in one loop, which vectorizes as an interleaved load)."""
    sh, sw, _, _, top, left = geometry
    h, w = plane.shape
    interior = padded_row[left : left + w]
    for a in range(sh):
        r0 = max(0, (top - a + sh - 1) // sh)
        r1 = min(hq, (h + top - a + sh - 1) // sh)
        for r in range(r0, r1):
            # sliced first: an index from range() alone needs no wrap-around check, which
            # keeps the loops vectorized
            line = plane[r * sh + a - top]
            for col in range(w):
                interior[col] = np.float32(line[col])
            if sw == 1:
                phase = phases[a, r * wq : (r + 1) * wq]
                for q in range(wq):
                    phase[q] = padded_row[q]
            elif sw == 2:
                even = phases[a * 2, r * wq : (r + 1) * wq]
                odd = phases[a * 2 + 1, r * wq : (r + 1) * wq]
                for q in range(wq):
                    even[q] = padded_row[2 * q]
                    odd[q] = padded_row[2 * q + 1]
            else:
                for b in range(sw):
                    phase = phases[a * sw + b, r * wq : (r + 1) * wq]
                    for q in range(wq):
                        phase[q] = padded_row[q * sw + b]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _depthwise_3x3(
    phases: np.ndarray,
    taps: np.ndarray,
    geometry: tuple[int, int, int, int, int, int],
    wq: int,
    staged: np.ndarray,
    out: np.ndarray,
    constants: np.ndarray,
    stage: Stage,
) -> None:
    """One channel of `depthwise` with a 3x3 kernel: every output's nine taps summed and
    requantized in one pass over the phases' runs into `staged` [OH * Wq], then its rows'
    first OW columns copied out (one long loop vectorizes where rows of a small image
    are too short to)."""
    sh, sw, dh, dw, _, _ = geometry
    oh, ow = out.shape
    run = oh * wq
    t00, t01, t02 = taps[0, 0], taps[0, 1], taps[0, 2]
    t10, t11, t12 = taps[1, 0], taps[1, 1], taps[1, 2]
    t20, t21, t22 = taps[2, 0], taps[2, 1], taps[2, 2]
    scale, offset, tie = constants[0], constants[1], constants[2]
    p0, p1, p2 = 0, dw % sw, (2 * dw) % sw
    c0, c1, c2 = 0, dw // sw, 2 * dw // sw
    r0, r1, r2 = 0, (dh // sh) * wq, (2 * dh // sh) * wq
    f0, f1, f2 = 0, (dh % sh) * sw, ((2 * dh) % sh) * sw
    s00 = phases[f0 + p0, r0 + c0 : r0 + c0 + run]
    s01 = phases[f0 + p1, r0 + c1 : r0 + c1 + run]
    s02 = phases[f0 + p2, r0 + c2 : r0 + c2 + run]
    s10 = phases[f1 + p0, r1 + c0 : r1 + c0 + run]
    s11 = phases[f1 + p1, r1 + c1 : r1 + c1 + run]
    s12 = phases[f1 + p2, r1 + c2 : r1 + c2 + run]
    s20 = phases[f2 + p0, r2 + c0 : r2 + c0 + run]
    s21 = phases[f2 + p1, r2 + c1 : r2 + c1 + run]
    s22 = phases[f2 + p2, r2 + c2 : r2 + c2 + run]
    for k in range(run):
        v = t00 * s00[k] + t01 * s01[k] + t02 * s02[k]
        v += t10 * s10[k] + t11 * s11[k] + t12 * s12[k]
        v += t20 * s20[k] + t21 * s21[k] + t22 * s22[k]
        staged[k] = _output(v, scale, offset, tie, stage)
    for oy in range(oh):
        line = staged[oy * wq : oy * wq + ow]
        target = out[oy]
        for ox in range(ow):
            target[ox] = line[ox]


@njit(cache=True, nogil=True, error_model="numpy", fastmath=EXACT)
def depthwise_3x3_same(
    x: np.ndarray,
    weights: np.ndarray,
    zero_point: float,
    flat: np.ndarray,
    edges: np.ndarray,
    out: np.ndarray,
    constants: np.ndarray,
    stage: Stage,
) -> None:
    """`depthwise` for a 3x3 kernel with unit strides and dilations and one pixel of
    padding on every side, from x [C, H, W] into out [C, H, W], both contiguous, a
    channel at a time.

    The channel is converted into `flat` [(H + 2) W + 2] (float32) between a row of zero
    points above and below (and one more zero point at each end; the caller filled them):
    without columns of padding, tap (i, j) of output k = y W + x reads flat[k + i W + j],
    so each tap is one contiguous run over the whole plane and the outputs are written
    straight into out's plane. The first and last column read their neighbour row's edge
    where the padding's zero point belongs: `edges` [H W] marks them (bit 0 the first
    column, bit 1 the last), and their left or right column of taps is summed with the
    zero point instead (a select, so the loop stays vectorized; the same exact float32
    sums, in another order).
    """
    c, h, w = out.shape
    run = h * w
    for ch in range(c):
        plane = x[ch].reshape(run)
        interior = flat[w + 1 : w + 1 + run]
        for k in range(run):
            interior[k] = np.float32(plane[k])
        t = weights[ch]
        t00, t01, t02 = t[0, 0], t[0, 1], t[0, 2]
        t10, t11, t12 = t[1, 0], t[1, 1], t[1, 2]
        t20, t21, t22 = t[2, 0], t[2, 1], t[2, 2]
        s00, s01, s02 = flat[0:run], flat[1 : 1 + run], flat[2 : 2 + run]
        s10, s11, s12 = flat[w : w + run], flat[w + 1 : w + 1 + run], flat[w + 2 : w + 2 + run]
        b = 2 * w
        s20, s21, s22 = flat[b : b + run], flat[b + 1 : b + 1 + run], flat[b + 2 : b + 2 + run]
        scale, offset, tie = constants[0, ch], constants[1, ch], constants[2, ch]
        target = out[ch].reshape(run)
        zp = np.float32(zero_point)
        left_pad, right_pad = (t00 + t10 + t20) * zp, (t02 + t12 + t22) * zp
        for k in range(run):
            vl = t00 * s00[k] + t10 * s10[k] + t20 * s20[k]
            vm = t01 * s01[k] + t11 * s11[k] + t21 * s21[k]
            vr = t02 * s02[k] + t12 * s12[k] + t22 * s22[k]
            e = edges[k]
            if e & 1:
                vl = left_pad
            if e & 2:
                vr = right_pad
            target[k] = _output(vl + vm + vr, scale, offset, tie, stage)


@njit(cache=True, nogil=True, error_model="numpy", fastmath=EXACT)
def depthwise_3x3_s2(
    x: np.ndarray,
    weights: np.ndarray,
    zero_point: float,
    phases: np.ndarray,
    edges: np.ndarray,
    out: np.ndarray,
    constants: np.ndarray,
    stage: Stage,
) -> None:
    """`depthwise` for a 3x3 kernel with strides of 2 and one pixel of padding below and
    right, from x [C, 2 OH, 2 OW] into out [C, OH, OW], both contiguous, a channel at a
    time.

    The channel is split by row and column parity into `phases` [4, (OH + 1) OW + 1]
    (float32, [2 a + b, r OW + q] holding x[2 r + a, 2 q + b]; the caller filled it with
    the zero point, which stays in the last row and element), without columns of padding:
    each tap of output k = y OW + x is then one contiguous run of a phase, and the
    outputs are written straight into out's plane. The last column's right-hand taps read
    the next row's first pixel where the padding's zero point belongs: `edges` [OH OW]
    marks it (bit 1), and those taps are summed with the zero point instead.
    """
    c, oh, ow = out.shape
    run = oh * ow
    zp = np.float32(zero_point)
    p0, p1, p2, p3 = phases[0], phases[1], phases[2], phases[3]
    for ch in range(c):
        plane = x[ch]
        for r in range(oh):
            for a in range(2):
                line = plane[2 * r + a]
                even = phases[2 * a, r * ow : (r + 1) * ow]
                odd = phases[2 * a + 1, r * ow : (r + 1) * ow]
                for q in range(ow):
                    even[q] = np.float32(line[2 * q])
                    odd[q] = np.float32(line[2 * q + 1])
        t = weights[ch]
        t00, t01, t02 = t[0, 0], t[0, 1], t[0, 2]
        t10, t11, t12 = t[1, 0], t[1, 1], t[1, 2]
        t20, t21, t22 = t[2, 0], t[2, 1], t[2, 2]
        s00, s01, s02 = p0[0:run], p1[0:run], p0[1 : 1 + run]
        s10, s11, s12 = p2[0:run], p3[0:run], p2[1 : 1 + run]
        s20, s21, s22 = p0[ow : ow + run], p1[ow : ow + run], p0[ow + 1 : ow + 1 + run]
        scale, offset, tie = constants[0, ch], constants[1, ch], constants[2, ch]
        target = out[ch].reshape(run)
        right_pad = (t02 + t12 + t22) * zp
        for k in range(run):
            v = t00 * s00[k] + t01 * s01[k] + t10 * s10[k] + t11 * s11[k]
            v += t20 * s20[k] + t21 * s21[k]
            vr = t02 * s02[k] + t12 * s12[k] + t22 * s22[k]
            if edges[k] & 2:
                vr = right_pad
            target[k] = _output(v + vr, scale, offset, tie, stage)


@njit(cache=True, nogil=True, error_model="numpy", fastmath=EXACT)
def depthwise_channels_last(
    x: np.ndarray,
    weights: np.ndarray,
    geometry: tuple[int, int, int, int, int, int],
    padded: np.ndarray,
    acc: np.ndarray,
    out: np.ndarray,
    constants: np.ndarray,
    stage: Stage,
) -> None:
    """`depthwise` for many channels on a small image, channels last: x [C, H, W] copied
    into the interior of `padded` [Hp, Wp, C] (float32; the caller filled its border with
    the zero point), then each output's taps summed into acc [C] along the channels with
    weights [KH, KW, C], and requantized (the same exact float32 sums, in another order)."""
    sh, sw, dh, dw, top, left = geometry
    c, h, w = x.shape
    _, oh, ow = out.shape
    kh, kw = weights.shape[0], weights.shape[1]
    for y in range(h):
        for col in range(w):
            target = padded[y + top, col + left]
            for k in range(c):
                target[k] = np.float32(x[k, y, col])
    for oy in range(oh):
        for ox in range(ow):
            acc[:] = 0
            for i in range(kh):
                for j in range(kw):
                    source = padded[oy * sh + i * dh, ox * sw + j * dw]
                    taps = weights[i, j]
                    for k in range(c):
                        acc[k] += taps[k] * source[k]
            for k in range(c):
                out[k, oy, ox] = _output(
                    acc[k], constants[0, k], constants[1, k], constants[2, k], stage
                )


@njit(cache=True, nogil=True, error_model="numpy")
def lookup_pairs(lhs: np.ndarray, rhs: np.ndarray, table: np.ndarray, out: np.ndarray) -> None:
    """out = table[lhs byte * 256 + rhs byte] for 8-bit lhs, rhs and out [A, B, C, D]
    (given as uint8 views): `npu_kernels.eltwise_lookup` in one pass."""
    n0, n1, n2, n3 = out.shape
    for i in range(n0):
        for j in range(n1):
            for k in range(n2):
                a, b, target = lhs[i, j, k], rhs[i, j, k], out[i, j, k]
                for m in range(n3):
                    target[m] = table[(np.intp(a[m]) << 8) | np.intp(b[m])]


@njit(cache=True, nogil=True, error_model="numpy")
def average_whole(x: np.ndarray, out: np.ndarray, shift: int, lo: int, hi: int) -> None:
    """out[c] = clamp(round(sum(x[c]) / N) + shift, lo, hi) for stored x [C, N]: an average
    pool over the whole image with TFLite's rounding (half away from zero, on the stored
    values, zero point included), `shift` the output's zero point minus the input's."""
    channels, n = x.shape
    for c in range(channels):
        row = x[c]
        total = np.int64(0)
        for k in range(n):
            total += np.int64(row[k])
        magnitude = abs(total)
        quotient = magnitude // n
        if 2 * (magnitude - quotient * n) >= n:
            quotient += 1
        value = (-quotient if total < 0 else quotient) + shift
        out[c] = min(max(value, lo), hi)


@njit(cache=True, nogil=True, error_model="numpy", fastmath=EXACT)
def vector_matrix(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out[n] = sum over k of a[k] b[k, n] in float32, for integers a [K] and b [K, N]
    (the caller bounds every partial sum below 2^24, so the sums are exact in any order)."""
    k, n = b.shape
    out[:] = 0
    for i in range(k):
        v = np.float32(a[i])
        row = b[i]
        for j in range(n):
            out[j] += v * np.float32(row[j])


@njit(cache=True, nogil=True, error_model="numpy")
def to_float32(source: np.ndarray, target: np.ndarray) -> None:
    """target[r, k] = source[r, k] for 8- or 16-bit integers [R, N] into float32."""
    rows, n = source.shape
    for r in range(rows):
        s, t = source[r], target[r]
        for k in range(n):
            t[k] = np.float32(s[k])
