"""More int8 TFLite operators as `qnn` ops (dialects/qnn_more.py), bit-exact to LiteRT's reference.

Importing this module adds its converters to `tflite_qops.CONVERTERS`. Multipliers are
computed as TFLite's Prepare computes them, encoded with QuantizeMultiplier
(`tflite_multiplier`), and applied with MultiplyByQuantizedMultiplier (`rounding = "tflite"`):

- MEAN (any axes, keep_dims or not, equal parameters or not): LiteRT's reference kernel
  runs QuantizedMeanOrSum -- `sum(q - zp_in)` rescaled once, by QuantizeMultiplier(
  `double(s_in) / double(s_out)`) with 1/count folded in: `shift = min(floor(log2 n), 32,
  31 + tflite_shift)`, `m' = (m << shift) / n` (integer division), tflite_shift -= shift.
  (Measured with LiteRT 2.3: this is also what its 4-D keep_dims H,W mean computes;
  reference_integer_ops::Mean's rescale-then-divide differs at a few outputs.)
- SUM: refused. LiteRT 2.3's BUILTIN_REF int8 SUM (rescaling case) returns values unrelated
  to the real sum (with zero point 0 they follow the storage bytes read as uint8: a row
  -67, 45, -105, -74 at ratio 0.1 gives 57, not -20), and its optimized kernel rounds in
  float32 (`round(sum * scale + bias)`, off by one at some outputs), so no integer program
  matches a LiteRT kernel bit for bit; with equal parameters LiteRT adds the stored values
  in int8 (wrapping). `qnn.reduce_sum` with the unfolded multiplier is TFLite's intended
  integer SUM should it be wanted.
- SQUARED_DIFFERENCE: left_shift 7, input multipliers `s_i / (2 max(s_1, s_2))`, output
  multiplier `(2 max)^2 / (2^14 s_out)`, full int8 range.
- RESIZE_BILINEAR (equal parameters in and out, as LiteRT keeps them): ResizeBilinearInteger
  on the stored values, Q10 coordinates and weights, one rounding of the 2^20-scaled sum.
- DIV: DivElementwise -- gemmlowp's fixed-point reciprocal of the centred divisor, output
  multiplier `float(s_1 / (s_2 s_out))` (float32 arithmetic), fused activation clamp.
  Where TFLite's final rounding shift reaches 32 or more (undefined behaviour in
  RoundingDivideByPOT; common when the numerator is at its zero point) the op carries
  `overshift = "x86"`, LiteRT's x86-64 result, which differs from the exact rounding.
- PRELU: identity multiplier `float(s_in / s_out)` and alpha multiplier
  `float(s_in * s_alpha / s_out)` (float32 arithmetic, as in PreluPrepare), full int8 range.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import BoolAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import SSAValue

from npuc.dialects import qnn_more as qm
from npuc.dialects.nn_base import ints

from . import tflite_qops as qops
from .tflite import OpContext, Unsupported, quantized_type
from .tflite_qops import _check_int8, _out_type, _scale, requant_props, tflite_multiplier

LEFT_SHIFT_SQUARED_DIFFERENCE = 7


def _full_range(ctx: OpContext) -> tuple[int, int]:
    q = quantized_type(ctx.out())
    return q.qmin, q.qmax


def folded_mean_multiplier(pair: tuple[int, int], count: int) -> tuple[int, int]:
    """QuantizedMeanOrSum's mean rescaling: 1/count folded into a Q31 (m0, npuc shift)."""
    m0, shift = pair
    tfl_shift = 31 - shift
    s = min(count.bit_length() - 1, 32, 31 + tfl_shift)  # 63 - CountLeadingZeros(n)
    folded = (m0 << s) // count
    if folded >= 1 << 31:
        raise Unsupported(f"mean multiplier {folded} does not fit in int32")
    return folded, 31 - (tfl_shift - s)


def _mean(ctx: OpContext) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    _check_int8(x_t, out)
    shape = ctx.shape(0)
    rank = len(shape)
    raw_axes = [int(a) for a in np.ravel(ctx.need_const(1, "the axes"))]
    if not raw_axes:
        raise Unsupported("MEAN over no axes")
    if any(not -rank <= a < rank for a in raw_axes):
        raise Unsupported(f"MEAN axes {raw_axes} out of range")
    axes = sorted({a % rank for a in raw_axes})
    keep = bool(ctx.opt("KeepDims", False))
    count = int(np.prod([shape[a] for a in axes]))
    if count == 0:
        raise Unsupported("MEAN over an empty axis")
    if count * 255 >= 1 << 31:
        raise Unsupported(f"MEAN over {count} elements overflows int32")
    pair = folded_mean_multiplier(tflite_multiplier(_scale(x_t) / _scale(out)), count)
    props = requant_props([pair], _full_range(ctx)) | {
        "axes": ints(axes),
        "keepdims": BoolAttr.from_bool(keep),
    }
    return ctx.emit(qm.ReduceSumOp, [ctx.value(0)], props, result_types=[_out_type(ctx)])


def _sum(ctx: OpContext) -> SSAValue:
    raise Unsupported("int8 SUM: LiteRT's kernels disagree with its integer arithmetic "
                      "(see tflite_int8_more)")  # fmt: skip


def _squared_difference(ctx: OpContext) -> SSAValue:
    a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
    _check_int8(a_t, b_t, out)
    s_a, s_b, s_out = _scale(a_t), _scale(b_t), _scale(out)
    twice_max = 2.0 * max(s_a, s_b)
    lhs = tflite_multiplier(s_a / twice_max)
    rhs = tflite_multiplier(s_b / twice_max)
    shifted = float(np.float32(1 << (2 * LEFT_SHIFT_SQUARED_DIFFERENCE)) * np.float32(s_out))
    pair = tflite_multiplier(twice_max * twice_max / shifted)
    props = requant_props([pair], _full_range(ctx)) | {
        "left_shift": IntegerAttr(LEFT_SHIFT_SQUARED_DIFFERENCE, i64),
        "lhs_multiplier": IntegerAttr(lhs[0], i64), "lhs_shift": IntegerAttr(lhs[1], i64),
        "rhs_multiplier": IntegerAttr(rhs[0], i64), "rhs_shift": IntegerAttr(rhs[1], i64),
    }  # fmt: skip
    return ctx.emit(qm.SquaredDifferenceOp, [ctx.value(0), ctx.value(1)], props,
                    result_types=[_out_type(ctx)])  # fmt: skip


def _prelu(ctx: OpContext) -> SSAValue:
    x_t, alpha_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
    _check_int8(x_t, alpha_t, out)
    s_in, s_alpha, s_out = (np.float32(t.quant.scales[0]) for t in (x_t, alpha_t, out))
    identity = tflite_multiplier(float(s_in / s_out))
    alpha = tflite_multiplier(float(s_in * s_alpha / s_out))
    if not math.isfinite(float(s_in * s_alpha / s_out)):
        raise Unsupported("PRELU alpha multiplier is not finite")
    props = requant_props([identity], _full_range(ctx)) | {
        "alpha_multiplier": IntegerAttr(alpha[0], i64),
        "alpha_shift": IntegerAttr(alpha[1], i64),
    }
    return ctx.emit(qm.PReluOp, [ctx.value(0), ctx.value(1)], props,
                    result_types=[_out_type(ctx)])  # fmt: skip


def _resize_bilinear(ctx: OpContext) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    _check_int8(x_t, out)
    qops._same_params(ctx, x_t, out)
    n, h, w, c = out.shape
    props = {
        "align_corners": BoolAttr.from_bool(bool(ctx.opt("AlignCorners", False))),
        "half_pixel_centers": BoolAttr.from_bool(bool(ctx.opt("HalfPixelCenters", False))),
    }
    y = ctx.emit(qm.ResizeBilinearOp, [ctx.nchw(ctx.value(0))], props,
                 result_types=[_out_type(ctx, [n, c, h, w])])  # fmt: skip
    return ctx.nhwc(y)


def _div(ctx: OpContext) -> SSAValue:
    a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
    _check_int8(a_t, b_t, out)
    s_a, s_b, s_out = (np.float32(t.quant.scales[0]) for t in (a_t, b_t, out))
    pair = tflite_multiplier(float(s_a / (s_b * s_out)))  # float32 arithmetic, as in Prepare
    props = requant_props([pair], qops.activation_range(ctx, out))
    props["overshift"] = StringAttr("x86")  # LiteRT's golden outputs come from x86-64
    return ctx.emit(qm.DivOp, [ctx.value(0), ctx.value(1)], props, result_types=[_out_type(ctx)])


CONVERTERS = {
    "MEAN": _mean,
    "SUM": _sum,
    "SQUARED_DIFFERENCE": _squared_difference,
    "PRELU": _prelu,
    "RESIZE_BILINEAR": _resize_bilinear,
    "DIV": _div,
}

qops.CONVERTERS.update(CONVERTERS)
