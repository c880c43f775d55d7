"""The per-op rules of the `quantize` pass: how each kind of layer becomes qnn ops.

`lower` dispatches on the kind `classify` (lowering.py) gave the layer; the
rules build ops through the `Emitter`, which inserts conversions as needed.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    TensorType,
    i32,
)
from xdsl.dialects.builtin import i64 as I64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation

from npuc.dialects import nn, qnn
from npuc.dialects.arrays import int_values
from npuc.dialects.nn_base import shape_of
from npuc.dialects.qnn import UniformQuantizedType, qtype
from npuc.dialects.qnn_elementwise import aligned_inputs
from npuc.frontends.tflite_context import Unsupported
from npuc.frontends.tflite_softmax import softmax_params
from npuc.plugin_registry import guarded, quantization_rule
from npuc.plugins import PluginError
from npuc.runtime.kernels import elementwise as ew
from npuc.runtime.nn_interpreter import evaluate_op
from npuc.tensors import from_dense

from .layer_config import LayerReport
from .lowering import (
    ADD_LEFT_SHIFT,
    ARITHMETIC,
    BILINEAR_COORDINATES,
    MOVEMENT,
    POOLS,
    WEIGHT_CHANNEL_AXIS,
    WEIGHTED,
    Emitter,
    Layer,
    clamp_bounds_of,
    constant_data,
    fused_activation,
    layer_name_of,
    reduced_count,
    tensor_of,
)
from .plugin_ops import QuantizeRequest
from .schemes import round_half_away

# --------------------------------------------------------------------------- per-op lowering


def copied_props(op: Operation, target: type[Operation]) -> dict[str, Attribute]:
    """The nn op's properties that the qnn op also defines (name included)."""
    assert issubclass(target, IRDLOperation)
    wanted = target.get_irdl_definition().properties
    return {k: v for k, v in op.properties.items() if k in wanted}


def activation_bounds(layer: Layer) -> tuple[float, float] | None:
    """The real clamp of a layer: its fused clip composed with a folded relu/clip."""
    kind, lo, hi, _ = fused_activation(layer.op)
    if kind != "clip":
        lo, hi = -math.inf, math.inf
    if layer.follower is not None:
        outer_lo, outer_hi = clamp_bounds_of(layer.follower.op)
        lo, hi = min(max(lo, outer_lo), outer_hi), min(max(hi, outer_lo), outer_hi)
    elif kind != "clip":
        return None
    return lo, hi


def pre_activation_type(em: Emitter, layer: Layer) -> UniformQuantizedType:
    """The type before a fused leaky_relu: leaky(x) >= lo means x >= lo / alpha."""
    alpha = fused_activation(layer.op)[3]
    found = em.plan.value_range(layer.output, layer.bits)
    if found is None:
        em.plan.missing.append(em.plan.keys.get(layer.output, "?"))
        found = (-1.0, 1.0)
    return em.plan.scheme.activation(layer.bits).qtype(min(found[0] / alpha, 0.0), found[1])


def finish(em: Emitter, layer: Layer, op: Operation, report: LayerReport) -> None:
    """Add a requantizing op, apply a fused leaky_relu as a LUT, record its output."""
    em.add(op)
    result: SSAValue = op.results[0]
    kind, _, _, alpha = fused_activation(layer.op)
    if kind == "leaky_relu":
        result = em.lut(layer, result, lambda x: ew.leaky_relu(x.astype(np.float32), alpha))
        report.lowering += " + qnn.lut"
    em.set_quant(layer.output, result)
    report.outputs = [em.params(layer.output, qtype(result))]
    em.plan.report.layers[layer.name] = report


def emit_requantizing(
    em: Emitter,
    layer: Layer,
    target: type[Operation],
    operands: list[SSAValue],
    props: dict[str, Attribute],
    q_out: UniformQuantizedType,
) -> None:
    """The layer as one `target` op on `operands` with a result of type `q_out`."""
    new = target.create(
        operands=operands, properties=props, result_types=[tensor_of(layer.op.results[0], q_out)]
    )
    finish(em, layer, new, new_report(em, layer, target.name, operands))


def new_report(em: Emitter, layer: Layer, lowering: str, inputs: list[SSAValue]) -> LayerReport:
    return LayerReport(
        name=layer.name,
        op=layer.op.name,
        lowering=lowering,
        bits=layer.bits,
        mode=layer.setting.mode or "int",
        strategy=layer.setting.strategy or em.plan.input_strategy,
        inputs=[
            em.params(orig, qtype(v))
            for orig, v in zip(layer.op.operands, inputs, strict=False)
            if isinstance(v.type, TensorType)
            and isinstance(v.type.element_type, UniformQuantizedType)
        ],
    )


def output_type_for(em: Emitter, layer: Layer) -> UniformQuantizedType:
    if fused_activation(layer.op)[0] == "leaky_relu":
        return pre_activation_type(em, layer)
    return em.out_type(layer)


def lower_weighted(em: Emitter, layer: Layer) -> None:
    op, plan = layer.op, em.plan
    target = WEIGHTED[type(op)]
    x = em.as_bits(op.operands[0], layer.bits)
    channel_axis = WEIGHT_CHANNEL_AXIS.get(type(op), 0)
    axis = channel_axis if plan.scheme.per_channel else None
    w = em.weight(op.operands[1], layer, axis)
    qx, qw = qtype(x), qtype(w)
    sw = np.array(qw.scale_values(), np.float64)
    operands = [x, w]
    report = new_report(em, layer, target.name, [x, w])
    report.weight_bits = layer.setting.weight_bits
    report.weight_strategy = layer.setting.weight_strategy
    report.weight = {
        "granularity": "per-channel" if qw.per_axis else "per-tensor",
        "storage": qw.storage,
        "symmetric": all(z == 0 for z in qw.zero_point_values()),
        "narrow": qw.qmin == -qw.qmax,
    }
    if (op.operands[1], qw) in plan.learned:
        report.weight["rounding"] = "adaround"
    stored_bias: np.ndarray | int = 0
    if len(op.operands) > 2:
        bias = np.asarray(constant_data(op.operands[2]), np.float64)
        bias_scale = qx.scale * np.broadcast_to(sw, bias.shape)
        stored = round_half_away(bias / bias_scale)
        limit = 2 ** (plan.bias_bits - 1)
        report.bias_saturated = int(np.count_nonzero((stored < -limit) | (stored > limit - 1)))
        clipped = np.clip(stored, -limit, limit - 1).astype(np.int32)
        stored_bias = clipped
        owner = op.operands[2].owner
        name = layer_name_of(owner) if isinstance(owner, Operation) else None
        operands.append(em.constant(clipped, tensor_of(op.operands[2], i32), name))
    check_accumulator(em, layer, x, w, stored_bias, channel_axis)
    q_out = output_type_for(em, layer)
    props = copied_props(op, target)
    props |= em.requant_props(qx.scale * sw / q_out.scale, q_out, activation_bounds(layer))
    new = target.create(
        operands=operands, properties=props, result_types=[tensor_of(op.results[0], q_out)]
    )
    finish(em, layer, new, report)


def check_accumulator(
    em: Emitter, layer: Layer, x: SSAValue, w: SSAValue, bias: np.ndarray | int, axis: int = 0
) -> None:
    """Warn when the worst-case accumulator of a constant-weight layer exceeds int32.

    The reference kernels accumulate in int64; hardware accumulates in int32.
    """
    if not isinstance(w.owner, qnn.ConstantOp):
        return
    qx, qw = qtype(x), qtype(w)
    stored = np.asarray(from_dense(w.owner.value)).view(qw.storage_dtype()).astype(np.int64)
    stored = np.moveaxis(stored.reshape(shape_of(w)), axis, 0)
    zps = np.array(qw.zero_point_values(), np.int64)
    rows = stored.reshape(stored.shape[0], -1) - (zps[:, None] if qw.per_axis else zps)
    x_max = max(qx.zero_point - qx.qmin, qx.qmax - qx.zero_point)
    bound = x_max * np.abs(rows).sum(axis=1) + np.abs(np.asarray(bias, np.int64))
    if int(bound.max()) > 2**31 - 1:
        em.warnings.append(
            f"layer '{layer.name}': the worst-case accumulator {int(bound.max())} exceeds int32"
        )


def lower_arithmetic(em: Emitter, layer: Layer) -> None:
    op, bits = layer.op, layer.bits
    target = ARITHMETIC[type(op)]
    if isinstance(op, nn.MatMulOp):
        a, b = (em.weight(v, layer, None) for v in op.operands)
    elif isinstance(op, nn.DivOp):
        a, b = em.as_bits(op.lhs, bits), em.reciprocal(op.rhs, bits)
    else:
        a, b = (em.as_bits(v, bits) for v in op.operands)
    sa, sb = qtype(a).scale, qtype(b).scale
    q_out = output_type_for(em, layer)
    bounds = activation_bounds(layer)
    props = copied_props(op, target)
    if isinstance(op, nn.AddOp | nn.SubOp):
        # TFLite's scheme: align both inputs on 2 * max(sa, sb) with left_shift bits of headroom.
        left_shift = ADD_LEFT_SHIFT[bits]
        twice_max = 2 * max(sa, sb)
        props |= em.requant_props([twice_max / ((1 << left_shift) * q_out.scale)], q_out, bounds)
        (lm, ls), (rm, rs) = _pair(em, sa / twice_max), _pair(em, sb / twice_max)
        props |= aligned_inputs(left_shift, (lm, ls), (rm, rs))
    else:
        props |= em.requant_props([sa * sb / q_out.scale], q_out, bounds)
    emit_requantizing(em, layer, target, [a, b], props, q_out)


def lower_prelu(em: Emitter, layer: Layer) -> None:
    """x >= 0 ? x : slope x as qnn.prelu (TFLite's PRELU): the constant slope quantized per
    tensor with the weight scheme, one rescaling for each side."""
    op, bits = layer.op, layer.bits
    assert isinstance(op, nn.PReluOp)
    x = em.as_bits(op.lhs, bits)
    slope = em.weight(op.rhs, layer, None)
    sx, ss = qtype(x).scale, qtype(slope).scale
    q_out = output_type_for(em, layer)
    props = copied_props(op, qnn.PReluOp)
    props |= em.requant_props([sx / q_out.scale], q_out, activation_bounds(layer))
    multiplier, shift = _pair(em, sx * ss / q_out.scale)
    props |= {
        "alpha_multiplier": IntegerAttr(multiplier, I64),
        "alpha_shift": IntegerAttr(shift, I64),
    }
    emit_requantizing(em, layer, qnn.PReluOp, [x, slope], props, q_out)


def lower_divide(em: Emitter, layer: Layer) -> None:
    """A division by a tensor as qnn.div (TFLite's DIV arithmetic, rounding "tflite"): one
    rescaling s_lhs / (s_rhs s_out); a zero divisor saturates (see qnn.div)."""
    op, bits = layer.op, layer.bits
    assert isinstance(op, nn.DivOp)
    a, b = em.as_bits(op.lhs, bits), em.as_bits(op.rhs, bits)
    q_out = output_type_for(em, layer)
    real = qtype(a).scale / (qtype(b).scale * q_out.scale)
    props = copied_props(op, qnn.DivOp) | em.requant_props([real], q_out, activation_bounds(layer))
    props["rounding"] = StringAttr("tflite")
    emit_requantizing(em, layer, qnn.DivOp, [a, b], props, q_out)


def _pair(em: Emitter, real: float) -> tuple[int, int]:
    props = em.requant_props([real])
    multiplier, shift = props["multiplier"], props["shift"]
    assert isinstance(multiplier, DenseArrayBase) and isinstance(shift, DenseArrayBase)
    return int_values(multiplier)[0], int_values(shift)[0]


def lower_pool(em: Emitter, layer: Layer) -> None:
    op = layer.op
    target = POOLS[type(op)]
    x = em.as_bits(op.operands[0], layer.bits)
    # TFLite's pooling keeps its input's type; other rules may rescale to a finer output.
    q_out = qtype(x) if em.plan.rounding == "tflite" else output_type_for(em, layer)
    props = copied_props(op, target)
    props |= em.requant_props([qtype(x).scale / q_out.scale], q_out, activation_bounds(layer))
    emit_requantizing(em, layer, target, [x], props, q_out)


def lower_movement(em: Emitter, layer: Layer) -> None:
    op = layer.op
    x = em.as_bits(op.operands[0], layer.bits)
    q = qtype(x)
    if isinstance(op, nn.ResizeOp) and op.mode.data == "linear":
        target: type[Operation] = qnn.ResizeBilinearOp
        align, half = BILINEAR_COORDINATES[op.coordinate_mode.data]
        props = copied_props(op, target) | {
            "align_corners": BoolAttr.from_bool(align),
            "half_pixel_centers": BoolAttr.from_bool(half),
        }
        if em.plan.rounding == "half_up":
            props["rounding"] = StringAttr("half_up")
    else:
        target = MOVEMENT[type(op)]
        props = copied_props(op, target)
    if isinstance(op, nn.PadOp):
        stored = q.zero_point + int(round_half_away(float(op.value.value.data) / q.scale))
        props["value"] = IntegerAttr(min(max(stored, q.qmin), q.qmax), I64)
    new = em.add(
        target.create(
            operands=[x], properties=props, result_types=[tensor_of(r, q) for r in op.results]
        )
    )
    for original, result in zip(op.results, new.results, strict=True):
        em.set_quant(original, result)
    report = new_report(em, layer, target.name, [x])
    report.outputs = [em.params(r, q) for r in op.results]
    em.plan.report.layers[layer.name] = report


def lower_reduce(em: Emitter, layer: Layer) -> None:
    """A sum or mean as qnn.reduce_sum: the centred sum rescaled, 1/count folded in."""
    op = layer.op
    x = em.as_bits(op.operands[0], layer.bits)
    q_out = output_type_for(em, layer)
    real = qtype(x).scale / q_out.scale
    if isinstance(op, nn.ReduceMeanOp):
        real /= reduced_count(op)
    props = copied_props(op, qnn.ReduceSumOp)
    props |= em.requant_props([real], q_out, activation_bounds(layer))
    emit_requantizing(em, layer, qnn.ReduceSumOp, [x], props, q_out)


def lower_softmax(em: Emitter, layer: Layer) -> None:
    """qnn.softmax over the last axis; its result type is fixed (scale 1/256, zero point -128)."""
    op = layer.op
    x = em.as_bits(op.operands[0], 8)
    q = qtype(x)
    if (q.storage, q.qmin, q.qmax) != ("i8", -128, 127):  # u8 or narrow i8: full-range i8
        zero_point = q.zero_point - 128 if q.storage == "u8" else q.zero_point
        x = em.as_type(op.operands[0], UniformQuantizedType("i8", q.scale, zero_point))
    try:
        multiplier, left_shift, diff_min = softmax_params(1.0, q.scale)
    except Unsupported as e:
        layer.reason = str(e)
        lower_float(em, layer)
        return
    q_out = UniformQuantizedType("i8", qnn.SoftmaxOp.OUTPUT_SCALE, qnn.SoftmaxOp.OUTPUT_ZERO_POINT)
    props = copied_props(op, qnn.SoftmaxOp) | {
        "input_multiplier": IntegerAttr(multiplier, I64),
        "input_left_shift": IntegerAttr(left_shift, I64),
        "diff_min": IntegerAttr(diff_min, I64),
    }
    new = em.add(
        qnn.SoftmaxOp.create(
            operands=[x], properties=props, result_types=[tensor_of(op.results[0], q_out)]
        )
    )
    em.set_quant(op.results[0], new.results[0])
    report = new_report(em, layer, qnn.SoftmaxOp.name, [x])
    report.outputs = [em.params(op.results[0], q_out)]
    em.plan.report.layers[layer.name] = report


def lower_concat(em: Emitter, layer: Layer) -> None:
    op = layer.op
    shared = em.plan.act_type(op.results[0], layer.bits)
    inputs = [em.as_type(v, shared) for v in op.operands]
    new = em.add(
        qnn.ConcatOp.create(
            operands=inputs,
            properties=copied_props(op, qnn.ConcatOp),
            result_types=[tensor_of(op.results[0], shared)],
        )
    )
    em.set_quant(op.results[0], new.results[0])
    report = new_report(em, layer, qnn.ConcatOp.name, inputs)
    report.outputs = [em.params(op.results[0], shared)]
    em.plan.report.layers[layer.name] = report


def lower_clamp(em: Emitter, layer: Layer) -> None:
    """A relu/clip that cannot fold: qnn.requantize (identity unless retargeted) with a clamp."""
    op = layer.op
    x = em.as_bits(op.operands[0], layer.bits)
    forced = em.plan.forced.get(op.results[0])
    q_out = (
        forced if forced is not None and forced.storage_bits == qtype(x).storage_bits else qtype(x)
    )
    props = {"name": op.properties["name"]} if "name" in op.properties else {}
    props |= em.requant_props([qtype(x).scale / q_out.scale], q_out, clamp_bounds_of(op))
    emit_requantizing(em, layer, qnn.RequantizeOp, [x], props, q_out)


def lower_lut(em: Emitter, layer: Layer) -> None:
    op = layer.op
    x = em.as_bits(op.operands[0], 8)
    result = em.lut(layer, x, lambda v: evaluate_op(op, [v.astype(np.float32)])[0])
    em.set_quant(op.results[0], result)
    report = new_report(em, layer, qnn.LutOp.name, [x])
    report.outputs = [em.params(op.results[0], qtype(result))]
    em.plan.report.layers[layer.name] = report


def lower_float(em: Emitter, layer: Layer) -> None:
    """Hybrid: the nn op on dequantized operands; consumers quantize its results."""
    op = layer.op
    mapping = {v: em.as_float(v) for v in op.operands}
    clone = em.add(op.clone(value_mapper=mapping))
    for original, result in zip(op.results, clone.results, strict=True):
        em.float_form[original] = result
    report = new_report(em, layer, "float", [])
    report.mode, report.reason = "float", layer.reason
    em.plan.report.layers[layer.name] = report


def lower_plugin(em: Emitter, layer: Layer) -> None:
    """A plugin's op by its plugin's rule (classify checked the rule and its kernel)."""
    op = layer.op
    found = quantization_rule(op.name)
    assert found is not None
    loaded, rule = found
    what = f"the quantization rule of '{op.name}' (layer '{layer.name}')"
    new = guarded(loaded, rule.rule, what)(QuantizeRequest(em, layer))
    results = getattr(new, "results", None)
    if getattr(new, "name", None) != rule.quantized_op or results is None:
        raise PluginError(loaded.name, f"{what} must return a '{rule.quantized_op}' op")
    if len(results) != len(op.results) or not all(
        isinstance(r.type, TensorType) and isinstance(r.type.element_type, UniformQuantizedType)
        for r in results
    ):
        raise PluginError(loaded.name, f"{what} must give {len(op.results)} quantized result(s)")
    em.add(new)
    for original, result in zip(op.results, results, strict=True):
        em.set_quant(original, result)
    report = new_report(em, layer, new.name, list(new.operands))
    report.outputs = [em.params(o, qtype(r)) for o, r in zip(op.results, results, strict=True)]
    em.plan.report.layers[layer.name] = report


def lower_folded(em: Emitter, layer: Layer) -> None:
    assert layer.folded_into is not None
    producer = em.plan.report.layers[layer.folded_into.name]
    report = new_report(em, layer, f"folded into {layer.folded_into.name}", [])
    report.outputs = producer.outputs
    em.plan.report.layers[layer.name] = report


LOWERINGS: dict[str, Callable[[Emitter, Layer], None]] = {
    "weighted": lower_weighted,
    "arithmetic": lower_arithmetic,
    "prelu": lower_prelu,
    "pool": lower_pool,
    "movement": lower_movement,
    "reduce": lower_reduce,
    "divide": lower_divide,
    "softmax": lower_softmax,
    "concat": lower_concat,
    "clamp": lower_clamp,
    "lut": lower_lut,
    "plugin": lower_plugin,
    "float": lower_float,
}


def lower(em: Emitter, layer: Layer) -> None:
    if layer.folded_into is not None:
        lower_folded(em, layer)
    else:
        LOWERINGS[layer.kind](em, layer)
