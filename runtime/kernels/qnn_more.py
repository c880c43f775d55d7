"""Integer kernels of the ops in dialects/qnn_elementwise.py, qnn_layers.py, qnn_movement.py, registered into QNN_KERNELS on import."""

from __future__ import annotations

import numpy as np

from npuc.diagnostics import KernelError
from npuc.dialects import qnn as qm
from npuc.dialects.nn_base import shape_of
from npuc.integer import requantize
from npuc.runtime.kernels import qnn_arith as qa
from npuc.runtime.kernels import resize
from npuc.runtime.nn_interpreter import _ints, _v
from npuc.runtime.qnn_kernels import _centred, _dtype, _finish, _zp, register_qnn_kernel

I64 = np.int64


@register_qnn_kernel(qm.ReduceSumOp)
def _reduce_sum(op: qm.ReduceSumOp, a: list[np.ndarray]) -> list[np.ndarray]:
    as_bytes = op.storage_view.data == "uint8"
    x = a[0].astype(I64)
    if as_bytes:
        x &= 0xFF  # LiteRT reads the int8 storage as uint8 bytes
    xc = x - _zp(op.input)
    axes = tuple(_ints(op.axes)) or tuple(range(xc.ndim))
    acc = xc.sum(axis=axes, keepdims=True)
    (multiplier,), (shift,) = op.multiplier.get_values(), op.shift.get_values()
    r = qa.wide_requantize(acc, multiplier, shift, op.rounding.data) + _zp(op.output).reshape(())
    if as_bytes:  # saturate as uint8, then the byte is the int8 result
        y = np.clip(r, 0, 255).astype(np.uint8).view(np.int8)
    else:
        lo, hi = op.clamp_bounds()
        y = np.clip(r, lo, hi).astype(_dtype(op.output))
    return [y.reshape(shape_of(op.output))]


@register_qnn_kernel(qm.SquaredDifferenceOp)
def _squared_difference(op: qm.SquaredDifferenceOp, a: list[np.ndarray]) -> list[np.ndarray]:
    diff = qa.aligned_sum(
        _centred(a[0], op.lhs), _centred(a[1], op.rhs), _v(op.left_shift),
        (_v(op.lhs_multiplier), _v(op.lhs_shift)), (_v(op.rhs_multiplier), _v(op.rhs_shift)),
        op.rounding.data, subtract=True,
    )  # fmt: skip
    return [_finish(op, qa.exact_multiply(diff, diff))]


@register_qnn_kernel(qm.PReluOp)
def _prelu(op: qm.PReluOp, a: list[np.ndarray]) -> list[np.ndarray]:
    xc = _centred(a[0], op.input)
    ac = _centred(a[1], op.alpha)
    xc, ac = np.broadcast_arrays(xc, ac)
    (multiplier,), (shift,) = op.multiplier.get_values(), op.shift.get_values()
    rounding = op.rounding.data
    positive = requantize(xc, multiplier, shift, rounding)
    negative = requantize(xc * ac, _v(op.alpha_multiplier), _v(op.alpha_shift), rounding)
    r = np.where(xc >= 0, positive, negative)
    lo, hi = op.clamp_bounds()
    return [np.clip(r + _zp(op.output), lo, hi).astype(_dtype(op.output))]


@register_qnn_kernel(qm.ResizeBilinearOp)
def _resize_bilinear(op: qm.ResizeBilinearOp, a: list[np.ndarray]) -> list[np.ndarray]:
    x = a[0].astype(I64)
    (h_in, w_in), (h_out, w_out) = x.shape[2:], shape_of(op.output)[2:]
    align, half = bool(op.align_corners.value.data), bool(op.half_pixel_centers.value.data)
    y0, y1, wy0, wy1 = resize.integer_bilinear_axis(h_in, h_out, align, half)
    x0, x1, wx0, wx1 = resize.integer_bilinear_axis(w_in, w_out, align, half)
    total = np.zeros((*x.shape[:2], h_out, w_out), I64)
    for ys, wy in ((y0, wy0), (y1, wy1)):
        for xs, wx in ((x0, wx0), (x1, wx1)):
            total += x[:, :, ys][:, :, :, xs] * (wy[:, None] * wx[None, :])
    half_unit = 1 << 19
    if op.rounding.data == "half_up":
        y = (total + half_unit) >> 20
    else:
        magnitude = (np.abs(total) + half_unit) >> 20
        y = np.where(total < 0, -magnitude, magnitude)
    q = qm.qtype(op.output)
    return [np.clip(y, q.qmin, q.qmax).astype(_dtype(op.output))]


def _leading_sign_bits(x: np.ndarray) -> np.ndarray:
    """CountLeadingSignBits of int32 values (31 for 0)."""
    v = np.where(x >= 0, x, ~x)
    return 31 - _bit_length(v)


def _bit_length(v: np.ndarray) -> np.ndarray:
    """bit_length of non-negative int64 values below 2^62."""
    v = np.asarray(v, I64)
    n = np.zeros(v.shape, I64)
    for step in (32, 16, 8, 4, 2, 1):
        big = v >= (I64(1) << step)
        n += np.where(big, step, 0)
        v = np.where(big, v >> step, v)
    return n + (v > 0)


def tflite_divide(
    num: np.ndarray, den: np.ndarray, multiplier: int, shift: int, overshift: str
) -> np.ndarray:
    """qnn.div's integer quotient before the zero point, for centred int64 operands.

    Shared by the qnn interpreter and the NPU runtime's eltwise div.
    """
    zero = den == 0  # TFLite leaves it undefined: saturate toward the numerator's sign
    num = np.where(den < 0, -num, num)
    den = np.where(zero, 1, np.abs(den))
    k = _bit_length(den) - 1
    inv = qa.fx_one_over_one_plus_x_for_x_in_0_1(np.left_shift(den, 31 - k) - (1 << 31))
    headroom = _leading_sign_bits(num)
    unscaled = qa.fx_mul(np.left_shift(num, headroom), inv)
    total = shift + k + headroom
    r = requantize(unscaled, multiplier, total, "tflite")
    exponent = total - 31  # RoundingDivideByPOT's exponent in TFLite
    if overshift == "x86" and np.any(exponent >= 32):
        if np.any(exponent >= 64):
            raise KernelError("a rounding shift of 64 or more")
        # (1ll << e) - 1 truncated to int32 is -1; the 32-bit arithmetic shift uses e mod 32.
        high = qa.fx_mul(unscaled, multiplier)
        wrapped = np.right_shift(high, exponent & 31) + (high >= 0)
        r = np.where(exponent >= 32, wrapped, r)
    return np.where(zero, np.sign(num) * (2**31 - 1), r)


@register_qnn_kernel(qm.DivOp)
def _div(op: qm.DivOp, a: list[np.ndarray]) -> list[np.ndarray]:
    num, den = np.broadcast_arrays(_centred(a[0], op.lhs), _centred(a[1], op.rhs))
    (multiplier,), (shift,) = op.multiplier.get_values(), op.shift.get_values()
    r = tflite_divide(num, den, multiplier, shift, op.overshift.data)
    lo, hi = op.clamp_bounds()
    return [np.clip(r + _zp(op.output), lo, hi).astype(_dtype(op.output))]
