"""Lowering rules of the `qnn` compute ops: one instruction each on the operands' views.

Arithmetic parameters are the qnn op's own (docs/quantization.md); per-channel bias,
multiplier, shift and weight zero point go to a `bias_scale` table in the constants
region (docs/binary-format.md, conv2d).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, SSAValue

from npuc.dialects import npu_isa as isa
from npuc.dialects import qnn, tile
from npuc.dialects.arrays import int_values
from npuc.dialects.npu_isa import TensorRef
from npuc.passes.memory.ir import constant_bytes, element_dtype, is_constant
from npuc.tensors import from_dense

from .builder import Builder, LoweringError
from .views import ViewError, broadcast, reshaped, with_rank

Rule = Callable[[Builder, Operation], None]
RULES: dict[str, Rule] = {}
#: Ops whose rule covers only some instances: the others run on the host.
SUPPORTS: dict[str, Callable[[Operation], bool]] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for name in names:
            RULES[name] = fn
        return fn

    return register


def supports(*names: str) -> Callable[[Callable[[Operation], bool]], Callable]:
    """Register which instances of `names` their rule lowers."""

    def register(fn: Callable[[Operation], bool]) -> Callable[[Operation], bool]:
        for name in names:
            SUPPORTS[name] = fn
        return fn

    return register


def lowerable(op: Operation) -> bool:
    """Whether a rule lowers `op` (the op has one and it covers this instance)."""
    return op.name in RULES and SUPPORTS.get(op.name, lambda _: True)(op)


def _v(attr: IntegerAttr | None, default: int = 0) -> int:
    return default if attr is None else attr.value.data


def _zp(value: SSAValue) -> int:
    q = qnn.qtype(value)
    if q.per_axis:
        raise LoweringError("per-axis quantized activations have no NPU instruction")
    return q.zero_point


def _output_stage(op: qnn.Requantizing) -> dict:
    lo, hi = op.clamp_bounds()
    return {"ofm_zero_point": _zp(op.results[0]), "clamp_min": lo, "clamp_max": hi,
            "rounding": op.rounding.data}  # fmt: skip


def _scalar(op: qnn.Requantizing) -> dict:
    (m,), (s,) = int_values(op.multiplier), int_values(op.shift)
    return {"multiplier": m, "shift": s}


def constant_values(value: SSAValue, cache: dict) -> np.ndarray | None:
    """The elements of a value computed from constants by loads and slices (else None)."""
    owner = value.owner
    if isinstance(owner, Operation) and is_constant(owner):
        if owner not in cache:
            ty = value.type
            dtype = element_dtype(ty.get_element_type()).newbyteorder("<")  # type: ignore[attr-defined]
            data = np.frombuffer(constant_bytes(owner), dtype)
            cache[owner] = data.reshape(ty.get_shape())  # type: ignore[attr-defined]
        return cache[owner]
    if isinstance(owner, tile.LoadOp | tile.SliceOp):
        source = constant_values(owner.source, cache)
        if source is None:
            return None
        shape = owner.result.type.get_shape()  # type: ignore[attr-defined]
        index = tuple(
            slice(o, o + n) for o, n in zip(int_values(owner.offsets), shape, strict=True)
        )
        return source[index]
    return None


def _table(b: Builder, op: qnn.Requantizing, channels: int, bias: SSAValue | None,
           wzp: tuple[int, ...]) -> TensorRef:  # fmt: skip
    rows = np.zeros((channels, 4), "<i4")
    if bias is not None:
        values = constant_values(bias, b.cache)
        if values is None:
            raise LoweringError("its bias is not a constant (the NPU reads it from a table)")
        rows[:, 0] = values.reshape(-1)
    rows[:, 1] = int_values(op.multiplier)
    rows[:, 2] = int_values(op.shift)
    rows[:, 3] = wzp
    offset = b.constants.add(rows)
    return TensorRef("constants", offset, (channels, 4), (4, 1), "i32")


def _weight_zps(weight: SSAValue, channels: int) -> tuple[int, ...]:
    zps = qnn.qtype(weight).zero_point_values()
    return zps if len(zps) == channels else zps * channels


@rule("qnn.conv2d")
def conv2d(b: Builder, op: qnn.Conv2dOp) -> None:
    channels = op.weight.type.get_shape()[0]  # type: ignore[attr-defined]
    table = _table(b, op, channels, op.bias, _weight_zps(op.weight, channels))
    b.emit(
        "conv2d", (b.ref(op.input), b.ref(op.weight), table, b.out(op.output)),
        (op.input, op.weight), strides=int_values(op.strides), pads=int_values(op.pads),
        dilations=int_values(op.dilations), groups=_v(op.groups), ifm_zero_point=_zp(op.input),
        **_output_stage(op),
    )  # fmt: skip


@rule("qnn.fully_connected")
def fully_connected(b: Builder, op: qnn.FullyConnectedOp) -> None:
    channels, k = op.weight.type.get_shape()  # type: ignore[attr-defined]
    table = _table(b, op, channels, op.bias, _weight_zps(op.weight, channels))
    lhs = with_rank(b.ref(op.input), 3)
    w = b.ref(op.weight)
    rhs = TensorRef(w.region, w.offset, (1, k, channels), (0, w.strides[1], w.strides[0]), w.dtype)
    b.emit(
        "matmul", (lhs, rhs, table, with_rank(b.out(op.output), 3)), (op.input, op.weight),
        lhs_zero_point=_zp(op.input), **_output_stage(op),
    )  # fmt: skip


@rule("qnn.matmul")
def matmul(b: Builder, op: qnn.MatMulOp) -> None:
    out = b.out(op.output)
    batch = out.shape[:-2]
    m, n = out.shape[-2:]
    lhs, rhs = b.ref(op.lhs), b.ref(op.rhs)
    k = lhs.shape[-1]
    lhs = with_rank(broadcast(lhs, (*batch, m, k)), 3)
    rhs = with_rank(broadcast(rhs, (*batch, k, n)), 3)
    table = _table(b, op, n, None, (_zp(op.rhs),) * n)
    b.emit(
        "matmul", (lhs, rhs, table, with_rank(out, 3)), (op.lhs, op.rhs),
        lhs_zero_point=_zp(op.lhs), **_output_stage(op),
    )  # fmt: skip


def _binary(b: Builder, op: Operation, kind: str, **params) -> None:
    out = b.out(op.results[0])
    lhs, rhs = op.operands[0], op.operands[1]
    b.emit("eltwise", (broadcast(b.ref(lhs), out.shape), broadcast(b.ref(rhs), out.shape), out),
           (lhs, rhs), kind=kind, **params)  # fmt: skip


@rule("qnn.add", "qnn.sub")
def aligned_sum(b: Builder, op: qnn.AddOp) -> None:
    _binary(
        b, op, "add" if op.name == "qnn.add" else "sub", lhs_zero_point=_zp(op.lhs),
        rhs_zero_point=_zp(op.rhs), left_shift=_v(op.left_shift),
        lhs_multiplier=_v(op.lhs_multiplier), lhs_shift=_v(op.lhs_shift),
        rhs_multiplier=_v(op.rhs_multiplier), rhs_shift=_v(op.rhs_shift),
        **_scalar(op), **_output_stage(op),
    )  # fmt: skip


@rule("qnn.squared_difference")
def squared_difference(b: Builder, op: Operation) -> None:
    p = op.properties
    _binary(
        b, op, "squared_difference", lhs_zero_point=_zp(op.operands[0]),
        rhs_zero_point=_zp(op.operands[1]), left_shift=_v(p["left_shift"]),
        lhs_multiplier=_v(p["lhs_multiplier"]), lhs_shift=_v(p["lhs_shift"]),
        rhs_multiplier=_v(p["rhs_multiplier"]), rhs_shift=_v(p["rhs_shift"]),
        **_scalar(op), **_output_stage(op),
    )  # fmt: skip


@rule("qnn.prelu")
def prelu(b: Builder, op: Operation) -> None:
    p = op.properties
    _binary(
        b, op, "prelu", lhs_zero_point=_zp(op.operands[0]), rhs_zero_point=_zp(op.operands[1]),
        rhs_multiplier=_v(p["alpha_multiplier"]), rhs_shift=_v(p["alpha_shift"]),
        **_scalar(op), **_output_stage(op),
    )  # fmt: skip


@rule("qnn.div")
def div(b: Builder, op: Operation) -> None:
    overshift = op.properties["overshift"].data if "overshift" in op.properties else "exact"
    if overshift not in isa.OVERSHIFT:
        raise LoweringError(f"div with overshift '{overshift}' has no NPU instruction")
    _binary(
        b, op, "div", lhs_zero_point=_zp(op.operands[0]), rhs_zero_point=_zp(op.operands[1]),
        overshift=overshift, **_scalar(op), **_output_stage(op),
    )  # fmt: skip


@rule("qnn.reduce_sum")
def reduce_sum(b: Builder, op: Operation) -> None:
    view = op.properties.get("storage_view")
    if view is not None and view.data != "native":
        raise LoweringError("the uint8 storage view of int8 sums has no NPU instruction")
    src, dst = _reduction_window(b, op)
    b.emit("pool", (src, dst), (op.operands[0],), mode="sum", kernel=src.shape[2:],
           ifm_zero_point=_zp(op.operands[0]), **_scalar(op), **_output_stage(op))  # fmt: skip


@rule("qnn.reduce_max")
def reduce_max(b: Builder, op: Operation) -> None:
    src, dst = _reduction_window(b, op)
    b.emit("pool", (src, dst), (op.operands[0],), mode="max", kernel=src.shape[2:])


def _reduction_window(b: Builder, op: Operation) -> tuple[TensorRef, TensorRef]:
    """The input viewed as [outer..., window...] (2 + 2 dims) and the result as [outer, 1, 1]:
    a pooling window over the reduced axes."""
    ifm = b.ref(op.operands[0])
    reduced = sorted(int_values(op.properties["axes"])) or list(range(len(ifm.shape)))
    kept = [d for d in range(len(ifm.shape)) if d not in reduced]
    outer = _merged([(ifm.shape[d], ifm.strides[d]) for d in kept])
    window = _merged([(ifm.shape[d], ifm.strides[d]) for d in reduced])
    if len(outer) > 2 or len(window) > 2:
        raise LoweringError("these axes have no strided view as a pooling window")
    dims = [(1, 0)] * (2 - len(outer)) + outer + [(1, 0)] * (2 - len(window)) + window
    src = TensorRef(ifm.region, ifm.offset, tuple(d for d, _ in dims),
                    tuple(s for _, s in dims), ifm.dtype)  # fmt: skip
    dst = reshaped(b.out(op.results[0]), (*src.shape[:2], 1, 1))
    assert dst is not None  # a contiguous result
    return src, dst


def _merged(dims: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(size, stride) pairs without unit sizes, neighbours merged where row-major allows."""
    out: list[tuple[int, int]] = []
    for size, stride in dims:
        if size == 1:
            continue
        if out and out[-1][1] == size * stride:
            out[-1] = (out[-1][0] * size, stride)
        else:
            out.append((size, stride))
    return out


@rule("qnn.mul")
def mul(b: Builder, op: qnn.MulOp) -> None:
    _binary(b, op, "mul", lhs_zero_point=_zp(op.lhs), rhs_zero_point=_zp(op.rhs),
            **_scalar(op), **_output_stage(op))  # fmt: skip


@rule("qnn.maximum", "qnn.minimum")
def extremum(b: Builder, op: Operation) -> None:
    _binary(b, op, op.name.removeprefix("qnn."))


def _pool(b: Builder, op: Operation, mode: str, kernel=None, **params) -> None:
    ifm = b.ref(op.operands[0])
    if len(ifm.shape) != 4:
        raise LoweringError(f"pooling needs NCHW tensors, got rank {len(ifm.shape)}")
    kernel = kernel or ifm.shape[2:]
    b.emit("pool", (ifm, b.out(op.results[0])), (op.operands[0],), mode=mode,
           kernel=tuple(kernel), **params)  # fmt: skip


@rule("qnn.max_pool2d")
def max_pool(b: Builder, op: qnn.MaxPool2dOp) -> None:
    _pool(
        b,
        op,
        "max",
        int_values(op.kernel),
        strides=int_values(op.strides),
        pads=int_values(op.pads),
        dilations=int_values(op.dilations),
        ceil_mode=op.ceil_mode.value.data != 0,
    )


@rule("qnn.global_max_pool")
def global_max_pool(b: Builder, op: Operation) -> None:
    _pool(b, op, "max")


@rule("qnn.avg_pool2d")
def avg_pool(b: Builder, op: qnn.AvgPool2dOp) -> None:
    _pool(
        b,
        op,
        "avg",
        int_values(op.kernel),
        strides=int_values(op.strides),
        pads=int_values(op.pads),
        ceil_mode=op.ceil_mode.value.data != 0,
        count_include_pad=op.count_include_pad.value.data != 0,
        ifm_zero_point=_zp(op.input),
        **_scalar(op),
        **_output_stage(op),
    )


@rule("qnn.global_avg_pool")
def global_avg_pool(b: Builder, op: qnn.GlobalAvgPoolOp) -> None:
    _pool(b, op, "avg", ifm_zero_point=_zp(op.input), **_scalar(op), **_output_stage(op))


@rule("qnn.requantize")
def requantize(b: Builder, op: qnn.RequantizeOp) -> None:
    if len(int_values(op.multiplier)) != 1:
        raise LoweringError("per-channel requantization has no NPU instruction")
    ifm, ofm = with_rank(b.ref(op.input), 4), with_rank(b.out(op.output), 4)
    b.emit("pool", (ifm, ofm), (op.input,), mode="sum", ifm_zero_point=_zp(op.input),
           **_scalar(op), **_output_stage(op))  # fmt: skip


@rule("qnn.lut")
def lut(b: Builder, op: qnn.LutOp) -> None:
    out = b.out(op.output)
    table = np.asarray(from_dense(op.table)).astype(qnn.qtype(op.output).storage_dtype())
    offset = b.constants.add(table.astype(table.dtype.newbyteorder("<")))
    ref = TensorRef("constants", offset, (table.size,), (1,), out.dtype)
    b.emit("lut", (b.ref(op.input), ref, out), (op.input,), table_base=qnn.qtype(op.input).qmin)


@rule("qnn.softmax")
def softmax(b: Builder, op: qnn.SoftmaxOp) -> None:
    b.emit(
        "softmax", (b.ref(op.input), b.out(op.output)), (op.input,),
        input_multiplier=_v(op.input_multiplier), input_left_shift=_v(op.input_left_shift),
        diff_min=_v(op.diff_min),
    )  # fmt: skip


@supports("qnn.pad")
def constant_padding(op: Operation) -> bool:
    return isinstance(op, qnn.PadOp) and op.mode.data == "constant"


@rule("qnn.pad")
def pad(b: Builder, op: qnn.PadOp) -> None:
    if op.mode.data != "constant":
        raise LoweringError(f"{op.mode.data} padding has no NPU instruction")
    value = _v(op.value) if op.value is not None else _zp(op.input)
    b.emit("move", (b.ref(op.input), b.out(op.output)), (op.input,), pads=int_values(op.pads),
           pad_value=value)  # fmt: skip


__all__ = ["RULES", "ViewError", "constant_values", "lowerable"]


#: The compute rules (their outputs may be written straight into an insert's slice).
COMPUTE = frozenset(RULES)
