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

The other operators, bit-exact to LiteRT's reference kernels:

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
from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import BoolAttr, IntegerAttr, StringAttr, TensorType, i32, i64
from xdsl.ir import Attribute, SSAValue

from npuc.dialects import qnn
from npuc.dialects.arrays import ints
from npuc.dialects.nn_base import shape_of
from npuc.dialects.qnn_elementwise import aligned_inputs
from npuc.tensors import to_dense

from . import tflite_float as fops
from . import tflite_luts as luts
from .tflite_context import (
    Converter,
    OpContext,
    Unsupported,
    quantized_type,
    tensor_type,
)
from .tflite_quant import (
    activation_range,
    check_int8,
    check_same_params,
    conv_multipliers,
    emit_elementwise,
    emit_mul,
    fc_multipliers,
    folded_mean_multiplier,
    out_type,
    quantized_bias,
    quantized_weight,
    reduce_props,
    requant_props,
    round_away,
    tensor_scale,
    tflite_multiplier,
)
from .tflite_softmax import softmax_converter

LEFT_SHIFT_8BIT = 20

WidthCheck = Callable[..., None]  # raises Unsupported unless every tensor has the width


# --------------------------------------------------------------------------- layers


def _conv(ctx: OpContext, depthwise: bool) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    check_int8(x_t, out)
    w, groups = fops.conv_weight(ctx, depthwise)
    weight = quantized_weight(ctx, w, 3 if depthwise else 0)
    pairs = conv_multipliers(ctx, w.shape[0])
    props = fops.conv_props(ctx, w.shape[2:]) | {"groups": IntegerAttr(groups, i64)}
    props |= requant_props(pairs, activation_range(ctx, out))
    n, h, wd, c = out.shape
    y = ctx.emit(
        qnn.Conv2dOp,
        [ctx.nchw(ctx.value(0)), weight, quantized_bias(ctx, 2)],
        props,
        result_types=[out_type(ctx, [n, c, h, wd])],
    )
    return ctx.nhwc(y)


def _fully_connected(ctx: OpContext) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    check_int8(x_t, out)
    w = ctx.need_const(1, "the weights")
    weight = quantized_weight(ctx, w, 0)
    pairs = fc_multipliers(ctx, w.shape[0])
    k = w.shape[1]
    x = ctx.reshape(ctx.value(0), [int(np.prod(ctx.shape(0))) // k, k])
    rows = shape_of(x)[0]
    props = requant_props(pairs, activation_range(ctx, out))
    y = ctx.emit(
        qnn.FullyConnectedOp,
        [x, weight, quantized_bias(ctx, 2)],
        props,
        result_types=[out_type(ctx, [rows, w.shape[0]])],
    )
    return ctx.reshape(y, out.shape)


def _aligned(op_type: type) -> object:
    def convert(ctx: OpContext) -> SSAValue:
        a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
        check_int8(a_t, b_t, out)
        s_a, s_b, s_out = tensor_scale(a_t), tensor_scale(b_t), tensor_scale(out)
        twice_max = 2 * max(s_a, s_b)
        lhs = tflite_multiplier(s_a / twice_max)
        rhs = tflite_multiplier(s_b / twice_max)
        pair = tflite_multiplier(twice_max / ((1 << LEFT_SHIFT_8BIT) * s_out))
        clamp = activation_range(ctx, out)
        props = requant_props([pair], clamp) | aligned_inputs(LEFT_SHIFT_8BIT, lhs, rhs)
        return emit_elementwise(ctx, op_type, props)

    return convert


def _mul(ctx: OpContext) -> SSAValue:
    check_int8(ctx.tensor(0), ctx.tensor(1), ctx.out())
    return emit_mul(ctx)


def pool(average: bool) -> object:
    def convert(ctx: OpContext) -> SSAValue:
        x_t, out = ctx.tensor(0), ctx.out()
        check_same_params(ctx, x_t, out)
        kernel = [int(ctx.opt("FilterHeight", 1)), int(ctx.opt("FilterWidth", 1))]
        strides = fops.strides_of(ctx)
        pads = fops.window_pads(ctx, x_t.shape[1:3], kernel, strides, [1, 1])
        props: dict[str, Attribute] = {
            "kernel": ints(kernel),
            "strides": ints(strides),
            "pads": ints(pads),
        }
        n, h, w, c = out.shape
        result = [out_type(ctx, [n, c, h, w])]
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
    return ctx.emit(
        qnn.RequantizeOp, [value], requant_props([(1 << 30, 30)], clamp), result_types=[value.type]
    )


def movement(convert_float: object) -> object:
    """A data-movement converter on stored integers (TFLite keeps the input's params)."""

    def convert(ctx: OpContext) -> SSAValue | list[SSAValue]:
        for i in range(len(ctx.op.outputs)):
            check_same_params(ctx, ctx.tensor(_data_input(ctx)), ctx.out(i))
        return convert_float(ctx)

    return convert


def _data_input(ctx: OpContext) -> int:
    return 1 if ctx.op.op_type == "SPLIT" else 0


def _concat(ctx: OpContext) -> SSAValue:
    for i in range(len(ctx.op.inputs)):
        check_same_params(ctx, ctx.tensor(i), ctx.out())
    values = [ctx.value(i) for i in range(len(ctx.op.inputs))]
    axis = int(ctx.opt("Axis", 0)) % len(shape_of(values[0]))
    y = ctx.emit(
        qnn.ConcatOp, values, {"axis": IntegerAttr(axis, i64)}, result_types=[out_type(ctx)]
    )
    return _clamped(ctx, y, activation_range(ctx, ctx.out()))


def _split(ctx: OpContext, value_index: int, axis_index: int) -> list[SSAValue]:
    check_same_params(ctx, ctx.tensor(value_index), ctx.out())
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
    return ctx.emit(qnn.SliceOp, [ctx.value(0)], props, result_types=[out_type(ctx)])


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
    return ctx.emit(qnn.PadOp, [ctx.value(0)], props, result_types=[out_type(ctx)])


def _transpose(ctx: OpContext) -> SSAValue:
    return ctx.transpose(ctx.value(0), [int(p) for p in ctx.need_const(1, "the permutation")])


def _resize_nearest(ctx: OpContext) -> SSAValue:
    x, out = ctx.shape(0), ctx.out().shape
    align, half = ctx.opt("AlignCorners", False), ctx.opt("HalfPixelCenters", False)
    coord, nearest = (
        ("align_corners", "round_prefer_ceil")
        if align
        else ("tf_half_pixel_for_nn", "floor")
        if half
        else ("asymmetric", "floor")
    )
    scales = [1.0, 1.0, out[1] / x[1], out[2] / x[2]]
    props = {
        "scales": fops.f32_array(scales),
        "coordinate_mode": StringAttr(coord),
        "nearest_mode": StringAttr(nearest),
    }
    y = ctx.emit(
        qnn.ResizeOp,
        [ctx.nchw(ctx.value(0))],
        props,
        result_types=[out_type(ctx, [out[0], out[3], out[1], out[2]])],
    )
    return ctx.nhwc(y)


def _lut(kind: str) -> object:
    """An elementwise int8 activation as qnn.lut over TFLite's own table (tflite_luts)."""

    def convert(ctx: OpContext) -> SSAValue:
        x_t, out = ctx.tensor(0), ctx.out()
        check_int8(x_t, out)
        for t in (x_t, out):
            if quantized_type(t).qmin != -128:
                raise Unsupported(f"int8 tensor '{t.name}' with a narrowed storage range")
        s_in, zp_in = tensor_scale(x_t), int(x_t.quant.zero_points[0])
        s_out, zp_out = tensor_scale(out), int(out.quant.zero_points[0])
        if kind in _FIXED_OUTPUT and (s_out, zp_out) != _FIXED_OUTPUT[kind]:
            # TFLite's Prepare rejects other output parameters.
            raise Unsupported(
                f"{ctx.op.op_type} int8 output must have scale, zero point {_FIXED_OUTPUT[kind]}"
            )
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
        return ctx.emit(qnn.LutOp, [ctx.value(0)], props, result_types=[out_type(ctx)])

    return convert


_LUT_TRANSFORMS = {"LOGISTIC": luts.logistic, "TANH": luts.tanh, "ELU": luts.elu, "GELU": luts.gelu}
_FIXED_OUTPUT = {"LOGISTIC": (1 / 256, -128), "TANH": (1 / 128, 0)}


# --------------------------------------------------------------------------- relu, max, gather


_RELU_BOUNDS: dict[str, tuple[float, float | None]] = {
    "RELU": (0.0, None),
    "RELU6": (0.0, 6.0),
    "RELU_N1_TO_1": (-1.0, 1.0),
}


def _relu(kind: str) -> object:
    """Standalone int8 RELU/RELU6/RELU_N1_TO_1 as TFLite's ReluX: a requantize, then a clamp.

    ReluPrepare: QuantizeMultiplier(double(float(s_in / s_out))) (a float32 quotient);
    QuantizedReluX: bounds zp_out + roundf(act / s_out) in float32, within int8.
    """

    def convert(ctx: OpContext) -> SSAValue:
        x_t, out = ctx.tensor(0), ctx.out()
        check_int8(x_t, out)
        q = quantized_type(out)
        s_in, s_out = np.float32(x_t.quant.scales[0]), np.float32(out.quant.scales[0])
        pair = tflite_multiplier(float(s_in / s_out))

        def bound(f: float) -> int:
            return q.zero_point + round_away(float(np.float32(f) / s_out))

        lo_f, hi_f = _RELU_BOUNDS[kind]
        lo = max(q.qmin, bound(lo_f))
        hi = q.qmax if hi_f is None else min(q.qmax, bound(hi_f))
        clamp = (min(lo, hi), hi)  # TFLite applies max(lo) then min(hi)
        return ctx.emit(
            qnn.RequantizeOp,
            [ctx.value(0)],
            requant_props([pair], clamp),
            result_types=[out_type(ctx)],
        )

    return convert


def extremum(op_type: type, check: WidthCheck = check_int8) -> Converter:
    """MAXIMUM/MINIMUM: elementwise max/min of stored values; one quantization throughout."""

    def convert(ctx: OpContext) -> SSAValue:
        a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
        check(a_t, b_t, out)
        check_same_params(ctx, a_t, out)
        check_same_params(ctx, b_t, out)
        return emit_elementwise(ctx, op_type, {})

    return convert


def gather(check: WidthCheck = check_int8) -> Converter:
    """GATHER along one axis with constant indices; one quantization throughout."""

    def convert(ctx: OpContext) -> SSAValue:
        x_t = ctx.tensor(0)
        check(x_t, ctx.out())
        check_same_params(ctx, x_t, ctx.out())
        if ctx.opt("BatchDims", 0):
            raise Unsupported("GATHER with batch_dims is not supported")
        data = np.asarray(ctx.need_const(1, "the indices")).astype(np.int64)
        axis = int(ctx.opt("Axis", 0)) % len(ctx.shape(0))
        size = ctx.shape(0)[axis]
        if data.size and (data.min() < 0 or data.max() >= size):
            raise ValueError(f"gather indices must lie in [0, {size}) (TFLite rejects others)")
        return ctx.emit(
            qnn.GatherOp,
            [ctx.value(0), ctx.constant(data)],
            {"axis": IntegerAttr(axis, i64)},
            result_types=[out_type(ctx)],
        )

    return convert


def reduce_max(check: WidthCheck = check_int8) -> Converter:
    """REDUCE_MAX over constant axes; one quantization throughout."""

    def convert(ctx: OpContext) -> SSAValue:
        x_t, out = ctx.tensor(0), ctx.out()
        check(x_t, out)
        check_same_params(ctx, x_t, out)
        rank = len(ctx.shape(0))
        axes = sorted({int(a) % rank for a in np.ravel(ctx.need_const(1, "the axes"))})
        keepdims = BoolAttr.from_bool(bool(ctx.opt("KeepDims", False)))
        props = {"axes": ints(axes), "keepdims": keepdims}
        return ctx.emit(qnn.ReduceMaxOp, [ctx.value(0)], props, result_types=[out_type(ctx)])

    return convert


def _arg_reduce(op_type: type) -> object:
    """ARG_MAX/ARG_MIN: index of the extreme stored value, in the model's int32/int64 type."""

    def convert(ctx: OpContext) -> SSAValue:
        x_t, out = ctx.tensor(0), ctx.out()
        check_int8(x_t)
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
    check_int8(a_t, b_t, out)
    product = float(np.float32(a_t.quant.scales[0]) * np.float32(b_t.quant.scales[0]))
    pair = tflite_multiplier(product / tensor_scale(out))
    q = quantized_type(out)
    a, b = ctx.value(0), ctx.value(1)
    if ctx.opt("AdjX", False):
        a = fops.swap_last(ctx, a)
    if ctx.opt("AdjY", False):
        b = fops.swap_last(ctx, b)
    return ctx.emit(
        qnn.MatMulOp, [a, b], requant_props([pair], (q.qmin, q.qmax)), result_types=[out_type(ctx)]
    )


# --------------------------------------------------------------------------- conversions


def quantize(ctx: OpContext) -> SSAValue:
    """float -> int8/uint8, or TFLite's Requantize between int8 and uint8 (either way):
    MultiplyByQuantizedMultiplier by QuantizeMultiplier(double(s_in) / double(s_out))."""
    x_t, out = ctx.tensor(0), ctx.out()
    if x_t.dtype == np.float32:
        return ctx.emit(qnn.QuantizeOp, [ctx.value(0)], result_types=[out_type(ctx)])
    check_int8(x_t, out, uint8=True)
    pair = tflite_multiplier(tensor_scale(x_t) / tensor_scale(out))
    q = quantized_type(out)
    return ctx.emit(
        qnn.RequantizeOp,
        [ctx.value(0)],
        requant_props([pair], (q.qmin, q.qmax)),
        result_types=[out_type(ctx)],
    )


def dequantize(ctx: OpContext) -> SSAValue:
    t = ctx.tensor(0)  # constants are folded before import (tflite_constants)
    if t.quant is None:
        raise Unsupported(f"input '{t.name}' of type {t.type_name} is not quantized")
    return ctx.emit(qnn.DequantizeOp, [ctx.value(0)], result_types=[out_type(ctx)])


def _reshape(ctx: OpContext) -> SSAValue:
    return ctx.reshape(ctx.value(0), ctx.out().shape)


LEFT_SHIFT_SQUARED_DIFFERENCE = 7


def full_range(ctx: OpContext) -> tuple[int, int]:
    """The storage range of the operator's output: the clamp of an op with no activation."""
    q = quantized_type(ctx.out())
    return q.qmin, q.qmax


def mean(check: WidthCheck = check_int8, accumulator_bits: int = 0) -> Converter:
    """MEAN as qnn.reduce_sum with 1/count folded into the multiplier (QuantizedMeanOrSum);
    with `accumulator_bits`, refused where count values of that many bits may overflow int32."""

    def convert(ctx: OpContext) -> SSAValue:
        x_t, out = ctx.tensor(0), ctx.out()
        check(x_t, out)
        props, count = reduce_props(ctx)
        if accumulator_bits and count << accumulator_bits >= 1 << 31:
            raise Unsupported(
                f"{accumulator_bits + 1}-bit MEAN over {count} elements may overflow int32"
            )
        scale = tensor_scale(x_t) / tensor_scale(out)
        pair = folded_mean_multiplier(tflite_multiplier(scale), count)
        props |= requant_props([pair], full_range(ctx))
        return ctx.emit(qnn.ReduceSumOp, [ctx.value(0)], props, result_types=[out_type(ctx)])

    return convert


def _sum(ctx: OpContext) -> SSAValue:
    """LiteRT's reference int8 SUM: its uint8 QuantizedMeanOrSum on the int8 bytes."""
    x_t, out = ctx.tensor(0), ctx.out()
    check_int8(x_t, out)
    props, _ = reduce_props(ctx)
    props |= requant_props(
        [tflite_multiplier(tensor_scale(x_t) / tensor_scale(out))], full_range(ctx)
    )
    props["storage_view"] = StringAttr("uint8")
    return ctx.emit(qnn.ReduceSumOp, [ctx.value(0)], props, result_types=[out_type(ctx)])


def _squared_difference(ctx: OpContext) -> SSAValue:
    a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
    check_int8(a_t, b_t, out)
    s_a, s_b, s_out = tensor_scale(a_t), tensor_scale(b_t), tensor_scale(out)
    twice_max = 2.0 * max(s_a, s_b)
    lhs = tflite_multiplier(s_a / twice_max)
    rhs = tflite_multiplier(s_b / twice_max)
    shifted = float(np.float32(1 << (2 * LEFT_SHIFT_SQUARED_DIFFERENCE)) * np.float32(s_out))
    pair = tflite_multiplier(twice_max * twice_max / shifted)
    props = requant_props([pair], full_range(ctx))
    props |= aligned_inputs(LEFT_SHIFT_SQUARED_DIFFERENCE, lhs, rhs)
    return ctx.emit(
        qnn.SquaredDifferenceOp, [ctx.value(0), ctx.value(1)], props, result_types=[out_type(ctx)]
    )


def _prelu(ctx: OpContext) -> SSAValue:
    x_t, alpha_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
    check_int8(x_t, alpha_t, out)
    s_in, s_alpha, s_out = (np.float32(t.quant.scales[0]) for t in (x_t, alpha_t, out))
    identity = tflite_multiplier(float(s_in / s_out))
    alpha = tflite_multiplier(float(s_in * s_alpha / s_out))
    if not math.isfinite(float(s_in * s_alpha / s_out)):
        raise Unsupported("PRELU alpha multiplier is not finite")
    props = requant_props([identity], full_range(ctx)) | {
        "alpha_multiplier": IntegerAttr(alpha[0], i64),
        "alpha_shift": IntegerAttr(alpha[1], i64),
    }
    return ctx.emit(qnn.PReluOp, [ctx.value(0), ctx.value(1)], props, result_types=[out_type(ctx)])


def resize_bilinear(check: WidthCheck = check_int8) -> Converter:
    """RESIZE_BILINEAR on stored values; one quantization throughout."""

    def convert(ctx: OpContext) -> SSAValue:
        x_t, out = ctx.tensor(0), ctx.out()
        check(x_t, out)
        check_same_params(ctx, x_t, out)
        n, h, w, c = out.shape
        props = {
            "align_corners": BoolAttr.from_bool(bool(ctx.opt("AlignCorners", False))),
            "half_pixel_centers": BoolAttr.from_bool(bool(ctx.opt("HalfPixelCenters", False))),
        }
        y = ctx.emit(
            qnn.ResizeBilinearOp,
            [ctx.nchw(ctx.value(0))],
            props,
            result_types=[out_type(ctx, [n, c, h, w])],
        )
        return ctx.nhwc(y)

    return convert


def _transpose_conv(ctx: OpContext) -> SSAValue:
    x_t, w_t, out = ctx.tensor(2), ctx.tensor(1), ctx.out()
    check_int8(x_t, out)
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
    s_in, s_out = tensor_scale(x_t), tensor_scale(out)
    pairs = [tflite_multiplier(s_in * s_w / s_out) for s_w in scales]
    weight = ctx.constant(
        w.transpose(3, 0, 1, 2), quantized_type(w_t, axis=1 if per_channel else None), name=w_t.name
    )
    props = fops.transpose_conv_props(ctx, w.shape[1:3])
    props |= requant_props(pairs, activation_range(ctx, out))
    n, h, wd, c = out.shape
    operands = [ctx.nchw(ctx.value(2)), weight, quantized_bias(ctx, 3)]
    y = ctx.emit(
        qnn.ConvTranspose2dOp, operands, props, result_types=[out_type(ctx, [n, c, h, wd])]
    )
    return ctx.nhwc(y)


def divide(check: WidthCheck = check_int8) -> Converter:
    """DIV as qnn.div with LiteRT's float32 multiplier and x86-64 overshift."""

    def convert(ctx: OpContext) -> SSAValue:
        a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
        check(a_t, b_t, out)
        s_a, s_b, s_out = (np.float32(t.quant.scales[0]) for t in (a_t, b_t, out))
        pair = tflite_multiplier(float(s_a / (s_b * s_out)))  # float32 arithmetic, as in Prepare
        props = requant_props([pair], activation_range(ctx, out))
        props["overshift"] = StringAttr("x86")  # LiteRT's golden outputs come from x86-64
        return ctx.emit(
            qnn.DivOp, [ctx.value(0), ctx.value(1)], props, result_types=[out_type(ctx)]
        )

    return convert


INT8: dict[str, Converter] = {
    "CONV_2D": lambda ctx: _conv(ctx, depthwise=False),
    "DEPTHWISE_CONV_2D": lambda ctx: _conv(ctx, depthwise=True),
    "FULLY_CONNECTED": _fully_connected,
    "ADD": _aligned(qnn.AddOp),
    "SUB": _aligned(qnn.SubOp),
    "MUL": _mul,
    "AVERAGE_POOL_2D": pool(average=True),
    "MAX_POOL_2D": pool(average=False),
    "RESHAPE": movement(_reshape),
    "SQUEEZE": movement(_reshape),
    "EXPAND_DIMS": movement(_reshape),
    "TRANSPOSE": movement(_transpose),
    "CONCATENATION": _concat,
    "SPLIT": lambda ctx: _split(ctx, 1, 0),
    "SPLIT_V": lambda ctx: _split(ctx, 0, 2),
    "SLICE": movement(_slice),
    "STRIDED_SLICE": movement(_strided_slice),
    "PAD": movement(_pad),
    "PADV2": movement(_pad),
    "RESIZE_NEAREST_NEIGHBOR": movement(_resize_nearest),
    "SOFTMAX": softmax_converter,
    "LOGISTIC": _lut("LOGISTIC"),
    "TANH": _lut("TANH"),
    "ELU": _lut("ELU"),
    "GELU": _lut("GELU"),
    "HARD_SWISH": _lut("HARD_SWISH"),
    "LEAKY_RELU": _lut("LEAKY_RELU"),
    "QUANTIZE": quantize,
    "RELU": _relu("RELU"),
    "RELU6": _relu("RELU6"),
    "RELU_N1_TO_1": _relu("RELU_N1_TO_1"),
    "MAXIMUM": extremum(qnn.MaximumOp),
    "MINIMUM": extremum(qnn.MinimumOp),
    "GATHER": gather(),
    "REDUCE_MAX": reduce_max(),
    "ARG_MAX": _arg_reduce(qnn.ArgMaxOp),
    "ARG_MIN": _arg_reduce(qnn.ArgMinOp),
    "BATCH_MATMUL": _batch_matmul,
    "MEAN": mean(),
    "SUM": _sum,
    "SQUARED_DIFFERENCE": _squared_difference,
    "PRELU": _prelu,
    "RESIZE_BILINEAR": resize_bilinear(),
    "DIV": divide(),
    "TRANSPOSE_CONV": _transpose_conv,
    "DEPTH_TO_SPACE": movement(fops.FLOAT["DEPTH_TO_SPACE"]),
}
