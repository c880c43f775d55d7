"""Lowering rules of the `qnn` compute ops: one instruction each on the operands' views.

Arithmetic parameters are the qnn op's own (docs/quantization.md); per-channel bias,
multiplier, shift and weight zero point go to a `bias_scale` table in the constants
region (docs/binary-format.md, conv2d).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr
from xdsl.ir import Attribute, Operation

from npuc.dialects import npu_isa as isa
from npuc.dialects import qnn
from npuc.dialects.arrays import int_values
from npuc.dialects.nn_base import shape_of
from npuc.dialects.npu_isa import TensorRef
from npuc.tensors import from_dense

from .builder import Builder, LoweringError, Rule, Support
from .operands import (
    activation_zero_point,
    bias_scale_table,
    output_stage,
    weight_zero_points,
)
from .views import ViewError, broadcast, reshaped, sliced, with_rank


def _v(attr: Attribute | None, default: int = 0) -> int:
    if attr is None:
        return default
    assert isinstance(attr, IntegerAttr)
    return attr.value.data


def _scalar(op: qnn.Requantizing) -> dict[str, int]:
    (m,), (s,) = int_values(op.multiplier), int_values(op.shift)
    return {"multiplier": m, "shift": s}


def conv2d(b: Builder, op: qnn.Conv2dOp) -> None:
    channels = shape_of(op.weight)[0]
    table = bias_scale_table(b, op, channels, op.bias, weight_zero_points(op.weight, channels))
    b.emit(
        "conv2d",
        (b.ref(op.input), b.ref(op.weight), table, b.out(op.output)),
        (op.input, op.weight),
        strides=int_values(op.strides),
        pads=int_values(op.pads),
        dilations=int_values(op.dilations),
        groups=_v(op.groups),
        ifm_zero_point=activation_zero_point(op.input),
        **output_stage(op),
    )


def fully_connected(b: Builder, op: qnn.FullyConnectedOp) -> None:
    channels, k = shape_of(op.weight)
    table = bias_scale_table(b, op, channels, op.bias, weight_zero_points(op.weight, channels))
    lhs = with_rank(b.ref(op.input), 3)
    w = b.ref(op.weight)
    rhs = TensorRef(w.region, w.offset, (1, k, channels), (0, w.strides[1], w.strides[0]), w.dtype)
    b.emit(
        "matmul",
        (lhs, rhs, table, with_rank(b.out(op.output), 3)),
        (op.input, op.weight),
        lhs_zero_point=activation_zero_point(op.input),
        **output_stage(op),
    )


def matmul(b: Builder, op: qnn.MatMulOp) -> None:
    out = b.out(op.output)
    batch = out.shape[:-2]
    m, n = out.shape[-2:]
    lhs, rhs = b.ref(op.lhs), b.ref(op.rhs)
    k = lhs.shape[-1]
    lhs, rhs = broadcast(lhs, (*batch, m, k)), broadcast(rhs, (*batch, k, n))
    table = bias_scale_table(b, op, n, None, (activation_zero_point(op.rhs),) * n)
    for lhs_i, rhs_i, out_i in _batches(lhs, rhs, out):
        b.emit(
            "matmul",
            (lhs_i, rhs_i, table, out_i),
            (op.lhs, op.rhs),
            lhs_zero_point=activation_zero_point(op.lhs),
            **output_stage(op),
        )


def _batches(
    lhs: TensorRef, rhs: TensorRef, out: TensorRef
) -> list[tuple[TensorRef, TensorRef, TensorRef]]:
    """The operands as rank-3 views, one matmul each: a leading batch axis that does not
    merge with the next (a broadcast along one of them) is split, one piece per index."""
    try:
        return [(with_rank(lhs, 3), with_rank(rhs, 3), with_rank(out, 3))]
    except ViewError:
        if len(out.shape) <= 3:
            raise
    pieces = []
    for i in range(out.shape[0]):
        pieces += _batches(*(_index(r, i) for r in (lhs, rhs, out)))
    return pieces


def _index(ref: TensorRef, i: int) -> TensorRef:
    """ref[i]: the view without its first axis."""
    row = sliced(ref, (i,) + (0,) * (len(ref.shape) - 1), (1, *ref.shape[1:]))
    return replace(row, shape=row.shape[1:], strides=row.strides[1:])


def _binary(b: Builder, op: Operation, kind: str, **params: Any) -> None:
    out = b.out(op.results[0])
    lhs, rhs = op.operands[0], op.operands[1]
    b.emit(
        "eltwise",
        (broadcast(b.ref(lhs), out.shape), broadcast(b.ref(rhs), out.shape), out),
        (lhs, rhs),
        kind=kind,
        **params,
    )


def aligned_sum(b: Builder, op: qnn.AddOp) -> None:
    _binary(
        b,
        op,
        "add" if op.name == "qnn.add" else "sub",
        lhs_zero_point=activation_zero_point(op.lhs),
        rhs_zero_point=activation_zero_point(op.rhs),
        left_shift=_v(op.left_shift),
        lhs_multiplier=_v(op.lhs_multiplier),
        lhs_shift=_v(op.lhs_shift),
        rhs_multiplier=_v(op.rhs_multiplier),
        rhs_shift=_v(op.rhs_shift),
        **_scalar(op),
        **output_stage(op),
    )


def squared_difference(b: Builder, op: qnn.SquaredDifferenceOp) -> None:
    p = op.properties
    _binary(
        b,
        op,
        "squared_difference",
        lhs_zero_point=activation_zero_point(op.operands[0]),
        rhs_zero_point=activation_zero_point(op.operands[1]),
        left_shift=_v(p["left_shift"]),
        lhs_multiplier=_v(p["lhs_multiplier"]),
        lhs_shift=_v(p["lhs_shift"]),
        rhs_multiplier=_v(p["rhs_multiplier"]),
        rhs_shift=_v(p["rhs_shift"]),
        **_scalar(op),
        **output_stage(op),
    )


def prelu(b: Builder, op: qnn.PReluOp) -> None:
    p = op.properties
    _binary(
        b,
        op,
        "prelu",
        lhs_zero_point=activation_zero_point(op.operands[0]),
        rhs_zero_point=activation_zero_point(op.operands[1]),
        rhs_multiplier=_v(p["alpha_multiplier"]),
        rhs_shift=_v(p["alpha_shift"]),
        **_scalar(op),
        **output_stage(op),
    )


def div(b: Builder, op: qnn.DivOp) -> None:
    overshift = op.overshift.data
    if overshift not in isa.OVERSHIFT:
        raise LoweringError(f"div with overshift '{overshift}' has no NPU instruction")
    _binary(
        b,
        op,
        "div",
        lhs_zero_point=activation_zero_point(op.operands[0]),
        rhs_zero_point=activation_zero_point(op.operands[1]),
        overshift=overshift,
        **_scalar(op),
        **output_stage(op),
    )


def native_sum(op: Operation) -> bool:
    """LiteRT's int8 SUM reads the bytes as uint8 (storage_view): no instruction does that."""
    return isinstance(op, qnn.ReduceSumOp) and op.storage_view.data == "native"


def reduce_sum(b: Builder, op: qnn.ReduceSumOp) -> None:
    if not native_sum(op):
        raise LoweringError("the uint8 storage view of int8 sums has no NPU instruction")
    src, dst = _reduction_window(b, op)
    b.emit(
        "pool",
        (src, dst),
        (op.operands[0],),
        mode="sum",
        kernel=src.shape[2:],
        ifm_zero_point=activation_zero_point(op.operands[0]),
        **_scalar(op),
        **output_stage(op),
    )


def reduce_max(b: Builder, op: Operation) -> None:
    src, dst = _reduction_window(b, op)
    b.emit("pool", (src, dst), (op.operands[0],), mode="max", kernel=src.shape[2:])


def _reduction_window(b: Builder, op: Operation) -> tuple[TensorRef, TensorRef]:
    """The input viewed as [outer..., window...] (2 + 2 dims) and the result as [outer, 1, 1]:
    a pooling window over the reduced axes."""
    ifm = b.ref(op.operands[0])
    axes = op.properties["axes"]
    assert isinstance(axes, DenseArrayBase)
    reduced = sorted(int_values(axes)) or list(range(len(ifm.shape)))
    kept = [d for d in range(len(ifm.shape)) if d not in reduced]
    outer = _merged([(ifm.shape[d], ifm.strides[d]) for d in kept])
    window = _merged([(ifm.shape[d], ifm.strides[d]) for d in reduced])
    if len(outer) > 2 or len(window) > 2:
        raise LoweringError("these axes have no strided view as a pooling window")
    dims = [(1, 0)] * (2 - len(outer)) + outer + [(1, 0)] * (2 - len(window)) + window
    src = TensorRef(
        ifm.region, ifm.offset, tuple(d for d, _ in dims), tuple(s for _, s in dims), ifm.dtype
    )
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


def mul(b: Builder, op: qnn.MulOp) -> None:
    _binary(
        b,
        op,
        "mul",
        lhs_zero_point=activation_zero_point(op.lhs),
        rhs_zero_point=activation_zero_point(op.rhs),
        **_scalar(op),
        **output_stage(op),
    )


def extremum(b: Builder, op: Operation) -> None:
    _binary(b, op, op.name.removeprefix("qnn."))


def _pool(
    b: Builder, op: Operation, mode: str, kernel: Sequence[int] | None = None, /, **params: Any
) -> None:
    ifm = b.ref(op.operands[0])
    if len(ifm.shape) != 4:
        raise LoweringError(f"pooling needs NCHW tensors, got rank {len(ifm.shape)}")
    kernel = kernel or ifm.shape[2:]
    b.emit(
        "pool",
        (ifm, b.out(op.results[0])),
        (op.operands[0],),
        mode=mode,
        kernel=tuple(kernel),
        **params,
    )


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


def global_max_pool(b: Builder, op: Operation) -> None:
    _pool(b, op, "max")


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
        ifm_zero_point=activation_zero_point(op.input),
        **_scalar(op),
        **output_stage(op),
    )


def global_avg_pool(b: Builder, op: qnn.GlobalAvgPoolOp) -> None:
    _pool(
        b,
        op,
        "avg",
        ifm_zero_point=activation_zero_point(op.input),
        **_scalar(op),
        **output_stage(op),
    )


def requantize(b: Builder, op: qnn.RequantizeOp) -> None:
    if len(int_values(op.multiplier)) != 1:
        raise LoweringError("per-channel requantization has no NPU instruction")
    ifm, ofm = with_rank(b.ref(op.input), 4), with_rank(b.out(op.output), 4)
    b.emit(
        "pool",
        (ifm, ofm),
        (op.input,),
        mode="sum",
        ifm_zero_point=activation_zero_point(op.input),
        **_scalar(op),
        **output_stage(op),
    )


def lut(b: Builder, op: qnn.LutOp) -> None:
    out = b.out(op.output)
    table = np.asarray(from_dense(op.table)).astype(qnn.qtype(op.output).storage_dtype())
    offset = b.constants.add(table.astype(table.dtype.newbyteorder("<")))
    ref = TensorRef("constants", offset, (table.size,), (1,), out.dtype)
    b.emit("lut", (b.ref(op.input), ref, out), (op.input,), table_base=qnn.qtype(op.input).qmin)


def softmax(b: Builder, op: qnn.SoftmaxOp) -> None:
    b.emit(
        "softmax",
        (b.ref(op.input), b.out(op.output)),
        (op.input,),
        input_multiplier=_v(op.input_multiplier),
        input_left_shift=_v(op.input_left_shift),
        diff_min=_v(op.diff_min),
    )


def constant_padding(op: Operation) -> bool:
    return isinstance(op, qnn.PadOp) and op.mode.data == "constant"


def pad(b: Builder, op: qnn.PadOp) -> None:
    if op.mode.data != "constant":
        raise LoweringError(f"{op.mode.data} padding has no NPU instruction")
    value = _v(op.value) if op.value is not None else activation_zero_point(op.input)
    b.emit(
        "move",
        (b.ref(op.input), b.out(op.output)),
        (op.input,),
        pads=int_values(op.pads),
        pad_value=value,
    )


RULES: dict[str, Rule] = {
    "qnn.conv2d": conv2d,
    "qnn.fully_connected": fully_connected,
    "qnn.matmul": matmul,
    "qnn.add": aligned_sum,
    "qnn.sub": aligned_sum,
    "qnn.squared_difference": squared_difference,
    "qnn.prelu": prelu,
    "qnn.div": div,
    "qnn.reduce_sum": reduce_sum,
    "qnn.reduce_max": reduce_max,
    "qnn.mul": mul,
    "qnn.maximum": extremum,
    "qnn.minimum": extremum,
    "qnn.max_pool2d": max_pool,
    "qnn.global_max_pool": global_max_pool,
    "qnn.avg_pool2d": avg_pool,
    "qnn.global_avg_pool": global_avg_pool,
    "qnn.requantize": requantize,
    "qnn.lut": lut,
    "qnn.softmax": softmax,
    "qnn.pad": pad,
}
#: Ops whose rule covers only some instances: the others run on the host.
SUPPORTS: dict[str, Support] = {
    "qnn.pad": constant_padding,
    "qnn.reduce_sum": native_sum,
}
