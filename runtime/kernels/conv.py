"""2-D convolution and transposed convolution (NCHW input, OIHW weights), float32.

`conv2d` computes in the operands' result dtype, so the integer kernels can run it
on float64 (exact for small integers) or int64 operands.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .window import pad_hw, tap, window_extent, windows

F32 = np.float32
COLS_BUDGET = 1 << 27  # bytes of im2col matrix materialised at once (128 MiB)
DEPTHWISE_BLOCK_BYTES = 1 << 18  # outputs of one depthwise block: with its input, in L2


def conv_output_hw(
    hw: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
) -> tuple[int, int]:
    """Output height and width of a convolution (floor rule)."""
    h, w = (
        (hw[a] + pads[a] + pads[a + 2] - window_extent(kernel[a], dilations[a])) // strides[a] + 1
        for a in range(2)
    )
    return h, w


def conv2d(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None = None,
    *,
    strides: Sequence[int] = (1, 1),
    pads: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1),
    groups: int = 1,
    max_cols_bytes: int = COLS_BUDGET,
) -> np.ndarray:
    """y[n, o] = sum over (c, i, j) of x_padded[n, g*Cg + c, ...] * w[o, c, i, j] (+ bias[o]).

    pads = [top, left, bottom, right]; w is [O, C / groups, kH, kW]. The im2col
    matrix is built in bands of output rows no bigger than `max_cols_bytes`
    (one band, so one GEMM, for all but very large feature maps).
    """
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    if cg * groups != c or o % groups:
        raise ValueError(f"conv2d: input {x.shape} and weight {w.shape} do not fit groups={groups}")
    oh, ow = conv_output_hw((h, wd), (kh, kw), strides, pads, dilations)
    dtype = np.result_type(x, w)
    xp = pad_hw(x, pads)
    if cg == 1 and groups > 1:
        y = _depthwise(xp, w, groups, (oh, ow), strides, dilations)
    elif groups == 1 and tuple(strides) == (1, 1) and kh * kw > 1 and 2 * o <= c and oh * ow > 0:
        y = _shifted_gemm(xp, w, (oh, ow), dilations)
    else:
        view = windows(xp, (kh, kw), (oh, ow), strides, dilations)
        wmat = w.reshape(groups, o // groups, cg * kh * kw)
        band = max(1, max_cols_bytes // (n * c * kh * kw * ow * dtype.itemsize))
        if band >= oh:
            # One copy into the [N, G, Cg*kH*kW, OH*OW] GEMM operand (a view when 1x1, unstrided).
            y = np.matmul(wmat, view.reshape(n, groups, cg * kh * kw, oh * ow))
        else:
            y = np.empty((n, groups, o // groups, oh * ow), dtype=dtype)
            for r0 in range(0, oh, band):
                r1 = min(oh, r0 + band)
                cols = view[..., r0:r1, :].reshape(n, groups, cg * kh * kw, (r1 - r0) * ow)
                y[..., r0 * ow : r1 * ow] = np.matmul(wmat, cols)
        y = y.reshape(n, o, oh, ow)
    if bias is not None:
        y += bias.reshape(o, 1, 1)
    return y


def _shifted_gemm(
    xp: np.ndarray, w: np.ndarray, out_hw: tuple[int, int], dilations: Sequence[int]
) -> np.ndarray:
    """A stride-1 convolution without an im2col matrix: one GEMM of every tap's weights
    with the padded input's flattened rows, then each tap's products added at its offset.

    Tap (i, j) of output pixel (r, q) reads flat input position (r + i*dh) * Wp + q + j*dw,
    so with positions counted on the padded width Wp, each tap's contribution is the
    GEMM's row block shifted by i*dh*Wp + j*dw; the columns past the output width are
    dropped at the end. Cheaper than im2col when the output has at most half the input's
    channels (the products are O*kH*kW rows, the im2col matrix C*kH*kW; the GEMM's
    columns span the padded width too).
    """
    n, c, hp, wp = xp.shape
    o, _, kh, kw = w.shape
    oh, ow = out_hw
    taps = w.transpose(2, 3, 0, 1).reshape(kh * kw * o, c)
    products = np.matmul(taps, xp.reshape(n, c, hp * wp)).reshape(n, kh * kw, o, hp * wp)
    length = (oh - 1) * wp + ow  # from the first output pixel to the last, on the padded width
    y = np.zeros((n, o, oh * wp), dtype=products.dtype)
    acc = y[..., :length]
    for t in range(kh * kw):
        i, j = divmod(t, kw)
        offset = i * dilations[0] * wp + j * dilations[1]
        acc += products[:, t, :, offset : offset + length]
    return np.ascontiguousarray(y.reshape(n, o, oh, wp)[..., :ow])


def _depthwise(
    xp: np.ndarray,
    w: np.ndarray,
    groups: int,
    out_hw: tuple[int, int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> np.ndarray:
    """One input channel per group: accumulate kernel taps, a block of channels at a time.

    Each tap is a pass over the block's outputs, so a block's outputs, products and
    input planes are kept small enough to stay in the cache over all its taps (on large
    images, passes over the whole tensor ran at memory speed, 2-5 times slower)."""
    n = xp.shape[0]
    o, _, kh, kw = w.shape
    mult = o // groups
    wk = w.reshape(groups, mult, kh, kw)
    dtype = np.result_type(xp, w)
    acc = np.zeros((n, groups, mult, *out_hw), dtype=dtype)
    group_bytes = max(1, mult * out_hw[0] * out_hw[1] * dtype.itemsize)
    step = max(1, DEPTHWISE_BLOCK_BYTES // group_bytes)
    for b in range(n):
        for g0 in range(0, groups, step):
            part = xp[b : b + 1, g0 : g0 + step]
            block = acc[b : b + 1, g0 : g0 + step]
            weights = wk[None, g0 : g0 + step]
            tmp = np.empty_like(block)
            for i in range(kh):
                for j in range(kw):
                    view = tap(part, i, j, out_hw, strides, dilations)[:, :, None]
                    np.multiply(view, weights[:, :, :, i, j, None, None], out=tmp)
                    block += tmp
    return acc.reshape(n, o, *out_hw)


def conv_transpose2d(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None = None,
    *,
    strides: Sequence[int] = (1, 1),
    pads: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1),
    output_padding: Sequence[int] = (0, 0),
    groups: int = 1,
) -> np.ndarray:
    """Gradient of conv2d with respect to its input; w is [C, O / groups, kH, kW].

    Every input pixel scatters w into the output at stride spacing; `pads` crop
    the full result and `output_padding` extends its bottom/right edge.
    """
    n, c, h, wd = x.shape
    ci, og, kh, kw = w.shape
    if ci != c or c % groups:
        raise ValueError(
            f"conv_transpose2d: input {x.shape} and weight {w.shape} do not fit groups={groups}"
        )
    (sh, sw), (dh, dw) = strides, dilations
    cg = c // groups
    # GEMM: for each group, [Og*kH*kW, Cg] x [Cg, H*W] gives every tap's contribution.
    wmat = w.reshape(groups, cg, og * kh * kw).transpose(0, 2, 1)
    cols = np.matmul(wmat, x.reshape(n, groups, cg, h * wd))
    cols = cols.reshape(n, groups, og, kh, kw, h, wd)
    full_h = sh * (h - 1) + window_extent(kh, dh) + output_padding[0]
    full_w = sw * (wd - 1) + window_extent(kw, dw) + output_padding[1]
    full = np.zeros((n, groups, og, full_h, full_w), dtype=F32)
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dh, j * dw
            full[..., r0 : r0 + sh * (h - 1) + 1 : sh, c0 : c0 + sw * (wd - 1) + 1 : sw] += cols[
                :, :, :, i, j
            ]
    top, left, bottom, right = pads
    y = full.reshape(n, groups * og, full_h, full_w)[
        :, :, top : full_h - bottom, left : full_w - right
    ]
    y = np.ascontiguousarray(y)
    if bias is not None:
        y += bias.reshape(-1, 1, 1)
    return y
