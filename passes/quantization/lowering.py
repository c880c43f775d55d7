"""Per-op nn -> qnn rewriting for the `quantize` pass.

`classify` gives each op its kind (how it lowers, or why it stays float);
the pass's `Plan` (passes/quantize.py) holds the kinds, tensor names and
types. `Emitter` builds the new function body op by op: it tracks every
original value's float form and quantized form and inserts the conversions
(qnn.quantize, qnn.dequantize, qnn.requantize) lazily, once per value and
type, right before the first user. `lower` dispatches to the per-op rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    f32,
    i32,
)
from xdsl.dialects.builtin import i64 as I64
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.traits import ConstantLike

from npuc.dialects import nn, qnn
from npuc.dialects.arrays import ints
from npuc.dialects.nn_base import ActivationFusable, prop_ints, shape_of
from npuc.dialects.qnn import UniformQuantizedType, qtype
from npuc.integer import dequantize, quantize, quantize_multipliers
from npuc.plugin_registry import is_plugin_op, op_entry, quantization_rule
from npuc.tensors import from_dense, to_dense

from .layer_config import LayerSetting, TensorParams
from .schemes import fractional_length, quantize_array, round_half_away

if TYPE_CHECKING:
    from npuc.passes.quantize import Plan

WEIGHTED: dict[type[Operation], type[Operation]] = {
    nn.Conv2dOp: qnn.Conv2dOp,
    nn.FullyConnectedOp: qnn.FullyConnectedOp,
    nn.ConvTranspose2dOp: qnn.ConvTranspose2dOp,
}
#: The weight axis of output channels, where per-channel scales go (else 0).
WEIGHT_CHANNEL_AXIS: dict[type[Operation], int] = {nn.ConvTranspose2dOp: 1}
ARITHMETIC: dict[type[Operation], type[Operation]] = {
    nn.AddOp: qnn.AddOp,
    nn.SubOp: qnn.SubOp,
    nn.MulOp: qnn.MulOp,
    nn.MatMulOp: qnn.MatMulOp,
    nn.DivOp: qnn.MulOp,  # by a constant: times its reciprocal (classify checks the divisor)
}
POOLS: dict[type[Operation], type[Operation]] = {
    nn.AvgPool2dOp: qnn.AvgPool2dOp,
    nn.GlobalAvgPoolOp: qnn.GlobalAvgPoolOp,
}
MOVEMENT: dict[type[Operation], type[Operation]] = {
    nn.MaxPool2dOp: qnn.MaxPool2dOp,
    nn.GlobalMaxPoolOp: qnn.GlobalMaxPoolOp,
    nn.ReshapeOp: qnn.ReshapeOp,
    nn.TransposeOp: qnn.TransposeOp,
    nn.SplitOp: qnn.SplitOp,
    nn.SliceOp: qnn.SliceOp,
    nn.PadOp: qnn.PadOp,
    nn.ResizeOp: qnn.ResizeOp,
    nn.DepthToSpaceOp: qnn.DepthToSpaceOp,
    nn.SpaceToDepthOp: qnn.SpaceToDepthOp,
    nn.ReduceMaxOp: qnn.ReduceMaxOp,
}
#: Sums of centred values, requantized (qnn.reduce_sum); a mean folds 1/count in.
REDUCTIONS = (nn.ReduceMeanOp, nn.ReduceSumOp)
#: Bilinear resampling coordinate modes of nn.resize and their qnn.resize_bilinear flags
#: (align_corners, half_pixel_centers): the same sample positions.
BILINEAR_COORDINATES = {
    "asymmetric": (False, False),
    "align_corners": (True, False),
    "half_pixel": (False, True),
    "pytorch_half_pixel": (False, True),
}
#: qnn.softmax sums at most 511 exponentials per row (see its docstring).
SOFTMAX_MAX_ROW = 511
CLAMPS = (nn.ReluOp, nn.ClipOp)
LUTS = (
    nn.SigmoidOp,
    nn.TanhOp,
    nn.HardSwishOp,
    nn.ExpOp,
    nn.GeluOp,
    nn.EluOp,
    nn.SoftplusOp,
    nn.LeakyReluOp,
    nn.HardSigmoidOp,
    nn.ErfOp,
    nn.LogOp,
    nn.SqrtOp,
    nn.AbsOp,
    nn.NegOp,
    nn.ReciprocalOp,
    nn.FloorOp,
    nn.CeilOp,
)
# Producers whose output type is free: they can emit a folded clamp or a concat's type.
FREE_OUTPUT = ("weighted", "arithmetic", "pool", "lut", "clamp", "reduce", "divide")

ADD_LEFT_SHIFT = {8: 20, 16: 15}


def is_constant(value: SSAValue) -> bool:
    owner = value.owner
    return isinstance(owner, Operation) and owner.has_trait(ConstantLike)


def constant_data(value: SSAValue) -> np.ndarray | None:
    """The float data of an `nn.constant`, else None."""
    owner = value.owner
    if isinstance(owner, nn.ConstantOp):
        data = from_dense(owner.value)
        return data if data.dtype.kind == "f" else None
    return None


def is_f32_tensor(value: SSAValue) -> bool:
    ty = value.type
    return isinstance(ty, TensorType) and ty.element_type == f32


def layer_name_of(op: Operation | Block | None) -> str | None:
    """The `name` property of an op (None for a block argument's owner)."""
    if not isinstance(op, Operation):
        return None
    attr = op.properties.get("name")
    return attr.data if isinstance(attr, StringAttr) else None


def fused_activation(op: Operation) -> tuple[str | None, float, float, float]:
    """(kind, lo, hi, alpha) of an op's fused activation, absent bounds as -inf/inf."""
    if not isinstance(op, ActivationFusable) or op.activation is None:
        return None, -math.inf, math.inf, 0.0

    def value(attr: FloatAttr | None, default: float) -> float:
        return default if attr is None else float(attr.value.data)

    return (
        op.activation.data,
        value(op.activation_min, -math.inf),
        value(op.activation_max, math.inf),
        value(op.activation_alpha, 0.0),
    )


def clamp_bounds_of(op: Operation) -> tuple[float, float]:
    """Real bounds of a standalone nn.relu / nn.clip."""
    if isinstance(op, nn.ReluOp):
        return 0.0, math.inf
    assert isinstance(op, nn.ClipOp)
    lo = -math.inf if op.min is None else float(op.min.value.data)
    hi = math.inf if op.max is None else float(op.max.value.data)
    return lo, hi


# --------------------------------------------------------------------------- the plan


@dataclass(eq=False)
class Layer:
    """One op of the function and how it lowers."""

    op: Operation
    name: str
    kind: str  # weighted, arithmetic, prelu, pool, movement, concat, clamp, lut, plugin, float
    setting: LayerSetting  # fully resolved
    reason: str | None = None  # why a layer stays float
    follower: Layer | None = None  # a relu/clip folded into this layer's clamp
    folded_into: Layer | None = None

    @property
    def bits(self) -> int:
        assert self.setting.bits is not None
        return self.setting.bits

    @property
    def output(self) -> SSAValue:
        """The value this layer's (first) result stands for, after a folded follower."""
        return self.follower.op.results[0] if self.follower else self.op.results[0]


def classify(op: Operation, setting: LayerSetting) -> tuple[str, str | None]:
    """(kind, reason-if-float) for an op under its setting."""
    if setting.mode == "float":
        return "float", "configured float"
    if not op.results or not all(is_f32_tensor(v) for v in (*op.operands, *op.results)):
        return "float", "has integer or bool operands or results (they stay in nn)"
    kind, alpha = fused_activation(op)[0], fused_activation(op)[3]
    if kind == "leaky_relu" and (alpha <= 0 or setting.bits != 8):
        return "float", "fused leaky_relu needs an 8-bit LUT and a positive alpha"
    if type(op) in WEIGHTED:
        bias = op.operands[2] if len(op.operands) > 2 else None
        if bias is not None and constant_data(bias) is None:
            return "float", "bias is not a constant"
        if isinstance(op, nn.ConvTranspose2dOp) and op.groups.value.data != 1:
            return "float", "grouped transposed convolution has no integer lowering"
        return "weighted", None
    if isinstance(op, nn.DivOp):
        divisor = constant_data(op.rhs)
        if constant_data(op.lhs) is not None:
            return "float", "a constant divided by a tensor has no integer lowering"
        if divisor is None:
            return "divide", None  # qnn.div: TFLite's fixed-point reciprocal
        if not np.all(divisor):
            return "float", "a division by a constant with a zero has no integer lowering"
    if type(op) in ARITHMETIC:
        return "arithmetic", None
    if isinstance(op, nn.PReluOp):
        if constant_data(op.rhs) is None:
            return "float", "the PReLU slope is not a constant"
        return "prelu", None
    if type(op) in POOLS:
        dilations = getattr(op, "dilations", None)
        if dilations is not None and any(d != 1 for d in dilations.get_values()):
            return "float", "dilated average pooling has no integer lowering"
        return "pool", None
    if isinstance(op, nn.ResizeOp) and op.mode.data != "nearest":
        reason = bilinear_reason(op)
        return ("float", reason) if reason else ("movement", None)
    if isinstance(op, REDUCTIONS):
        assert setting.bits is not None
        count, limit = reduced_count(op), 2**31 // (1 << setting.bits)
        if count >= limit:
            return "float", f"a sum of {count} values could overflow the int32 accumulator"
        return "reduce", None
    if isinstance(op, nn.SoftmaxOp):
        return softmax_kind(op, setting)
    if type(op) in MOVEMENT:
        return "movement", None
    if isinstance(op, nn.ConcatOp):
        return "concat", None
    if isinstance(op, CLAMPS):
        return "clamp", None
    if isinstance(op, LUTS):
        if setting.bits != 8:
            return "float", "look-up tables need 8-bit inputs"
        return "lut", None
    if is_plugin_op(op.name):
        return plugin_kind(op, setting)
    return "float", f"no integer lowering for {op.name}"


def plugin_kind(op: Operation, setting: LayerSetting) -> tuple[str, str | None]:
    """A plugin op is quantized by its plugin's rule if that covers the layer's width and
    the integer op has a kernel; else it stays float."""
    plugin = op.name.partition(".")[0]
    found = quantization_rule(op.name)
    if found is None:
        return "float", f"plugin '{plugin}' gives no quantization rule for {op.name}"
    rule = found[1]
    if setting.bits not in rule.bits:
        widths = "/".join(map(str, rule.bits))
        return "float", f"plugin '{plugin}' quantizes {op.name} at {widths} bits only"
    if op_entry("kernels", rule.quantized_op) is None:
        return "float", f"plugin '{plugin}' gives no kernel for {rule.quantized_op}"
    return "plugin", None


def bilinear_reason(op: nn.ResizeOp) -> str | None:
    """Why a non-nearest nn.resize has no qnn.resize_bilinear form (None if it has)."""
    x, y = shape_of(op.input), shape_of(op.output)
    mode, coordinates = op.mode.data, op.coordinate_mode.data
    if mode != "linear":
        return f"resize mode '{mode}' has no integer lowering"
    if len(x) != 4 or tuple(x[:2]) != tuple(y[:2]):
        return "bilinear resize is lowered for NCHW tensors resized over H and W only"
    if coordinates not in BILINEAR_COORDINATES:
        return f"bilinear resize with coordinate mode '{coordinates}' has no integer lowering"
    scales = [float(s) for s in op.scales.get_values()]
    if any(abs(scales[d] * x[d] - y[d]) > 1e-6 * y[d] for d in (2, 3)):
        return "bilinear resize whose scales differ from output size / input size"
    return None


def reduced_count(op: Operation) -> int:
    """How many input elements a reduction sums into each output."""
    shape = shape_of(op.operands[0])
    axes = list(prop_ints(op.properties, "axes")) or range(len(shape))
    return int(np.prod([shape[a % len(shape)] for a in axes], dtype=np.int64))


def softmax_kind(op: nn.SoftmaxOp, setting: LayerSetting) -> tuple[str, str | None]:
    shape = shape_of(op.input)
    if setting.bits != 8:
        return "float", "softmax is quantized to 8 bits only"
    if not shape or op.axis.value.data % len(shape) != len(shape) - 1:
        return "float", "softmax over an axis other than the last has no integer lowering"
    if shape[-1] > SOFTMAX_MAX_ROW:
        return "float", f"softmax rows of {shape[-1]} values exceed qnn.softmax's {SOFTMAX_MAX_ROW}"
    return "softmax", None


# --------------------------------------------------------------------------- emission


def storage_element(q: UniformQuantizedType) -> Attribute:
    """The integer element type that stores `q`'s values in a dense attribute."""
    width = max(8, q.storage_bits.data)
    signed = bool(q.storage_signed.data)
    return IntegerType(width, Signedness.SIGNLESS if signed else Signedness.UNSIGNED)


def lut_table(
    q_in: UniformQuantizedType,
    q_out: UniformQuantizedType,
    fn: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray:
    """The look-up table of `fn` from `q_in` to `q_out`: one entry per input storage value,
    quantize(fn(dequantize(q))), in order from q_in.qmin."""
    codes = q_in.qmin + np.arange(1 << q_in.storage_bits.data, dtype=np.int64)
    with np.errstate(all="ignore"):
        y = np.asarray(fn(dequantize(codes, q_in.scale, q_in.zero_point)), np.float64)
    big = float(max(abs(q_out.qmin), abs(q_out.qmax)) + 1) * q_out.scale
    y = np.nan_to_num(y, nan=0.0, posinf=big, neginf=-big)  # NaN stands for real 0
    return quantize(y, q_out.scale, q_out.zero_point, q_out.qmin, q_out.qmax)


def tensor_of(value: SSAValue, element: Attribute) -> TensorType:
    return TensorType(element, shape_of(value))


class Emitter:
    """Builds the quantized body; maps each original value to its float and quantized forms."""

    def __init__(self, plan: Plan, block: Block):
        self.plan = plan
        self.block = block
        self.float_form: dict[SSAValue, SSAValue] = {}
        self.quant_form: dict[SSAValue, SSAValue] = {}
        self.conversions: dict[tuple[SSAValue, Attribute], SSAValue] = {}
        self.warnings = plan.report.warnings

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def set_quant(self, original: SSAValue, new: SSAValue) -> None:
        self.quant_form[original] = new
        new.name_hint = original.name_hint

    def params(self, original: SSAValue, q: UniformQuantizedType) -> TensorParams:
        """How the report shows `original` stored in type `q`."""
        name = self.plan.keys.get(original, "?")
        if q.per_axis:
            return TensorParams(
                name, q.storage, list(q.scale_values()), list(q.zero_point_values())
            )
        fl = fractional_length(q.scale) if self.plan.scheme.pow2 else None
        chosen = self.plan.chosen.get(original)
        return TensorParams(name, q.storage, q.scale, q.zero_point, fl, chosen)

    def as_float(self, value: SSAValue) -> SSAValue:
        if value in self.float_form:
            return self.float_form[value]
        if value not in self.quant_form:
            owner = value.owner
            assert isinstance(owner, Operation) and is_constant(value), f"unmapped {value}"
            clone = self.add(owner.clone())
            result = clone.results[owner.results.index(value)]
        else:
            q = self.quant_form[value]
            result = self.add(
                qnn.DequantizeOp.create(operands=[q], result_types=[tensor_of(value, f32)])
            ).results[0]
        self.float_form[value] = result
        return result

    def as_type(self, value: SSAValue, q: UniformQuantizedType) -> SSAValue:
        """`value` in type `q`: its own quantized form, or a cached conversion."""
        own = self.quant_form.get(value)
        if own is not None and qtype(own) == q:
            return own
        if (value, q) in self.conversions:
            return self.conversions[value, q]
        data = constant_data(value)
        ty = tensor_of(value, q)
        if data is not None:
            name = layer_name_of(value.owner)
            result = self.constant(quantize_array(data, q, None), ty, name)
        elif own is not None:
            real = qtype(own).scale / q.scale
            op = qnn.RequantizeOp.create(
                operands=[own], result_types=[ty], properties=self.requant_props([real])
            )
            result = self.add(op).results[0]
        else:
            quantize = qnn.QuantizeOp.create(operands=[self.as_float(value)], result_types=[ty])
            result = self.add(quantize).results[0]
        self.conversions[value, q] = result
        return result

    def as_bits(self, value: SSAValue, bits: int) -> SSAValue:
        """`value` quantized at `bits`: its own form if the width matches, else converted."""
        own = self.quant_form.get(value)
        if own is not None and qtype(own).storage_bits.data == bits:
            return own
        return self.as_type(value, self.plan.act_type(value, bits))

    def constant(self, array: np.ndarray, ty: TensorType, name: str | None) -> SSAValue:
        element = ty.element_type
        storage = storage_element(element) if isinstance(element, UniformQuantizedType) else i32
        props: dict[str, Attribute] = {"value": to_dense(array, storage)}
        if name:
            props["name"] = StringAttr(name)
        return self.add(qnn.ConstantOp.create(properties=props, result_types=[ty])).results[0]

    def reciprocal(self, divisor: SSAValue, bits: int) -> SSAValue:
        """1 / a constant divisor, quantized as an activation constant at `bits`."""
        data = constant_data(divisor)
        assert data is not None
        inverse = (1.0 / data.astype(np.float64)).astype(np.float32)
        lo, hi = float(np.min(inverse, initial=0.0)), float(np.max(inverse, initial=0.0))
        q = self.plan.scheme.activation(bits).qtype(lo, hi)
        name = layer_name_of(divisor.owner)
        return self.constant(quantize_array(inverse, q, None), tensor_of(divisor, q), name)

    def weight(self, value: SSAValue, layer: Layer, axis: int | None) -> SSAValue:
        """A weight operand: a constant quantized with the weight scheme, else an activation."""
        data = constant_data(value)
        if data is None:
            return self.as_bits(value, layer.bits)
        q = self.plan.weight_type(layer, data, axis)
        if (value, q) not in self.conversions:
            name = layer_name_of(value.owner)
            stored = self.plan.learned.get((value, q))
            if stored is None:
                stored = quantize_array(data, q, axis)
            self.conversions[value, q] = self.constant(stored, tensor_of(value, q), name)
        return self.conversions[value, q]

    def requant_props(
        self,
        reals: list[float] | np.ndarray,
        out: UniformQuantizedType | None = None,
        bounds: tuple[float, float] | None = None,
    ) -> dict[str, Attribute]:
        """multiplier/shift/rounding (and clamp in `out`'s units) for real multipliers."""
        m0, shift = quantize_multipliers(np.asarray(reals, np.float64))
        tiny = shift > 62  # the product rounds to 0 for every i32 accumulator
        m0, shift = np.where(tiny, 0, m0), np.where(tiny, 0, shift)
        if np.any(shift < -31):
            self.warnings.append("a requantization multiplier >= 2^31 was clamped")
            m0, shift = np.where(shift < -31, 2**31 - 1, m0), np.maximum(shift, -31)
        props: dict[str, Attribute] = {
            "multiplier": ints([int(m) for m in m0]),
            "shift": ints([int(s) for s in shift]),
            "rounding": StringAttr(self.plan.rounding),
        }
        if bounds is not None and out is not None:
            lo, hi = bounds
            for key, bound in (("clamp_min", lo), ("clamp_max", hi)):
                if math.isfinite(bound):
                    stored = out.zero_point + int(round_half_away(bound / out.scale))
                    props[key] = IntegerAttr(min(max(stored, out.qmin), out.qmax), I64)
        return props

    def out_type(self, layer: Layer) -> UniformQuantizedType:
        return self.plan.act_type(layer.output, layer.bits)

    def lut(self, layer: Layer, x: SSAValue, fn: Callable[[np.ndarray], np.ndarray]) -> SSAValue:
        """qnn.lut from `x` to the layer's output type: entries quantize(fn(dequantize(q)))."""
        q_out = self.out_type(layer)
        table = lut_table(qtype(x), q_out, fn)
        props: dict[str, Attribute] = {"table": to_dense(table, storage_element(q_out))}
        if (name := layer_name_of(layer.op)) is not None:
            props["name"] = StringAttr(name)
        op = qnn.LutOp.create(
            operands=[x], result_types=[tensor_of(layer.output, q_out)], properties=props
        )
        return self.add(op).results[0]
