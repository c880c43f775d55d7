"""Import-time evaluation of ONNX nodes whose inputs are all known constants.

These folders run when every input of a node is a numpy value (initializers,
shape arithmetic). They follow ONNX typing: arithmetic keeps the type of its
first input, integer division truncates toward zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from onnx import TensorProto, helper

from .onnx_graph import Converter, NodeContext, Unsupported, as_dtype


def onnx_dtype(code: int) -> np.dtype:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(code))
    except (KeyError, TypeError, ValueError):
        raise Unsupported(f"element type {code} not supported") from None


def _inputs(ctx: NodeContext) -> list[np.ndarray]:
    return [ctx.need_const(i, "input") for i in range(ctx.num_inputs) if ctx.has(i)]


def _typed(result: np.ndarray, like: np.ndarray) -> np.ndarray:
    return np.asarray(result).astype(like.dtype, copy=False)


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.any(b == 0):
        raise ValueError("integer division by zero")
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return _int_div(a, b)
    return a / b


def _mod(ctx: NodeContext) -> list[np.ndarray]:
    a, b = _inputs(ctx)
    if ctx.attr("fmod", 0):
        return [_typed(np.fmod(a, b), a)]
    return [_typed(np.mod(a, b), a)]


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Converter:
    def fold(ctx: NodeContext) -> list[np.ndarray]:
        a, b = _inputs(ctx)
        with np.errstate(all="ignore"):
            return [_typed(fn(a, b), a)]

    return fold


def _variadic(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], mean: bool = False) -> Converter:
    def fold(ctx: NodeContext) -> list[np.ndarray]:
        values = _inputs(ctx)
        acc = values[0]
        for v in values[1:]:
            acc = fn(acc, v)
        if mean:
            acc = acc / len(values)
        return [_typed(acc, values[0])]

    return fold


def _unary(fn: Callable[[np.ndarray], np.ndarray], float_only: bool = False) -> Converter:
    def fold(ctx: NodeContext) -> list[np.ndarray] | None:
        (x,) = _inputs(ctx)
        if float_only and x.dtype.kind != "f":
            return None
        with np.errstate(all="ignore"):
            return [_typed(fn(x), x)]

    return fold


def _compare(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Converter:
    def fold(ctx: NodeContext) -> list[np.ndarray]:
        a, b = _inputs(ctx)
        return [np.asarray(fn(a, b), dtype=np.bool_)]

    return fold


def _where(ctx: NodeContext) -> list[np.ndarray]:
    cond, x, y = _inputs(ctx)
    return [_typed(np.where(cond.astype(np.bool_), x, y), x)]


def _not(ctx: NodeContext) -> list[np.ndarray]:
    (x,) = _inputs(ctx)
    return [np.logical_not(x)]


def _constant(ctx: NodeContext) -> list[np.ndarray]:
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if key not in ctx.attrs:
            continue
        value = ctx.attr(key)
        if key == "value":
            return [np.asarray(value)]
        dtype = np.float32 if "float" in key else np.int64
        return [np.asarray(value, dtype=dtype)]
    kinds = sorted(ctx.attrs) or ["none"]
    raise Unsupported(f"Constant with {', '.join(kinds)} not supported")


def _constant_of_shape(ctx: NodeContext) -> list[np.ndarray]:
    shape = [int(d) for d in _inputs(ctx)[0].reshape(-1)]
    if any(d < 0 for d in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    value = ctx.attr("value")
    one = np.zeros((), np.float32) if value is None else np.asarray(value).reshape(-1)[:1]
    return [np.broadcast_to(one.reshape(()), shape)]


def _cast(ctx: NodeContext) -> list[np.ndarray]:
    (x,) = _inputs(ctx)
    dtype = onnx_dtype(int(ctx.attr("to")))
    return [_cast_array(x, dtype)]


def _cast_like(ctx: NodeContext) -> list[np.ndarray]:
    x, like = _inputs(ctx)
    return [_cast_array(x, like.dtype)]


# Cast to these follows ONNX's saturate/round_mode rules, which numpy's conversions
# (NaN or inf on overflow, wrap-around for int4/int2) do not model.
NARROW_TYPES = [
    "FLOAT8E4M3FN",
    "FLOAT8E4M3FNUZ",
    "FLOAT8E5M2",
    "FLOAT8E5M2FNUZ",
    "FLOAT8E8M0",
    "FLOAT4E2M1",
    "INT4",
    "UINT4",
    "INT2",
    "UINT2",
]
NARROW = {
    np.dtype(helper.tensor_dtype_to_np_dtype(getattr(TensorProto, name))): name.lower()
    for name in NARROW_TYPES
}


def _cast_array(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype in NARROW:
        raise Unsupported(f"cast to {NARROW[dtype]} not supported")
    if dtype.kind in "iub" and x.dtype.kind == "f":
        x = np.trunc(x)
    if dtype.kind == "b":
        return as_dtype(x != 0, np.bool_)
    with np.errstate(all="ignore"):
        return as_dtype(x, dtype)


def _range(ctx: NodeContext) -> list[np.ndarray]:
    start, limit, delta = (v.reshape(()) for v in _inputs(ctx))
    if delta == 0:
        raise ValueError("Range delta must not be zero")
    count = max(math.ceil((float(limit) - float(start)) / float(delta)), 0)
    return [(start + np.arange(count) * delta).astype(start.dtype)]


def reduce_axes(ctx: NodeContext) -> tuple[list[int] | None, bool]:
    """(axes, keepdims) of a ReduceX node; axes None means the node is the identity.

    Axes come from the attribute (before opset 13/18) or the second input.
    """
    keepdims = bool(ctx.attr("keepdims", 1))
    if "axes" in ctx.attrs:
        axes = [int(a) for a in ctx.attr("axes")]
    elif ctx.has(1):
        axes = ctx.ints(1, "axes")
    else:
        axes = []
    if not axes and ctx.attr("noop_with_empty_axes", 0):
        return None, keepdims
    rank = ctx.rank(0)
    if any(not -rank <= a < max(rank, 1) for a in axes):
        raise ValueError(f"axes {axes} out of range for rank {rank}")
    return sorted({a % rank for a in axes}) if rank else [], keepdims


def _reduce(fn: Callable[..., np.ndarray]) -> Converter:
    def fold(ctx: NodeContext) -> list[np.ndarray]:
        x = ctx.need_const(0, "input")
        axes, keepdims = reduce_axes(ctx)
        if axes is None:
            return [x]
        with np.errstate(all="ignore"):
            return [_typed(fn(x, axis=tuple(axes) or None, keepdims=keepdims), x)]

    return fold


def _arg(fn: Callable[..., np.ndarray]) -> Converter:
    def fold(ctx: NodeContext) -> list[np.ndarray]:
        x = ctx.need_const(0, "input")
        axis = int(ctx.attr("axis", 0)) % max(x.ndim, 1)
        if ctx.attr("select_last_index", 0):
            flipped = np.flip(x, axis)
            idx = x.shape[axis] - 1 - fn(flipped, axis=axis)
        else:
            idx = fn(x, axis=axis)
        if ctx.attr("keepdims", 1):
            idx = np.expand_dims(idx, axis)
        return [np.asarray(idx, dtype=np.int64)]

    return fold


def _clip(ctx: NodeContext) -> list[np.ndarray]:
    x = ctx.need_const(0, "input")
    if ctx.opset < 11:
        lo, hi = ctx.attr("min"), ctx.attr("max")
    else:
        lo = ctx.const(1) if ctx.has(1) else None
        hi = ctx.const(2) if ctx.has(2) else None
    out = x
    if lo is not None:
        out = np.maximum(out, lo)
    if hi is not None:
        out = np.minimum(out, hi)
    return [_typed(out, x)]


def _non_zero(ctx: NodeContext) -> list[np.ndarray]:
    (x,) = _inputs(ctx)
    return [np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)]


def _gather_elements(ctx: NodeContext) -> list[np.ndarray]:
    x, idx = _inputs(ctx)
    axis = int(ctx.attr("axis", 0)) % x.ndim
    idx = np.where(idx < 0, idx + x.shape[axis], idx)
    return [np.take_along_axis(x, idx.astype(np.int64), axis)]


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.power(a, b.astype(a.dtype))


def _sign(x: np.ndarray) -> np.ndarray:
    return np.sign(x)


FOLDERS: dict[str, Converter] = {
    "Constant": _constant,
    "ConstantOfShape": _constant_of_shape,
    "Cast": _cast,
    "CastLike": _cast_like,
    "Range": _range,
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _binary(_div),
    "Pow": _binary(_pow),
    "Mod": _mod,
    "Min": _variadic(np.minimum),
    "Max": _variadic(np.maximum),
    "Sum": _variadic(np.add),
    "Mean": _variadic(np.add, mean=True),
    "Neg": _unary(np.negative),
    "Abs": _unary(np.abs),
    "Sign": _unary(_sign),
    "Floor": _unary(np.floor, float_only=True),
    "Ceil": _unary(np.ceil, float_only=True),
    "Round": _unary(np.round, float_only=True),
    "Sqrt": _unary(np.sqrt, float_only=True),
    "Exp": _unary(np.exp, float_only=True),
    "Log": _unary(np.log, float_only=True),
    "Reciprocal": _unary(np.reciprocal, float_only=True),
    "Relu": _unary(_relu),
    "Sigmoid": _unary(_sigmoid, float_only=True),
    "Tanh": _unary(np.tanh, float_only=True),
    "Sin": _unary(np.sin, float_only=True),
    "Cos": _unary(np.cos, float_only=True),
    "Clip": _clip,
    "Equal": _compare(np.equal),
    "Less": _compare(np.less),
    "LessOrEqual": _compare(np.less_equal),
    "Greater": _compare(np.greater),
    "GreaterOrEqual": _compare(np.greater_equal),
    "And": _compare(np.logical_and),
    "Or": _compare(np.logical_or),
    "Xor": _compare(np.logical_xor),
    "Not": _not,
    "Where": _where,
    "ReduceSum": _reduce(np.sum),
    "ReduceProd": _reduce(np.prod),
    "ReduceMin": _reduce(np.min),
    "ReduceMax": _reduce(np.max),
    "ReduceMean": _reduce(np.mean),
    "ArgMax": _arg(np.argmax),
    "ArgMin": _arg(np.argmin),
    "NonZero": _non_zero,
    "GatherElements": _gather_elements,
}
