"""Quantized-operator helpers shared by the int8 and int16x8 TFLite converters: TFLite's
multiplier encoding, activation ranges, requantization properties, and the bias, weight and
elementwise forms both widths use (tflite_int8.py, tflite_int16.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import BoolAttr, IntegerAttr, StringAttr, TensorType, i32, i64
from xdsl.ir import Attribute, SSAValue

from npuc.dialects import qnn
from npuc.dialects.arrays import ints
from npuc.tensors import to_dense

from . import tflite_float as fops
from .tflite_context import OpContext, Tensor, Unsupported, check_bias, quantized_type, tensor_type


def tflite_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier(real) as npuc's (m0, shift) with shift = 31 - TFLite's shift.

    q = std::round(frac * 2^31) (half away from zero) for real = frac * 2^e; q == 2^31
    halves with e + 1; e < -31 flushes to (0, 0), as TFLite does.
    """
    if real == 0:
        return 0, 0
    if not (real > 0 and math.isfinite(real)):
        raise ValueError(f"requantization multiplier {real} must be positive and finite")
    frac, exponent = math.frexp(real)
    q = math.floor(frac * 2.0**31 + 0.5)  # exact: frac * 2^31 has at most 22 fractional bits
    if q == 1 << 31:
        q //= 2
        exponent += 1
    if exponent < -31:
        return 0, 0
    if exponent > 62:
        raise Unsupported(f"requantization multiplier {real} is too large")
    return q, 31 - exponent


def round_away(x: float) -> int:
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def activation_range(
    ctx: OpContext, out: Tensor, key: str = "FusedActivationFunction"
) -> tuple[int, int]:
    """CalculateActivationRangeQuantized: bounds quantized with float32 f / scale, std::round."""
    q = quantized_type(out)
    act = int(ctx.opt(key, 0) or 0)
    if act == 0:
        return q.qmin, q.qmax
    if act not in fops.CLIP_BOUNDS:
        raise Unsupported(f"fused activation {act} on quantized tensors not supported")
    scale = np.float32(out.quant.scales[0])

    def quantize(f: float) -> int:
        return q.zero_point + round_away(float(np.float32(f) / scale))

    lo, hi = fops.CLIP_BOUNDS[act]
    low = max(q.qmin, quantize(lo))
    high = q.qmax if hi is None else min(q.qmax, quantize(hi))
    return min(max(low, q.qmin), q.qmax), max(min(high, q.qmax), q.qmin)


def requant_props(pairs: Sequence[tuple[int, int]], clamp: tuple[int, int]) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {
        "multiplier": ints([m for m, _ in pairs]),
        "shift": ints([s for _, s in pairs]),
        "rounding": StringAttr("tflite"),
        "clamp_min": IntegerAttr(clamp[0], i64),
        "clamp_max": IntegerAttr(clamp[1], i64),
    }
    return props


def check_int8(*tensors: Tensor, uint8: bool = False) -> None:
    for t in tensors:
        if t.dtype not in ((np.int8, np.uint8) if uint8 else (np.int8,)) or t.quant is None:
            raise Unsupported(f"tensor '{t.name}' is {t.type_name}; quantized kernels need int8")
        if t.quant.axis is not None and len(t.quant.scales) > 1:
            raise Unsupported(f"activation '{t.name}' is quantized per channel")


def tensor_scale(t: Tensor) -> float:
    return float(t.quant.scales[0])


def out_type(ctx: OpContext, shape: Sequence[int] | None = None) -> TensorType:
    return tensor_type(ctx.out(), shape)


def quantized_bias(ctx: OpContext, index: int) -> SSAValue | None:
    if not ctx.has(index):
        return None
    data = ctx.need_const(index, "the bias")
    if data.dtype != np.int32:
        raise Unsupported(f"bias of type {ctx.tensor(index).type_name} (int32 expected)")
    check_bias(ctx.tensor(index))
    op = qnn.ConstantOp.create(
        properties={"value": to_dense(data, i32), "name": StringAttr(ctx.tensor(index).name)},
        result_types=[TensorType(i32, list(data.shape))],
    )
    ctx.importer.block.add_op(op)
    return op.results[0]


def quantized_weight(ctx: OpContext, w: np.ndarray, source_axis: int) -> SSAValue:
    """A weight constant (already in nn layout, channels on axis 0) with the model's scales."""
    t = ctx.tensor(1)
    if t.dtype != np.int8 or t.quant is None:
        raise Unsupported(f"weights '{t.name}' are {t.type_name}; int8 expected")
    per_channel = len(t.quant.scales) > 1
    if per_channel and t.quant.axis != source_axis:
        raise Unsupported(f"weights quantized on axis {t.quant.axis}, expected {source_axis}")
    ty = quantized_type(t, axis=0 if per_channel else None)
    return ctx.constant(w, ty, name=t.name)


def channel_scales(t: Tensor, channels: int) -> list[float]:
    scales = [float(s) for s in t.quant.scales]
    return scales * channels if len(scales) == 1 else scales


def conv_multipliers(ctx: OpContext, channels: int) -> list[tuple[int, int]]:
    """TFLite's per-channel conv multipliers: QuantizeMultiplier(double(s_in * s_w[c]) / s_out)."""
    s_in, s_out = tensor_scale(ctx.tensor(0)), tensor_scale(ctx.out())
    scales = channel_scales(ctx.tensor(1), channels)
    return [tflite_multiplier(s_in * s_w / s_out) for s_w in scales]


def fc_multipliers(ctx: OpContext, channels: int) -> list[tuple[int, int]]:
    """FULLY_CONNECTED: per channel like conv; per tensor, the scales multiply in float32 first."""
    x_t, w_t = ctx.tensor(0), ctx.tensor(1)
    if len(w_t.quant.scales) > 1:
        return conv_multipliers(ctx, channels)
    # GetQuantizedConvolutionMultipler: float32 product, then double
    product = float(np.float32(x_t.quant.scales[0]) * np.float32(w_t.quant.scales[0]))
    return [tflite_multiplier(product / tensor_scale(ctx.out()))]


def emit_elementwise(ctx: OpContext, op_type: type, props: dict[str, Attribute]) -> SSAValue:
    """A binary op, run in NCHW when both operands come out of NCHW ops (see hoisted)."""
    operands = [ctx.value(0), ctx.value(1)]
    inner = ctx.hoisted(operands)
    if inner is None:
        return ctx.emit(op_type, operands, props, result_types=[out_type(ctx)])
    n, h, w, c = ctx.out().shape
    return ctx.nhwc(ctx.emit(op_type, inner, props, result_types=[out_type(ctx, [n, c, h, w])]))


def emit_mul(ctx: OpContext) -> SSAValue:
    """MUL at either width: the int32 MultiplyByQuantizedMultiplier of a * b by
    s_a s_b / s_out, clamped to the fused activation."""
    a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
    pair = tflite_multiplier(tensor_scale(a_t) * tensor_scale(b_t) / tensor_scale(out))
    return emit_elementwise(ctx, qnn.MulOp, requant_props([pair], activation_range(ctx, out)))


def check_same_params(ctx: OpContext, a: Tensor, b: Tensor) -> None:
    if quantized_type(a) != quantized_type(b):
        raise Unsupported(f"input and output quantization differ ('{a.name}', '{b.name}')")


def folded_mean_multiplier(pair: tuple[int, int], count: int) -> tuple[int, int]:
    """QuantizedMeanOrSum's mean rescaling: 1/count folded into a Q31 (m0, npuc shift)."""
    m0, shift = pair
    tfl_shift = 31 - shift
    s = min(count.bit_length() - 1, 32, 31 + tfl_shift)  # 63 - CountLeadingZeros(n)
    folded = (m0 << s) // count
    if folded >= 1 << 31:
        raise Unsupported(f"mean multiplier {folded} does not fit in int32")
    return folded, 31 - (tfl_shift - s)


def reduce_props(ctx: OpContext) -> tuple[dict, int]:
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


ACC_LIMIT = 1 << 47  # MultiplyByQuantizedMultiplier(int64_t, ...) assumes |x| < 2^47


REDUCED_CAP = 0x7FFF0000


def tflite64_multiplier(pair: tuple[int, int]) -> tuple[int, int]:
    """npuc (m0, shift) of TFLite's 64-bit MultiplyByQuantizedMultiplier for a Q31 (m0, shift).

    reduced = (m0 + 2^15) >> 16 (0x7FFF when m0 >= 0x7FFF0000); total_shift =
    15 - shift_tflite = shift - 16; the result is `half_up` rounding of acc * reduced / 2^total.
    """
    m0, shift = pair
    if m0 == 0:
        return 0, 0
    reduced = (m0 + (1 << 15)) >> 16 if m0 < REDUCED_CAP else 0x7FFF
    total = shift - 16
    if total < 1:
        raise Unsupported(f"16x8 requantization multiplier {m0} * 2^-{shift} is too large")
    return reduced, total


def is_16x8(ctx: OpContext) -> bool:
    """Whether the op's data input or output is an int16 tensor."""
    tensors = [ctx.out()]
    if ctx.op.inputs and ctx.has(0):
        tensors.append(ctx.tensor(0))
    return any(t.dtype == np.int16 for t in tensors)


def check_int16(*tensors: Tensor) -> None:
    for t in tensors:
        if t.dtype != np.int16 or t.quant is None:
            raise Unsupported(f"tensor '{t.name}' is {t.type_name}; 16x8 kernels need int16")
        if t.quant.axis is not None and len(t.quant.scales) > 1:
            raise Unsupported(f"activation '{t.name}' is quantized per channel")
        if int(t.quant.zero_points[0]) != 0:
            raise Unsupported(
                f"int16 tensor '{t.name}' has zero point "
                f"{int(t.quant.zero_points[0])}; TFLite needs 0"
            )


def pot_exponent(scale: float) -> int | None:
    """TFLite's CheckedLog2 in float32: round(log2(scale)) when within 1e-3 of an integer."""
    log2 = np.float32(np.log(np.float32(scale))) * (np.float32(1) / np.float32(np.log(2.0)))
    rounded = np.floor(np.abs(log2) + np.float32(0.5)) * np.sign(log2)
    return int(rounded) if abs(np.float32(log2 - rounded)) < np.float32(1e-3) else None
