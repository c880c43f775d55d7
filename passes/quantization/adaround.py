"""Learned weight rounding (AdaRound: Nagel et al. 2020, "Up or Down? Adaptive Rounding for
Post-Training Quantization").

Rounding each weight to the nearest grid point minimises the weight error, not the layer's
output error. AdaRound chooses, per weight, to round down or up so that the layer's outputs
on calibration data move least. For a layer with weights W (one row w_o per output channel)
and input patches P (the im2col rows of the calibration inputs), the output error of stored
weights W' is sum_o (w'_o - w_o) G (w'_o - w_o)^T with G = P^T P / rows, the Gram matrix of
the patches (one per convolution group). So the data enter only through G, collected once
over the calibration probe's calls.

W' = s * (floor(W / s) + h(V)), with h(V) = clip(sigmoid(V) (zeta - gamma) + gamma, 0, 1)
(the rectified sigmoid, zeta = 1.1, gamma = -0.1) and V initialised so that h(V) is the
fractional part (W' = W). Adam minimises the mean output error plus
lambda * sum(1 - |2 h(V) - 1|^beta), with beta annealed from 20 to 2 after a warm start of
20 % of the iterations in which the regulariser is off, so that every h(V) ends at 0 or 1
(the paper's and AIMET's defaults: lambda 0.01, Adam with learning rate 1e-2 here, as the
full-batch gradient allows larger steps than their mini-batches). Finally h is rounded, and
each output channel keeps whichever of the learned and the nearest rounding has the smaller
output error on the calibration data, so the result is never worse there than nearest.

The inputs are the float model's (as bias correction uses them). Layers: nn.conv2d (any
groups, strides, dilations, pads) and nn.fully_connected with constant weights; a group
whose patches have more than MAX_GRAM_SIZE columns is left with nearest rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

import numpy as np
from xdsl.ir import Operation, SSAValue

from npuc.dialects import nn
from npuc.dialects.arrays import int_values
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.progress import progress
from npuc.runtime.kernels.conv import conv_output_hw
from npuc.runtime.kernels.window import pad_hw, windows

from .lowering import constant_data

if TYPE_CHECKING:
    from npuc.passes.quantize import Plan

    from .auto_strategy import StrategyProbe

ZETA, GAMMA = 1.1, -0.1
REG = 0.01
BETA = (20.0, 2.0)
WARM_START = 0.2
LEARNING_RATE = 1e-2
MAX_GRAM_SIZE = 4096  # columns of a group's patches (K x K float64 Gram matrix: 128 MiB)
LAYERS = (nn.Conv2dOp, nn.FullyConnectedOp)

# One pass over a probe's calls serves every quantization of its module (schemes, bits).
_GRAMS: WeakKeyDictionary[StrategyProbe, dict[str, np.ndarray]] = WeakKeyDictionary()


def layer_grams(probe: StrategyProbe) -> dict[str, np.ndarray]:
    """Per weighted layer (by its output tensor's name), the Gram matrices [groups, K, K] of
    its input patches over the probe calls (float64, divided by the number of rows)."""
    found = _GRAMS.get(probe)
    if found is None:
        found = _GRAMS[probe] = _grams(probe)
    return found


def _grams(probe: StrategyProbe) -> dict[str, np.ndarray]:
    sums: dict[str, np.ndarray] = {}
    rows: dict[str, int] = {}
    for call in probe.calls:
        for op, env in probe.runner.steps(call):
            name = probe.keys.get(op.results[0]) if op.results else None
            if not isinstance(op, LAYERS) or name is None or not _constant(op.operands[1]):
                continue
            x = np.asarray(env[op.operands[0]])
            if x.dtype.kind != "f":
                continue
            patches = _patches(op, x.astype(np.float64), np.shape(env[op.operands[1]]))
            if patches is None:
                continue
            gram = np.matmul(patches, patches.transpose(0, 2, 1))
            sums[name] = sums[name] + gram if name in sums else gram
            rows[name] = rows.get(name, 0) + patches.shape[2]
    return {name: total / rows[name] for name, total in sums.items()}


def _constant(value: SSAValue) -> bool:
    owner = value.owner
    return isinstance(owner, Operation) and owner.name in ("nn.constant", "arith.constant")


def _patches(op: Operation, x: np.ndarray, weight_shape: tuple[int, ...]) -> np.ndarray | None:
    """The layer's input patches as [groups, K, rows] (None when K is too large)."""
    if isinstance(op, nn.FullyConnectedOp):
        if x.shape[1] > MAX_GRAM_SIZE:
            return None
        return x.T[None]
    assert isinstance(op, nn.Conv2dOp)
    groups = int(op.groups.value.data)
    _, cg, kh, kw = weight_shape
    k = cg * kh * kw
    if k > MAX_GRAM_SIZE:
        return None
    strides, pads, dilations = (
        int_values(op.strides),
        int_values(op.pads),
        int_values(op.dilations),
    )
    oh, ow = conv_output_hw(x.shape[2:], (kh, kw), strides, pads, dilations)
    view = windows(pad_hw(x, pads), (kh, kw), (oh, ow), strides, dilations)
    n = x.shape[0]
    cols = view.reshape(n, groups, k, oh * ow).transpose(1, 2, 0, 3)
    return cols.reshape(groups, k, n * oh * ow)


@dataclass
class Rounding:
    """A learned rounding of one layer's weights: the stored integers and the mean output
    error (per output position, on the calibration data) of nearest and learned rounding."""

    stored: np.ndarray
    nearest_error: float
    learned_error: float


def learn_rounding(
    weight: np.ndarray, q: UniformQuantizedType, gram: np.ndarray, iterations: int
) -> Rounding:
    """The stored integers of `weight` (output channels on axis 0, [O, ...]) in type `q`
    (per-tensor or per axis 0) chosen by AdaRound against the Gram matrices `gram`
    [groups, K, K] of the layer's input patches (see the module doc)."""
    groups, k = gram.shape[0], gram.shape[1]
    o = weight.shape[0]
    w = np.asarray(weight, np.float64).reshape(groups, o // groups, k)
    scales = np.broadcast_to(np.array(q.scale_values(), np.float64), (o,))
    zps = np.broadcast_to(np.array(q.zero_point_values(), np.float64), (o,))
    s = scales.reshape(groups, o // groups, 1)
    zp = zps.reshape(groups, o // groups, 1)
    lo, hi = q.qmin - zp, q.qmax - zp  # the grid, in steps from zero
    floor = np.clip(np.floor(w / s), lo, hi)
    nearest = np.clip(_round_half_away(w / s), lo, hi)
    near_err = _channel_errors(nearest, s, w, gram)
    # The optimisation runs in float32 (it only has to find a good rounding; the errors
    # that decide between it and nearest are float64). A weight whose floor is the top of
    # the grid cannot round up.
    f32 = np.float32
    c = f32(ZETA - GAMMA)
    up = (floor + 1 <= hi).astype(f32)
    base = (s * floor - w).astype(f32)  # the output-side error is base + s * h
    # The output error relative to nearest rounding's, so that REG weighs the same whatever
    # the scale of the layer's outputs.
    norm = max(float(near_err.sum()), 1e-30)
    coef = (2.0 * s / norm * up).astype(f32)
    s32, gram32 = s.astype(f32), gram.astype(f32)
    frac = np.clip(w / s - floor, 0.0, 1.0)
    p = np.clip((frac - GAMMA) / (ZETA - GAMMA), 1e-6, 1 - 1e-6)
    v = np.log(p / (1 - p)).astype(f32)
    m, u = np.zeros_like(v), np.zeros_like(v)
    b1, b2, eps = 0.9, 0.999, 1e-8
    warm = int(WARM_START * iterations)
    for t in range(iterations):
        sig = np.exp(-v)
        sig += 1
        np.reciprocal(sig, out=sig)
        soft = sig * c + f32(GAMMA)
        h = np.clip(soft, 0, 1) * up
        grad = np.matmul(base + s32 * h, gram32)
        grad *= coef
        if t >= warm:
            beta = BETA[1] + (BETA[0] - BETA[1]) * (1 - (t - warm) / max(1, iterations - warm))
            centred = 2 * h - 1
            grad -= f32(REG * 2 * beta) * np.abs(centred) ** f32(beta - 1) * np.sign(centred)
        grad *= c * sig * (1 - sig) * ((soft > 0) & (soft < 1))
        m *= b1
        m += (1 - b1) * grad
        u *= b2
        u += (1 - b2) * grad * grad
        v -= (
            f32(LEARNING_RATE / (1 - b1 ** (t + 1)))
            * m
            / (np.sqrt(u * f32(1 / (1 - b2 ** (t + 1)))) + f32(eps))
        )
    learned = floor + (v >= _half_logit()) * up
    learned_err = _channel_errors(learned, s, w, gram)
    best = np.where((learned_err < near_err)[..., None], learned, nearest)
    stored = (best + zp).reshape(weight.shape).astype(q.storage_dtype())
    return Rounding(
        stored,
        float(near_err.sum() / o),
        float(np.minimum(learned_err, near_err).sum() / o),
    )


def _half_logit() -> float:
    """The V at which h(V) = 1/2."""
    p = (0.5 - GAMMA) / (ZETA - GAMMA)
    return float(np.log(p / (1 - p)))


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _channel_errors(grid: np.ndarray, s: np.ndarray, w: np.ndarray, gram: np.ndarray) -> np.ndarray:
    """The mean squared output error of each output channel [groups, O / groups]."""
    d = s * grid - w
    return np.einsum("gok,gkl,gol->go", d, gram, d)


def learn_roundings(plan: Plan, probe: StrategyProbe, iterations: int) -> None:
    """Record in `plan.learned` the AdaRound integers of each eligible integer layer's
    constant weights (see the module doc); a warning names the layers left with nearest
    rounding for want of calibration patches."""
    grams = layer_grams(probe)
    skipped = []
    for layer in progress(plan.layers.values(), desc="adaround", unit="layer"):
        op = layer.op
        data = constant_data(op.operands[1]) if isinstance(op, LAYERS) else None
        if layer.kind != "weighted" or data is None:
            continue
        gram = grams.get(plan.keys.get(op.results[0], ""))
        if gram is None or gram.shape[1] != np.prod(data.shape[1:]) or data.shape[0] % len(gram):
            skipped.append(layer.name)
            continue
        q = plan.weight_type(layer, data, 0 if plan.scheme.per_channel else None)
        rounding = learn_rounding(np.asarray(data), q, gram, iterations)
        plan.learned[op.operands[1], q] = rounding.stored
    if skipped:
        plan.report.warnings.append(
            "adaround skipped (no calibration patches of the input, or too many columns): "
            + ", ".join(skipped)
        )
