"""More TFLite 16-bit operators (int16 activations) as `qnn` ops, bit-exact to LiteRT's
reference kernels; the 16-bit forms LiteRT rejects or mis-computes are refused with the reason.

What LiteRT's reference op resolver runs on int16 data (its Prepare checks mirrored here):

- TRANSPOSE_CONV (int8 filter, zero points 0, int64 bias or none): the int64 scatter
  accumulator of reference_integer_ops::TransposeConv, + bias, rescaled with the 64-bit
  MultiplyByQuantizedMultiplier like CONV_2D (`tflite64_multiplier`, `half_up`). LiteRT
  reads an int32 bias as int64 (every output saturates): refused.
- BATCH_MATMUL (both operands int16, zero points 0): reference_ops::BatchMatMul<int16_t,
  int64_t>, the same 64-bit rescaling of GetQuantizedConvolutionMultipler's multiplier.
- MEAN (zero points 0): QuantizedMeanOrSum as for int8, 1/count folded into the multiplier.
- DIV: DivElementwise as for int8 (`qnn.div`), on int16 storage.
- RELU, RELU6, LEAKY_RELU (zero points 0): ReluX / QuantizeLeakyRelu with float32
  multipliers as for int8; LEAKY_RELU is `qnn.prelu` with a constant alpha.
- PRELU: the int8 arithmetic (`qnn.prelu`) with an int8 alpha. LiteRT reads the alpha
  buffer as int8 whatever its type, so an int16 alpha (its bytes) is refused.
- GELU: LUTPopulate<int16_t> in float32 (513 entries, GeluTransform with the C library's
  erfcf / tanhf, which are not correctly rounded) read by LUTLookup's interpolation. The
  result is a function of the stored value: npuc emits it as a 65536-entry `qnn.lut`, every
  entry computed with the kernel's own steps.
- MAXIMUM, MINIMUM, GATHER, REDUCE_MAX (zero point 0), RESIZE_BILINEAR: the stored values,
  as for int8 (one quantization in and out).
- CONCATENATION and EXPAND_DIMS need zero point 0 at 16 bits (LiteRT's Prepare); the other
  data movement runs the int8 converters unchanged.

Refused: SUM (LiteRT's reference kernel runs its uint8 code on the int16 buffers; results
depend on uninitialised memory), SQUARED_DIFFERENCE, RELU_N1_TO_1, HARD_SWISH, ARG_MAX and
ARG_MIN (LiteRT's Prepare or Eval rejects int16).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math
from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import BoolAttr, IntegerAttr, StringAttr, i32, i64
from xdsl.ir import SSAValue

from npuc.dialects import qnn
from npuc.dialects import qnn_more as qm
from npuc.dialects.nn_base import ints
from npuc.dialects.qnn_transpose import ConvTranspose2dOp
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.runtime.kernels.qnn_int16_lut import lut_lookup_513
from npuc.tensors import to_dense

from . import tflite_int8_more as more  # first: the dispatch below wraps its converters
from . import tflite_ops as fops
from . import tflite_qops as qops
from .tflite import OpContext, Tensor, Unsupported, quantized_type
from .tflite_int16 import ACC_LIMIT, _bias, _check_int16, _rescale, is_16x8, tflite64_multiplier
from .tflite_qops import _out_type, _scale, requant_props, tflite_multiplier

F32 = np.float32
INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1
EVERY_INT16 = np.arange(INT16_MIN, INT16_MAX + 1, dtype=np.int64)


def _int16(*tensors: Tensor) -> None:
    """int16 storage, per-tensor quantization (any zero point)."""
    for t in tensors:
        if t.dtype != np.int16 or t.quant is None or len(t.quant.scales) > 1:
            raise Unsupported(f"tensor '{t.name}' is {t.type_name}; expected per-tensor int16")


def _full_range(ctx: OpContext) -> tuple[int, int]:
    q = quantized_type(ctx.out())
    return q.qmin, q.qmax


# --------------------------------------------------------------------------- weighted


def _transpose_conv(ctx: OpContext) -> SSAValue:
    x_t, w_t, out = ctx.tensor(2), ctx.tensor(1), ctx.out()
    _check_int16(x_t, out)
    w = ctx.need_const(1, "the filter")  # OHWI
    if w_t.dtype != np.int8 or w_t.quant is None:
        raise Unsupported(f"16x8 filter '{w_t.name}' is {w_t.type_name}; int8 expected")
    if np.any(np.asarray(w_t.quant.zero_points) != 0):
        raise Unsupported(f"16x8 filter '{w_t.name}' must be symmetric (zero point 0)")
    per_channel = len(w_t.quant.scales) > 1
    if per_channel and w_t.quant.axis != 0:
        raise Unsupported(f"weights quantized on axis {w_t.quant.axis}, expected 0")
    bias, wide = _bias(ctx, 3, required=False)
    channels = w.shape[0]
    scales = [float(s) for s in w_t.quant.scales] * (1 if per_channel else channels)
    s_in, s_out = _scale(x_t), _scale(out)
    pairs = [tflite_multiplier(s_in * s_w / s_out) for s_w in scales]
    weight = ctx.constant(
        w.transpose(3, 0, 1, 2), quantized_type(w_t, axis=1 if per_channel else None), name=w_t.name
    )
    props = fops.transpose_conv_props(ctx, w.shape[1:3])
    props |= _rescale(ctx, pairs, w, wide, reduce=True)
    n, h, wd, c = out.shape
    y = ctx.emit(ConvTranspose2dOp, [ctx.nchw(ctx.value(2)), weight, bias], props,
                 result_types=[_out_type(ctx, [n, c, h, wd])])  # fmt: skip
    return ctx.nhwc(y)


def _batch_matmul(ctx: OpContext) -> SSAValue:
    a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
    _check_int16(a_t, b_t, out)
    a, b = ctx.value(0), ctx.value(1)
    if ctx.opt("AdjX", False):
        a = fops._swap_last(ctx, a)
    if ctx.opt("AdjY", False):
        b = fops._swap_last(ctx, b)
    depth = ctx.shape(0)[-2 if ctx.opt("AdjX", False) else -1]
    if depth * (1 << 30) >= ACC_LIMIT:
        raise Unsupported(f"16-bit BATCH_MATMUL over {depth} products may exceed TFLite's 2^47")
    product = float(F32(a_t.quant.scales[0]) * F32(b_t.quant.scales[0]))
    pair = tflite64_multiplier(tflite_multiplier(product / _scale(out)))
    props = requant_props([pair], _full_range(ctx)) | {"rounding": StringAttr("half_up")}
    return ctx.emit(qnn.MatMulOp, [a, b], props, result_types=[_out_type(ctx)])


# --------------------------------------------------------------------------- arithmetic


def _mean(ctx: OpContext) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    _check_int16(x_t, out)
    props, count = more._reduce_props(ctx)
    if count << 15 >= 1 << 31:  # the int32 sum of QuantizedMeanOrSum
        raise Unsupported(f"16-bit MEAN over {count} elements may overflow int32")
    pair = more.folded_mean_multiplier(tflite_multiplier(_scale(x_t) / _scale(out)), count)
    props |= requant_props([pair], _full_range(ctx))
    return ctx.emit(qm.ReduceSumOp, [ctx.value(0)], props, result_types=[_out_type(ctx)])


def _div(ctx: OpContext) -> SSAValue:
    a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
    _int16(a_t, b_t, out)
    s_a, s_b, s_out = (F32(t.quant.scales[0]) for t in (a_t, b_t, out))
    pair = tflite_multiplier(float(s_a / (s_b * s_out)))  # float32 arithmetic, as in Prepare
    props = requant_props([pair], qops.activation_range(ctx, out))
    props["overshift"] = StringAttr("x86")
    return ctx.emit(qm.DivOp, [ctx.value(0), ctx.value(1)], props, result_types=[_out_type(ctx)])


# --------------------------------------------------------------------------- activations


def _relu(lo: float, hi: float | None) -> Callable[[OpContext], SSAValue]:
    """ReluX: MultiplyByQuantizedMultiplier by float32 s_in / s_out, then the clamp."""

    def convert(ctx: OpContext) -> SSAValue:
        x_t, out = ctx.tensor(0), ctx.out()
        _check_int16(x_t, out)
        s_in, s_out = F32(x_t.quant.scales[0]), F32(out.quant.scales[0])
        pair = tflite_multiplier(float(s_in / s_out))
        low = max(INT16_MIN, qops._round_away(float(F32(lo) / s_out)))
        high = INT16_MAX if hi is None else min(INT16_MAX, qops._round_away(float(F32(hi) / s_out)))
        return ctx.emit(qnn.RequantizeOp, [ctx.value(0)],
                        requant_props([pair], (min(low, high), high)),
                        result_types=[_out_type(ctx)])  # fmt: skip

    return convert


def _leaky_relu(ctx: OpContext) -> SSAValue:
    """QuantizeLeakyRelu as qnn.prelu with a constant alpha of 1 at scale alpha (0 at scale 1
    for alpha = 0): identity float32 s_in / s_out, alpha float32 s_in * alpha / s_out."""
    x_t, out = ctx.tensor(0), ctx.out()
    _check_int16(x_t, out)
    alpha = F32(ctx.opt("Alpha", 0.2))
    if not alpha >= 0:
        raise Unsupported(f"16-bit LEAKY_RELU with alpha {alpha} (negative alphas unsupported)")
    s_in, s_out = F32(x_t.quant.scales[0]), F32(out.quant.scales[0])
    identity = tflite_multiplier(float(s_in / s_out))
    slope = tflite_multiplier(float(s_in * alpha / s_out))
    alpha_type = UniformQuantizedType("i16", float(alpha) if alpha > 0 else 1.0, 0)
    alpha_value = ctx.constant(np.array([1 if alpha > 0 else 0], np.int16), alpha_type,
                               name=f"{ctx.name}_alpha")  # fmt: skip
    props = requant_props([identity], _full_range(ctx)) | {
        "alpha_multiplier": IntegerAttr(slope[0], i64),
        "alpha_shift": IntegerAttr(slope[1], i64),
    }
    return ctx.emit(qm.PReluOp, [ctx.value(0), alpha_value], props, result_types=[_out_type(ctx)])


def _prelu(ctx: OpContext) -> SSAValue:
    x_t, alpha_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
    _int16(x_t, out)
    if alpha_t.dtype != np.int8 or alpha_t.quant is None or len(alpha_t.quant.scales) > 1:
        # LiteRT reads the alpha buffer as int8 whatever its type (an int16 alpha's bytes).
        raise Unsupported(f"16-bit PRELU alpha '{alpha_t.name}' is {alpha_t.type_name}; "
                          "LiteRT's kernel reads it as per-tensor int8")  # fmt: skip
    s_in, s_alpha, s_out = (F32(t.quant.scales[0]) for t in (x_t, alpha_t, out))
    identity = tflite_multiplier(float(s_in / s_out))
    slope = tflite_multiplier(float(s_in * s_alpha / s_out))
    props = requant_props([identity], _full_range(ctx)) | {
        "alpha_multiplier": IntegerAttr(slope[0], i64),
        "alpha_shift": IntegerAttr(slope[1], i64),
    }
    return ctx.emit(qm.PReluOp, [ctx.value(0), ctx.value(1)], props, result_types=[_out_type(ctx)])


def lut_populate_int16_f32(
    transform: Callable[[np.ndarray], np.ndarray],
    s_in: float, zp_in: int, s_out: float, zp_out: int,
) -> np.ndarray:  # fmt: skip
    """LUTPopulateInt16<float>: 512 samples biased by half the midpoint interpolation error,
    and the end point, every step in float32 with std::round (half away from zero)."""

    def rnd(x: np.ndarray) -> np.ndarray:
        return (np.sign(x) * np.floor(np.abs(x) + F32(0.5))).astype(F32)

    input_min = F32(s_in) * F32(INT16_MIN - zp_in)
    input_max = F32(s_in) * F32(INT16_MAX - zp_in)
    output_min = F32(s_out) * F32(INT16_MIN - zp_out)
    output_max = F32(s_out) * F32(INT16_MAX - zp_out)
    step = (input_max - input_min) / F32(512)
    half_step = step / F32(2)
    inverse = F32(65536) / (output_max - output_min)
    i = np.arange(512).astype(F32)
    at = input_min + i * step
    val = transform(at).astype(F32)
    val_mid = transform(at + half_step).astype(F32)
    val_next = transform(input_min + (i + F32(1)) * step).astype(F32)
    sample = rnd(val * inverse)
    interpolated = rnd((val_next * inverse + rnd(val * inverse)) / F32(2))
    bias = rnd((interpolated - rnd(val_mid * inverse)) / F32(2))
    last = rnd(transform(np.array([input_max], F32)).astype(F32) * inverse)
    table = np.concatenate([sample - bias, last])
    return np.clip(table, INT16_MIN, INT16_MAX).astype(np.int64)


@functools.cache
def _libm(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """The C library's float function `name` (what LiteRT's kernel calls), elementwise.

    glibc's erfcf and tanhf are not correctly rounded; the table needs their exact values.
    """
    path = ctypes.util.find_library("m")
    try:
        fn = getattr(ctypes.CDLL(path), name)
    except (OSError, AttributeError, TypeError) as e:
        raise Unsupported(f"16-bit GELU needs the C library's {name} ({e})") from e
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    return lambda x: np.array([fn(float(v)) for v in np.ravel(x)], F32).reshape(np.shape(x))


def gelu_f32(x: np.ndarray) -> np.ndarray:
    """GeluTransform: `0.5f * x * erfcf(x * float(-M_SQRT1_2))`, all float32."""
    x = np.asarray(x, F32)
    return F32(0.5) * x * _libm("erfcf")(x * F32(-math.sqrt(0.5)))


def gelu_approximate_f32(x: np.ndarray) -> np.ndarray:
    """GeluTransformApproximate: `0.5f * x * (1 + tanhf(k * (x + 0.044715f * x^3)))`, float32."""
    x = np.asarray(x, F32)
    inner = F32(math.sqrt(2 / math.pi)) * (x + F32(0.044715) * x * x * x)
    return F32(0.5) * x * (F32(1) + _libm("tanhf")(inner))


def _gelu(ctx: OpContext) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    _int16(x_t, out)
    fn = gelu_approximate_f32 if ctx.opt("Approximate", False) else gelu_f32
    table = lut_populate_int16_f32(fn, _scale(x_t), int(x_t.quant.zero_points[0]),
                                   _scale(out), int(out.quant.zero_points[0]))  # fmt: skip
    values = lut_lookup_513(EVERY_INT16, table)
    props = {"table": to_dense(values.astype(np.int32), i32)}
    return ctx.emit(qnn.LutOp, [ctx.value(0)], props, result_types=[_out_type(ctx)])


# --------------------------------------------------------------------------- stored values


def _same(ctx: OpContext, *tensors: Tensor) -> None:
    _int16(*tensors)
    for t in tensors[1:]:
        qops._same_params(ctx, tensors[0], t)


def _extremum(op_type: type) -> Callable[[OpContext], SSAValue]:
    def convert(ctx: OpContext) -> SSAValue:
        _same(ctx, ctx.out(), ctx.tensor(0), ctx.tensor(1))
        return qops._elementwise(ctx, op_type, {})

    return convert


def _gather(ctx: OpContext) -> SSAValue:
    _same(ctx, ctx.out(), ctx.tensor(0))
    if ctx.opt("BatchDims", 0):
        raise Unsupported("GATHER with batch_dims is not supported")
    data = np.asarray(ctx.need_const(1, "the indices")).astype(np.int64)
    axis = int(ctx.opt("Axis", 0)) % len(ctx.shape(0))
    size = ctx.shape(0)[axis]
    if data.size and (data.min() < 0 or data.max() >= size):
        raise ValueError(f"gather indices must lie in [0, {size}) (TFLite rejects others)")
    return ctx.emit(qnn.GatherOp, [ctx.value(0), ctx.constant(data)],
                    {"axis": IntegerAttr(axis, i64)}, result_types=[_out_type(ctx)])  # fmt: skip


def _reduce_max(ctx: OpContext) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    _check_int16(x_t, out)
    qops._same_params(ctx, x_t, out)
    rank = len(ctx.shape(0))
    axes = sorted({int(a) % rank for a in np.ravel(ctx.need_const(1, "the axes"))})
    props = {"axes": ints(axes), "keepdims": BoolAttr.from_bool(bool(ctx.opt("KeepDims", False)))}
    return ctx.emit(qnn.ReduceMaxOp, [ctx.value(0)], props, result_types=[_out_type(ctx)])


def _resize_bilinear(ctx: OpContext) -> SSAValue:
    _same(ctx, ctx.out(), ctx.tensor(0))
    n, h, w, c = ctx.out().shape
    props = {
        "align_corners": BoolAttr.from_bool(bool(ctx.opt("AlignCorners", False))),
        "half_pixel_centers": BoolAttr.from_bool(bool(ctx.opt("HalfPixelCenters", False))),
    }
    y = ctx.emit(qm.ResizeBilinearOp, [ctx.nchw(ctx.value(0))], props,
                 result_types=[_out_type(ctx, [n, c, h, w])])  # fmt: skip
    return ctx.nhwc(y)


def _zero_points_checked(convert8: Callable) -> Callable[[OpContext], SSAValue]:
    """An int8 data-movement converter behind LiteRT's int16 zero-point check."""

    def convert(ctx: OpContext) -> SSAValue:
        for i in range(len(ctx.op.inputs)):
            if ctx.has(i) and ctx.tensor(i).dtype == np.int16:
                _check_int16(ctx.tensor(i))
        _check_int16(ctx.out())
        return convert8(ctx)

    return convert


def _refused(reason: str) -> Callable[[OpContext], SSAValue]:
    def convert(ctx: OpContext) -> SSAValue:
        raise Unsupported(f"16-bit {ctx.op.op_type}: {reason}")

    return convert


_REJECTED = "LiteRT's reference kernels reject int16 data"
CONVERTERS: dict[str, Callable[[OpContext], SSAValue]] = {
    "TRANSPOSE_CONV": _transpose_conv,
    "BATCH_MATMUL": _batch_matmul,
    "MEAN": _mean,
    "DIV": _div,
    "RELU": _relu(0.0, None),
    "RELU6": _relu(0.0, 6.0),
    "LEAKY_RELU": _leaky_relu,
    "PRELU": _prelu,
    "GELU": _gelu,
    "MAXIMUM": _extremum(qnn.MaximumOp),
    "MINIMUM": _extremum(qnn.MinimumOp),
    "GATHER": _gather,
    "REDUCE_MAX": _reduce_max,
    "RESIZE_BILINEAR": _resize_bilinear,
    "SUM": _refused("LiteRT's reference kernel runs its uint8 code on the int16 buffers "
                    "(results depend on uninitialised memory)"),
    "SQUARED_DIFFERENCE": _refused(_REJECTED),
    "RELU_N1_TO_1": _refused(_REJECTED),
    "HARD_SWISH": _refused(_REJECTED),
    "ARG_MAX": _refused(_REJECTED),
    "ARG_MIN": _refused(_REJECTED),
}  # fmt: skip
ZERO_POINT_CHECKED = ("CONCATENATION", "EXPAND_DIMS")


def _input_is_int16(ctx: OpContext) -> bool:
    return ctx.tensor(0).dtype == np.int16


def _install(converters: dict[str, Callable]) -> None:
    """Route the operators above to these converters when their data is int16."""
    table = dict(CONVERTERS)
    table.update({name: _zero_points_checked(converters[name]) for name in ZERO_POINT_CHECKED})
    for name, convert16 in table.items():
        convert8 = converters[name]
        # ARG_MAX/ARG_MIN: the input decides (an int16 index result is the int8 path's issue).
        wide = _input_is_int16 if name in ("ARG_MAX", "ARG_MIN") else is_16x8

        def dispatch(ctx: OpContext, convert8=convert8, convert16=convert16, wide=wide) -> SSAValue:
            return convert16(ctx) if wide(ctx) else convert8(ctx)

        converters[name] = dispatch


_install(qops.CONVERTERS)
