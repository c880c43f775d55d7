"""Quantized ONNX patterns as `qnn` ops: one float node whose inputs are quantized and whose
output is quantized (by a following QuantizeLinear, or by a QLinear op's output parameters).

Each emitter gets the float node's `NodeContext`, the import's quantization state
(`QuantOperands`) and a `Target` (the output type and the real bounds of a folded Relu/Clip)
and returns the node's results
as `qnn` values, or None when the pattern cannot be expressed exactly; the caller then keeps
the node in float (hybrid). Requantization multipliers come from the model's float scales
with `quantize_multiplier`, and round half to even like ONNX's QuantizeLinear.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import onnx
from xdsl.dialects.builtin import IntegerAttr, IntegerType, Signedness, StringAttr, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from npuc.dialects import qnn
from npuc.dialects.arrays import ints
from npuc.dialects.nn_base import NNOperation, shape_of
from npuc.dialects.nn_shapes import ShapeError
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.integer import dequantize, quantize_multipliers
from npuc.tensors import to_dense

from .onnx_graph import GraphImporter, NodeContext, Unsupported
from .onnx_layers import window

ROUNDING = "half_to_even"  # ONNX QuantizeLinear rounds half to even
QConst = tuple[np.ndarray, UniformQuantizedType]  # stored integers and their type
Bounds = tuple[float | None, float | None]


@dataclass(frozen=True)
class Target:
    """Where a pattern's result goes: its quantized type and a folded activation's real bounds."""

    type: UniformQuantizedType
    bounds: Bounds = (None, None)
    fold: onnx.NodeProto | None = None


class QuantOperands(Protocol):
    """What an emitter asks of the import's quantization state (onnx_quantized.QuantState)."""

    def operand(self, ctx: NodeContext, i: int) -> SSAValue | QConst | None: ...

    def clip_bounds(self, importer: GraphImporter, node: onnx.NodeProto) -> Bounds | None: ...


Emitter = Callable[[NodeContext, QuantOperands, "Target | None"], "list[SSAValue] | None"]


class Abort(Exception):
    """The pattern does not apply; the node stays float."""


def qtype_of(value: object) -> UniformQuantizedType | None:
    if isinstance(value, SSAValue) and isinstance(value.type, TensorType):
        element = value.type.element_type
        if isinstance(element, UniformQuantizedType):
            return element
    return None


def storage_int_type(q: UniformQuantizedType) -> IntegerType:
    bits = max(8, q.storage_bits.data)
    return (
        IntegerType(bits, Signedness.UNSIGNED) if not q.storage_signed.data else IntegerType(bits)
    )


def dequantize_const(values: np.ndarray, q: UniformQuantizedType) -> np.ndarray:
    scales, zps = q.broadcast_params(values.ndim)
    return dequantize(values, scales, zps)


def multipliers(reals: np.ndarray | float) -> dict[str, Attribute]:
    """`multiplier`/`shift` properties for real multipliers (shifts capped at 62: the product
    of an i32 accumulator with such a multiplier rounds to 0 or +-1 either way)."""
    m0, shift = quantize_multipliers(np.atleast_1d(np.asarray(reals, np.float64)))
    m0, shift = m0.copy(), shift.copy()
    for i in range(m0.size):
        if shift[i] > 62:
            m0[i] = (int(m0[i]) + (1 << (int(shift[i]) - 63))) >> (int(shift[i]) - 62)
            shift[i] = 62
        if m0[i] == 0:
            shift[i] = 0
        if shift[i] < -31:
            raise Abort
    return {"multiplier": ints(m0.tolist()), "shift": ints(shift.tolist())}


def single_multiplier(real: float, prefix: str) -> dict[str, Attribute]:
    props = multipliers(real)
    return {
        f"{prefix}multiplier": IntegerAttr(int(props["multiplier"].get_values()[0]), i64),
        f"{prefix}shift": IntegerAttr(int(props["shift"].get_values()[0]), i64),
    }


def clamp_props(target: Target) -> dict[str, Attribute]:
    """Clamp bounds in storage units: Q(clip(v, lo, hi)) == clip(Q(v), Q(lo), Q(hi)), Q monotone."""
    t = target.type
    lo, hi = target.bounds
    cmin = (
        t.qmin if lo is None else int(np.clip(t.zero_point + np.rint(lo / t.scale), t.qmin, t.qmax))
    )
    cmax = (
        t.qmax if hi is None else int(np.clip(t.zero_point + np.rint(hi / t.scale), t.qmin, t.qmax))
    )
    if cmin > cmax:
        raise Abort
    props: dict[str, Attribute] = {}
    if cmin > t.qmin:
        props["clamp_min"] = IntegerAttr(cmin, i64)
    if cmax < t.qmax:
        props["clamp_max"] = IntegerAttr(cmax, i64)
    return props


class Build:
    """The ops of one pattern: created detached, verified, then appended all together."""

    def __init__(self, ctx: NodeContext):
        self.ctx = ctx
        self.ops: list[Operation] = []

    def op(
        self,
        cls: type[NNOperation],
        operands: Sequence[SSAValue],
        props: dict[str, Attribute] | None = None,
        *,
        element: Attribute | None = None,
        shape: Sequence[int] | None = None,
        result_types: Sequence[Attribute] | None = None,
    ) -> SSAValue:
        props = {**(props or {}), "name": StringAttr(self.ctx.name)}
        if result_types is None:
            if shape is None:
                inferred = cls.infer_shapes([shape_of(v) for v in operands], props)
                if inferred is None:
                    raise Abort
                shape = inferred[0]
            result_types = [TensorType(element, list(shape))]
        op = cls.create(operands=list(operands), properties=props, result_types=list(result_types))
        self.ops.append(op)
        return op.results[0]

    def constant(self, values: np.ndarray, q: UniformQuantizedType | None) -> SSAValue:
        """A `qnn.constant` of stored integers (q given) or of an i32 bias (q None)."""
        if q is None:
            dense, ty = to_dense(values.astype(np.int32)), TensorType(IntegerType(32), values.shape)
        else:
            element = storage_int_type(q)
            dense, ty = to_dense(values, element), TensorType(q, values.shape)
        return self.op(qnn.ConstantOp, [], {"value": dense}, result_types=[ty])

    def requantize(
        self, value: SSAValue, out: UniformQuantizedType, **props: Attribute
    ) -> SSAValue:
        q = qtype_of(value)
        if q is None or q.per_axis or out.per_axis:
            raise Abort
        if q == out and not props:
            return value
        props = {**multipliers(q.scale / out.scale), "rounding": StringAttr(ROUNDING), **props}
        return self.op(qnn.RequantizeOp, [value], props, element=out, shape=shape_of(value))

    def commit(self) -> None:
        try:
            for op in self.ops:
                op.verify()
        except VerifyException as e:
            self.abandon()
            raise Abort from e
        for op in self.ops:
            self.ctx.importer.block.add_op(op)

    def abandon(self) -> None:
        for op in reversed(self.ops):
            op.drop_all_references()
        self.ops.clear()


def run_pattern(ctx: NodeContext, body: Callable[[Build], list[SSAValue]]) -> list[SSAValue] | None:
    build = Build(ctx)
    try:
        results = body(build)
        build.commit()
    except (Abort, ShapeError, ValueError, Unsupported):
        build.abandon()
        return None
    return results


# --------------------------------------------------------------------------- operands


def run_time(st: QuantOperands, ctx: NodeContext, i: int) -> SSAValue:
    """Input i as a per-tensor quantized run-time value (else the pattern does not apply)."""
    operand = st.operand(ctx, i)
    if not isinstance(operand, SSAValue) or qtype_of(operand).per_axis:  # type: ignore[union-attr]
        raise Abort
    return operand


def constant(st: QuantOperands, ctx: NodeContext, i: int) -> QConst:
    operand = st.operand(ctx, i)
    if not isinstance(operand, tuple):
        raise Abort
    return operand


def _bias(st: QuantOperands, ctx: NodeContext, i: int, acc_scales: np.ndarray) -> np.ndarray | None:
    """An int32 bias at the accumulator scale s_x * s_w.

    A DequantizeLinear'd int32 bias at that scale is taken as it is; other quantized or float
    biases are rounded (half to even) to it, which moves the accumulator by at most half a
    unit: float biases are what PyTorch's QDQ exports keep.
    """
    if not ctx.has(i):
        return None
    channels = acc_scales.size
    operand = st.operand(ctx, i)
    if operand is None:
        real = ctx.const(i)
        if real is None or real.dtype.kind != "f" or real.size != channels:
            raise Abort
        real = real.reshape(-1).astype(np.float64)
    else:
        values, q = constant(st, ctx, i)
        if values.size != channels:
            raise Abort
        values = values.reshape(-1).astype(np.int64)
        scales = np.broadcast_to(np.array(q.scale_values()), (channels,))
        zps = np.broadcast_to(np.array(q.zero_point_values()), (channels,))
        exact = np.allclose(scales / acc_scales, 1.0, rtol=1e-6, atol=0)
        if q.storage == "i32" and np.all(zps == 0) and exact:
            return values.astype(np.int32)
        real = (values - zps) * scales
    rescaled = np.rint(real / acc_scales)
    if np.abs(rescaled).max(initial=0) >= 2**31:
        raise Abort
    return rescaled.astype(np.int32)


def _weight_scales(q: UniformQuantizedType, channels: int) -> np.ndarray:
    return np.broadcast_to(np.array(q.scale_values(), np.float64), (channels,)).copy()


# --------------------------------------------------------------------------- compute patterns


def conv(ctx: NodeContext, st: QuantOperands, target: Target | None) -> list[SSAValue] | None:
    def body(b: Build) -> list[SSAValue]:
        if target is None:
            raise Abort
        x = run_time(st, ctx, 0)
        w, wq = constant(st, ctx, 1)
        rank = len(shape_of(x))
        if rank not in (3, 4) or w.ndim != rank or (wq.per_axis and wq.axis.data != 0):
            raise Abort
        xq = qtype_of(x)
        w_scales = _weight_scales(wq, w.shape[0])
        bias = _bias(st, ctx, 2, xq.scale * w_scales)
        win = window(ctx, shape_of(x)[2:], list(w.shape[2:]))
        if rank == 3:
            n, c, length = shape_of(x)
            x = b.op(qnn.ReshapeOp, [x], element=xq, shape=(n, c, 1, length))
            w = w.reshape(w.shape[0], w.shape[1], 1, w.shape[2])
        reals = xq.scale * w_scales / target.type.scale
        if not wq.per_axis:
            reals = reals[:1]
        props = {
            **win.props("strides", "pads", "dilations"),
            "groups": IntegerAttr(int(ctx.attr("group", 1)), i64),
            **multipliers(reals),
            "rounding": StringAttr(ROUNDING),
            **clamp_props(target),
        }
        operands = [x, b.constant(w, wq)]
        if bias is not None:
            operands.append(b.constant(bias, None))
        y = b.op(qnn.Conv2dOp, operands, props, element=target.type)
        if rank == 3:
            n, o, _, length = shape_of(y)
            y = b.op(qnn.ReshapeOp, [y], element=target.type, shape=(n, o, length))
        return [y]

    return run_pattern(ctx, body)


def _fully_connected(
    b: Build,
    ctx: NodeContext,
    st: QuantOperands,
    target: Target,
    x: SSAValue,
    w: np.ndarray,
    wq: UniformQuantizedType,
    bias_index: int | None,
) -> SSAValue:
    """x [N, K] @ w[O, K]^T + bias; w per-tensor or per-axis on axis 0."""
    xq = qtype_of(x)
    w_scales = _weight_scales(wq, w.shape[0])
    bias = _bias(st, ctx, bias_index, xq.scale * w_scales) if bias_index is not None else None
    reals = xq.scale * w_scales / target.type.scale
    props = {
        **multipliers(reals if wq.per_axis else reals[:1]),
        "rounding": StringAttr(ROUNDING),
        **clamp_props(target),
    }
    operands = [x, b.constant(np.ascontiguousarray(w), wq)]
    if bias is not None:
        operands.append(b.constant(bias, None))
    return b.op(qnn.FullyConnectedOp, operands, props, element=target.type)


def _as_rows(w: np.ndarray, wq: UniformQuantizedType) -> tuple[np.ndarray, UniformQuantizedType]:
    """A [K, O] weight as [O, K], its per-axis type moved from axis 1 to axis 0."""
    if wq.per_axis and wq.axis.data != 1:
        raise Abort
    if wq.per_axis:
        wq = UniformQuantizedType(
            wq.storage,
            wq.scale_values(),
            wq.zero_point_values(),
            axis=0,
            storage_min=wq.qmin,
            storage_max=wq.qmax,
        )
    return np.ascontiguousarray(w.T), wq


def gemm(ctx: NodeContext, st: QuantOperands, target: Target | None) -> list[SSAValue] | None:
    def body(b: Build) -> list[SSAValue]:
        if target is None or ctx.attr("transA", 0) or float(ctx.attr("alpha", 1.0)) != 1.0:
            raise Abort
        if ctx.has(2) and float(ctx.attr("beta", 1.0)) != 1.0:
            raise Abort
        x = run_time(st, ctx, 0)
        w, wq = constant(st, ctx, 1)
        if w.ndim != 2 or len(shape_of(x)) != 2:
            raise Abort
        if not ctx.attr("transB", 0):
            w, wq = _as_rows(w, wq)
        elif wq.per_axis and wq.axis.data != 0:
            raise Abort
        return [_fully_connected(b, ctx, st, target, x, w, wq, 2 if ctx.has(2) else None)]

    return run_pattern(ctx, body)


def matmul(ctx: NodeContext, st: QuantOperands, target: Target | None) -> list[SSAValue] | None:
    def body(b: Build) -> list[SSAValue]:
        if target is None:
            raise Abort
        x = run_time(st, ctx, 0)
        rhs = st.operand(ctx, 1)
        if isinstance(rhs, SSAValue):
            y = run_time(st, ctx, 1)
            reals = qtype_of(x).scale * qtype_of(y).scale / target.type.scale
            props = {**multipliers(reals), "rounding": StringAttr(ROUNDING), **clamp_props(target)}
            return [b.op(qnn.MatMulOp, [x, y], props, element=target.type)]
        w, wq = constant(st, ctx, 1)
        shape = shape_of(x)
        if w.ndim != 2 or len(shape) < 2 or shape[-1] != w.shape[0]:
            raise Abort
        w, wq = _as_rows(w, wq)
        rows = int(np.prod(shape[:-1]))
        if len(shape) != 2:
            x = b.op(qnn.ReshapeOp, [x], element=qtype_of(x), shape=(rows, shape[-1]))
        y = _fully_connected(b, ctx, st, target, x, w, wq, None)
        if len(shape) != 2:
            y = b.op(qnn.ReshapeOp, [y], element=target.type, shape=(*shape[:-1], w.shape[0]))
        return [y]

    return run_pattern(ctx, body)


def _binary_operands(b: Build, st: QuantOperands, ctx: NodeContext) -> list[SSAValue]:
    """Both inputs as per-tensor quantized values (a quantized constant becomes qnn.constant)."""
    values = []
    for i in (0, 1):
        operand = st.operand(ctx, i)
        if isinstance(operand, tuple):
            if operand[1].per_axis:
                raise Abort
            operand = b.constant(*operand)
        if operand is None or qtype_of(operand).per_axis:
            raise Abort
        values.append(operand)
    if all(isinstance(v.owner, qnn.ConstantOp) for v in values):
        raise Abort
    return values


def aligned_sum(op_type: type[NNOperation]) -> Emitter:
    """Add/Sub in TFLite's scheme: both sides rescaled to 2 * max(scale) / 2^left_shift first."""

    def emit(ctx: NodeContext, st: QuantOperands, target: Target | None) -> list[SSAValue] | None:
        def body(b: Build) -> list[SSAValue]:
            if target is None:
                raise Abort
            lhs, rhs = _binary_operands(b, st, ctx)
            a, c = qtype_of(lhs), qtype_of(rhs)
            bits = max(a.storage_bits.data, c.storage_bits.data, target.type.storage_bits.data)
            left_shift = 20 if bits <= 8 else 15
            twice = 2 * max(a.scale, c.scale)
            props = {
                "left_shift": IntegerAttr(left_shift, i64),
                **single_multiplier(a.scale / twice, "lhs_"),
                **single_multiplier(c.scale / twice, "rhs_"),
                **multipliers(twice / ((1 << left_shift) * target.type.scale)),
                "rounding": StringAttr(ROUNDING),
                **clamp_props(target),
            }
            return [b.op(op_type, [lhs, rhs], props, element=target.type)]

        return run_pattern(ctx, body)

    return emit


def mul(ctx: NodeContext, st: QuantOperands, target: Target | None) -> list[SSAValue] | None:
    def body(b: Build) -> list[SSAValue]:
        if target is None:
            raise Abort
        lhs, rhs = _binary_operands(b, st, ctx)
        reals = qtype_of(lhs).scale * qtype_of(rhs).scale / target.type.scale
        props = {**multipliers(reals), "rounding": StringAttr(ROUNDING), **clamp_props(target)}
        return [b.op(qnn.MulOp, [lhs, rhs], props, element=target.type)]

    return run_pattern(ctx, body)


def clamp(ctx: NodeContext, st: QuantOperands, target: Target | None) -> list[SSAValue] | None:
    """A standalone Relu/Clip: a requantize to the output type whose clamp is the activation."""

    def body(b: Build) -> list[SSAValue]:
        if target is None:
            raise Abort
        bounds = st.clip_bounds(ctx.importer, ctx.node)
        if bounds is None:
            raise Abort
        x = run_time(st, ctx, 0)
        props = clamp_props(Target(target.type, bounds))
        return [b.requantize(x, target.type, **props) if props else b.requantize(x, target.type)]

    return run_pattern(ctx, body)


def concat(ctx: NodeContext, st: QuantOperands, target: Target | None) -> list[SSAValue] | None:
    """Every input requantized to the output type where it differs, then qnn.concat."""

    def body(b: Build) -> list[SSAValue]:
        if target is None or target.bounds != (None, None):
            raise Abort
        t = target.type
        values = []
        for i in range(ctx.num_inputs):
            if not ctx.has(i):
                continue
            operand = st.operand(ctx, i)
            if operand is None:
                known = ctx.const(i)
                if known is None:
                    raise Abort
                operand = (known, None)
            if isinstance(operand, tuple):
                values_f = operand[0] if operand[1] is None else dequantize_const(*operand)
                stored = quantize_f32(values_f, t)
                values.append(b.constant(stored.astype(t.storage_dtype()), t))
            else:
                values.append(b.requantize(operand, t))
        rank = len(shape_of(values[0]))
        axis = int(ctx.attr("axis", 0)) % rank
        return [b.op(qnn.ConcatOp, values, {"axis": IntegerAttr(axis, i64)}, element=t)]

    return run_pattern(ctx, body)


def quantize_f32(values: np.ndarray, t: UniformQuantizedType) -> np.ndarray:
    """ONNX QuantizeLinear on constants: float32 division, round half to even, saturate."""
    scales, zps = t.broadcast_params(np.ndim(values))
    scaled = np.asarray(values, np.float32) / np.asarray(scales, np.float32)
    return np.clip(np.rint(scaled).astype(np.int64) + zps, t.qmin, t.qmax)


PATTERNS: dict[str, Emitter] = {
    "Conv": conv,
    "Gemm": gemm,
    "MatMul": matmul,
    "Add": aligned_sum(qnn.AddOp),
    "Sub": aligned_sum(qnn.SubOp),
    "Mul": mul,
    "Relu": clamp,
    "Clip": clamp,
    "Concat": concat,
}
# Ops whose requantizing result can absorb a following Relu/Clip.
FOLDS_ACTIVATION = {
    "Conv",
    "Gemm",
    "MatMul",
    "Add",
    "Sub",
    "Mul",
    "AveragePool",
    "GlobalAveragePool",
}
