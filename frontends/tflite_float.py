"""Float TFLite operators as `nn` ops (values keep TFLite's NHWC shapes; see tflite.py)."""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    BoolAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, SSAValue

from npuc.dialects import nn, qnn
from npuc.dialects.arrays import ints
from npuc.dialects.nn_base import shape_of

from .tflite_context import Converter, OpContext, Unsupported, is_qvalue, tensor_type

SAME, VALID = 0, 1
# FusedActivationFunction: NONE, RELU, RELU_N1_TO_1, RELU6, TANH, SIGN_BIT
CLIP_BOUNDS = {1: (0.0, None), 2: (-1.0, 1.0), 3: (0.0, 6.0)}


def f32_attr(x: float) -> FloatAttr:
    return FloatAttr(float(x), f32)


def i64_attr(x: int) -> IntegerAttr:
    return IntegerAttr(int(x), i64)


# --------------------------------------------------------------------------- geometry


def same_pads(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """TFLite's SAME padding (ComputePaddingWithOffset): the odd pixel goes after."""
    out = -(-size // stride)
    effective = (kernel - 1) * dilation + 1
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


def window_pads(
    ctx: OpContext,
    hw: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> list[int]:
    """nn pads [top, left, bottom, right] of the op's SAME/VALID padding."""
    padding = ctx.opt("Padding", SAME)
    if padding == VALID:
        return [0, 0, 0, 0]
    if padding != SAME:
        raise Unsupported(f"padding type {padding} not supported")
    (t, b), (l, r) = (same_pads(hw[a], kernel[a], strides[a], dilations[a]) for a in range(2))
    return [t, l, b, r]


def strides_of(ctx: OpContext) -> list[int]:
    return _positive(ctx, "StrideH", "StrideW")


def dilations_of(ctx: OpContext) -> list[int]:
    return _positive(ctx, "DilationHFactor", "DilationWFactor")


def _positive(ctx: OpContext, *options: str) -> list[int]:
    """Window options that must be >= 1 (LiteRT divides by them)."""
    values = [int(ctx.opt(name, 1)) for name in options]
    for name, value in zip(options, values, strict=True):
        if value < 1:
            raise Unsupported(f"{name} is {value}; it must be at least 1")
    return values


def conv_weight(ctx: OpContext, depthwise: bool) -> tuple[np.ndarray, int]:
    """TFLite weights as OIHW, and the group count: OHWI -> OIHW; [1,H,W,C*M] -> [C*M,1,H,W]."""
    w = ctx.need_const(1, "the filter")
    channels = ctx.shape(0)[3]
    if w.ndim != 4:
        raise ValueError(f"the filter must have rank 4, got {list(w.shape)}")
    if depthwise:
        return w.transpose(3, 0, 1, 2), channels
    if channels % w.shape[3]:
        raise ValueError(
            f"{channels} input channels are not a multiple of the filter's {w.shape[3]}"
        )
    return w.transpose(0, 3, 1, 2), channels // w.shape[3]


def conv_props(ctx: OpContext, kernel: Sequence[int]) -> dict[str, Attribute]:
    strides, dilations = strides_of(ctx), dilations_of(ctx)
    pads = window_pads(ctx, ctx.shape(0)[1:3], kernel, strides, dilations)
    return {"strides": ints(strides), "pads": ints(pads), "dilations": ints(dilations)}


# --------------------------------------------------------------------------- activations


def fused(ctx: OpContext, key: str = "FusedActivationFunction") -> dict[str, Attribute]:
    """A fused activation as nn's activation properties (clip family only)."""
    act = int(ctx.opt(key, 0) or 0)
    if act == 0:
        return {}
    if act not in CLIP_BOUNDS:
        raise Unsupported(f"fused activation {act} not supported")
    lo, hi = CLIP_BOUNDS[act]
    props: dict[str, Attribute] = {"activation": StringAttr("clip"), "activation_min": f32_attr(lo)}
    if hi is not None:
        props["activation_max"] = f32_attr(hi)
    return props


def activate(ctx: OpContext, value: SSAValue) -> SSAValue:
    """A fused activation of an op that cannot carry one, as an op after it."""
    act = int(ctx.opt("FusedActivationFunction", 0) or 0)
    if act == 0:
        return value
    if act == 4:
        return ctx.emit(nn.TanhOp, [value])
    if act not in CLIP_BOUNDS:
        raise Unsupported(f"fused activation {act} not supported")
    lo, hi = CLIP_BOUNDS[act]
    props = {"min": f32_attr(lo)} | ({"max": f32_attr(hi)} if hi is not None else {})
    return ctx.emit(nn.ClipOp, [value], props)


# --------------------------------------------------------------------------- layers


def _conv(ctx: OpContext, depthwise: bool) -> SSAValue:
    w, groups = conv_weight(ctx, depthwise)
    x = ctx.nchw(ctx.value(0))
    weight = ctx.constant(w.astype(np.float32), name=ctx.tensor(1).name)
    bias = ctx.value(2) if ctx.has(2) else None
    props = conv_props(ctx, w.shape[2:]) | {"groups": i64_attr(groups)} | fused(ctx)
    return ctx.nhwc(ctx.emit(nn.Conv2dOp, [x, weight, bias], props))


def _fully_connected(ctx: OpContext) -> SSAValue:
    w = ctx.value(1)
    k = shape_of(w)[1]
    x = ctx.reshape(ctx.value(0), [int(np.prod(ctx.shape(0))) // k, k])
    bias = ctx.value(2) if ctx.has(2) else None
    y = ctx.emit(nn.FullyConnectedOp, [x, w, bias], fused(ctx))
    return ctx.reshape(y, ctx.out().shape)


def transpose_conv_props(ctx: OpContext, kernel: Sequence[int]) -> dict[str, Attribute]:
    """nn.conv_transpose2d geometry of a TRANSPOSE_CONV (inputs: output shape, filter, data).

    TFLite pads as if the output were a convolution's input (ComputePaddingHeightWidth on
    the output size) and writes output pixel o from full-result position o + pad_before;
    positions past the full result are zeros (output_padding), those past the output are
    dropped (a larger bottom/right crop).
    """
    x_shape, out_shape = ctx.shape(2), ctx.out().shape
    given = [int(d) for d in np.ravel(ctx.need_const(0, "the output shape"))]
    if given != list(out_shape):
        raise ValueError(f"output shape tensor {given} differs from the output {list(out_shape)}")
    strides = strides_of(ctx)
    pads, extra = [0, 0, 0, 0], [0, 0]
    for a in range(2):
        size, n = out_shape[1 + a], x_shape[1 + a]
        before, after = (0, 0)
        if ctx.opt("Padding", SAME) == SAME:
            before, after = same_pads(size, kernel[a], strides[a], 1)
        elif ctx.opt("Padding", SAME) != VALID:
            raise Unsupported(f"padding type {ctx.opt('Padding')} not supported")
        grow = size - ((n - 1) * strides[a] + kernel[a] - before - after)
        if grow >= strides[a]:
            raise Unsupported(
                f"output size {size} exceeds the transposed convolution's by "
                f"{grow} >= stride {strides[a]}"
            )
        pads[a], pads[a + 2] = before, after - min(grow, 0)
        extra[a] = max(grow, 0)
    return {
        "strides": ints(strides),
        "pads": ints(pads),
        "dilations": ints([1, 1]),
        "output_padding": ints(extra),
    }


def _transpose_conv(ctx: OpContext) -> SSAValue:
    w = ctx.need_const(1, "the filter")  # [O, H, W, I]
    props = transpose_conv_props(ctx, w.shape[1:3]) | {"groups": i64_attr(1)} | fused(ctx)
    weight = ctx.constant(w.transpose(3, 0, 1, 2).astype(np.float32), name=ctx.tensor(1).name)
    bias = ctx.value(3) if ctx.has(3) else None
    y = ctx.emit(nn.ConvTranspose2dOp, [ctx.nchw(ctx.value(2)), weight, bias], props)
    return ctx.nhwc(y)


def _transpose_conv_bias(ctx: OpContext) -> SSAValue:
    """MediaPipe's custom Convolution2DTransposeBias (inputs: data, OHWI filter, bias).

    Its options are TfLiteTransposeConvParams as raw bytes (padding, stride w, stride h).
    SAME crops `max(0, k - (n - 1) % s - 1)` from the full result, the smaller half first.
    """
    raw = ctx.opt("custom_options", b"")
    if len(raw) < 12:
        raise Unsupported(f"custom options of {len(raw)} bytes, expected 12 or more")
    padding, stride_w, stride_h = struct.unpack("<iii", raw[:12])
    if padding not in (1, 2) or stride_w < 1 or stride_h < 1:
        raise Unsupported(f"padding {padding} or strides ({stride_h}, {stride_w}) not supported")
    w = ctx.need_const(1, "the filter")  # [O, H, W, I]
    strides, x_shape = [stride_h, stride_w], ctx.shape(0)
    crops = [0, 0]
    if padding == 1:
        crops = [max(0, w.shape[1 + a] - (x_shape[1 + a] - 1) % strides[a] - 1) for a in range(2)]
    pads = [crops[0] // 2, crops[1] // 2, crops[0] - crops[0] // 2, crops[1] - crops[1] // 2]
    props = {
        "strides": ints(strides),
        "pads": ints(pads),
        "dilations": ints([1, 1]),
        "output_padding": ints([0, 0]),
        "groups": i64_attr(1),
    }
    weight = ctx.constant(w.transpose(3, 0, 1, 2).astype(np.float32), name=ctx.tensor(1).name)
    y = ctx.emit(nn.ConvTranspose2dOp, [ctx.nchw(ctx.value(0)), weight, ctx.value(2)], props)
    return ctx.nhwc(y)


def _batch_matmul(ctx: OpContext) -> SSAValue:
    a, b = ctx.value(0), ctx.value(1)
    if ctx.opt("AdjX", False):
        a = swap_last(ctx, a)
    if ctx.opt("AdjY", False):
        b = swap_last(ctx, b)
    return ctx.emit(nn.MatMulOp, [a, b])


def swap_last(ctx: OpContext, value: SSAValue) -> SSAValue:
    rank = len(shape_of(value))
    return ctx.transpose(value, [*range(rank - 2), rank - 1, rank - 2])


def _pool(op_type: type) -> object:
    def convert(ctx: OpContext) -> SSAValue:
        kernel = [int(ctx.opt("FilterHeight", 1)), int(ctx.opt("FilterWidth", 1))]
        strides = strides_of(ctx)
        pads = window_pads(ctx, ctx.shape(0)[1:3], kernel, strides, [1, 1])
        props = {"kernel": ints(kernel), "strides": ints(strides), "pads": ints(pads)}
        x = ctx.nchw(ctx.value(0))
        if op_type is nn.AvgPool2dOp:
            return ctx.nhwc(ctx.emit(op_type, [x], props | fused(ctx)))
        y = ctx.emit(op_type, [x], props | {"dilations": ints([1, 1])})
        return activate(ctx, ctx.nhwc(y))

    return convert


def _resize(mode: str) -> object:
    def convert(ctx: OpContext) -> SSAValue:
        x, out = ctx.shape(0), ctx.out().shape
        align, half = ctx.opt("AlignCorners", False), ctx.opt("HalfPixelCenters", False)
        if mode == "nearest":
            coord, nearest = (
                ("align_corners", "round_prefer_ceil")
                if align
                else ("tf_half_pixel_for_nn", "floor")
                if half
                else ("asymmetric", "floor")
            )
        else:
            coord = "align_corners" if align else "half_pixel" if half else "asymmetric"
            nearest = "floor"
        scales = [1.0, 1.0, out[1] / x[1], out[2] / x[2]]
        props = {
            "scales": f32_array(scales),
            "mode": StringAttr(mode),
            "coordinate_mode": StringAttr(coord),
            "nearest_mode": StringAttr(nearest),
        }
        y_type = TensorType(f32, [out[0], out[3], out[1], out[2]])
        return ctx.nhwc(
            ctx.emit(nn.ResizeOp, [ctx.nchw(ctx.value(0))], props, result_types=[y_type])
        )

    return convert


def f32_array(values: Sequence[float]) -> Attribute:
    from xdsl.dialects.builtin import DenseArrayBase

    return DenseArrayBase.from_list(f32, [float(v) for v in values])


# --------------------------------------------------------------------------- element-wise


def _binary(op_type: type, fusable: bool = False) -> object:
    def convert(ctx: OpContext) -> SSAValue:
        a, b = ctx.value(0), ctx.value(1)
        if fusable:
            inner = ctx.hoisted([a, b])
            if inner is not None:
                return ctx.nhwc(ctx.emit(op_type, inner, fused(ctx)))
            return ctx.emit(op_type, [a, b], fused(ctx))
        return activate(ctx, ctx.emit(op_type, [a, b]))

    return convert


def _squared_difference(ctx: OpContext) -> SSAValue:
    d = ctx.emit(nn.SubOp, [ctx.value(0), ctx.value(1)])
    return ctx.emit(nn.MulOp, [d, d])


def _unary(op_type: type, **props: Attribute) -> object:
    return lambda ctx: ctx.emit(op_type, [ctx.value(0)], props)


def _clip(lo: float, hi: float) -> object:
    return lambda ctx: ctx.emit(
        nn.ClipOp, [ctx.value(0)], {"min": f32_attr(lo), "max": f32_attr(hi)}
    )


def _leaky_relu(ctx: OpContext) -> SSAValue:
    return ctx.emit(nn.LeakyReluOp, [ctx.value(0)], {"alpha": f32_attr(ctx.opt("Alpha", 0.2))})


def _gelu(ctx: OpContext) -> SSAValue:
    approximate = "tanh" if ctx.opt("Approximate", False) else "none"
    return ctx.emit(nn.GeluOp, [ctx.value(0)], {"approximate": StringAttr(approximate)})


def _softmax(ctx: OpContext) -> SSAValue:
    x = ctx.value(0)
    beta = float(ctx.opt("Beta", 1.0))
    if beta != 1.0:
        x = ctx.emit(nn.MulOp, [x, ctx.constant(np.array(beta, np.float32))])
    return ctx.emit(nn.SoftmaxOp, [x], {"axis": i64_attr(-1)})


# --------------------------------------------------------------------------- reductions


def _reduce(op_type: type) -> object:
    def convert(ctx: OpContext) -> SSAValue:
        rank = len(ctx.shape(0))
        axes = sorted({int(a) % rank for a in np.ravel(ctx.need_const(1, "the axes"))})
        keep = bool(ctx.opt("KeepDims", False))
        props = {"axes": ints(axes), "keepdims": BoolAttr.from_bool(keep)}
        return ctx.emit(op_type, [ctx.value(0)], props)

    return convert


def _arg_reduce(op_type: type) -> object:
    def convert(ctx: OpContext) -> SSAValue:
        if ctx.out().dtype not in (np.int32, np.int64):
            raise Unsupported(f"{ctx.op.op_type} with output type {ctx.out().type_name}")
        axis = int(np.ravel(ctx.need_const(1, "the axis"))[0])
        props = {"axis": i64_attr(axis), "keepdims": BoolAttr.from_bool(False)}
        index_type = i32 if ctx.out().dtype == np.int32 else i64
        return ctx.emit(op_type, [ctx.value(0)], props, element_type=index_type)

    return convert


# --------------------------------------------------------------------------- data movement


def _reshape(ctx: OpContext) -> SSAValue:
    return ctx.reshape(ctx.value(0), ctx.out().shape)


def _transpose(ctx: OpContext) -> SSAValue:
    return ctx.transpose(ctx.value(0), [int(p) for p in ctx.need_const(1, "the permutation")])


def _concat(ctx: OpContext) -> SSAValue:
    values = [ctx.value(i) for i in range(len(ctx.op.inputs))]
    rank = len(shape_of(values[0]))
    y = ctx.emit(nn.ConcatOp, values, {"axis": i64_attr(int(ctx.opt("Axis", 0)) % rank)})
    return activate(ctx, y)


def _split_pieces(ctx: OpContext, value: SSAValue, axis: int) -> list[SSAValue]:
    types = [tensor_type(ctx.out(i)) for i in range(len(ctx.op.outputs))]
    rank = len(shape_of(value))
    if len(types) == 1:
        return [value]
    return ctx.emit_multi(nn.SplitOp, [value], {"axis": i64_attr(axis % rank)}, types)


def _split(ctx: OpContext) -> list[SSAValue]:
    return _split_pieces(ctx, ctx.value(1), int(np.ravel(ctx.need_const(0, "the axis"))[0]))


def _split_v(ctx: OpContext) -> list[SSAValue]:
    return _split_pieces(ctx, ctx.value(0), int(np.ravel(ctx.need_const(2, "the axis"))[0]))


def slice_props(starts: list[int], ends: list[int], steps: list[int]) -> dict[str, Attribute]:
    return {"starts": ints(starts), "ends": ints(ends), "steps": ints(steps)}


def _slice(ctx: OpContext) -> SSAValue:
    shape = ctx.shape(0)
    begin = [int(b) for b in ctx.need_const(1, "begin")]
    size = [int(s) for s in ctx.need_const(2, "size")]
    ends = [d if s < 0 else b + s for b, s, d in zip(begin, size, shape, strict=True)]
    return ctx.emit(
        nn.SliceOp,
        [ctx.value(0)],
        slice_props(begin, ends, [1] * len(shape)),
        result_types=[tensor_type(ctx.out())],
    )


def strided_slice_props(ctx: OpContext) -> tuple[dict[str, Attribute], list[int]]:
    """nn.slice properties of a STRIDED_SLICE, and the sliced shape before shrinking."""
    shape = ctx.shape(0)
    if ctx.opt("EllipsisMask", 0) or ctx.opt("NewAxisMask", 0) or ctx.opt("Offset", False):
        raise Unsupported("ellipsis_mask, new_axis_mask and offset not supported")
    begin, end, step = (
        np.ravel(ctx.need_const(i, w)) for i, w in ((1, "begin"), (2, "end"), (3, "strides"))
    )
    bmask, emask = int(ctx.opt("BeginMask", 0)), int(ctx.opt("EndMask", 0))
    starts, ends, steps, sizes = [], [], [], []
    for a, dim in enumerate(shape):
        b = None if a >= len(begin) or bmask >> a & 1 else int(begin[a])
        e = None if a >= len(end) or emask >> a & 1 else int(end[a])
        s = int(step[a]) if a < len(step) else 1
        if ctx.opt("ShrinkAxisMask", 0) >> a & 1:
            b = int(begin[a]) % dim
            e, s = b + 1, 1
        start, stop, s = slice(b, e, s).indices(dim)
        starts.append(start)
        ends.append(stop)
        steps.append(s)
        sizes.append(len(range(start, stop, s)))
    return slice_props(starts, ends, steps), sizes


def _strided_slice(ctx: OpContext) -> SSAValue:
    props, sizes = strided_slice_props(ctx)
    y = ctx.emit(nn.SliceOp, [ctx.value(0)], props, result_types=[TensorType(f32, sizes)])
    return ctx.reshape(y, ctx.out().shape)


def pad_list(ctx: OpContext) -> list[int]:
    pads = np.asarray(ctx.need_const(1, "the paddings"), np.int64).reshape(-1, 2)
    return [int(p) for p in pads[:, 0]] + [int(p) for p in pads[:, 1]]


def _pad(ctx: OpContext) -> SSAValue:
    props: dict[str, Attribute] = {"pads": ints(pad_list(ctx))}
    if ctx.has(2):
        props["value"] = f32_attr(float(np.ravel(ctx.need_const(2, "the pad value"))[0]))
    return ctx.emit(nn.PadOp, [ctx.value(0)], props)


def _gather(ctx: OpContext) -> SSAValue:
    if ctx.opt("BatchDims", 0):
        raise Unsupported("batch_dims not supported")
    indices = ctx.constant(np.asarray(ctx.need_const(1, "the indices"), np.int64))
    rank = len(ctx.shape(0))
    props = {"axis": i64_attr(int(ctx.opt("Axis", 0)) % rank)}
    return ctx.emit(
        nn.GatherOp, [ctx.value(0), indices], props, result_types=[tensor_type(ctx.out())]
    )


def _depth_to_space(ctx: OpContext) -> SSAValue:
    """NHWC DEPTH_TO_SPACE is DCR in NCHW: channel (i * block + j) * C + c goes to (i, j)."""
    x = ctx.nchw(ctx.value(0))
    block = int(ctx.opt("BlockSize", 0))
    if block < 1:
        raise Unsupported(f"block size {block} must be positive")
    op_type = qnn.DepthToSpaceOp if is_qvalue(x) else nn.DepthToSpaceOp
    ty = x.type
    assert isinstance(ty, TensorType)
    props = {"block_size": i64_attr(block), "mode": StringAttr("DCR")}
    return ctx.nhwc(ctx.emit(op_type, [x], props, element_type=ty.element_type))


FLOAT: dict[str, Converter] = {
    "CONV_2D": lambda ctx: _conv(ctx, depthwise=False),
    "DEPTHWISE_CONV_2D": lambda ctx: _conv(ctx, depthwise=True),
    "TRANSPOSE_CONV": _transpose_conv,
    "custom:Convolution2DTransposeBias": _transpose_conv_bias,
    "FULLY_CONNECTED": _fully_connected,
    "BATCH_MATMUL": _batch_matmul,
    "ADD": _binary(nn.AddOp, fusable=True),
    "SUB": _binary(nn.SubOp, fusable=True),
    "MUL": _binary(nn.MulOp, fusable=True),
    "DIV": _binary(nn.DivOp),
    "MAXIMUM": _binary(nn.MaximumOp),
    "MINIMUM": _binary(nn.MinimumOp),
    "SQUARED_DIFFERENCE": _squared_difference,
    "PRELU": _binary(nn.PReluOp),
    "AVERAGE_POOL_2D": _pool(nn.AvgPool2dOp),
    "MAX_POOL_2D": _pool(nn.MaxPool2dOp),
    "MEAN": _reduce(nn.ReduceMeanOp),
    "SUM": _reduce(nn.ReduceSumOp),
    "REDUCE_MAX": _reduce(nn.ReduceMaxOp),
    "ARG_MAX": _arg_reduce(nn.ArgMaxOp),
    "ARG_MIN": _arg_reduce(nn.ArgMinOp),
    "RESHAPE": _reshape,
    "SQUEEZE": _reshape,
    "EXPAND_DIMS": _reshape,
    "TRANSPOSE": _transpose,
    "CONCATENATION": _concat,
    "SPLIT": _split,
    "SPLIT_V": _split_v,
    "SLICE": _slice,
    "STRIDED_SLICE": _strided_slice,
    "PAD": _pad,
    "PADV2": _pad,
    "GATHER": _gather,
    "DEPTH_TO_SPACE": _depth_to_space,
    "RESIZE_NEAREST_NEIGHBOR": _resize("nearest"),
    "RESIZE_BILINEAR": _resize("linear"),
    "SOFTMAX": _softmax,
    "LOGISTIC": _unary(nn.SigmoidOp),
    "TANH": _unary(nn.TanhOp),
    "RELU": _unary(nn.ReluOp),
    "RELU6": _clip(0.0, 6.0),
    "RELU_N1_TO_1": _clip(-1.0, 1.0),
    "LEAKY_RELU": _leaky_relu,
    "HARD_SWISH": _unary(nn.HardSwishOp),
    "GELU": _gelu,
}
