"""Integer kernel of `qnn.conv_transpose2d` (dialects/qnn_layers.py), registered on import."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from npuc.diagnostics import KernelError
from npuc.dialects.qnn import ConvTranspose2dOp
from npuc.runtime.kernels.qnn_arith import FLOAT32_EXACT, FLOAT_EXACT, dot_bound
from npuc.runtime.kernels.window import window_extent
from npuc.runtime.nn_interpreter import _ints
from npuc.runtime.qnn_kernels import _centred, _finish, _with_bias, register_qnn_kernel

I64 = np.int64


def conv_transpose2d_acc(
    xc: np.ndarray,
    wc: np.ndarray,
    *,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    output_padding: Sequence[int],
) -> np.ndarray:
    """The scattered sums of (x - zp_x)(w - zp_w), exactly, as int64 [N, O, OH, OW].

    xc: centred input [N, C, H, W]; wc: centred weight [C, O, kH, kW]. The GEMM runs in
    float32 or float64 when every partial sum provably stays exact there, else in int64.
    """
    n, c, h, w = xc.shape
    _, o, kh, kw = wc.shape
    (sh, sw), (dh, dw) = strides, dilations
    bound = dot_bound(c * kh * kw, xc, wc)
    if bound >= 1 << 63:
        raise KernelError(f"accumulator bound {bound} exceeds the int64 range")
    dtype = np.float32 if bound < FLOAT32_EXACT else np.float64 if bound < FLOAT_EXACT else I64
    wmat = wc.reshape(c, o * kh * kw).T.astype(dtype)
    cols = np.matmul(wmat, xc.reshape(n, c, h * w).astype(dtype)).reshape(n, o, kh, kw, h, w)
    full_h = sh * (h - 1) + window_extent(kh, dh) + output_padding[0]
    full_w = sw * (w - 1) + window_extent(kw, dw) + output_padding[1]
    full = np.zeros((n, o, full_h, full_w), dtype)
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dh, j * dw
            full[:, :, r0 : r0 + sh * (h - 1) + 1 : sh, c0 : c0 + sw * (w - 1) + 1 : sw] += cols[
                :, :, i, j
            ]
    top, left, bottom, right = pads
    return full[:, :, top : full_h - bottom, left : full_w - right].astype(I64)


@register_qnn_kernel(ConvTranspose2dOp)
def _conv_transpose2d(op: ConvTranspose2dOp, a: list[np.ndarray]) -> list[np.ndarray]:
    acc = conv_transpose2d_acc(
        _centred(a[0], op.input), _centred(a[1], op.weight), strides=_ints(op.strides),
        pads=_ints(op.pads), dilations=_ints(op.dilations),
        output_padding=_ints(op.output_padding),
    )  # fmt: skip
    return [_finish(op, _with_bias(acc, a, (-1, 1, 1)))]
