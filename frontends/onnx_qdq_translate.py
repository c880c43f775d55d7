"""Quantized forms of the `nn` ops a float ONNX converter emitted for one node.

The importer runs the float converter on `qnn.dequantize` views of the quantized inputs and
hands the emitted ops here: data movement keeps its input's type (`qnn.reshape`,
`qnn.max_pool2d`, ...), an average pool rescales to the target type, and a chain of
elementwise ops on one input becomes a `qnn.lut` evaluated on every stored input value.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue

from npuc.dialects import nn, nn_elementwise, qnn
from npuc.dialects.nn_base import NNOperation, shape_of
from npuc.dialects.quant_types import UniformQuantizedType, storage_range
from npuc.integer import dequantize, quantize
from npuc.runtime.nn_interpreter import evaluate_op
from npuc.tensors import to_dense

from .onnx_graph import NodeContext
from .onnx_qdq_patterns import (
    ROUNDING,
    Abort,
    Build,
    Target,
    clamp_props,
    multipliers,
    qtype_of,
    run_pattern,
    storage_int_type,
)

# nn ops that only move data, and their qnn forms (results keep the input's type).
MOVEMENT: dict[type[Operation], type[NNOperation]] = {
    nn.ReshapeOp: qnn.ReshapeOp,
    nn.TransposeOp: qnn.TransposeOp,
    nn.MaxPool2dOp: qnn.MaxPool2dOp,
    nn.GlobalMaxPoolOp: qnn.GlobalMaxPoolOp,
    nn.ConcatOp: qnn.ConcatOp,
    nn.SplitOp: qnn.SplitOp,
    nn.SliceOp: qnn.SliceOp,
    nn.PadOp: qnn.PadOp,
    nn.ResizeOp: qnn.ResizeOp,
    nn.DepthToSpaceOp: qnn.DepthToSpaceOp,
    nn.SpaceToDepthOp: qnn.SpaceToDepthOp,
}
POOLS: dict[type[Operation], type[NNOperation]] = {
    nn.AvgPool2dOp: qnn.AvgPool2dOp,
    nn.GlobalAvgPoolOp: qnn.GlobalAvgPoolOp,
}
# nn ops a look-up table can replace (elementwise; constants must be scalars).
ELEMENTWISE = {
    cls
    for _, cls in inspect.getmembers(nn_elementwise, inspect.isclass)
    if issubclass(cls, NNOperation) and cls.__module__ == nn_elementwise.__name__
} - {nn.SoftmaxOp, nn.LogSoftmaxOp}
_DROPPED = {"cubic_coeff_a", "exclude_outside", "name"}  # meaningless for nearest / renamed


def _props(
    op: Operation, qcls: type[NNOperation], q: UniformQuantizedType, pad_value: int | None = None
) -> dict[str, Attribute]:
    """The nn op's properties for its qnn form (Abort where the qnn op cannot mean the same).

    `pad_value` is a stored padding value that replaces nn.pad's real one.
    """
    allowed = qcls.get_irdl_definition().properties
    props: dict[str, Attribute] = {}
    if isinstance(op, nn.PadOp) and pad_value is not None:
        if not q.qmin <= pad_value <= q.qmax:
            raise Abort
        props["value"] = IntegerAttr(pad_value, i64)
    for key, attr in op.properties.items():
        if isinstance(op, nn.PadOp) and key == "value":
            if pad_value is not None:
                continue
            real = float(attr.value.data)  # type: ignore[attr-defined]
            stored = q.zero_point + real / q.scale if not q.per_axis else None
            if stored is None or stored != round(stored) or not q.qmin <= stored <= q.qmax:
                raise Abort
            props[key] = IntegerAttr(int(stored), i64)
        elif isinstance(op, nn.ResizeOp) and key == "mode":
            if attr != StringAttr("nearest"):
                raise Abort
        elif key in allowed:
            props[key] = attr
        elif key not in _DROPPED:
            raise Abort
    return props


def translate(
    ctx: NodeContext,
    ops: list[Operation],
    mapping: dict[SSAValue, SSAValue],
    results: Sequence[SSAValue],
    target: Target | None,
    pad_value: int | None = None,
) -> list[SSAValue] | None:
    """The qnn form of the nn ops a float converter emitted, or None.

    `mapping` takes the float views of quantized inputs to the quantized values.
    Movement ops keep their input's type; one average pool rescales to the target;
    a chain of elementwise ops on one input becomes a look-up table.
    """
    if ops and all(type(op) in ELEMENTWISE for op in ops):
        return run_pattern(ctx, lambda b: [_lut(b, ops, mapping, results, target)])

    def body(b: Build) -> list[SSAValue]:
        m = dict(mapping)
        pooled = False
        for op in ops:
            operands = [m[v] for v in op.operands if v in m]
            if len(operands) != len(op.operands) or not operands:
                raise Abort
            q = qtype_of(operands[0])
            kind = type(op)
            if kind in MOVEMENT:
                qcls = MOVEMENT[kind]
                types = [TensorType(q, shape_of(r)) for r in op.results]
                props = _props(op, qcls, q, pad_value)
                new = b.op(qcls, operands, props, result_types=types).owner
            elif kind in POOLS and target is not None and not pooled:
                qcls, pooled = POOLS[kind], True
                if "dilations" in op.properties or q.per_axis:
                    raise Abort
                props = {
                    **_props(op, qcls, q),
                    **multipliers(q.scale / target.type.scale),
                    "rounding": StringAttr(ROUNDING),
                    **clamp_props(target),
                }
                types = [TensorType(target.type, shape_of(op.results[0]))]
                new = b.op(qcls, operands, props, result_types=types).owner
            else:
                raise Abort
            m.update(zip(op.results, new.results, strict=True))
        out = [m[r] for r in results]
        if target is not None and not pooled:
            if len(out) != 1:
                raise Abort
            props = clamp_props(target)
            out = [b.requantize(out[0], target.type, **props)]
        return out

    return run_pattern(ctx, body)


def _lut(
    b: Build,
    ops: list[Operation],
    mapping: dict[SSAValue, SSAValue],
    results: Sequence[SSAValue],
    target: Target | None,
) -> SSAValue:
    """qnn.lut whose table is the chain evaluated on every stored input value.

    Entries are Q(f(DQ(q))) in float32 rounded half to even, as onnxruntime's QLinear
    look-up tables and its QuantizeLinear round (npuc's own quantizer rounds half away).
    """
    inputs = {v for op in ops for v in op.operands if v in mapping}
    if target is None or len(inputs) != 1 or len(results) != 1:
        raise Abort
    (source,) = inputs
    x = mapping[source]
    q = qtype_of(x)
    if q.per_axis or q.storage_bits.data > 16:
        raise Abort
    lo, hi = storage_range(q.storage_bits.data, bool(q.storage_signed.data))
    env = {source: dequantize(np.arange(lo, hi + 1), q.scale, q.zero_point)}
    for op in ops:
        if isinstance(op, nn.ConstantOp):
            value = evaluate_op(op, [])[0]
            if value.size != 1:
                raise Abort
            env[op.results[0]] = value.reshape(())
            continue
        if any(v not in env for v in op.operands):
            raise Abort
        env.update(zip(op.results, evaluate_op(op, [env[v] for v in op.operands]), strict=True))
    y = np.asarray(env[results[0]], np.float32)
    t = target.type
    if y.shape != (hi - lo + 1,) or shape_of(results[0]) != shape_of(x):
        raise Abort
    table = quantize(y, t.scale, t.zero_point, t.qmin, t.qmax, ROUNDING)
    props = clamp_props(target)
    lo_clamp, hi_clamp = props.get("clamp_min"), props.get("clamp_max")
    table = np.clip(
        table,
        t.qmin if lo_clamp is None else lo_clamp.value.data,  # type: ignore[attr-defined]
        t.qmax if hi_clamp is None else hi_clamp.value.data,  # type: ignore[attr-defined]
    )
    dense = to_dense(table.astype(t.storage_dtype()), storage_int_type(t))
    return b.op(qnn.LutOp, [x], {"table": dense}, element=t, shape=shape_of(x))
