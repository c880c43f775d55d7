"""int8 TFLite operators as `qnn` ops, with TFLite's integer arithmetic reproduced exactly.

Every rescaling op gets `rounding = "tflite"` (MultiplyByQuantizedMultiplier) and
multipliers computed as TFLite's kernels compute them in Prepare:

- CONV_2D, DEPTHWISE_CONV_2D, per-channel FULLY_CONNECTED: per channel
  `double(s_in) * double(s_w[c]) / double(s_out)` (PopulateConvolutionQuantizationParams);
- per-tensor FULLY_CONNECTED: `double(float(s_in * s_w)) / double(s_out)` -- the
  product is a float32 product there (GetQuantizedConvolutionMultipler);
- ADD/SUB: left_shift 20, input multipliers `s_i / (2 max(s_1, s_2))`, output
  multiplier `2 max(s_1, s_2) / (2^20 s_out)`; MUL: `s_1 s_2 / s_out`;

each encoded with TFLite's QuantizeMultiplier (`tflite_multiplier`). Fused
activations clamp to CalculateActivationRangeQuantized's bounds.

LOGISTIC, TANH, ELU, GELU, HARD_SWISH and LEAKY_RELU become `qnn.lut` with the
256-entry table TFLite's int8 kernel produces (see tflite_luts).

SOFTMAX becomes `qnn.softmax`, TFLite's gemmlowp fixed-point algorithm
(tflite_softmax); AVERAGE_POOL_2D uses `rounding = "tflite"`, which rounds the
mean of the stored values as TFLite does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import BoolAttr, IntegerAttr, StringAttr, TensorType, i32, i64
from xdsl.ir import Attribute, SSAValue

from npuc.dialects import qnn
from npuc.dialects.nn_base import ints, shape_of
from npuc.tensors import to_dense

from . import tflite_luts as luts
from . import tflite_ops as fops
from .tflite import OpContext, Tensor, Unsupported, check_bias, quantized_type, tensor_type

LEFT_SHIFT_8BIT = 20


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


def _round_away(x: float) -> int:
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
        return q.zero_point + _round_away(float(np.float32(f) / scale))

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


def _check_int8(*tensors: Tensor, uint8: bool = False) -> None:
    for t in tensors:
        if t.dtype not in ((np.int8, np.uint8) if uint8 else (np.int8,)) or t.quant is None:
            raise Unsupported(f"tensor '{t.name}' is {t.type_name}; quantized kernels need int8")
        if t.quant.axis is not None and len(t.quant.scales) > 1:
            raise Unsupported(f"activation '{t.name}' is quantized per channel")


def _scale(t: Tensor) -> float:
    return float(t.quant.scales[0])


def _out_type(ctx: OpContext, shape: Sequence[int] | None = None) -> TensorType:
    return tensor_type(ctx.out(), shape)


def _bias(ctx: OpContext, index: int) -> SSAValue | None:
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


def _weight(ctx: OpContext, w: np.ndarray, source_axis: int) -> SSAValue:
    """A weight constant (already in nn layout, channels on axis 0) with the model's scales."""
    t = ctx.tensor(1)
    if t.dtype != np.int8 or t.quant is None:
        raise Unsupported(f"weights '{t.name}' are {t.type_name}; int8 expected")
    per_channel = len(t.quant.scales) > 1
    if per_channel and t.quant.axis != source_axis:
        raise Unsupported(f"weights quantized on axis {t.quant.axis}, expected {source_axis}")
    ty = quantized_type(t, axis=0 if per_channel else None)
    return ctx.constant(w, ty, name=t.name)


def _channel_scales(t: Tensor, channels: int) -> list[float]:
    scales = [float(s) for s in t.quant.scales]
    return scales * channels if len(scales) == 1 else scales


# --------------------------------------------------------------------------- layers


def conv_multipliers(ctx: OpContext, channels: int) -> list[tuple[int, int]]:
    """TFLite's per-channel conv multipliers: QuantizeMultiplier(double(s_in * s_w[c]) / s_out)."""
    s_in, s_out = _scale(ctx.tensor(0)), _scale(ctx.out())
    scales = _channel_scales(ctx.tensor(1), channels)
    return [tflite_multiplier(s_in * s_w / s_out) for s_w in scales]


def fc_multipliers(ctx: OpContext, channels: int) -> list[tuple[int, int]]:
    """FULLY_CONNECTED: per channel like conv; per tensor, the scales multiply in float32 first."""
    x_t, w_t = ctx.tensor(0), ctx.tensor(1)
    if len(w_t.quant.scales) > 1:
        return conv_multipliers(ctx, channels)
    # GetQuantizedConvolutionMultipler: float32 product, then double
    product = float(np.float32(x_t.quant.scales[0]) * np.float32(w_t.quant.scales[0]))
    return [tflite_multiplier(product / _scale(ctx.out()))]


def _conv(ctx: OpContext, depthwise: bool) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    _check_int8(x_t, out)
    w, groups = fops.conv_weight(ctx, depthwise)
    weight = _weight(ctx, w, 3 if depthwise else 0)
    pairs = conv_multipliers(ctx, w.shape[0])
    props = fops.conv_props(ctx, w.shape[2:]) | {"groups": IntegerAttr(groups, i64)}
    props |= requant_props(pairs, activation_range(ctx, out))
    n, h, wd, c = out.shape
    y = ctx.emit(qnn.Conv2dOp, [ctx.nchw(ctx.value(0)), weight, _bias(ctx, 2)], props,
                 result_types=[_out_type(ctx, [n, c, h, wd])])  # fmt: skip
    return ctx.nhwc(y)


def _fully_connected(ctx: OpContext) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    _check_int8(x_t, out)
    w = ctx.need_const(1, "the weights")
    weight = _weight(ctx, w, 0)
    pairs = fc_multipliers(ctx, w.shape[0])
    k = w.shape[1]
    x = ctx.reshape(ctx.value(0), [int(np.prod(ctx.shape(0))) // k, k])
    rows = shape_of(x)[0]
    props = requant_props(pairs, activation_range(ctx, out))
    y = ctx.emit(qnn.FullyConnectedOp, [x, weight, _bias(ctx, 2)], props,
                 result_types=[_out_type(ctx, [rows, w.shape[0]])])  # fmt: skip
    return ctx.reshape(y, out.shape)


def _aligned(op_type: type) -> object:
    def convert(ctx: OpContext) -> SSAValue:
        a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
        _check_int8(a_t, b_t, out)
        s_a, s_b, s_out = _scale(a_t), _scale(b_t), _scale(out)
        twice_max = 2 * max(s_a, s_b)
        lhs = tflite_multiplier(s_a / twice_max)
        rhs = tflite_multiplier(s_b / twice_max)
        pair = tflite_multiplier(twice_max / ((1 << LEFT_SHIFT_8BIT) * s_out))
        props = requant_props([pair], activation_range(ctx, out)) | {
            "left_shift": IntegerAttr(LEFT_SHIFT_8BIT, i64),
            "lhs_multiplier": IntegerAttr(lhs[0], i64), "lhs_shift": IntegerAttr(lhs[1], i64),
            "rhs_multiplier": IntegerAttr(rhs[0], i64), "rhs_shift": IntegerAttr(rhs[1], i64),
        }  # fmt: skip
        return _elementwise(ctx, op_type, props)

    return convert


def _elementwise(ctx: OpContext, op_type: type, props: dict[str, Attribute]) -> SSAValue:
    """A binary op, run in NCHW when both operands come out of NCHW ops (see hoisted)."""
    operands = [ctx.value(0), ctx.value(1)]
    inner = ctx.hoisted(operands)
    if inner is None:
        return ctx.emit(op_type, operands, props, result_types=[_out_type(ctx)])
    n, h, w, c = ctx.out().shape
    return ctx.nhwc(ctx.emit(op_type, inner, props, result_types=[_out_type(ctx, [n, c, h, w])]))


def _mul(ctx: OpContext) -> SSAValue:
    a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
    _check_int8(a_t, b_t, out)
    pair = tflite_multiplier(_scale(a_t) * _scale(b_t) / _scale(out))
    props = requant_props([pair], activation_range(ctx, out))
    return _elementwise(ctx, qnn.MulOp, props)


def _same_params(ctx: OpContext, a: Tensor, b: Tensor) -> None:
    if quantized_type(a) != quantized_type(b):
        raise Unsupported(f"input and output quantization differ ('{a.name}', '{b.name}')")


def _pool(average: bool) -> object:
    def convert(ctx: OpContext) -> SSAValue:
        x_t, out = ctx.tensor(0), ctx.out()
        _same_params(ctx, x_t, out)
        kernel = [int(ctx.opt("FilterHeight", 1)), int(ctx.opt("FilterWidth", 1))]
        strides = fops.strides_of(ctx)
        pads = fops.window_pads(ctx, x_t.shape[1:3], kernel, strides, [1, 1])
        props: dict[str, Attribute] = {
            "kernel": ints(kernel),
            "strides": ints(strides),
            "pads": ints(pads),
        }
        n, h, w, c = out.shape
        result = [_out_type(ctx, [n, c, h, w])]
        x = ctx.nchw(ctx.value(0))
        clamp = activation_range(ctx, out)
        if average:  # TFLite: round-half-away mean of the window, same params in and out
            props |= requant_props([(1 << 30, 30)], clamp)
            return ctx.nhwc(ctx.emit(qnn.AvgPool2dOp, [x], props, result_types=result))
        y = ctx.emit(qnn.MaxPool2dOp, [x], props | {"dilations": ints([1, 1])}, result_types=result)
        return _clamped(ctx, ctx.nhwc(y), clamp)

    return convert


def _clamped(ctx: OpContext, value: SSAValue, clamp: tuple[int, int]) -> SSAValue:
    q = quantized_type(ctx.out())
    if clamp == (q.qmin, q.qmax):
        return value
    return ctx.emit(qnn.RequantizeOp, [value], requant_props([(1 << 30, 30)], clamp),
                    result_types=[value.type])  # fmt: skip


def _movement(convert_float: object) -> object:
    """A data-movement converter on stored integers (TFLite keeps the input's params)."""

    def convert(ctx: OpContext) -> SSAValue | list[SSAValue]:
        for i in range(len(ctx.op.outputs)):
            _same_params(ctx, ctx.tensor(_data_input(ctx)), ctx.out(i))
        return convert_float(ctx)

    return convert


def _data_input(ctx: OpContext) -> int:
    return 1 if ctx.op.op_type == "SPLIT" else 0


def _concat(ctx: OpContext) -> SSAValue:
    for i in range(len(ctx.op.inputs)):
        _same_params(ctx, ctx.tensor(i), ctx.out())
    values = [ctx.value(i) for i in range(len(ctx.op.inputs))]
    axis = int(ctx.opt("Axis", 0)) % len(shape_of(values[0]))
    y = ctx.emit(
        qnn.ConcatOp, values, {"axis": IntegerAttr(axis, i64)}, result_types=[_out_type(ctx)]
    )
    return _clamped(ctx, y, activation_range(ctx, ctx.out()))


def _split(ctx: OpContext, value_index: int, axis_index: int) -> list[SSAValue]:
    _same_params(ctx, ctx.tensor(value_index), ctx.out())
    value = ctx.value(value_index)
    axis = int(np.ravel(ctx.need_const(axis_index, "the axis"))[0]) % len(shape_of(value))
    types = [tensor_type(ctx.out(i)) for i in range(len(ctx.op.outputs))]
    if len(types) == 1:
        return [value]
    return ctx.emit_multi(qnn.SplitOp, [value], {"axis": IntegerAttr(axis, i64)}, types)


def _slice(ctx: OpContext) -> SSAValue:
    shape = ctx.shape(0)
    begin = [int(b) for b in ctx.need_const(1, "begin")]
    size = [int(s) for s in ctx.need_const(2, "size")]
    ends = [d if s < 0 else b + s for b, s, d in zip(begin, size, shape, strict=True)]
    props = fops.slice_props(begin, ends, [1] * len(shape))
    return ctx.emit(qnn.SliceOp, [ctx.value(0)], props, result_types=[_out_type(ctx)])


def _strided_slice(ctx: OpContext) -> SSAValue:
    props, sizes = fops.strided_slice_props(ctx)
    q = quantized_type(ctx.out())
    y = ctx.emit(qnn.SliceOp, [ctx.value(0)], props, result_types=[TensorType(q, sizes)])
    return ctx.reshape(y, ctx.out().shape)


def _pad(ctx: OpContext) -> SSAValue:
    q = quantized_type(ctx.tensor(0))
    value = q.zero_point
    if ctx.has(2):  # PADV2: the pad value is a stored integer of the input's type
        value = int(np.ravel(ctx.need_const(2, "the pad value"))[0])
    props = {"pads": ints(fops.pad_list(ctx)), "value": IntegerAttr(value, i64)}
    return ctx.emit(qnn.PadOp, [ctx.value(0)], props, result_types=[_out_type(ctx)])


def _transpose(ctx: OpContext) -> SSAValue:
    return ctx.transpose(ctx.value(0), [int(p) for p in ctx.need_const(1, "the permutation")])


def _resize_nearest(ctx: OpContext) -> SSAValue:
    x, out = ctx.shape(0), ctx.out().shape
    align, half = ctx.opt("AlignCorners", False), ctx.opt("HalfPixelCenters", False)
    coord, nearest = (
        ("align_corners", "round_prefer_ceil") if align
        else ("tf_half_pixel_for_nn", "floor") if half else ("asymmetric", "floor")
    )  # fmt: skip
    scales = [1.0, 1.0, out[1] / x[1], out[2] / x[2]]
    props = {"scales": fops._f32_array(scales), "coordinate_mode": StringAttr(coord),
             "nearest_mode": StringAttr(nearest)}  # fmt: skip
    y = ctx.emit(qnn.ResizeOp, [ctx.nchw(ctx.value(0))], props,
                 result_types=[_out_type(ctx, [out[0], out[3], out[1], out[2]])])  # fmt: skip
    return ctx.nhwc(y)


def _softmax(ctx: OpContext) -> SSAValue:
    """TFLite's fixed-point int8 softmax as qnn.softmax (lazy import: it imports this module)."""
    from .tflite_softmax import softmax_converter

    return softmax_converter(ctx)


def _lut(kind: str) -> object:
    """An elementwise int8 activation as qnn.lut over TFLite's own table (tflite_luts)."""

    def convert(ctx: OpContext) -> SSAValue:
        x_t, out = ctx.tensor(0), ctx.out()
        _check_int8(x_t, out)
        for t in (x_t, out):
            if quantized_type(t).qmin != -128:
                raise Unsupported(f"int8 tensor '{t.name}' with a narrowed storage range")
        s_in, zp_in = _scale(x_t), int(x_t.quant.zero_points[0])
        s_out, zp_out = _scale(out), int(out.quant.zero_points[0])
        if kind in _FIXED_OUTPUT and (s_out, zp_out) != _FIXED_OUTPUT[kind]:
            # TFLite's Prepare rejects other output parameters.
            raise Unsupported(f"{ctx.op.op_type} int8 output must have scale, zero point "
                              f"{_FIXED_OUTPUT[kind]}")  # fmt: skip
        try:
            if kind == "HARD_SWISH":
                table = luts.hard_swish(s_in, zp_in, s_out, zp_out)
            elif kind == "LEAKY_RELU":
                alpha = float(ctx.opt("Alpha", 0.2))
                table = luts.leaky_relu(alpha, s_in, zp_in, s_out, zp_out)
            else:
                fn = _LUT_TRANSFORMS[kind]
                if kind == "GELU" and ctx.opt("Approximate", False):
                    fn = luts.gelu_approximate
                table = luts.lut_populate(fn, s_in, zp_in, s_out, zp_out)
        except ValueError as e:
            raise Unsupported(str(e)) from e
        props = {"table": to_dense(table.astype(np.int32), i32)}
        return ctx.emit(qnn.LutOp, [ctx.value(0)], props, result_types=[_out_type(ctx)])

    return convert


_LUT_TRANSFORMS = {"LOGISTIC": luts.logistic, "TANH": luts.tanh, "ELU": luts.elu,
                   "GELU": luts.gelu}  # fmt: skip
_FIXED_OUTPUT = {"LOGISTIC": (1 / 256, -128), "TANH": (1 / 128, 0)}


# --------------------------------------------------------------------------- relu, max, gather


_RELU_BOUNDS: dict[str, tuple[float, float | None]] = {
    "RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0),
}  # fmt: skip


def _relu(kind: str) -> object:
    """Standalone int8 RELU/RELU6/RELU_N1_TO_1 as TFLite's ReluX: a requantize, then a clamp.

    ReluPrepare: QuantizeMultiplier(double(float(s_in / s_out))) (a float32 quotient);
    QuantizedReluX: bounds zp_out + roundf(act / s_out) in float32, within int8.
    """

    def convert(ctx: OpContext) -> SSAValue:
        x_t, out = ctx.tensor(0), ctx.out()
        _check_int8(x_t, out)
        q = quantized_type(out)
        s_in, s_out = np.float32(x_t.quant.scales[0]), np.float32(out.quant.scales[0])
        pair = tflite_multiplier(float(s_in / s_out))

        def bound(f: float) -> int:
            return q.zero_point + _round_away(float(np.float32(f) / s_out))

        lo_f, hi_f = _RELU_BOUNDS[kind]
        lo = max(q.qmin, bound(lo_f))
        hi = q.qmax if hi_f is None else min(q.qmax, bound(hi_f))
        clamp = (min(lo, hi), hi)  # TFLite applies max(lo) then min(hi)
        return ctx.emit(qnn.RequantizeOp, [ctx.value(0)], requant_props([pair], clamp),
                        result_types=[_out_type(ctx)])  # fmt: skip

    return convert


def _extremum(op_type: type) -> object:
    """MAXIMUM/MINIMUM: elementwise max/min of stored values; one quantization throughout."""

    def convert(ctx: OpContext) -> SSAValue:
        a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
        _check_int8(a_t, b_t, out)
        _same_params(ctx, a_t, out)
        _same_params(ctx, b_t, out)
        return _elementwise(ctx, op_type, {})

    return convert


def _gather(ctx: OpContext) -> SSAValue:
    x_t = ctx.tensor(0)
    _check_int8(x_t, ctx.out())
    _same_params(ctx, x_t, ctx.out())
    if ctx.opt("BatchDims", 0):
        raise Unsupported("GATHER with batch_dims is not supported")
    data = np.asarray(ctx.need_const(1, "the indices")).astype(np.int64)
    rank = len(ctx.shape(0))
    axis = int(ctx.opt("Axis", 0)) % rank
    size = ctx.shape(0)[axis]
    if data.size and (data.min() < 0 or data.max() >= size):
        raise ValueError(f"gather indices must lie in [0, {size}) (TFLite rejects others)")
    indices = ctx.constant(data)
    return ctx.emit(qnn.GatherOp, [ctx.value(0), indices], {"axis": IntegerAttr(axis, i64)},
                    result_types=[_out_type(ctx)])  # fmt: skip


def _reduce_max(ctx: OpContext) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    _check_int8(x_t, out)
    _same_params(ctx, x_t, out)
    rank = len(ctx.shape(0))
    axes = sorted({int(a) % rank for a in np.ravel(ctx.need_const(1, "the axes"))})
    props = {"axes": ints(axes), "keepdims": BoolAttr.from_bool(bool(ctx.opt("KeepDims", False)))}
    return ctx.emit(qnn.ReduceMaxOp, [ctx.value(0)], props, result_types=[_out_type(ctx)])


def _arg_reduce(op_type: type) -> object:
    """ARG_MAX/ARG_MIN: index of the extreme stored value, in the model's int32/int64 type."""

    def convert(ctx: OpContext) -> SSAValue:
        x_t, out = ctx.tensor(0), ctx.out()
        _check_int8(x_t)
        if out.dtype not in (np.int32, np.int64):
            raise Unsupported(f"{ctx.op.op_type} with output type {out.type_name}")
        rank = len(ctx.shape(0))
        axis = int(np.ravel(ctx.need_const(1, "the axis"))[0]) % rank
        props = {"axis": IntegerAttr(axis, i64), "keepdims": BoolAttr.from_bool(False)}
        return ctx.emit(op_type, [ctx.value(0)], props, result_types=[tensor_type(out)])

    return convert


def _batch_matmul(ctx: OpContext) -> SSAValue:
    """BATCH_MATMUL as qnn.matmul: GetQuantizedConvolutionMultipler (float32 s_a * s_b)."""
    a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
    _check_int8(a_t, b_t, out)
    product = float(np.float32(a_t.quant.scales[0]) * np.float32(b_t.quant.scales[0]))
    pair = tflite_multiplier(product / _scale(out))
    q = quantized_type(out)
    a, b = ctx.value(0), ctx.value(1)
    if ctx.opt("AdjX", False):
        a = fops._swap_last(ctx, a)
    if ctx.opt("AdjY", False):
        b = fops._swap_last(ctx, b)
    return ctx.emit(qnn.MatMulOp, [a, b], requant_props([pair], (q.qmin, q.qmax)),
                    result_types=[_out_type(ctx)])  # fmt: skip


# --------------------------------------------------------------------------- conversions


def _quantize(ctx: OpContext) -> SSAValue:
    """float -> int8/uint8, or TFLite's Requantize between int8 and uint8 (either way):
    MultiplyByQuantizedMultiplier by QuantizeMultiplier(double(s_in) / double(s_out))."""
    x_t, out = ctx.tensor(0), ctx.out()
    if x_t.dtype == np.float32:
        return ctx.emit(qnn.QuantizeOp, [ctx.value(0)], result_types=[_out_type(ctx)])
    _check_int8(x_t, out, uint8=True)
    pair = tflite_multiplier(_scale(x_t) / _scale(out))
    q = quantized_type(out)
    return ctx.emit(qnn.RequantizeOp, [ctx.value(0)], requant_props([pair], (q.qmin, q.qmax)),
                    result_types=[_out_type(ctx)])  # fmt: skip


def _dequantize(ctx: OpContext) -> SSAValue:
    t = ctx.tensor(0)  # constants are folded before import (tflite_constants)
    if t.quant is None:
        raise Unsupported(f"input '{t.name}' of type {t.type_name} is not quantized")
    return ctx.emit(qnn.DequantizeOp, [ctx.value(0)], result_types=[_out_type(ctx)])


def _reshape(ctx: OpContext) -> SSAValue:
    return ctx.reshape(ctx.value(0), ctx.out().shape)


CONVERTERS = {
    "CONV_2D": lambda ctx: _conv(ctx, depthwise=False),
    "DEPTHWISE_CONV_2D": lambda ctx: _conv(ctx, depthwise=True),
    "FULLY_CONNECTED": _fully_connected,
    "ADD": _aligned(qnn.AddOp),
    "SUB": _aligned(qnn.SubOp),
    "MUL": _mul,
    "AVERAGE_POOL_2D": _pool(average=True),
    "MAX_POOL_2D": _pool(average=False),
    "RESHAPE": _movement(_reshape),
    "SQUEEZE": _movement(_reshape),
    "EXPAND_DIMS": _movement(_reshape),
    "TRANSPOSE": _movement(_transpose),
    "CONCATENATION": _concat,
    "SPLIT": lambda ctx: _split(ctx, 1, 0),
    "SPLIT_V": lambda ctx: _split(ctx, 0, 2),
    "SLICE": _movement(_slice),
    "STRIDED_SLICE": _movement(_strided_slice),
    "PAD": _movement(_pad),
    "PADV2": _movement(_pad),
    "RESIZE_NEAREST_NEIGHBOR": _movement(_resize_nearest),
    "SOFTMAX": _softmax,
    "LOGISTIC": _lut("LOGISTIC"),
    "TANH": _lut("TANH"),
    "ELU": _lut("ELU"),
    "GELU": _lut("GELU"),
    "HARD_SWISH": _lut("HARD_SWISH"),
    "LEAKY_RELU": _lut("LEAKY_RELU"),
    "QUANTIZE": _quantize,
    "RELU": _relu("RELU"),
    "RELU6": _relu("RELU6"),
    "RELU_N1_TO_1": _relu("RELU_N1_TO_1"),
    "MAXIMUM": _extremum(qnn.MaximumOp),
    "MINIMUM": _extremum(qnn.MinimumOp),
    "GATHER": _gather,
    "REDUCE_MAX": _reduce_max,
    "ARG_MAX": _arg_reduce(qnn.ArgMaxOp),
    "ARG_MIN": _arg_reduce(qnn.ArgMinOp),
    "BATCH_MATMUL": _batch_matmul,
}

fops.CONVERTERS["QUANTIZE"] = _quantize
fops.CONVERTERS["DEQUANTIZE"] = _dequantize


def _install_16x8() -> None:
    """int16x8 models: importing tflite_int16 routes ops with int16 data to its converters."""
    from . import tflite_int16  # noqa: F401  (installs itself into CONVERTERS)


_install_16x8()


from . import tflite_int8_more  # noqa: E402, F401  (MEAN, SQUARED_DIFFERENCE, PRELU, ...)
