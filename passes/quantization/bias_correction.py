"""Empirical bias correction (Nagel et al. 2019, "Data-Free Quantization Through Weight
Equalization and Bias Correction", section 4.2).

Storing a layer's weights W as W_q moves the mean of each output channel c by
E[op(x, W_deq - W)]_c (the paper's eq. 5), W_deq being the stored weights dequantized. The
quantizer subtracts that shift from the float bias before quantizing it, with the mean taken
over the calibration probe's calls (auto_strategy.StrategyProbe) and the output positions, x
being the layer's float input there. A layer without a bias gets one. Weights that are not
constants (nothing is stored) are left alone. The inputs are the float model's, so shifts
from quantized activations and upstream layers are not corrected (as in the paper).

The op without bias and activation is linear in x, so the mean of op(x_s, dW) over samples s
is op(mean of x_s, dW): one pass over the probe calls keeps, per input tensor name, the mean
sample (over the batch axis). That holds one sample of each weighted layer's input rather
than all of them, and makes the correction independent of either module's batch size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

import numpy as np
from xdsl.ir import Block, Operation, Region, SSAValue

from npuc.dialects import nn
from npuc.dialects.nn_base import shape_of
from npuc.runtime.nn_interpreter import kernel_for
from npuc.tensors import to_dense

from .lowering import WEIGHT_CHANNEL_AXIS, WEIGHTED, Layer, constant_data, layer_name_of
from .schemes import quantize_array

if TYPE_CHECKING:
    from npuc.passes.quantize import Plan

    from .auto_strategy import StrategyProbe

# One pass over a probe's calls serves every quantization of its module (schemes, bits).
_MEANS: WeakKeyDictionary[StrategyProbe, dict[str, np.ndarray]] = WeakKeyDictionary()


def weighted_input_means(probe: StrategyProbe) -> dict[str, np.ndarray]:
    """Per input tensor name of a weighted layer, its mean over the probe calls' samples
    (float64, shaped like one sample with a batch axis of 1)."""
    found = _MEANS.get(probe)
    if found is None:
        found = _MEANS[probe] = _input_means(probe)
    return found


def _input_means(probe: StrategyProbe) -> dict[str, np.ndarray]:
    sums: dict[str, np.ndarray] = {}
    rows: dict[str, int] = {}
    for call in probe.calls:
        seen: set[str] = set()
        for op, env in probe.runner.steps(call):
            if type(op) not in WEIGHTED:
                continue
            name = probe.keys.get(op.operands[0])
            x = np.asarray(env[op.operands[0]])
            if name is None or name in seen or x.dtype.kind != "f" or x.ndim < 2:
                continue
            seen.add(name)
            total = x.sum(axis=0, keepdims=True, dtype=np.float64)
            sums[name] = sums[name] + total if name in sums else total
            rows[name] = rows.get(name, 0) + len(x)
    return {name: total / rows[name] for name, total in sums.items()}


def working_copy(body: Region, keys: dict[SSAValue, str]) -> tuple[Block, dict[SSAValue, str]]:
    """A detached copy of a function's body block and its tensor names, to take the
    corrected biases.

    The float function itself stays as it was: quantization may still fail, and the probe
    (whose module may be this one) runs it to choose `auto` ranges during emission.
    """
    region, mapper = Region(), dict[SSAValue, SSAValue]()
    body.clone_into(region, value_mapper=mapper)
    return region.block, {mapper[v]: name for v, name in keys.items() if v in mapper}


def correct_biases(plan: Plan, block: Block, probe: StrategyProbe) -> None:
    """Give each integer weighted layer of `block` its corrected bias (a new nn.constant)."""
    means = weighted_input_means(probe)
    skipped = []
    for layer in plan.layers.values():
        op = layer.op
        if layer.kind != "weighted" or constant_data(op.operands[1]) is None:
            continue
        x = means.get(plan.keys.get(op.operands[0], ""))
        if x is None or x.shape[1:] != tuple(shape_of(op.operands[0])[1:]):
            skipped.append(layer.name)
            continue
        shift = channel_shift(op, x, weight_error(plan, layer))
        bias = constant_data(op.operands[2]) if len(op.operands) > 2 else None
        if bias is None and not np.any(shift):
            continue
        old = np.zeros(shift.shape) if bias is None else np.asarray(bias, np.float64)
        corrected = nn.ConstantOp(
            to_dense((old - shift).astype(np.float32)),
            layer_name_of(op.operands[2].owner) if bias is not None else None,
        )
        block.insert_op_before(corrected, op)
        op.operands = [op.operands[0], op.operands[1], corrected.output]
    if skipped:
        plan.report.warnings.append(
            "bias correction skipped (no calibration samples of the input, or of another "
            f"shape): {', '.join(skipped)}"
        )


def weight_error(plan: Plan, layer: Layer) -> np.ndarray:
    """W_deq - W of a constant-weight layer, W_deq as the quantizer stores it (float64)."""
    op = layer.op
    data = constant_data(op.operands[1])
    assert data is not None
    # The axis lower_weighted (op_lowering.py) quantizes the weight on.
    axis = WEIGHT_CHANNEL_AXIS.get(type(op), 0) if plan.scheme.per_channel else None
    q = plan.weight_type(layer, data, axis)
    scales, zps = q.broadcast_params(data.ndim)
    stored = quantize_array(data, q, axis).astype(np.float64)
    return (stored - zps) * scales - data.astype(np.float64)


def channel_shift(op: Operation, x: np.ndarray, dw: np.ndarray) -> np.ndarray:
    """The mean of op(x, dw) per output channel (axis 1), without bias or activation."""
    kernel = kernel_for(type(op))
    assert kernel is not None
    y = np.asarray(kernel(op, [x, dw])[0], np.float64)
    return y.mean(axis=tuple(a for a in range(y.ndim) if a != 1))
