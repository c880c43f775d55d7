"""ONNX elementwise, activation and softmax nodes as `nn` ops."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, f32, i1, i64
from xdsl.ir import Attribute

from npuc.dialects import nn
from npuc.dialects.nn_shapes import ShapeError, broadcast

from .onnx_graph import Converter, NodeContext, Unsupported, Value, element_of, shape_of

FLT_MAX = 3.4e38


def f32_attr(value: float) -> FloatAttr:
    return FloatAttr(float(value), f32)


def i64_attr(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def _numeric(op_type: type[nn.NNOperation], result: Attribute | None = None) -> Converter:
    """An op on inputs of one element type, f32 or integer (i1 too for comparisons);
    the result has `result` or the inputs' element type."""

    def convert(ctx: NodeContext) -> list[Value]:
        operands, element = ctx.values(range(ctx.num_inputs))
        return [ctx.emit(op_type, operands, element_type=result or element)]

    return convert


def _logical(op_type: type[nn.NNOperation]) -> Converter:
    def convert(ctx: NodeContext) -> list[Value]:
        operands = [ctx.value(i, i1) for i in range(ctx.num_inputs)]
        return [ctx.emit(op_type, operands, element_type=i1)]

    return convert


def _pow(ctx: NodeContext) -> list[Value]:
    """float32 base; an integer exponent is cast to float32 (ONNX lets the two types differ)."""
    exponent = ctx.input(1)
    if isinstance(exponent, np.ndarray) or element_of(exponent) == f32:
        return [ctx.emit(nn.PowOp, [ctx.operand(0), ctx.operand(1)])]
    cast = ctx.emit(nn.CastOp, [exponent], element_type=f32)
    return [ctx.emit(nn.PowOp, [ctx.operand(0), cast])]


def _where(ctx: NodeContext) -> list[Value]:
    (x, y), element = ctx.values([1, 2])
    return [ctx.emit(nn.WhereOp, [ctx.value(0, i1), x, y], element_type=element)]


def _variadic(op_type: type[nn.NNOperation], mean: bool = False) -> Converter:
    def convert(ctx: NodeContext) -> list[Value]:
        present = [i for i in range(ctx.num_inputs) if ctx.has(i)]
        if not present:
            raise ValueError(f"{ctx.op_type} needs at least one input")
        if mean:
            values, element = [ctx.operand(i) for i in present], f32
        else:
            values, element = ctx.values(present)
        acc = values[0]
        for value in values[1:]:
            acc = ctx.emit(op_type, [acc, value], element_type=element)
        if mean and len(values) > 1:
            scale = ctx.constant(np.array(1.0 / len(values), np.float32))
            acc = ctx.emit(nn.MulOp, [acc, scale])
        return [acc]

    return convert


def _with_floats(op_type: type[nn.NNOperation], **defaults: float) -> Converter:
    def convert(ctx: NodeContext) -> list[Value]:
        props = {key: f32_attr(ctx.attr(key, value)) for key, value in defaults.items()}
        return [ctx.emit(op_type, [ctx.operand(0)], props)]

    return convert


def _gelu(ctx: NodeContext) -> list[Value]:
    approximate = ctx.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise Unsupported(f"approximate '{approximate}' not supported")
    return [ctx.emit(nn.GeluOp, [ctx.operand(0)], {"approximate": StringAttr(approximate)})]


def _selu(ctx: NodeContext) -> list[Value]:
    alpha = ctx.attr("alpha", 1.67326319217681884765625)
    gamma = ctx.attr("gamma", 1.05070102214813232421875)
    elu = ctx.emit(nn.EluOp, [ctx.operand(0)], {"alpha": f32_attr(alpha)})
    return [ctx.emit(nn.MulOp, [elu, ctx.constant(np.array(gamma, np.float32))])]


def _softsign(ctx: NodeContext) -> list[Value]:
    x = ctx.operand(0)
    one = ctx.constant(np.array(1.0, np.float32))
    denominator = ctx.emit(nn.AddOp, [ctx.emit(nn.AbsOp, [x]), one])
    return [ctx.emit(nn.DivOp, [x, denominator])]


def _mish(ctx: NodeContext) -> list[Value]:
    x = ctx.operand(0)
    softplus = ctx.emit(nn.SoftplusOp, [x])
    return [ctx.emit(nn.MulOp, [x, ctx.emit(nn.TanhOp, [softplus])])]


def _bound(ctx: NodeContext, attr: str, index: int) -> float | None:
    if ctx.opset < 11:
        value = ctx.attr(attr)
    else:
        array = ctx.need_const(index, attr) if ctx.has(index) else None
        if array is not None and array.size != 1:
            raise ValueError(f"Clip {attr} must be a scalar")
        value = None if array is None else float(array.reshape(()))
    if value is None or math.isnan(value) or abs(value) >= FLT_MAX:
        return None
    return float(value)


def _integer_clip(ctx: NodeContext) -> list[Value]:
    """Clip of integer data: maximum and minimum with the bounds in the data's type."""
    x = ctx.value(0)
    for index, op_type in ((1, nn.MaximumOp), (2, nn.MinimumOp)):
        if ctx.has(index):
            bound = ctx.need_const(index, "bound")
            if bound.size != 1:
                raise ValueError("Clip bounds must be scalars")
            x = ctx.emit(op_type, [x, ctx.value(index, element_of(x))], element_type=element_of(x))
    return [x]


def _clip(ctx: NodeContext) -> list[Value]:
    data = ctx.input(0)
    if ctx.opset >= 11 and not isinstance(data, np.ndarray) and element_of(data) != f32:
        return _integer_clip(ctx)
    lo, hi = _bound(ctx, "min", 1), _bound(ctx, "max", 2)
    x = ctx.operand(0)
    if lo is None and hi is None:
        return [x]
    if lo is not None and hi is not None and lo > hi:
        y = ctx.emit(nn.MaximumOp, [x, ctx.constant(np.array(lo, np.float32))])
        return [ctx.emit(nn.MinimumOp, [y, ctx.constant(np.array(hi, np.float32))])]
    props = {}
    if lo is not None:
        props["min"] = f32_attr(lo)
    if hi is not None:
        props["max"] = f32_attr(hi)
    return [ctx.emit(nn.ClipOp, [x], props)]


def _softmax(op_type: type[nn.NNOperation]) -> Converter:
    """Softmax/LogSoftmax; before opset 13 they work on the input flattened to 2-D at `axis`."""

    def convert(ctx: NodeContext) -> list[Value]:
        x = ctx.operand(0)
        shape = shape_of(x)
        rank = len(shape)
        if rank == 0:
            raise ValueError("softmax needs a ranked input")
        if ctx.opset >= 13:
            axis = _axis(ctx.attr("axis", -1), rank)
            return [ctx.emit(op_type, [x], {"axis": i64_attr(axis)})]
        axis = _axis(ctx.attr("axis", 1), rank)
        inner = [i for i in range(axis, rank) if shape[i] != 1]
        if len(inner) <= 1:
            single = inner[0] if inner else axis
            return [ctx.emit(op_type, [x], {"axis": i64_attr(single)})]
        rows = math.prod(shape[:axis])
        flat = ctx.reshape(x, (rows, math.prod(shape[axis:])))
        y = ctx.emit(op_type, [flat], {"axis": i64_attr(1)})
        return [ctx.reshape(y, shape)]

    return convert


def _axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} out of range for rank {rank}")
    return axis % rank


def _prelu(ctx: NodeContext) -> list[Value]:
    x, slope = ctx.shape(0), ctx.const(1)
    if slope is not None and len(x) > 2 and slope.size == x[1] and not _broadcasts(slope.shape, x):
        # A per-channel slope [C] as written for opset 6 (legacy broadcasting).
        per_channel = slope.reshape(x[1], *([1] * (len(x) - 2)))
        return [ctx.emit(nn.PReluOp, [ctx.operand(0), ctx.constant(per_channel)])]
    return [ctx.emit(nn.PReluOp, [ctx.operand(0), ctx.operand(1)])]


def _broadcasts(shape: Sequence[int], target: Sequence[int]) -> bool:
    try:
        return broadcast(shape, target) == tuple(target)
    except ShapeError:
        return False


def passthrough(ctx: NodeContext) -> list[Value]:
    return [ctx.input(0)]


def _unary(op_type: type[nn.NNOperation]) -> Converter:
    def convert(ctx: NodeContext) -> list[Value]:
        return [ctx.emit(op_type, [ctx.operand(0)])]

    return convert


CONVERTERS: dict[str, Converter] = {
    "Add": _numeric(nn.AddOp),
    "Sub": _numeric(nn.SubOp),
    "Mul": _numeric(nn.MulOp),
    "Div": _numeric(nn.DivOp),
    "Pow": _pow,
    "Max": _variadic(nn.MaximumOp),
    "Min": _variadic(nn.MinimumOp),
    "Sum": _variadic(nn.AddOp),
    "Mean": _variadic(nn.AddOp, mean=True),
    "PRelu": _prelu,
    "Relu": _unary(nn.ReluOp),
    "Sigmoid": _unary(nn.SigmoidOp),
    "Tanh": _unary(nn.TanhOp),
    "Exp": _unary(nn.ExpOp),
    "Log": _unary(nn.LogOp),
    "Sqrt": _unary(nn.SqrtOp),
    "Erf": _unary(nn.ErfOp),
    "Abs": _numeric(nn.AbsOp),
    "Neg": _numeric(nn.NegOp),
    "Reciprocal": _unary(nn.ReciprocalOp),
    "Floor": _unary(nn.FloorOp),
    "Ceil": _unary(nn.CeilOp),
    "Softplus": _unary(nn.SoftplusOp),
    "HardSwish": _unary(nn.HardSwishOp),
    "LeakyRelu": _with_floats(nn.LeakyReluOp, alpha=0.01),
    "Elu": _with_floats(nn.EluOp, alpha=1.0),
    "HardSigmoid": _with_floats(nn.HardSigmoidOp, alpha=0.2, beta=0.5),
    "Gelu": _gelu,
    "Selu": _selu,
    "Softsign": _softsign,
    "Mish": _mish,
    "Clip": _clip,
    "Softmax": _softmax(nn.SoftmaxOp),
    "LogSoftmax": _softmax(nn.LogSoftmaxOp),
    "Identity": passthrough,
    "Equal": _numeric(nn.EqualOp, i1),
    "Less": _numeric(nn.LessOp, i1),
    "LessOrEqual": _numeric(nn.LessEqualOp, i1),
    "Greater": _numeric(nn.GreaterOp, i1),
    "GreaterOrEqual": _numeric(nn.GreaterEqualOp, i1),
    "Not": _logical(nn.NotOp),
    "And": _logical(nn.AndOp),
    "Or": _logical(nn.OrOp),
    "Xor": _logical(nn.XorOp),
    "Where": _where,
}
