"""`equalize-layers`: cross-layer equalization (Nagel et al. 2019, "Data-Free Quantization
Through Weight Equalization and Bias Correction", section 4.1).

For two weighted layers in a row, W1 -> f -> W2, output channel i of W1 (and its bias) is
divided by s_i and the matching input channel of W2 multiplied by s_i, with

    s_i = sqrt(r1_i * r2_i) / r2_i

where r1_i = max |W1| over output channel i and r2_i = max |W2| over input channel i. Both
ranges become sqrt(r1_i * r2_i), so per-tensor weight quantization spends its levels more
evenly over the channels. The model computes the same function, up to f32 rounding.

A pair qualifies when:

- W1 and W2 are nn.conv2d (any groups: input channel c of a grouped W2 is channel c % (C / g)
  of group c // (C / g), so a depthwise W2 scales its one filter per channel),
  nn.fully_connected, or nn.matmul with a constant 2-D rhs; weights and bias are constants;
- W1's fused activation is absent, leaky_relu, or a clip with min in {-inf, 0} and max in
  {0, +inf} (relu): f(s x) = s f(x) for s > 0. relu6 and any other clip block the pair;
  W2's own activation does not matter;
- every op of f commutes with a positive per-channel scale: relu, leaky_relu, prelu (its
  input), clip as above, max/avg/global pooling on NCHW channels, pad (zero, reflect, edge,
  wrap) that leaves the channel axis alone, transpose, reshape that keeps each channel's
  elements in one axis of the same size (e.g. [N, C, 1, 1] -> [N, C]), x * c and x / c with
  a constant c, and x + c, x - c, c - x with a constant c, which is rescaled with W1's
  outputs (a bias the exporter left as a separate add); fused activations as for W1;
- every tensor from W1's output to W2's input has exactly one user.

Not handled: conv_transpose2d, a flatten that spreads a channel over many inputs of a fully
connected layer, branches (a tensor with two users, e.g. a squeeze-excite input or a
residual), and the paper's bias absorption (section 4.1.2) and bias correction (section 4.2).

Pairs are rescaled in turn, sweep after sweep (a chain conv -> depthwise -> conv couples
them), until no scale of a sweep moves by more than `tolerance` or after `iterations` sweeps.
`max_scale` bounds each channel's total scale to [1 / max_scale, max_scale]. New weight and
bias constants keep the names of the ones they replace.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from npuc.diagnostics import NpucError
from npuc.dialects.nn import (
    AddOp,
    AvgPool2dOp,
    ClipOp,
    ConstantOp,
    Conv2dOp,
    DivOp,
    FullyConnectedOp,
    GlobalAvgPoolOp,
    GlobalMaxPoolOp,
    LeakyReluOp,
    MatMulOp,
    MaxPool2dOp,
    MulOp,
    PadOp,
    PReluOp,
    ReluOp,
    ReshapeOp,
    SubOp,
    TransposeOp,
    shape_of,
)
from npuc.dialects.nn_base import ActivationFusable
from npuc.tensors import to_dense

from .nn_patterns import clip_bounds, constant_value, fused_clip_bounds

Layer = Conv2dOp | FullyConnectedOp | MatMulOp
POOLS = (MaxPool2dOp, AvgPool2dOp, GlobalAvgPoolOp, GlobalMaxPoolOp)


# --------------------------------------------------------------------------- weights


@dataclass(eq=False)
class Offset:
    """A constant added to (or subtracted from) a layer's output on the way to the next
    layer: operand `index` of `op`, as float64 of the other operand's rank."""

    op: Operation
    index: int
    array: np.ndarray
    axis: int


@dataclass(eq=False)
class Weights:
    """A layer's weight as [groups, O / groups, I / groups, K] in float64, its bias [O], and
    the offsets that scale with its outputs."""

    op: Layer
    w: np.ndarray
    bias: np.ndarray | None
    offsets: list[Offset] = field(default_factory=list)
    changed: bool = False

    @property
    def outputs(self) -> int:
        return self.w.shape[0] * self.w.shape[1]

    @property
    def inputs(self) -> int:
        return self.w.shape[0] * self.w.shape[2]

    def out_ranges(self) -> np.ndarray:
        """max |w| per output channel, [O]."""
        return np.abs(self.w).max(axis=(2, 3)).reshape(-1)

    def in_ranges(self) -> np.ndarray:
        """max |w| per input channel, [I] (over the output channels of its group)."""
        return np.abs(self.w).max(axis=(1, 3)).reshape(-1)

    def scale_outputs(self, t: np.ndarray) -> None:
        self.w *= t.reshape(self.w.shape[0], self.w.shape[1], 1, 1)
        if self.bias is not None:
            self.bias *= t
        for offset in self.offsets:
            shape = [1] * offset.array.ndim
            shape[offset.axis] = len(t)
            offset.array = offset.array * t.reshape(shape)
        self.changed = True

    def scale_inputs(self, s: np.ndarray) -> None:
        self.w *= s.reshape(self.w.shape[0], 1, self.w.shape[2], 1)
        self.changed = True


def read_weights(op: Layer) -> Weights | None:
    """The layer's constant weights in canonical form, or None if they are not constants."""
    if isinstance(op, MatMulOp):
        rhs = constant_value(op.rhs)
        if rhs is None or rhs.ndim != 2 or constant_value(op.lhs) is not None:
            return None
        k, n = rhs.shape
        return Weights(op, np.array(rhs, np.float64).T.reshape(1, n, k, 1), None)
    weight = constant_value(op.weight)
    bias = constant_value(op.bias) if op.bias is not None else None
    if weight is None or (op.bias is not None and bias is None):
        return None
    groups = op.groups.value.data if isinstance(op, Conv2dOp) else 1
    o, i = weight.shape[:2]
    w = np.array(weight, np.float64).reshape(groups, o // groups, i, -1)
    return Weights(op, w, None if bias is None else np.array(bias, np.float64))


def _set_constant(op: Operation, index: int, array: np.ndarray) -> None:
    """Give operand `index` of `op` a new constant holding `array` (as f32), named after the
    old one; the old constant goes if nothing else uses it."""
    owner = op.operands[index].owner
    constant = owner if isinstance(owner, ConstantOp) else None
    name = constant.layer_name.data if constant and constant.layer_name is not None else None
    new = ConstantOp(to_dense(np.ascontiguousarray(array, np.float32)), name)
    Rewriter.insert_op(new, InsertPoint.before(op))
    op.operands[index] = new.output
    if constant is not None and not constant.output.uses:
        Rewriter.erase_op(constant)


def write_weights(weights: Weights) -> None:
    op, (_, o, i, _) = weights.op, weights.w.shape
    if isinstance(op, MatMulOp):
        _set_constant(op, 1, weights.w.reshape(o, i).T)
        return
    _set_constant(op, 1, weights.w.reshape(shape_of(op.weight)))
    if weights.bias is not None:
        _set_constant(op, 2, weights.bias)
    for offset in weights.offsets:
        _set_constant(offset.op, offset.index, offset.array)


# --------------------------------------------------------------------------- finding pairs


def _homogeneous_clip(lo: float, hi: float) -> bool:
    return lo in (-math.inf, 0.0) and hi in (0.0, math.inf)


def homogeneous_activation(op: Operation) -> bool:
    """Whether `op`'s fused activation (if any) commutes with a positive scale."""
    if not isinstance(op, ActivationFusable) or op.activation is None:
        return True
    if op.activation.data == "leaky_relu":
        return True
    return op.activation.data == "clip" and _homogeneous_clip(*fused_clip_bounds(op))


def output_axis(op: Layer) -> int:
    return len(shape_of(op.output)) - 1 if isinstance(op, MatMulOp) else 1


def input_axis(op: Operation, value: SSAValue) -> int | None:
    """The axis of `value` that layer `op` contracts as input channels, None if `value` is
    not its data input."""
    if isinstance(op, Conv2dOp | FullyConnectedOp) and op.input is value:
        return 1
    if isinstance(op, MatMulOp) and op.lhs is value:
        return len(shape_of(value)) - 1
    return None


def _reshape_axis(src: Sequence[int], dst: Sequence[int], axis: int) -> int | None:
    """The axis of `dst` that holds channel `axis` of `src` whole, in the same order."""
    inner = math.prod(src[axis + 1 :])
    for j, d in enumerate(dst):
        if d == src[axis] and math.prod(dst[j + 1 :]) == inner:
            return j
    return None


def _constant_operand(op: Operation, value: SSAValue) -> tuple[int, np.ndarray] | None:
    """(index, array) of the constant other operand of binary `op` applied to `value`, if
    `op` keeps `value`'s shape and its fused activation is homogeneous."""
    if not homogeneous_activation(op) or shape_of(op.results[0]) != shape_of(value):
        return None
    index = 1 if op.operands[0] is value else 0
    array = constant_value(op.operands[index])
    return None if array is None else (index, array)


def passthrough(op: Operation, value: SSAValue, axis: int) -> tuple[int, Offset | None] | None:
    """Where channel `axis` of `value` lands in `op`'s result, if `op` commutes with a
    positive scale of each channel (with the offset it adds, which must scale too); None
    otherwise."""
    if isinstance(op, AddOp | SubOp | MulOp | DivOp):
        found = _constant_operand(op, value)
        if found is None or (isinstance(op, DivOp) and found[0] == 0):
            return None  # c / x does not commute
        if isinstance(op, MulOp | DivOp):
            return axis, None
        index, array = found
        rank = len(shape_of(value))
        full = np.array(array, np.float64).reshape((1,) * (rank - array.ndim) + array.shape)
        return axis, Offset(op, index, full, axis)
    next_axis = _passthrough_axis(op, value, axis)
    return None if next_axis is None else (next_axis, None)


def _passthrough_axis(op: Operation, value: SSAValue, axis: int) -> int | None:
    if isinstance(op, ReluOp | LeakyReluOp):
        return axis
    if isinstance(op, PReluOp):
        return axis if op.lhs is value else None
    if isinstance(op, ClipOp):
        return axis if _homogeneous_clip(*clip_bounds(op)) else None
    if isinstance(op, POOLS):
        return 1 if axis == 1 and homogeneous_activation(op) else None
    if isinstance(op, TransposeOp):
        return list(op.perm.get_values()).index(axis)
    if isinstance(op, ReshapeOp):
        return _reshape_axis(shape_of(op.input), shape_of(op.output), axis)
    if isinstance(op, PadOp):
        pads, rank = op.pads.get_values(), len(shape_of(value))
        zero_fill = op.mode.data != "constant" or op.value.value.data == 0.0
        return axis if zero_fill and pads[axis] == 0 == pads[axis + rank] else None
    return None


def next_layer(layer: Layer) -> tuple[Layer, list[Offset]] | None:
    """The layer that consumes `layer`'s output channels through single-use, scale-commuting
    ops, and the offsets added on the way; None if there is none."""
    value: SSAValue = layer.output
    axis, offsets = output_axis(layer), list[Offset]()
    while value.has_one_use():
        user = value.get_user_of_unique_use()
        assert user is not None
        if isinstance(user, Layer):
            return (user, offsets) if input_axis(user, value) == axis else None
        step = passthrough(user, value, axis) if len(user.results) == 1 else None
        if step is None:
            return None
        axis, offset = step
        offsets += [offset] if offset is not None else []
        value = user.results[0]
    return None


def find_pairs(module: ModuleOp) -> list[tuple[Weights, Weights]]:
    """(W1, W2) of every pair that can be equalized, in program order."""
    cache: dict[Operation, Weights | None] = {}

    def weights(op: Layer) -> Weights | None:
        if op not in cache:
            cache[op] = read_weights(op)
        return cache[op]

    pairs = []
    for op in module.walk():
        if not isinstance(op, Layer) or not homogeneous_activation(op):
            continue
        found = next_layer(op)
        if found is None:
            continue
        w1, w2 = weights(op), weights(found[0])
        if w1 is not None and w2 is not None and w1.outputs == w2.inputs:
            w1.offsets = found[1]
            pairs.append((w1, w2))
    return pairs


# --------------------------------------------------------------------------- equalizing


def equalize(
    pairs: Sequence[tuple[Weights, Weights]],
    iterations: int,
    tolerance: float,
    max_scale: float,
) -> int:
    """Rescale the pairs in turn until a sweep moves no scale by more than `tolerance`
    (relative) or `iterations` sweeps ran; the number of sweeps."""
    totals = [np.ones(w1.outputs) for w1, _ in pairs]
    for sweep in range(1, iterations + 1):
        moved = 0.0
        for (w1, w2), total in zip(pairs, totals, strict=True):
            r1, r2 = w1.out_ranges(), w2.in_ranges()
            s = np.ones_like(r1)
            ok = (r1 > 0) & (r2 > 0)
            s[ok] = np.sqrt(r1[ok] * r2[ok]) / r2[ok]
            clamped = np.clip(total * s, 1 / max_scale, max_scale)
            s, total[:] = clamped / total, clamped
            if np.all(s == 1.0):
                continue
            w1.scale_outputs(1 / s)
            w2.scale_inputs(s)
            moved = max(moved, float(np.max(np.abs(s - 1))))
        if moved <= tolerance:
            return sweep
    return iterations


@dataclass(frozen=True)
class EqualizeLayersPass(ModulePass):
    """Cross-layer equalization of consecutive weighted layers (see the module docstring).

    iterations: at most this many sweeps over the pairs (>= 1).
    tolerance: stop once no scale of a sweep moves by more than this (relative, >= 0).
    max_scale: each channel's total scale stays in [1 / max_scale, max_scale] (> 1).
    """

    name = "equalize-layers"

    iterations: int = 20
    tolerance: float = 1e-4
    max_scale: float = 1e4

    def check(self) -> None:
        if self.iterations < 1:
            raise NpucError(f"equalize-layers: iterations must be >= 1, got {self.iterations}")
        if not (self.tolerance >= 0 and math.isfinite(self.tolerance)):
            raise NpucError(f"equalize-layers: tolerance must be >= 0, got {self.tolerance}")
        if not (self.max_scale > 1 and math.isfinite(self.max_scale)):
            raise NpucError(
                f"equalize-layers: max_scale must be finite and > 1, got {self.max_scale}"
            )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.check()
        pairs = find_pairs(op)
        equalize(pairs, self.iterations, self.tolerance, self.max_scale)
        layers = {id(w): w for pair in pairs for w in pair}
        for weights in layers.values():
            if weights.changed:
                write_weights(weights)
