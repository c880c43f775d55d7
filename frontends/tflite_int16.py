"""TFLite 16x8 operators (int16 activations, int8 weights, int64 biases) as `qnn` ops.

TFLite's 16x8 scheme: int16 activations are symmetric (zero point 0, checked here as
TFLite's Prepare checks it), weights int8 symmetric, biases int64. The integer
arithmetic reproduced, kernel by kernel (reference kernels):

- CONV_2D, DEPTHWISE_CONV_2D (int64 bias required, as LiteRT requires a bias) accumulate
  in int64 and rescale with the *64-bit* MultiplyByQuantizedMultiplier overload, not the
  int32 one: it reduces the Q31 multiplier to 15 bits, `(m + 2^15) >> 16` (0x7FFF from
  0x7FFF0000 on), and rounds once, `(x * reduced + 2^(total - 1)) >> total` with
  `total = 15 - shift_tflite`: `requantize(acc, reduced, shift - 16, "half_up")`
  (`tflite64_multiplier`).
- FULLY_CONNECTED (int64 bias or none, per tensor or per channel): LiteRT's reference
  16x8 kernel rounds once on the *unreduced* Q31 multiplier,
  `(x * m + 2^(total - 1)) >> total` with `total = 31 - shift_tflite`: `half_up` with
  conv's (m0, shift), the scales multiplied in double even per tensor (the int8 kernel
  multiplies them in float32). Measured against LiteRT: the reduced form differs at ~10%
  of outputs, the int32 double rounding at ~0.1%, the float32 product at ~0.02%; this one
  at none.
- An int64 bias is imported as i32 when every entry fits (exactly), otherwise the op is
  unsupported; int32 biases in 16x8 layers are refused (LiteRT's reference kernels do not
  give them the int64 arithmetic). The accumulator bound `sum |w| * 2^15 + |bias|` must
  stay below TFLite's 2^47 contract (and, for FULLY_CONNECTED, times m0 below 2^62).
- ADD/SUB: with `pot_scale_int16` false, or any scale not a power of two, int8's general
  scheme with left_shift 15. With power-of-two scales and `pot_scale_int16` (the schema's
  default), TFLite's POT kernel: `saturate16(a +- RoundingDivideByPOT(b, r))` for the
  input whose scale is 2^r times finer than the output's, expressed as qnn.add/qnn.sub
  with left_shift 1 and multipliers 1/2 (so the high multiply is exact) and 2^-r / 2.
  Operands broadcast (numpy rules): SUB is bit-exact with LiteRT's BroadcastSub16POTSlow;
  LiteRT 2.3 aborts on a broadcasting POT ADD in every resolver (its elementwise kernel
  checks matching sizes), so there npuc applies the same per-element rule.
- MUL: the int32 MultiplyByQuantizedMultiplier on `a * b`: `tflite`.
- AVERAGE_POOL_2D, MAX_POOL_2D, RESHAPE, CONCATENATION and the other data movement:
  the int8 converters (same parameters in and out; zero point 0 leaves no tie issue).
- QUANTIZE (float -> int16, or int8/int16 requantization) and DEQUANTIZE: as int8.

LOGISTIC, TANH, SOFTMAX: tflite_int16_luts.py. The other operators LiteRT's reference op
resolver runs on int16 data (its Prepare checks mirrored here); the 16-bit forms LiteRT
rejects or mis-computes are refused with the reason:

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

import functools
import math
from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType, i32, i64
from xdsl.ir import SSAValue

from npuc.dialects import qnn
from npuc.dialects.nn_base import shape_of
from npuc.dialects.qnn_elementwise import aligned_inputs
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.runtime.kernels.qnn_int16_lut import lut_lookup_513
from npuc.tensors import to_dense

from . import tflite_float as fops
from . import tflite_int8 as int8
from .tflite_context import Converter, OpContext, Tensor, Unsupported, check_bias, quantized_type
from .tflite_quant import (
    ACC_LIMIT,
    activation_range,
    check_int16,
    conv_multipliers,
    emit_elementwise,
    emit_mul,
    out_type,
    pot_exponent,
    quantized_weight,
    requant_props,
    round_away,
    tensor_scale,
    tflite64_multiplier,
    tflite_multiplier,
)

LEFT_SHIFT_16BIT = 15


def _bias(ctx: OpContext, index: int, required: bool) -> tuple[SSAValue | None, np.ndarray]:
    """The int64 bias as an i32 constant (exact), and its values (zeros when absent)."""
    if not ctx.has(index):
        if required:  # LiteRT's 16x8 conv Prepare checks has_bias too
            raise Unsupported(f"16x8 {ctx.op.op_type} without a bias")
        return None, np.zeros(1, np.int64)
    data = ctx.need_const(index, "the bias")
    name = ctx.tensor(index).name
    check_bias(ctx.tensor(index))
    if data.dtype != np.int64:
        # LiteRT's reference 16x8 kernels do not give int32 biases the int64 kernels'
        # results (measured); unverified arithmetic is not imported.
        raise Unsupported(
            f"16x8 bias '{name}' of type {ctx.tensor(index).type_name} (int64 expected)"
        )
    if np.any(np.abs(data) > np.iinfo(np.int32).max):
        raise Unsupported(f"int64 bias '{name}' has entries beyond int32 (qnn biases are i32)")
    op = qnn.ConstantOp.create(
        properties={"value": to_dense(data.astype(np.int32), i32), "name": StringAttr(name)},
        result_types=[TensorType(i32, list(data.shape))],
    )
    ctx.importer.block.add_op(op)
    return op.results[0], np.asarray(data, np.int64)


def _weight(ctx: OpContext, w: np.ndarray, source_axis: int) -> SSAValue:
    t = ctx.tensor(1)
    if t.quant is not None and np.any(np.asarray(t.quant.zero_points) != 0):
        raise Unsupported(f"16x8 weights '{t.name}' must be symmetric (zero point 0)")
    return quantized_weight(ctx, w, source_axis)


def _rescale(
    ctx: OpContext,
    pairs: list[tuple[int, int]],
    w: np.ndarray,
    bias: np.ndarray,
    reduce: bool,
) -> dict:
    """Requantization properties of TFLite's 64-bit rescaling: `half_up` on the 15-bit
    reduced multiplier (`reduce`: conv) or on the Q31 one (fully connected)."""
    clamp = activation_range(ctx, ctx.out())
    per_channel = np.abs(w.astype(np.int64)).reshape(w.shape[0], -1).sum(axis=1)
    bound = int((per_channel * (1 << 15) + np.abs(np.broadcast_to(bias, per_channel.shape))).max())
    if bound >= ACC_LIMIT:
        raise Unsupported(f"16x8 accumulator bound {bound} exceeds TFLite's 2^47")
    if reduce:
        pairs = [tflite64_multiplier(p) for p in pairs]
    elif bound * max(m for m, _ in pairs) >= 1 << 62:
        # npuc's wide requantization narrows larger products by magnitude, which is
        # exact for the odd-symmetric rules only.
        raise Unsupported(
            f"16x8 fully connected accumulator bound {bound} needs products "
            "beyond 2^62 in half_up rescaling"
        )
    props = requant_props(pairs, clamp)
    props["rounding"] = StringAttr("half_up")
    return props


def _conv(ctx: OpContext, depthwise: bool) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    check_int16(x_t, out)
    w, groups = fops.conv_weight(ctx, depthwise)
    weight = _weight(ctx, w, 3 if depthwise else 0)
    bias, wide = _bias(ctx, 2, required=True)
    pairs = conv_multipliers(ctx, w.shape[0])
    props = fops.conv_props(ctx, w.shape[2:]) | {"groups": IntegerAttr(groups, i64)}
    props |= _rescale(ctx, pairs, w, wide, reduce=True)
    n, h, wd, c = out.shape
    y = ctx.emit(
        qnn.Conv2dOp,
        [ctx.nchw(ctx.value(0)), weight, bias],
        props,
        result_types=[out_type(ctx, [n, c, h, wd])],
    )
    return ctx.nhwc(y)


def _fully_connected(ctx: OpContext) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    check_int16(x_t, out)
    w = ctx.need_const(1, "the weights")
    weight = _weight(ctx, w, 0)
    bias, wide = _bias(ctx, 2, required=False)
    # LiteRT's 16x8 kernel multiplies the scales in double, per tensor too (conv's rule),
    # not in float32 as the int8 kernel's GetQuantizedConvolutionMultipler does.
    per_tensor = len(ctx.tensor(1).quant.scales) == 1
    pairs = conv_multipliers(ctx, 1 if per_tensor else w.shape[0])
    k = w.shape[1]
    x = ctx.reshape(ctx.value(0), [int(np.prod(ctx.shape(0))) // k, k])
    rows = shape_of(x)[0]
    props = _rescale(ctx, pairs, w, wide, reduce=False)
    y = ctx.emit(
        qnn.FullyConnectedOp,
        [x, weight, bias],
        props,
        result_types=[out_type(ctx, [rows, w.shape[0]])],
    )
    return ctx.reshape(y, out.shape)


def _aligned(op_type: type) -> Callable[[OpContext], SSAValue]:
    def convert(ctx: OpContext) -> SSAValue:
        a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
        check_int16(a_t, b_t, out)
        s_a, s_b, s_out = tensor_scale(a_t), tensor_scale(b_t), tensor_scale(out)
        exps = [pot_exponent(s) for s in (s_a, s_b, s_out)]
        pot = bool(ctx.opt("PotScaleInt16", True)) and all(e is not None for e in exps)
        clamp = activation_range(ctx, out)
        if pot:
            lhs_r, rhs_r = exps[2] - exps[0], exps[2] - exps[1]  # right shifts, TFLite's -shift
            if lhs_r < 0 or rhs_r < 0 or (lhs_r and rhs_r):
                raise Unsupported(
                    f"16-bit {ctx.op.op_type} with power-of-two scales needs "
                    "one input at the output's scale, one no coarser"
                )
            left, pair = 1, (1 << 30, 30)  # exact: (x << 1) * 2^30 / 2^31 = x
            lhs, rhs = (1 << 30, 31 + lhs_r), (1 << 30, 31 + rhs_r)
        else:
            twice_max = 2 * max(s_a, s_b)
            lhs = tflite_multiplier(s_a / twice_max)
            rhs = tflite_multiplier(s_b / twice_max)
            pair = tflite_multiplier(twice_max / ((1 << LEFT_SHIFT_16BIT) * s_out))
            left = LEFT_SHIFT_16BIT
        props = requant_props([pair], clamp) | aligned_inputs(left, lhs, rhs)
        return emit_elementwise(ctx, op_type, props)

    return convert


def _mul(ctx: OpContext) -> SSAValue:
    check_int16(ctx.tensor(0), ctx.tensor(1), ctx.out())
    return emit_mul(ctx)


def _quantize(ctx: OpContext) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    if x_t.dtype == np.float32:
        return ctx.emit(qnn.QuantizeOp, [ctx.value(0)], result_types=[out_type(ctx)])
    for t in (x_t, out):
        if t.dtype not in (np.int8, np.int16) or t.quant is None or len(t.quant.scales) > 1:
            raise Unsupported(f"QUANTIZE of '{t.name}' ({t.type_name}) not supported")
    pair = tflite_multiplier(tensor_scale(x_t) / tensor_scale(out))
    q = quantized_type(out)
    return ctx.emit(
        qnn.RequantizeOp,
        [ctx.value(0)],
        requant_props([pair], (q.qmin, q.qmax)),
        result_types=[out_type(ctx)],
    )


def _zero_point_free(convert: Callable) -> Callable[[OpContext], SSAValue]:
    """An int8 converter reused at 16 bits after TFLite's int16 checks."""

    def wrapped(ctx: OpContext) -> SSAValue:
        check_int16(ctx.tensor(0), ctx.out())
        return convert(ctx)

    return wrapped


F32 = np.float32
INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1
EVERY_INT16 = np.arange(INT16_MIN, INT16_MAX + 1, dtype=np.int64)


def _int16(*tensors: Tensor) -> None:
    """int16 storage, per-tensor quantization (any zero point)."""
    for t in tensors:
        if t.dtype != np.int16 or t.quant is None or len(t.quant.scales) > 1:
            raise Unsupported(f"tensor '{t.name}' is {t.type_name}; expected per-tensor int16")


# --------------------------------------------------------------------------- weighted


def _transpose_conv(ctx: OpContext) -> SSAValue:
    x_t, w_t, out = ctx.tensor(2), ctx.tensor(1), ctx.out()
    check_int16(x_t, out)
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
    s_in, s_out = tensor_scale(x_t), tensor_scale(out)
    pairs = [tflite_multiplier(s_in * s_w / s_out) for s_w in scales]
    weight = ctx.constant(
        w.transpose(3, 0, 1, 2), quantized_type(w_t, axis=1 if per_channel else None), name=w_t.name
    )
    props = fops.transpose_conv_props(ctx, w.shape[1:3])
    props |= _rescale(ctx, pairs, w, wide, reduce=True)
    n, h, wd, c = out.shape
    y = ctx.emit(
        qnn.ConvTranspose2dOp,
        [ctx.nchw(ctx.value(2)), weight, bias],
        props,
        result_types=[out_type(ctx, [n, c, h, wd])],
    )
    return ctx.nhwc(y)


def _batch_matmul(ctx: OpContext) -> SSAValue:
    a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
    check_int16(a_t, b_t, out)
    a, b = ctx.value(0), ctx.value(1)
    if ctx.opt("AdjX", False):
        a = fops.swap_last(ctx, a)
    if ctx.opt("AdjY", False):
        b = fops.swap_last(ctx, b)
    depth = ctx.shape(0)[-2 if ctx.opt("AdjX", False) else -1]
    if depth * (1 << 30) >= ACC_LIMIT:
        raise Unsupported(f"16-bit BATCH_MATMUL over {depth} products may exceed TFLite's 2^47")
    product = float(F32(a_t.quant.scales[0]) * F32(b_t.quant.scales[0]))
    pair = tflite64_multiplier(tflite_multiplier(product / tensor_scale(out)))
    props = requant_props([pair], int8.full_range(ctx)) | {"rounding": StringAttr("half_up")}
    return ctx.emit(qnn.MatMulOp, [a, b], props, result_types=[out_type(ctx)])


# --------------------------------------------------------------------------- arithmetic


# --------------------------------------------------------------------------- activations


def _relu(lo: float, hi: float | None) -> Callable[[OpContext], SSAValue]:
    """ReluX: MultiplyByQuantizedMultiplier by float32 s_in / s_out, then the clamp."""

    def convert(ctx: OpContext) -> SSAValue:
        x_t, out = ctx.tensor(0), ctx.out()
        check_int16(x_t, out)
        s_in, s_out = F32(x_t.quant.scales[0]), F32(out.quant.scales[0])
        pair = tflite_multiplier(float(s_in / s_out))
        low = max(INT16_MIN, round_away(float(F32(lo) / s_out)))
        high = INT16_MAX if hi is None else min(INT16_MAX, round_away(float(F32(hi) / s_out)))
        return ctx.emit(
            qnn.RequantizeOp,
            [ctx.value(0)],
            requant_props([pair], (min(low, high), high)),
            result_types=[out_type(ctx)],
        )

    return convert


def _leaky_relu(ctx: OpContext) -> SSAValue:
    """QuantizeLeakyRelu as qnn.prelu with a constant alpha of 1 at scale alpha (0 at scale 1
    for alpha = 0): identity float32 s_in / s_out, alpha float32 s_in * alpha / s_out."""
    x_t, out = ctx.tensor(0), ctx.out()
    check_int16(x_t, out)
    alpha = F32(ctx.opt("Alpha", 0.2))
    if not alpha >= 0:
        raise Unsupported(f"16-bit LEAKY_RELU with alpha {alpha} (negative alphas unsupported)")
    s_in, s_out = F32(x_t.quant.scales[0]), F32(out.quant.scales[0])
    identity = tflite_multiplier(float(s_in / s_out))
    slope = tflite_multiplier(float(s_in * alpha / s_out))
    alpha_type = UniformQuantizedType("i16", float(alpha) if alpha > 0 else 1.0, 0)
    alpha_value = ctx.constant(
        np.array([1 if alpha > 0 else 0], np.int16), alpha_type, name=f"{ctx.name}_alpha"
    )
    props = requant_props([identity], int8.full_range(ctx)) | {
        "alpha_multiplier": IntegerAttr(slope[0], i64),
        "alpha_shift": IntegerAttr(slope[1], i64),
    }
    return ctx.emit(qnn.PReluOp, [ctx.value(0), alpha_value], props, result_types=[out_type(ctx)])


def _prelu(ctx: OpContext) -> SSAValue:
    x_t, alpha_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
    _int16(x_t, out)
    if alpha_t.dtype != np.int8 or alpha_t.quant is None or len(alpha_t.quant.scales) > 1:
        # LiteRT reads the alpha buffer as int8 whatever its type (an int16 alpha's bytes).
        raise Unsupported(
            f"16-bit PRELU alpha '{alpha_t.name}' is {alpha_t.type_name}; "
            "LiteRT's kernel reads it as per-tensor int8"
        )
    s_in, s_alpha, s_out = (F32(t.quant.scales[0]) for t in (x_t, alpha_t, out))
    identity = tflite_multiplier(float(s_in / s_out))
    slope = tflite_multiplier(float(s_in * s_alpha / s_out))
    props = requant_props([identity], int8.full_range(ctx)) | {
        "alpha_multiplier": IntegerAttr(slope[0], i64),
        "alpha_shift": IntegerAttr(slope[1], i64),
    }
    return ctx.emit(qnn.PReluOp, [ctx.value(0), ctx.value(1)], props, result_types=[out_type(ctx)])


def lut_populate_int16_f32(
    transform: Callable[[np.ndarray], np.ndarray],
    s_in: float,
    zp_in: int,
    s_out: float,
    zp_out: int,
) -> np.ndarray:
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
    import ctypes.util  # with subprocess: 2.6 ms of every import of a TFLite model

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
    table = lut_populate_int16_f32(
        fn,
        tensor_scale(x_t),
        int(x_t.quant.zero_points[0]),
        tensor_scale(out),
        int(out.quant.zero_points[0]),
    )
    values = lut_lookup_513(EVERY_INT16, table)
    props = {"table": to_dense(values.astype(np.int32), i32)}
    return ctx.emit(qnn.LutOp, [ctx.value(0)], props, result_types=[out_type(ctx)])


# --------------------------------------------------------------------------- stored values


def _zero_points_checked(convert8: Callable) -> Callable[[OpContext], SSAValue]:
    """An int8 data-movement converter behind LiteRT's int16 zero-point check."""

    def convert(ctx: OpContext) -> SSAValue:
        for i in range(len(ctx.op.inputs)):
            if ctx.has(i) and ctx.tensor(i).dtype == np.int16:
                check_int16(ctx.tensor(i))
        check_int16(ctx.out())
        return convert8(ctx)

    return convert


def _refused(reason: str) -> Callable[[OpContext], SSAValue]:
    def convert(ctx: OpContext) -> SSAValue:
        raise Unsupported(f"16-bit {ctx.op.op_type}: {reason}")

    return convert


_REJECTED = "LiteRT's reference kernels reject int16 data"
INT16X8: dict[str, Converter] = {
    "CONV_2D": lambda ctx: _conv(ctx, depthwise=False),
    "DEPTHWISE_CONV_2D": lambda ctx: _conv(ctx, depthwise=True),
    "FULLY_CONNECTED": _fully_connected,
    "ADD": _aligned(qnn.AddOp),
    "SUB": _aligned(qnn.SubOp),
    "MUL": _mul,
    "AVERAGE_POOL_2D": _zero_point_free(int8.pool(average=True)),
    "MAX_POOL_2D": _zero_point_free(int8.pool(average=False)),
    "QUANTIZE": _quantize,
    "TRANSPOSE_CONV": _transpose_conv,
    "BATCH_MATMUL": _batch_matmul,
    "MEAN": int8.mean(check_int16, accumulator_bits=15),  # QuantizedMeanOrSum's int32 sum
    "DIV": int8.divide(_int16),
    "RELU": _relu(0.0, None),
    "RELU6": _relu(0.0, 6.0),
    "LEAKY_RELU": _leaky_relu,
    "PRELU": _prelu,
    "GELU": _gelu,
    "MAXIMUM": int8.extremum(qnn.MaximumOp, _int16),
    "MINIMUM": int8.extremum(qnn.MinimumOp, _int16),
    "GATHER": int8.gather(_int16),
    "REDUCE_MAX": int8.reduce_max(check_int16),
    "RESIZE_BILINEAR": int8.resize_bilinear(_int16),
    "SUM": _refused(
        "LiteRT's reference kernel runs its uint8 code on the int16 buffers "
        "(results depend on uninitialised memory)"
    ),
    "SQUARED_DIFFERENCE": _refused(_REJECTED),
    "RELU_N1_TO_1": _refused(_REJECTED),
    "HARD_SWISH": _refused(_REJECTED),
    "ARG_MAX": _refused(_REJECTED),
    "ARG_MIN": _refused(_REJECTED),
    "CONCATENATION": _zero_points_checked(int8.INT8["CONCATENATION"]),
    "EXPAND_DIMS": _zero_points_checked(int8.INT8["EXPAND_DIMS"]),
}
