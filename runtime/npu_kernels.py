"""Array kernels of the NPU instructions other than conv2d and matmul (runtime/npu_conv.py,
runtime/npu_requant.py), on numpy views of the arenas.

The arithmetic is the `qnn` dialect's, from the shared functions (npuc/integer.py,
kernels/qnn_arith.py: requantize, rounding, pooling sums, LUTs).
"""

from __future__ import annotations

import numpy as np

from npuc import integer
from npuc.diagnostics import KernelError, NpucError

from .kernels import qnn_arith as qa
from .kernels.qnn_arith import tflite_divide
from .npu_requant import tflite_multiply

I64 = np.int64


# --------------------------------------------------------------------------- other kinds


def pool(x: np.ndarray, p: dict, out: np.ndarray) -> None:
    """The pool instruction on a stored NCHW x, written into out."""
    kernel, strides, pads = p["kernel"], p["strides"], p["pads"]
    lo, hi = p["clamp_min"], p["clamp_max"]
    if p["mode"] == "max":
        y = qa.max_pool2d(
            x,
            kernel,
            strides=strides,
            pads=pads,
            dilations=p["dilations"],
            ceil_mode=p["ceil_mode"],
        )
        np.copyto(out, np.clip(y, lo, hi))
        return
    whole = tuple(kernel) == x.shape[2:] and not any(pads)
    if whole:  # summed as stored, then centred: no int64 copy of the input
        total, count = qa.global_avg_pool_sums(x)
        total -= count * p["ifm_zero_point"]
    elif tuple(kernel) == (1, 1) and tuple(strides) == (1, 1) and not any(pads):
        # each element its own window (a lone clamp or rescale): no window sums to copy
        shift, multiplier = p["shift"], p["multiplier"]
        if p["mode"] == "sum" and multiplier << max(0, -shift) == 1 << max(0, shift):
            # M = 1 exactly (a lone ReLU or clamp): no rounding, only the zero points
            y = x.astype(np.int32) + (p["ofm_zero_point"] - p["ifm_zero_point"])
            np.copyto(out, np.clip(y, lo, hi), casting="unsafe")
            return
        total, count = x.astype(I64) - p["ifm_zero_point"], np.int64(1)
    else:
        xc = x.astype(I64) - p["ifm_zero_point"]
        total, count = qa.avg_pool2d_sums(
            xc,
            kernel,
            strides=strides,
            pads=pads,
            ceil_mode=p["ceil_mode"],
            count_include_pad=p["count_include_pad"],
        )
    if p["mode"] == "avg":
        y = qa.pooled_output(
            total,
            count,
            p["multiplier"],
            p["shift"],
            p["rounding"],
            p["ofm_zero_point"],
            (lo, hi),
            out.dtype,
            zero_point_in=p["ifm_zero_point"],
        )
    else:
        y = qa.output_stage(
            total,
            p["multiplier"],
            p["shift"],
            p["rounding"],
            p["ofm_zero_point"],
            (lo, hi),
            out.dtype,
        )
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
    if kind == "prelu":  # as qnn.prelu (qnn_kernels.py)
        positive, negative = (p["multiplier"], p["shift"]), (p["rhs_multiplier"], p["rhs_shift"])
        r = qa.prelu(a, b, positive, negative, rounding)
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
            raise KernelError(f"operands shifted left by {shift} overflow int64")
        a1 = tflite_multiply(np.left_shift(a, shift), p["lhs_multiplier"], p["lhs_shift"])
        b1 = tflite_multiply(np.left_shift(b, shift), p["rhs_multiplier"], p["rhs_shift"])
        acc = a1 + b1 if kind == "add" else a1 - b1
    else:
        lhs_scale = (p["lhs_multiplier"], p["lhs_shift"])
        rhs_scale = (p["rhs_multiplier"], p["rhs_shift"])
        acc = qa.aligned_sum(
            a, b, p["left_shift"], lhs_scale, rhs_scale, rounding, subtract=kind != "add"
        )
    if kind == "squared_difference":
        acc = qa.exact_multiply(acc, acc)
    if rounding == "tflite":
        y = tflite_multiply(acc, p["multiplier"], p["shift"]) + zp
        np.copyto(out, np.clip(y, lo, hi), casting="unsafe")
    else:
        np.copyto(
            out,
            qa.output_stage(acc, p["multiplier"], p["shift"], rounding, zp, (lo, hi), out.dtype),
        )


def eltwise_table(lhs: np.dtype, rhs: np.dtype, p: dict, out: np.dtype) -> np.ndarray | None:
    """Every output of an eltwise instruction on 8-bit operands, at [lhs byte * 256 + rhs
    byte], computed by `eltwise` itself; None for wider operands, for div (its divisor
    can be zero) and for parameters `eltwise` rejects on some operand values."""
    if lhs.itemsize != 1 or rhs.itemsize != 1 or p["kind"] == "div":
        return None
    codes = np.arange(256, dtype=np.uint8)
    table = np.empty(256 * 256, out)
    try:
        eltwise(np.repeat(codes, 256).view(lhs), np.tile(codes, 256).view(rhs), p, table)
    except (ValueError, OverflowError, NpucError):
        return None
    return table


def eltwise_lookup(lhs: np.ndarray, rhs: np.ndarray, table: np.ndarray, out: np.ndarray) -> None:
    """The eltwise instruction on 8-bit operands through its `eltwise_table`."""
    index = np.left_shift(lhs.view(np.uint8), 8, dtype=np.uint16)
    np.bitwise_or(index, rhs.view(np.uint8), out=index)
    np.take(table, index, out=out, mode="clip")


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


# --------------------------------------------------------------------------- softmax

_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


class Softmax:
    """The int8 softmax instruction (`qa.softmax_int8`, TFLite's reference kernel) with
    its parameters' tables built once: each diff's exponential (`qa.softmax_exps`) and
    its share of the row sum. Each row's reciprocal of its sum is a handful of scalar
    fixed-point steps, done on Python integers, where numpy's per-call cost is most of
    the instruction's time."""

    def __init__(self, input_multiplier: int, input_left_shift: int, diff_min: int) -> None:
        diffs = -np.arange(256, dtype=I64)
        self.exps = qa.softmax_exps(diffs, input_multiplier, input_left_shift, diff_min)
        # Accumulated in Q12.19 (Rescale<12>)
        self.shares = np.where(diffs >= diff_min, qa.fx_rounding_divide_by_pot(self.exps, 12), 0)
        self.diff_min = diff_min

    def __call__(self, x: np.ndarray, out: np.ndarray) -> None:
        rows = x.reshape(-1, x.shape[-1])
        index = rows.max(axis=-1, keepdims=True).astype(I64) - rows  # -diff, 0 to 255
        sums = self.shares[index].sum(axis=-1)
        scales, exponents = zip(*(_reciprocal(int(s)) for s in sums), strict=True)
        exps = self.exps[index]
        unsat = qa.fx_rounding_divide_by_pot(
            qa.fx_mul(np.array(scales, I64)[:, None], exps), np.array(exponents, I64)[:, None]
        )
        y = np.where(index <= -self.diff_min, np.clip(unsat - 128, -128, 127), -128)
        np.copyto(out, y.reshape(out.shape), casting="unsafe")


def _reciprocal(total: int) -> tuple[int, int]:
    """(the Q0.31 reciprocal scale, the exponent that divides by it) of a row's sum of
    exponentials, as TFLite's GetReciprocal: `qa.softmax_int8` on one int32 sum."""
    total = _wrap32(total)
    headroom_plus_one = 32 - total.bit_length()
    num_bits_over_unit = 12 - headroom_plus_one
    if num_bits_over_unit + 31 - 8 > 31:
        raise KernelError("softmax: a row's sum of exponentials reaches 512 (TFLite fails)")
    shifted_sum_minus_one = _wrap32((total << headroom_plus_one) - (1 << 31))
    return _one_over_one_plus_x(shifted_sum_minus_one), num_bits_over_unit + 31 - 8


def _wrap32(x: int) -> int:
    return ((x + (1 << 31)) & ((1 << 32) - 1)) - (1 << 31)


def _mul(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul on int32 values."""
    if a == b == _I32_MIN:
        return _I32_MAX
    total = a * b + ((1 << 30) if a * b >= 0 else 1 - (1 << 30))
    return total >> 31 if total >= 0 else -((-total) >> 31)


def _shift_left(x: int, exponent: int) -> int:
    """gemmlowp SaturatingRoundingMultiplyByPOT with a positive exponent on int32."""
    return min(max(x << exponent, _I32_MIN), _I32_MAX)


def _one_over_one_plus_x(a: int) -> int:
    """gemmlowp one_over_one_plus_x_for_x_in_0_1 (Newton-Raphson), Q0.31 in and out."""
    half_denominator = (a + _I32_MAX + 1) // 2  # RoundingHalfSum(a, One), a >= 0
    x = _wrap32(1515870810 + _mul(half_denominator, -1010580540))  # 48/17 - 32/17 d, Q2.29
    for _ in range(3):
        one_minus = _wrap32((1 << 29) - _mul(half_denominator, x))
        x = _wrap32(x + _shift_left(_mul(x, one_minus), 2))
    return _shift_left(x, 1)  # Rescale<0>(ExactMulByPot<-1>(x))
