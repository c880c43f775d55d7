"""ONNX convolution, dense, pooling, normalisation and reduction nodes as `nn` ops.

1-D convolutions and pools run as 2-D ones with H = 1 (reshapes around the
op); auto_pad is resolved to explicit pads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import BoolAttr, i64
from xdsl.ir import Attribute, SSAValue

from npuc.dialects import nn

from .onnx_elementwise import f32_attr, i64_attr
from .onnx_fold import reduce_axes
from .onnx_graph import (
    Converter,
    NodeContext,
    Unsupported,
    Value,
    as_dtype,
    element_of,
    shape_of,
)


@dataclass
class Window:
    """A 2-D sliding window in nn order: pads = [top, left, bottom, right]."""

    kernel: list[int]
    strides: list[int]
    pads: list[int]
    dilations: list[int]

    def props(self, *keys: str) -> dict[str, Attribute]:
        return {k: nn.ints(getattr(self, k)) for k in keys}


def _ints(ctx: NodeContext, key: str, default: Sequence[int], length: int) -> list[int]:
    values = [int(v) for v in ctx.attr(key, default)]
    if len(values) != length:
        raise ValueError(f"{key} must have {length} values, got {values}")
    return values


def _same_pads(size: int, kernel: int, stride: int, dilation: int, upper: bool) -> tuple[int, int]:
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size)
    small, big = total // 2, total - total // 2
    return (small, big) if upper else (big, small)


def window(ctx: NodeContext, spatial: Sequence[int], kernel: Sequence[int]) -> Window:
    """Strides, pads and dilations of a conv/pool node, auto_pad resolved, lifted to 2-D."""
    n = len(spatial)
    strides = _ints(ctx, "strides", [1] * n, n)
    dilations = _ints(ctx, "dilations", [1] * n, n)
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", ""):
        pads = _ints(ctx, "pads", [0] * 2 * n, 2 * n)
    elif auto_pad == "VALID":
        pads = [0] * 2 * n
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pairs = [
            _same_pads(spatial[i], kernel[i], strides[i], dilations[i], auto_pad == "SAME_UPPER")
            for i in range(n)
        ]
        pads = [p[0] for p in pairs] + [p[1] for p in pairs]
    else:
        raise Unsupported(f"auto_pad '{auto_pad}' not supported")
    if n == 1:
        return Window([1, *kernel], [1, *strides], [0, pads[0], 0, pads[1]], [1, *dilations])
    return Window(list(kernel), strides, pads, dilations)


def _spatial_rank(ctx: NodeContext, what: str) -> int:
    rank = ctx.rank(0)
    if rank not in (3, 4):
        raise Unsupported(f"{rank - 2}-D {what} not supported")
    return rank


def _lift(ctx: NodeContext, value: SSAValue) -> SSAValue:
    """[N, C, L] -> [N, C, 1, L]."""
    n, c, length = shape_of(value)
    return ctx.reshape(value, (n, c, 1, length))


def _drop_h(ctx: NodeContext, value: SSAValue) -> SSAValue:
    n, c, _, length = shape_of(value)
    return ctx.reshape(value, (n, c, length))


def _weight(ctx: NodeContext, i: int, lift: bool) -> SSAValue:
    w = ctx.const(i)
    if w is not None and lift:
        return ctx.constant(w.reshape(w.shape[0], w.shape[1], 1, w.shape[2]))
    value = ctx.operand(i)
    return _lift(ctx, value) if lift else value


def _conv(ctx: NodeContext) -> list[Value]:
    rank = _spatial_rank(ctx, "convolution")
    x_shape, w_shape = ctx.shape(0), ctx.shape(1)
    if len(w_shape) != rank:
        raise ValueError(f"weight rank {len(w_shape)} does not match input rank {rank}")
    kernel = _ints(ctx, "kernel_shape", w_shape[2:], rank - 2)
    if kernel != list(w_shape[2:]):
        raise ValueError(f"kernel_shape {kernel} does not match the weight {w_shape}")
    win = window(ctx, x_shape[2:], kernel)
    lift = rank == 3
    x = _lift(ctx, ctx.operand(0)) if lift else ctx.operand(0)
    w = _weight(ctx, 1, lift)
    bias = ctx.operand(2) if ctx.has(2) else None
    props = win.props("strides", "pads", "dilations")
    props["groups"] = i64_attr(ctx.attr("group", 1))
    y = ctx.emit(nn.Conv2dOp, [x, w, bias], props)
    return [_drop_h(ctx, y) if lift else y]


def _conv_transpose(ctx: NodeContext) -> list[Value]:
    rank = _spatial_rank(ctx, "transposed convolution")
    x_shape, w_shape = ctx.shape(0), ctx.shape(1)
    n = rank - 2
    kernel = _ints(ctx, "kernel_shape", w_shape[2:], n)
    strides = _ints(ctx, "strides", [1] * n, n)
    dilations = _ints(ctx, "dilations", [1] * n, n)
    out_pad = _ints(ctx, "output_padding", [0] * n, n)
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    output_shape = [int(v) for v in ctx.attr("output_shape", [])]
    if len(output_shape) == n + 2:
        output_shape = output_shape[2:]
    if auto_pad not in ("NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise Unsupported(f"auto_pad '{auto_pad}' not supported")
    if output_shape or auto_pad.startswith("SAME"):
        if not output_shape:
            output_shape = [x_shape[2 + i] * strides[i] for i in range(n)]
        if len(output_shape) != n:
            raise ValueError(f"output_shape {output_shape} must have {n} values")
        begins, ends = [], []
        for i in range(n):
            full = (
                strides[i] * (x_shape[2 + i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1
            )
            total = full - output_shape[i]
            begin = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
            end = total - begin
            if end < 0:
                out_pad[i] -= end
                end = 0
            if begin < 0:
                raise Unsupported(f"output_shape {output_shape} needs negative padding")
            begins.append(begin)
            ends.append(end)
        pads = begins + ends
    elif auto_pad == "VALID":
        pads = [0] * 2 * n
    else:
        pads = _ints(ctx, "pads", [0] * 2 * n, 2 * n)
    lift = rank == 3
    if lift:
        strides, dilations, out_pad = [1, *strides], [1, *dilations], [0, *out_pad]
        pads = [0, pads[0], 0, pads[1]]
    x = _lift(ctx, ctx.operand(0)) if lift else ctx.operand(0)
    w = _weight(ctx, 1, lift)
    bias = ctx.operand(2) if ctx.has(2) else None
    props = {
        "strides": nn.ints(strides),
        "pads": nn.ints(pads),
        "dilations": nn.ints(dilations),
        "output_padding": nn.ints(out_pad),
        "groups": i64_attr(ctx.attr("group", 1)),
    }
    y = ctx.emit(nn.ConvTranspose2dOp, [x, w, bias], props)
    return [_drop_h(ctx, y) if lift else y]


def _gemm(ctx: NodeContext) -> list[Value]:
    """alpha * A' @ B' + beta * C; a constant B becomes a fully_connected weight [N, K]."""
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    trans_a, trans_b = bool(ctx.attr("transA", 0)), bool(ctx.attr("transB", 0))
    if ctx.rank(0) != 2 or ctx.rank(1) != 2:
        raise ValueError(f"Gemm needs 2-D inputs, got {ctx.shape(0)} and {ctx.shape(1)}")
    a = ctx.operand(0)
    if trans_a:
        a = ctx.transpose(a, [1, 0])
    c = ctx.const(2) if ctx.has(2) else None
    use_c = ctx.has(2) and beta != 0.0
    b = ctx.const(1)
    if b is not None:
        w = as_dtype(b if trans_b else b.T, np.float32)
        if alpha != 1.0:
            w = w * np.float32(alpha)
        weight = ctx.constant(w) if alpha != 1.0 or not trans_b else ctx.operand(1)
        bias = None
        vector = _bias_vector(c, w.shape[0]) if use_c and c is not None else None
        if vector is not None:
            bias = ctx.constant(np.ascontiguousarray(vector.astype(np.float32) * np.float32(beta)))
            use_c = False
        y = ctx.emit(nn.FullyConnectedOp, [a, weight, bias])
    else:
        bt = ctx.operand(1)
        if trans_b:
            bt = ctx.transpose(bt, [1, 0])
        y = ctx.emit(nn.MatMulOp, [a, bt])
        if alpha != 1.0:
            y = ctx.emit(nn.MulOp, [y, ctx.constant(np.array(alpha, np.float32))])
    if use_c:
        if c is not None:
            term = ctx.constant(c.astype(np.float32) * np.float32(beta))
        else:
            term = ctx.operand(2)
            if beta != 1.0:
                term = ctx.emit(nn.MulOp, [term, ctx.constant(np.array(beta, np.float32))])
        y = ctx.emit(nn.AddOp, [y, term])
    return [y]


def _bias_vector(c: np.ndarray, n_out: int) -> np.ndarray | None:
    """Gemm's C as a bias [N] when it only broadcasts along rows."""
    rows = c.shape[0] if c.ndim == 2 else 1
    if c.ndim > 2 or rows != 1 or c.size not in (1, n_out):
        return None
    return np.broadcast_to(c.reshape(-1), (n_out,))


def _matmul(ctx: NodeContext) -> list[Value]:
    return [ctx.emit(nn.MatMulOp, [ctx.operand(0), ctx.operand(1)])]


def _pool(op_type: type[nn.NNOperation]) -> Converter:
    is_max = op_type is nn.MaxPool2dOp

    def convert(ctx: NodeContext) -> list[Value]:
        rank = _spatial_rank(ctx, "pooling")
        if is_max and ctx.output_used(1):
            raise Unsupported("Indices output not supported")
        n = rank - 2
        kernel = _ints(ctx, "kernel_shape", [], n)
        win = window(ctx, ctx.shape(0)[2:], kernel)
        ceil_mode = bool(ctx.attr("ceil_mode", 0))
        if str(ctx.attr("auto_pad", "NOTSET")).startswith("SAME"):
            ceil_mode = False
        x = ctx.value(0) if is_max else ctx.operand(0)
        if rank == 3:
            x = _lift(ctx, x)
        if is_max:
            props = win.props("kernel", "strides", "pads", "dilations")
        else:
            props = win.props("kernel", "strides", "pads")
            if any(d != 1 for d in win.dilations):
                props |= win.props("dilations")
            props["count_include_pad"] = BoolAttr.from_bool(bool(ctx.attr("count_include_pad", 0)))
        props["ceil_mode"] = BoolAttr.from_bool(ceil_mode)
        y = ctx.emit(op_type, [x], props, element_type=element_of(x))
        return [_drop_h(ctx, y) if rank == 3 else y]

    return convert


def _global_pool(op_type: type[nn.NNOperation]) -> Converter:
    def convert(ctx: NodeContext) -> list[Value]:
        if ctx.rank(0) != 3:
            return [ctx.emit(op_type, [ctx.operand(0)])]
        y = ctx.emit(op_type, [_lift(ctx, ctx.operand(0))])  # 1-D pools run as 2-D ones
        return [_drop_h(ctx, y)]

    return convert


def _channel_params(ctx: NodeContext, indices: Sequence[int]) -> list[SSAValue]:
    """Per-channel parameters as [C] tensors (constants of shape [C, 1, 1] are flattened)."""
    channels = ctx.shape(0)[1]
    params = []
    for i in indices:
        array = ctx.const(i)
        if array is not None and array.shape != (channels,) and array.size == channels:
            params.append(ctx.constant(array.reshape(channels)))
        else:
            params.append(ctx.operand(i))
    return params


def _batch_norm(ctx: NodeContext) -> list[Value]:
    if ctx.attr("training_mode", 0):
        raise Unsupported("training_mode=1 not supported")
    if ctx.opset < 9 and ctx.attr("spatial", 1) == 0:
        raise Unsupported("spatial=0 not supported")
    if ctx.rank(0) < 2:
        raise ValueError(f"input of rank {ctx.rank(0)} has no channel dimension")
    params = _channel_params(ctx, (1, 2, 3, 4))
    epsilon = f32_attr(ctx.attr("epsilon", 1e-5))
    return [ctx.emit(nn.BatchNormOp, [ctx.operand(0), *params], {"epsilon": epsilon})]


def _instance_norm(ctx: NodeContext) -> list[Value]:
    params = _channel_params(ctx, (1, 2))
    epsilon = f32_attr(ctx.attr("epsilon", 1e-5))
    return [ctx.emit(nn.InstanceNormOp, [ctx.operand(0), *params], {"epsilon": epsilon})]


def _layer_norm(ctx: NodeContext) -> list[Value]:
    rank = ctx.rank(0)
    axis = int(ctx.attr("axis", -1))
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} out of range for rank {rank}")
    axis %= rank
    epsilon = float(ctx.attr("epsilon", 1e-5))
    x = ctx.operand(0)
    bias = ctx.operand(2) if ctx.has(2) else None
    props = {"axis": i64_attr(axis), "epsilon": f32_attr(epsilon)}
    y = ctx.emit(nn.LayerNormOp, [x, ctx.operand(1), bias], props)
    if not (ctx.output_used(1) or ctx.output_used(2)):
        return [y]
    keep = {"axes": nn.ints(range(axis, rank)), "keepdims": BoolAttr.from_bool(True)}
    mean = ctx.emit(nn.ReduceMeanOp, [x], keep)
    centred = ctx.emit(nn.SubOp, [x, mean])
    var = ctx.emit(nn.ReduceMeanOp, [ctx.emit(nn.MulOp, [centred, centred])], keep)
    shifted = ctx.emit(nn.AddOp, [var, ctx.constant(np.array(epsilon, np.float32))])
    inv_std = ctx.emit(nn.ReciprocalOp, [ctx.emit(nn.SqrtOp, [shifted])])
    return [y, mean, inv_std]


def _lrn(ctx: NodeContext) -> list[Value]:
    props = {
        "size": i64_attr(ctx.attr("size")),
        "alpha": f32_attr(ctx.attr("alpha", 1e-4)),
        "beta": f32_attr(ctx.attr("beta", 0.75)),
        "bias": f32_attr(ctx.attr("bias", 1.0)),
    }
    if ctx.attr("size") is None:
        raise ValueError("LRN needs a size")
    return [ctx.emit(nn.LrnOp, [ctx.operand(0)], props)]


_SIMPLE_REDUCE = {
    "ReduceMean": nn.ReduceMeanOp,
    "ReduceSum": nn.ReduceSumOp,
    "ReduceMax": nn.ReduceMaxOp,
    "ReduceMin": nn.ReduceMinOp,
    "ReduceProd": nn.ReduceProdOp,
    "ReduceL1": nn.ReduceSumOp,
    "ReduceL2": nn.ReduceSumOp,
    "ReduceSumSquare": nn.ReduceSumOp,
    "ReduceLogSum": nn.ReduceSumOp,
    "ReduceLogSumExp": nn.ReduceSumOp,
}


_INTEGER_REDUCE = ("ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin")


def _reduce(ctx: NodeContext) -> list[Value]:
    axes, keepdims = reduce_axes(ctx)
    x = ctx.value(0) if ctx.op_type in _INTEGER_REDUCE else ctx.operand(0)
    if axes is None:
        return [x]
    kind = ctx.op_type
    if kind == "ReduceL1":
        x = ctx.emit(nn.AbsOp, [x])
    elif kind in ("ReduceL2", "ReduceSumSquare"):
        x = ctx.emit(nn.MulOp, [x, x])
    elif kind == "ReduceLogSumExp":
        x = ctx.emit(nn.ExpOp, [x])
    props = {"axes": nn.ints(axes), "keepdims": BoolAttr.from_bool(keepdims)}
    y = ctx.emit(_SIMPLE_REDUCE[kind], [x], props, element_type=element_of(x))
    if kind == "ReduceL2":
        y = ctx.emit(nn.SqrtOp, [y])
    elif kind in ("ReduceLogSum", "ReduceLogSumExp"):
        y = ctx.emit(nn.LogOp, [y])
    return [y]


def _arg(op_type: type[nn.NNOperation]) -> Converter:
    def convert(ctx: NodeContext) -> list[Value]:
        rank = ctx.rank(0)
        axis = int(ctx.attr("axis", 0))
        if not -rank <= axis < max(rank, 1):
            raise ValueError(f"axis {axis} out of range for rank {rank}")
        props = {
            "axis": i64_attr(axis % rank),
            "keepdims": BoolAttr.from_bool(bool(ctx.attr("keepdims", 1))),
            "select_last_index": BoolAttr.from_bool(bool(ctx.attr("select_last_index", 0))),
        }
        return [ctx.emit(op_type, [ctx.value(0)], props, element_type=i64)]

    return convert


CONVERTERS: dict[str, Converter] = {
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "Gemm": _gemm,
    "MatMul": _matmul,
    "MaxPool": _pool(nn.MaxPool2dOp),
    "AveragePool": _pool(nn.AvgPool2dOp),
    "GlobalAveragePool": _global_pool(nn.GlobalAvgPoolOp),
    "GlobalMaxPool": _global_pool(nn.GlobalMaxPoolOp),
    "BatchNormalization": _batch_norm,
    "InstanceNormalization": _instance_norm,
    "LayerNormalization": _layer_norm,
    "LRN": _lrn,
    "ArgMax": _arg(nn.ArgMaxOp),
    "ArgMin": _arg(nn.ArgMinOp),
    **dict.fromkeys(_SIMPLE_REDUCE, _reduce),
}
