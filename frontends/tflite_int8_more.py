"""More int8 TFLite operators as `qnn` ops (dialects/qnn_more.py, qnn_transpose.py), bit-exact
to LiteRT's reference kernels.

Importing this module adds its converters to `tflite_qops.CONVERTERS`. Multipliers are
computed as TFLite's Prepare computes them, encoded with QuantizeMultiplier
(`tflite_multiplier`), and applied with MultiplyByQuantizedMultiplier (`rounding = "tflite"`):

- MEAN (any axes, keep_dims or not, equal parameters or not): LiteRT's reference kernel
  runs QuantizedMeanOrSum -- `sum(q - zp_in)` rescaled once, by QuantizeMultiplier(
  `double(s_in) / double(s_out)`) with 1/count folded in: `shift = min(floor(log2 n), 32,
  31 + tflite_shift)`, `m' = (m << shift) / n` (integer division), tflite_shift -= shift.
  (Measured with LiteRT 2.3: this is also what its 4-D keep_dims H,W mean computes;
  reference_integer_ops::Mean's rescale-then-divide differs at a few outputs.)
- SUM: LiteRT's reference resolver (BUILTIN_REF: Register_SUM_REF, EvalSum<kReference>)
  runs QuantizedMeanOrSum with `compute_sum` on the int8 buffers *read as uint8*
  (`GetTensorData<uint8_t>`, its `T` is uint8): `acc = sum(q mod 256) - zp_in * n`, one
  MultiplyByQuantizedMultiplier by QuantizeMultiplier(`double(s_in) / double(s_out)`), plus
  zp_out, saturated to [0, 255] and stored as the int8 byte. That is `qnn.reduce_sum` with
  `storage_view = "uint8"` (no 1/n folding), bit-exact for any parameters, equal or not. It
  is not the real sum wherever an input is negative (each adds 256 steps); LiteRT's default
  resolver (XNNPACK, optimized kernels) returns the rounded real sum instead (measured).
- SQUARED_DIFFERENCE: left_shift 7, input multipliers `s_i / (2 max(s_1, s_2))`, output
  multiplier `(2 max)^2 / (2^14 s_out)`, full int8 range.
- RESIZE_BILINEAR (equal parameters in and out, as LiteRT keeps them): ResizeBilinearInteger
  on the stored values, Q10 coordinates and weights, one rounding of the 2^20-scaled sum.
- DIV: DivElementwise -- gemmlowp's fixed-point reciprocal of the centred divisor, output
  multiplier `float(s_1 / (s_2 s_out))` (float32 arithmetic), fused activation clamp.
  Where TFLite's final rounding shift reaches 32 or more (undefined behaviour in
  RoundingDivideByPOT; common when the numerator is at its zero point) the op carries
  `overshift = "x86"`, LiteRT's x86-64 result, which differs from the exact rounding.
- TRANSPOSE_CONV: reference_integer_ops::TransposeConv -- `(q_x - zp_x) * q_w` scattered into
  an int32 accumulator, + bias, then the per-channel MultiplyByQuantizedMultiplier (conv's
  multipliers), + zp_out, clamped to the fused activation's range: `qnn.conv_transpose2d`
  with the float importer's geometry. The filter zero point must be 0 (LiteRT ignores it).
- DEPTH_TO_SPACE: the stored values move (equal parameters in and out, as LiteRT requires).
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
from npuc.dialects.qnn_transpose import ConvTranspose2dOp

from . import tflite_ops as fops
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


def _reduce_props(ctx: OpContext) -> tuple[dict, int]:
    """axes/keepdims of a MEAN or SUM, and the number of elements reduced into each output."""
    shape = ctx.shape(0)
    rank = len(shape)
    op_type = ctx.op.op_type
    raw_axes = [int(a) for a in np.ravel(ctx.need_const(1, "the axes"))]
    if not raw_axes:
        raise Unsupported(f"{op_type} over no axes")
    if any(not -rank <= a < rank for a in raw_axes):
        raise Unsupported(f"{op_type} axes {raw_axes} out of range")
    axes = sorted({a % rank for a in raw_axes})
    count = int(np.prod([shape[a] for a in axes]))
    if count == 0:
        raise Unsupported(f"{op_type} over an empty axis")
    if count * 255 >= 1 << 31:
        raise Unsupported(f"{op_type} over {count} elements overflows int32")
    keep = BoolAttr.from_bool(bool(ctx.opt("KeepDims", False)))
    return {"axes": ints(axes), "keepdims": keep}, count


def _mean(ctx: OpContext) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    _check_int8(x_t, out)
    props, count = _reduce_props(ctx)
    pair = folded_mean_multiplier(tflite_multiplier(_scale(x_t) / _scale(out)), count)
    props |= requant_props([pair], _full_range(ctx))
    return ctx.emit(qm.ReduceSumOp, [ctx.value(0)], props, result_types=[_out_type(ctx)])


def _sum(ctx: OpContext) -> SSAValue:
    """LiteRT's reference int8 SUM: its uint8 QuantizedMeanOrSum on the int8 bytes."""
    x_t, out = ctx.tensor(0), ctx.out()
    _check_int8(x_t, out)
    props, _ = _reduce_props(ctx)
    props |= requant_props([tflite_multiplier(_scale(x_t) / _scale(out))], _full_range(ctx))
    props["storage_view"] = StringAttr("uint8")
    return ctx.emit(qm.ReduceSumOp, [ctx.value(0)], props, result_types=[_out_type(ctx)])


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


def _transpose_conv(ctx: OpContext) -> SSAValue:
    x_t, w_t, out = ctx.tensor(2), ctx.tensor(1), ctx.out()
    _check_int8(x_t, out)
    w = ctx.need_const(1, "the filter")  # OHWI
    if w_t.dtype != np.int8 or w_t.quant is None:
        raise Unsupported(f"weights '{w_t.name}' are {w_t.type_name}; int8 expected")
    if np.any(np.asarray(w_t.quant.zero_points) != 0):
        raise Unsupported(f"weights '{w_t.name}' have a non-zero zero point (TFLite ignores it)")
    per_channel = len(w_t.quant.scales) > 1
    if per_channel and w_t.quant.axis != 0:
        raise Unsupported(f"weights quantized on axis {w_t.quant.axis}, expected 0")
    channels = w.shape[0]
    scales = [float(s) for s in w_t.quant.scales] * (1 if per_channel else channels)
    s_in, s_out = _scale(x_t), _scale(out)
    pairs = [tflite_multiplier(s_in * s_w / s_out) for s_w in scales]
    weight = ctx.constant(
        w.transpose(3, 0, 1, 2), quantized_type(w_t, axis=1 if per_channel else None), name=w_t.name
    )
    props = fops.transpose_conv_props(ctx, w.shape[1:3])
    props |= requant_props(pairs, qops.activation_range(ctx, out))
    n, h, wd, c = out.shape
    y = ctx.emit(ConvTranspose2dOp, [ctx.nchw(ctx.value(2)), weight, qops._bias(ctx, 3)], props,
                 result_types=[_out_type(ctx, [n, c, h, wd])])  # fmt: skip
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
    "TRANSPOSE_CONV": _transpose_conv,
    "DEPTH_TO_SPACE": qops._movement(fops.CONVERTERS["DEPTH_TO_SPACE"]),
}

qops.CONVERTERS.update(CONVERTERS)
