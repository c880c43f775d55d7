"""Integer-exact numpy kernels of the `qnn` ops (docs/quantization.md), free of IR.

Operands are stored integers of any integer dtype; accumulators are int64.
Rounding and requantization come from `npuc/integer.py` (`wide_requantize` only
narrows products too long for int64 before rounding them there). Dot products
use a float32 GEMM when every partial sum provably stays below 2^24, a float64
one below 2^53 (so BLAS computes them exactly, in any order), and an int64 GEMM
otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from npuc.diagnostics import KernelError
from npuc.integer import requantize, rounding_divide, rounding_shift

from . import conv, pool, requant_float
from .window import pad_hw, window_extent, window_reduce

I64 = np.int64
F64 = np.float64
FLOAT_EXACT = 1 << 53  # every integer of magnitude <= 2^53 is a float64
FLOAT32_EXACT = 1 << 24  # ... and every integer of magnitude <= 2^24 a float32
INT64_SAFE = 1 << 62  # requantize's product and rounding offset stay below 2^63


def _max_abs(x: np.ndarray) -> int:
    return int(np.abs(x).max()) if x.size else 0


def dot_bound(k: int, a: np.ndarray, b: np.ndarray) -> int:
    """An upper bound on |any partial sum| of a length-k dot product of a's and b's entries."""
    return k * _max_abs(a) * _max_abs(b)


def _gemm_dtype(k: int, a: np.ndarray, b: np.ndarray) -> type[np.generic]:
    """The narrowest of float32, float64 and int64 in which the GEMM is exact.

    Raises if even int64 could overflow.
    """
    bound = dot_bound(k, a, b)
    if bound < FLOAT32_EXACT:
        return np.float32
    if bound < FLOAT_EXACT:
        return F64
    if bound < 1 << 63:
        return I64
    raise KernelError(f"accumulator bound {bound} exceeds the int64 range")


def exact_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.matmul of integer arrays, exactly, as int64."""
    k = a.shape[-1]
    dtype = _gemm_dtype(k, a, b)
    return np.asarray(np.matmul(a.astype(dtype), b.astype(dtype))).astype(I64)


def exact_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a * b (broadcast) for int64 operands, refusing products that could overflow."""
    if _max_abs(a) * _max_abs(b) >= 1 << 63:
        raise KernelError("products exceed the int64 range")
    return a * b


def conv2d_acc(
    xc: np.ndarray,
    wc: np.ndarray,
    *,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    groups: int,
) -> np.ndarray:
    """sum (x - zp_x)(w - zp_w) over each window, exactly (xc, wc: centred int64 operands).

    Padding of the centred input with 0 is padding the stored input with its zero point.
    """
    k = int(np.prod(wc.shape[1:]))
    dtype = _gemm_dtype(k, xc, wc)
    y = conv.conv2d(
        xc.astype(dtype),
        wc.astype(dtype),
        strides=strides,
        pads=pads,
        dilations=dilations,
        groups=groups,
    )
    return y.astype(I64)


MASK31 = (1 << 31) - 1
SATURATED = 1 << 61  # a requantized magnitude beyond every storage range, even after a zero point


def wide_requantize(
    acc: np.ndarray, multiplier: np.ndarray | int, shift: np.ndarray | int, rounding: str
) -> np.ndarray:
    """integer.requantize for any accumulator below 2^62, still exact.

    integer.requantize needs acc * multiplier below 2^63. Where it is not, the
    product (up to 93 bits) is narrowed to its integer part plus a guard bit
    and a sticky bit, which rounding_shift rounds exactly like the full product;
    a magnitude of 2^60 or more may come back as 2^61 (either saturates any storage).
    Both rounding rules are odd-symmetric, so the magnitude is rounded.
    """
    acc, m, s = np.asarray(acc, I64), np.asarray(multiplier, I64), np.asarray(shift, I64)
    if requant_float.fits(acc, m, s, rounding):  # exact in float64, and faster
        return requant_float.requantize(acc, m, s, rounding)
    return _int64_requantize(acc, m, s, rounding)


def _int64_requantize(
    acc: np.ndarray, narrow_m: np.ndarray, narrow_s: np.ndarray, rounding: str
) -> np.ndarray:
    """wide_requantize in int64 (int64 operands)."""
    # per-channel multipliers and shifts are broadcast only where the product may not fit
    acc, m, s = np.broadcast_arrays(acc, narrow_m, narrow_s)
    if rounding == "tflite":
        return requantize(acc, m, s, rounding)  # TFLite saturates acc << left to int32 first
    peak = _max_abs(acc)
    if peak >= INT64_SAFE:
        raise KernelError(f"accumulator magnitude {peak} exceeds 2^62")
    largest = int(narrow_m.max(initial=0)) << max(0, -int(narrow_s.min(initial=0)))
    if peak * largest < INT64_SAFE:
        return requantize(acc, narrow_m, narrow_s, rounding)  # the common case: products fit
    x = np.abs(acc)
    fits = x <= (INT64_SAFE - 1) // np.maximum(np.left_shift(m, np.maximum(-s, 0)), 1)
    if fits.all():
        return requantize(acc, m, s, rounding)
    direct = requantize(np.where(fits, acc, 0), m, s, rounding)
    # x * m = t * 2^31 + low, with t < 2^63 and low < 2^31.
    low_product = (x & MASK31) * m
    t = (x >> 31) * m + (low_product >> 31)
    low = low_product & MASK31
    k = s - 2  # narrowed = (x * m) >> k, lower bits ORed into bit 0; bit 1 is the half bit
    above = k >= 31
    k_t = np.clip(k - 31, 0, 62)
    narrow_above = (t >> k_t) | (((t & ((1 << k_t) - 1)) != 0) | (low != 0))
    k_low = np.clip(k, 0, 30)
    too_big = t >= np.left_shift(1, np.clip(31 + k, 0, 62))
    head = np.left_shift(np.where(too_big, 0, t), np.clip(31 - k, 0, 31)) + (low >> k_low)
    narrow_below = head | ((low & ((1 << k_low) - 1)) != 0)
    magnitude = rounding_shift(np.where(above, narrow_above, narrow_below), 2, rounding)
    magnitude = np.where((s <= 1) | (~above & too_big), SATURATED, magnitude)
    return np.where(fits, direct, np.where(acc < 0, -magnitude, magnitude))


def output_stage(
    acc: np.ndarray,
    multiplier: np.ndarray | int,
    shift: np.ndarray | int,
    rounding: str,
    zero_point: np.ndarray | int,
    clamp: tuple[int, int],
    dtype: np.dtype,
) -> np.ndarray:
    """clamp(zero_point + requantize(acc, multiplier, shift, rounding)) in the storage dtype."""
    acc, m, s = np.asarray(acc, I64), np.asarray(multiplier, I64), np.asarray(shift, I64)
    zp = np.asarray(zero_point, I64)
    if not requant_float.fits(acc, m, s, rounding):
        y = _int64_requantize(acc, m, s, rounding)
    elif zp.size == 1 and zp.ndim <= acc.ndim:  # the whole stage in float64 blocks
        return requant_float.output_stage(acc, m, s, rounding, int(zp), clamp, dtype)
    else:
        y = requant_float.requantize(acc, m, s, rounding)
    return np.clip(y + zp, clamp[0], clamp[1]).astype(dtype)


def prelu(
    x: np.ndarray,
    alpha: np.ndarray,
    positive: tuple[int, int],
    negative: tuple[int, int],
    rounding: str,
) -> np.ndarray:
    """PReLU of centred int64 x with centred alpha (broadcast): requantize(x, *positive)
    where x >= 0, else requantize(x * alpha, *negative); the zero point is the caller's."""
    x, alpha = np.broadcast_arrays(x, alpha)
    up = wide_requantize(x, *positive, rounding)
    down = wide_requantize(x * alpha, *negative, rounding)
    return np.where(x >= 0, up, down)


def aligned_sum(
    a: np.ndarray,
    b: np.ndarray,
    left_shift: int,
    lhs: tuple[int, int],
    rhs: tuple[int, int],
    rounding: str,
    subtract: bool = False,
) -> np.ndarray:
    """a' + b' (or a' - b') with x' = requantize(x_centred * 2^left_shift, m_x, shift_x)."""
    if max(_max_abs(a), _max_abs(b)) << left_shift >= INT64_SAFE:
        raise KernelError(f"operands shifted left by {left_shift} overflow int64")
    a1 = _shifted_requantize(a, left_shift, *lhs, rounding)
    b1 = _shifted_requantize(b, left_shift, *rhs, rounding)
    return a1 - b1 if subtract else a1 + b1


def _shifted_requantize(
    x: np.ndarray, left_shift: int, multiplier: int, shift: int, rounding: str
) -> np.ndarray:
    """wide_requantize(x * 2^left_shift, multiplier, shift, rounding). A single rounding
    of x * 2^left_shift * m / 2^shift is that of x * m / 2^(shift - left_shift), whose
    products are 2^left_shift times smaller (so float64 holds them exactly: requant_float);
    TFLite's rounding saturates the shifted operand first, so it is shifted as it says."""
    if rounding == "tflite":
        return wide_requantize(np.left_shift(x, left_shift), multiplier, shift, rounding)
    return wide_requantize(x, multiplier, np.asarray(shift, I64) - left_shift, rounding)


def avg_pool2d_sums(
    xc: np.ndarray,
    kernel: Sequence[int],
    *,
    strides: Sequence[int],
    pads: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """(window sums of xc, divisor per output position) with the float avg_pool2d's count rule."""
    dilations = (1, 1)
    out_hw, extra = pool.window_geometry(xc.shape, kernel, strides, pads, dilations, ceil_mode)
    xp = pad_hw(xc, pads, 0, extra)
    total = window_reduce(xp, kernel, out_hw, strides, dilations, np.add, I64)
    counts = [
        pool.divisor_1d(
            xc.shape[2 + a],
            out_hw[a],
            kernel[a],
            strides[a],
            dilations[a],
            pads[a],
            pads[a + 2],
            count_include_pad,
        )
        for a in range(2)
    ]
    return total, np.outer(counts[0], counts[1]).astype(I64)


def global_avg_pool_sums(xc: np.ndarray) -> tuple[np.ndarray, int]:
    """(sum over every axis from 2 on, kept as size 1; the number of summed positions)."""
    axes = tuple(range(2, xc.ndim))
    count = int(np.prod([xc.shape[a] for a in axes]))
    return xc.sum(axis=axes, keepdims=True, dtype=I64), count


def pooled_output(
    total: np.ndarray,
    count: np.ndarray | int,
    multiplier: int,
    shift: int,
    rounding: str,
    zero_point: int,
    clamp: tuple[int, int],
    dtype: np.dtype,
    zero_point_in: int = 0,
) -> np.ndarray:
    """clamp(zero_point + round(total * multiplier / (count * 2^shift))): one rounding.

    The mean and the rescaling to the output type are rounded together, so an
    output finer than the input keeps the precision of the sum. `tflite`
    rounding instead rounds the mean of the stored values (zero point included)
    half away from zero, as TFLite's kernel does; TFLite requires equal input
    and output types there, so the multiplier must be 1.
    """
    count = np.asarray(count, I64)
    if rounding == "tflite":
        if multiplier * 2.0**-shift != 1.0:
            raise ValueError("tflite average pooling needs equal input and output types (M = 1)")
        stored_sum = total + count * zero_point_in
        y = rounding_divide(stored_sum, count, "half_away_from_zero") - zero_point_in + zero_point
        return np.clip(y, clamp[0], clamp[1]).astype(dtype)
    numerator_shift, denominator_shift = max(0, -shift), max(0, shift)
    peak_n = _max_abs(total) * multiplier << numerator_shift
    peak_d = int(count.max(initial=1)) << denominator_shift
    if max(peak_n, peak_d) < INT64_SAFE:
        numerator = np.left_shift(total * multiplier, numerator_shift)
        y = rounding_divide(numerator, np.left_shift(count, denominator_shift), rounding)
    else:  # rare: exact with Python integers
        numerator = (total.astype(object) * multiplier) << numerator_shift
        denominator = np.broadcast_to(count, total.shape).astype(object) << denominator_shift
        y = _divide_objects(numerator, denominator, rounding)
    y = y + zero_point
    return np.clip(y, clamp[0], clamp[1]).astype(dtype)


def _divide_objects(numerator: np.ndarray, denominator: np.ndarray, rounding: str) -> np.ndarray:
    from fractions import Fraction

    def one(n: int, d: int) -> int:
        value = Fraction(n, d)
        floor = value.numerator // value.denominator
        rest = value - floor
        half = Fraction(1, 2)
        ties_up = rounding == "half_up" or (rounding != "half_to_even" and value > 0)
        if rest > half or (rest == half and ties_up):
            return floor + 1
        if rest == half and rounding == "half_to_even":
            return floor + (floor % 2)
        return floor

    flat = [
        one(int(n), int(d)) for n, d in zip(numerator.ravel(), denominator.ravel(), strict=True)
    ]
    return np.array(flat, dtype=object).reshape(numerator.shape).astype(I64)


def max_pool2d(
    x: np.ndarray,
    kernel: Sequence[int],
    *,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool,
) -> np.ndarray:
    """Window maximum of stored integers; padding holds the dtype's minimum so it never wins."""
    out_hw, extra = pool.window_geometry(x.shape, kernel, strides, pads, dilations, ceil_mode)
    xp = pad_hw(x, pads, np.iinfo(x.dtype).min, extra)
    return window_reduce(xp, kernel, out_hw, strides, dilations, np.maximum, x.dtype)


# --------------------------------------------------------------------------- softmax (TFLite int8)
# gemmlowp's fixed-point arithmetic on int32 raw values, computed in int64 with the C++
# wrap-around or saturation made explicit. Used by `softmax_int8` (TFLite's reference
# quantized Softmax: Q5.26 input differences, exp_on_negative_values, GetReciprocal).

_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1


def _wrap32(x: np.ndarray) -> np.ndarray:
    """Two's-complement int32 wrap-around (gemmlowp's non-saturating + and -)."""
    return ((np.asarray(x, I64) + 2**31) & (2**32 - 1)) - 2**31


def fx_mul(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul on int32 values (int64 arrays)."""
    a, b = np.asarray(a, I64), np.asarray(b, I64)
    ab = a * b
    nudge = np.where(ab >= 0, I64(1 << 30), I64(1 - (1 << 30)))
    total = ab + nudge
    # C division truncating toward zero by 2^31.
    high = np.where(total >= 0, total >> 31, -((-total) >> 31))
    return np.where((a == _I32_MIN) & (b == _I32_MIN), I64(_I32_MAX), high)


def fx_rounding_divide_by_pot(x: np.ndarray, exponent: np.ndarray | int) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT: x / 2^exponent rounded half away from zero."""
    x, exponent = np.asarray(x, I64), np.asarray(exponent, I64)
    mask = np.left_shift(I64(1), exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def fx_saturating_shift_left(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp SaturatingRoundingMultiplyByPOT with a positive exponent on int32."""
    return np.clip(np.left_shift(np.asarray(x, I64), exponent), _I32_MIN, _I32_MAX)


def _exp_on_interval_between_negative_one_quarter_and_0_excl(a: np.ndarray) -> np.ndarray:
    """exp(a) for a (Q0.31) in [-1/4, 0): a Taylor expansion around -1/8."""
    constant_term = 1895147668  # exp(-1/8)
    constant_1_over_3 = 715827883
    x = _wrap32(a + (1 << 28))  # a + 1/8
    x2 = fx_mul(x, x)
    x3 = fx_mul(x2, x)
    x4 = fx_mul(x2, x2)
    x4_over_4 = fx_rounding_divide_by_pot(x4, 2)
    poly = fx_rounding_divide_by_pot(
        _wrap32(fx_mul(_wrap32(x4_over_4 + x3), constant_1_over_3) + x2), 1
    )
    return _wrap32(constant_term + fx_mul(constant_term, _wrap32(x + poly)))


# (bit of the Q5.26 remainder, Q0.31 exp(-2^exponent)) for exponents -2 .. 4.
_EXP_BARREL_SHIFTER = (
    (26 - 2, 1672461947),
    (26 - 1, 1302514674),
    (26 + 0, 790015084),
    (26 + 1, 290630308),
    (26 + 2, 39332535),
    (26 + 3, 720401),
    (26 + 4, 242),
)


def fx_exp_on_negative_values_q5_26(a: np.ndarray) -> np.ndarray:
    """gemmlowp exp_on_negative_values for FixedPoint<int32, 5> a <= 0; Q0.31 result."""
    a = np.asarray(a, I64)
    one_quarter = 1 << 24
    a_mod_quarter_minus_one_quarter = _wrap32((a & (one_quarter - 1)) - one_quarter)
    result = _exp_on_interval_between_negative_one_quarter_and_0_excl(
        fx_saturating_shift_left(a_mod_quarter_minus_one_quarter, 5)  # Rescale<0>
    )
    remainder = _wrap32(a_mod_quarter_minus_one_quarter - a)
    for bit, multiplier in _EXP_BARREL_SHIFTER:
        result = np.where(remainder & (1 << bit), fx_mul(result, multiplier), result)
    return np.where(a == 0, I64(_I32_MAX), result)


def fx_one_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    """gemmlowp one_over_one_plus_x_for_x_in_0_1 (Newton-Raphson); Q0.31 in and out."""
    a = np.asarray(a, I64)
    total = a + _I32_MAX  # RoundingHalfSum(a, One)
    half_denominator = np.where(total >= 0, (total + 1) // 2, -((-(total - 1)) // 2))
    constant_48_over_17 = 1515870810  # Q2.29
    constant_neg_32_over_17 = -1010580540
    one_q2 = 1 << 29
    x = _wrap32(constant_48_over_17 + fx_mul(half_denominator, constant_neg_32_over_17))
    for _ in range(3):
        half_denominator_times_x = fx_mul(half_denominator, x)
        one_minus = _wrap32(one_q2 - half_denominator_times_x)
        x = _wrap32(x + fx_saturating_shift_left(fx_mul(x, one_minus), 2))
    return fx_saturating_shift_left(x, 1)  # Rescale<0>(ExactMulByPot<-1>(x))


def softmax_exps(
    diff: np.ndarray, input_multiplier: int, input_left_shift: int, diff_min: int
) -> np.ndarray:
    """exp(diff * input scale) in Q0.31 for int64 diff <= 0 (0 where diff < diff_min)."""
    used = diff >= diff_min
    # MultiplyByQuantizedMultiplierGreaterThanOne; |diff| << shift fits int32 where used.
    rescaled = fx_mul(np.where(used, np.left_shift(diff, input_left_shift), 0), input_multiplier)
    return np.where(used, fx_exp_on_negative_values_q5_26(rescaled), 0)


def softmax_int8(
    x: np.ndarray,
    input_multiplier: int,
    input_left_shift: int,
    diff_min: int,
    exp_table: np.ndarray | None = None,
) -> np.ndarray:
    """TFLite's reference quantized Softmax (int8 in, int8 out at scale 1/256, zero point -128)
    over the last axis; see docs/quantization.md.

    `exp_table[-diff]` may hold `softmax_exps` for every diff of the input type's range
    (0 down to -255), computed once for these parameters.
    """
    q = np.asarray(x, I64)
    if q.size == 0:
        return q.astype(np.int8)
    diff = q - q.max(axis=-1, keepdims=True)
    used = diff >= diff_min
    if exp_table is not None and -int(diff.min()) < exp_table.size:
        exps = exp_table[-diff]
    else:
        exps = softmax_exps(diff, input_multiplier, input_left_shift, diff_min)
    # Accumulated in Q12.19 (Rescale<12>), int32 wrap-around as in C++.
    sum_of_exps = _wrap32(np.where(used, fx_rounding_divide_by_pot(exps, 12), 0).sum(axis=-1))
    # GetReciprocal(sum, 12): count leading zeros of the (positive) uint32 sum.
    headroom_plus_one = 32 - bit_length(sum_of_exps)
    num_bits_over_unit = 12 - headroom_plus_one
    if num_bits_over_unit.max() + 31 - 8 > 31:
        # TFLite's RoundingDivideByPOT takes exponents up to 31 (gemmlowp asserts beyond).
        raise KernelError("softmax: a row's sum of exponentials reaches 512 (TFLite fails)")
    shifted_sum_minus_one = _wrap32(np.left_shift(sum_of_exps, headroom_plus_one) - (1 << 31))
    shifted_scale = fx_one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one)
    unsat = fx_rounding_divide_by_pot(
        fx_mul(shifted_scale[..., None], exps), (num_bits_over_unit + 31 - 8)[..., None]
    )
    out = np.clip(unsat - 128, -128, 127)
    return np.where(used, out, -128).astype(np.int8)


def bit_length(x: np.ndarray) -> np.ndarray:
    """Bits needed for each non-negative int64 below 2^63 (0 for 0)."""
    x = np.asarray(x, I64)
    n = np.zeros(x.shape, I64)
    for step in (32, 16, 8, 4, 2, 1):
        big = x >= (I64(1) << step)
        n += big * step
        x = np.where(big, x >> step, x)
    return n + (x > 0)


def reduce_max(x: np.ndarray, axes: Sequence[int], keepdims: bool) -> np.ndarray:
    """Max of stored integers over `axes` (all axes when empty), in x's dtype."""
    axis = tuple(sorted({a % x.ndim for a in axes})) if axes else None
    if x.size == 0:
        raise KernelError("reduce_max of an empty tensor")
    return np.asarray(np.max(x, axis=axis, keepdims=keepdims), dtype=x.dtype)


def arg_max(x: np.ndarray, axis: int, keepdims: bool) -> np.ndarray:
    """int64 index of the largest stored integer along `axis`; ties pick the first."""
    return np.asarray(np.argmax(x, axis=axis % x.ndim, keepdims=keepdims), dtype=I64)


def _leading_sign_bits(x: np.ndarray) -> np.ndarray:
    """CountLeadingSignBits of int32 values (31 for 0)."""
    v = np.where(x >= 0, x, ~x)
    return 31 - bit_length(v)


def tflite_divide(
    num: np.ndarray, den: np.ndarray, multiplier: int, shift: int, overshift: str
) -> np.ndarray:
    """qnn.div's integer quotient before the zero point, for centred int64 operands.

    Shared by the qnn interpreter and the NPU runtime's eltwise div.
    """
    zero = den == 0  # TFLite leaves it undefined: saturate toward the numerator's sign
    num = np.where(den < 0, -num, num)
    den = np.where(zero, 1, np.abs(den))
    k = bit_length(den) - 1
    inv = fx_one_over_one_plus_x_for_x_in_0_1(np.left_shift(den, 31 - k) - (1 << 31))
    headroom = _leading_sign_bits(num)
    unscaled = fx_mul(np.left_shift(num, headroom), inv)
    total = shift + k + headroom
    r = requantize(unscaled, multiplier, total, "tflite")
    exponent = total - 31  # RoundingDivideByPOT's exponent in TFLite
    if overshift == "x86" and np.any(exponent >= 32):
        if np.any(exponent >= 64):
            raise KernelError("a rounding shift of 64 or more")
        # (1ll << e) - 1 truncated to int32 is -1; the 32-bit arithmetic shift uses e mod 32.
        high = fx_mul(unscaled, multiplier)
        wrapped = np.right_shift(high, exponent & 31) + (high >= 0)
        r = np.where(exponent >= 32, wrapped, r)
    return np.where(zero, np.sign(num) * (2**31 - 1), r)


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
