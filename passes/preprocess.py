"""Fold input preprocessing into the graph, so the deployed model takes raw data.

`preprocess{input=image mean=123.7,116.3,103.5 scale=0.0171,0.0175,0.0174 reverse_channels=true}`
makes the model compute `(x[:, reversed channels] - mean) * scale` itself: a
camera's uint8 RGB or BGR pixels (as values 0..255) go straight in. When the
model is quantized with quantized I/O, such an input calibrates to the range
[0, 255] and becomes a u8 tensor with scale 1 and zero point 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from npuc.diagnostics import NpucError
from npuc.dialects import nn
from npuc.graph_io import entry_function, input_names
from npuc.tensors import to_dense


@dataclass(frozen=True)
class PreprocessPass(ModulePass):
    """Insert `(x[, reversed channels] - mean) * scale` after a model input."""

    name = "preprocess"

    input: str = ""
    """The input tensor's name; may be omitted when the model has one input."""
    mean: tuple[float, ...] = ()
    """Subtracted per channel (one value per channel, or one for all)."""
    scale: tuple[float, ...] = ()
    """Multiplied per channel after subtracting the mean."""
    reverse_channels: bool = False
    """Reverse the channel order first (RGB <-> BGR)."""
    channel_axis: int = 1

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        func = entry_function(op)
        names = input_names(func)
        if not self.input and len(names) != 1:
            raise NpucError(f"preprocess: name the input (the model has {', '.join(names)})")
        name = self.input or names[0]
        if name not in names:
            raise NpucError(f"preprocess: no input named '{name}' (inputs: {', '.join(names)})")
        arg = func.args[names.index(name)]
        shape = nn.shape_of(arg)
        axis = self.channel_axis % len(shape)
        channels = shape[axis]
        original_uses = list(arg.uses)
        ops: list[Operation] = []
        value: SSAValue = arg
        if self.reverse_channels:
            starts = [0] * len(shape)
            ends = list(shape)
            steps = [1] * len(shape)
            starts[axis], ends[axis], steps[axis] = channels - 1, -1, -1
            props = {"starts": nn.ints(starts), "ends": nn.ints(ends), "steps": nn.ints(steps)}
            ops.append(nn.build(nn.SliceOp, [value], props, name=f"{name}/reverse_channels"))
            value = ops[-1].results[0]
        for values, op_type, what in (
            (self.mean, nn.SubOp, "mean"),
            (self.scale, nn.MulOp, "scale"),
        ):
            if not values:
                continue
            if len(values) not in (1, channels):
                raise NpucError(
                    f"preprocess: {what} needs 1 or {channels} values (channels of '{name}'), "
                    f"got {len(values)}"
                )
            param_shape = [1] * len(shape)
            param_shape[axis] = len(values)
            constant = nn.ConstantOp(
                to_dense(np.array(values, np.float32).reshape(param_shape)), name=f"{name}/{what}"
            )
            ops += [constant, nn.build(op_type, [value, constant], name=f"{name}/{what}")]
            value = ops[-1].results[0]
        if not ops:
            return
        Rewriter.insert_op(ops, InsertPoint.at_start(func.body.block))
        for use in original_uses:
            use.operation.operands[use.index] = value
