"""The float interpreter's kernels: `KERNELS` maps each `nn` op class to a whole-tensor numpy
function `(op, args) -> results`, float32 (integer and boolean tensors in their own dtype,
with kernels/logic.py's rules); `arith_constant` is `arith.constant`'s, looked up by name
(nn_interpreter.kernel_for). runtime/interpreter_kernels.py lists every kernel table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, IntegerAttr, i32
from xdsl.ir import Attribute, Operation

from npuc.dialects import nn
from npuc.dialects.arrays import int_values
from npuc.dialects.nn_base import shape_of
from npuc.tensors import from_dense, numpy_dtype

from .kernel_api import Kernel, flag, optional_arg, optional_float, scalar
from .kernels import conv, linear, logic, movement, norm, pool, reduce, resize
from .kernels import elementwise as ew


def constant_array(value: Attribute) -> np.ndarray:
    """The array a constant attribute holds: floats as float32, integers as int64."""
    if isinstance(value, DenseIntOrFPElementsAttr):
        array = from_dense(value)
    elif isinstance(value, FloatAttr):
        array = np.asarray(value.value.data)
    elif isinstance(value, IntegerAttr):
        array = np.asarray(value.value.data, dtype=np.int64)
    else:
        raise NotImplementedError(f"constant of kind {type(value).__name__} is not supported")
    if array.dtype.kind == "f" and array.dtype != np.float32:
        return array.astype(np.float32)
    if array.dtype.kind in "iu" and array.dtype != np.int64:
        return array.astype(np.int64)
    return array


def _window(op: Any, dilations: bool = True) -> dict[str, Any]:
    """Keyword arguments of a windowed op (conv, pool) taken from its properties."""
    kwargs: dict[str, Any] = {"strides": int_values(op.strides), "pads": int_values(op.pads)}
    if dilations:
        kwargs["dilations"] = int_values(op.dilations)
    return kwargs


def _conv2d(op: nn.Conv2dOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [conv.conv2d(a[0], a[1], optional_arg(a, 2), groups=scalar(op.groups), **_window(op))]


def _conv_transpose2d(op: nn.ConvTranspose2dOp, a: list[np.ndarray]) -> list[np.ndarray]:
    y = conv.conv_transpose2d(
        a[0],
        a[1],
        optional_arg(a, 2),
        output_padding=int_values(op.output_padding),
        groups=scalar(op.groups),
        **_window(op),
    )
    return [y]


def _max_pool2d(op: nn.MaxPool2dOp, a: list[np.ndarray]) -> list[np.ndarray]:
    y = pool.max_pool2d(a[0], int_values(op.kernel), ceil_mode=flag(op.ceil_mode), **_window(op))
    return [y]


def _avg_pool2d(op: nn.AvgPool2dOp, a: list[np.ndarray]) -> list[np.ndarray]:
    dilations = int_values(op.dilations) if op.dilations is not None else (1, 1)
    y = pool.avg_pool2d(
        a[0],
        int_values(op.kernel),
        ceil_mode=flag(op.ceil_mode),
        count_include_pad=flag(op.count_include_pad),
        dilations=dilations,
        **_window(op, dilations=False),
    )
    return [y]


def _resize(op: nn.ResizeOp, a: list[np.ndarray]) -> list[np.ndarray]:
    scales = [float(s) for s in op.scales.get_values()]
    y = resize.resize(
        a[0],
        shape_of(op.output),
        scales,
        op.mode.data,
        op.coordinate_mode.data,
        op.nearest_mode.data,
        scalar(op.cubic_coeff_a),
        flag(op.exclude_outside),
    )
    return [y]


def _split(op: nn.SplitOp, a: list[np.ndarray]) -> list[np.ndarray]:
    axis = scalar(op.axis) % a[0].ndim
    return movement.split(a[0], [shape_of(r)[axis] for r in op.outputs], axis)


def _reduce(kind: str) -> Kernel:
    return lambda op, a: [reduce.reduce(a[0], kind, int_values(op.axes), flag(op.keepdims))]


def _arg_reduce(kind: str) -> Kernel:
    def kernel(op: nn.ArgMaxOp | nn.ArgMinOp, a: list[np.ndarray]) -> list[np.ndarray]:
        index = reduce.arg_reduce(
            a[0], kind, scalar(op.axis), flag(op.keepdims), flag(op.select_last_index)
        )
        dtype = np.int32 if op.output.type.element_type == i32 else np.int64
        return [index.astype(dtype)]

    return kernel


def _nn_constant(op: nn.ConstantOp, a: list[np.ndarray]) -> list[np.ndarray]:
    """Floats as float32; integer and i1 constants keep their element type's dtype."""
    array = constant_array(op.value)
    dtype = numpy_dtype(op.output.type.element_type)
    return [array if dtype.kind == "f" else from_dense(op.value).astype(dtype, copy=False)]


def _cast(op: nn.CastOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [logic.cast(a[0], numpy_dtype(op.output.type.element_type))]


def arith_constant(op: Operation, args: list[np.ndarray]) -> list[np.ndarray]:
    """`arith.constant`: its value."""
    return [constant_array(op.properties["value"])]


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Kernel:
    return lambda op, a: [fn(a[0])]


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    return lambda op, a: [fn(a[0], a[1])]


KERNELS: dict[type[Operation], Kernel] = {
    nn.ConstantOp: _nn_constant,
    nn.ReluOp: _unary(ew.relu),
    nn.SigmoidOp: _unary(ew.sigmoid),
    nn.TanhOp: _unary(np.tanh),
    nn.ExpOp: _unary(np.exp),
    nn.LogOp: _unary(np.log),
    nn.SqrtOp: _unary(np.sqrt),
    nn.ErfOp: _unary(ew.erf),
    nn.AbsOp: _unary(np.abs),
    nn.NegOp: _unary(np.negative),
    nn.ReciprocalOp: _unary(ew.reciprocal),
    nn.FloorOp: _unary(np.floor),
    nn.CeilOp: _unary(np.ceil),
    nn.SoftplusOp: _unary(ew.softplus),
    nn.HardSwishOp: _unary(ew.hard_swish),
    nn.AddOp: _binary(np.add),
    nn.SubOp: _binary(np.subtract),
    nn.MulOp: _binary(np.multiply),
    nn.DivOp: _binary(logic.divide),
    nn.PowOp: _binary(np.power),
    nn.MaximumOp: _binary(np.maximum),
    nn.MinimumOp: _binary(np.minimum),
    nn.PReluOp: _binary(ew.prelu),
    nn.GeluOp: lambda op, a: [ew.gelu(a[0], op.approximate.data)],
    nn.LeakyReluOp: lambda op, a: [ew.leaky_relu(a[0], scalar(op.alpha))],
    nn.EluOp: lambda op, a: [ew.elu(a[0], scalar(op.alpha))],
    nn.HardSigmoidOp: lambda op, a: [ew.hard_sigmoid(a[0], scalar(op.alpha), scalar(op.beta))],
    nn.ClipOp: lambda op, a: [ew.clip(a[0], optional_float(op.min), optional_float(op.max))],
    nn.SoftmaxOp: lambda op, a: [ew.softmax(a[0], scalar(op.axis))],
    nn.LogSoftmaxOp: lambda op, a: [ew.log_softmax(a[0], scalar(op.axis))],
    nn.Conv2dOp: _conv2d,
    nn.ConvTranspose2dOp: _conv_transpose2d,
    nn.FullyConnectedOp: lambda op, a: [linear.fully_connected(a[0], a[1], optional_arg(a, 2))],
    nn.MatMulOp: lambda op, a: [linear.matmul(a[0], a[1])],
    nn.MaxPool2dOp: _max_pool2d,
    nn.AvgPool2dOp: _avg_pool2d,
    nn.GlobalAvgPoolOp: _unary(pool.global_avg_pool),
    nn.GlobalMaxPoolOp: _unary(pool.global_max_pool),
    nn.BatchNormOp: lambda op, a: [norm.batch_norm(*a[:5], scalar(op.epsilon))],
    nn.InstanceNormOp: lambda op, a: [norm.instance_norm(*a[:3], scalar(op.epsilon))],
    nn.LayerNormOp: lambda op, a: [
        norm.layer_norm(a[0], a[1], optional_arg(a, 2), scalar(op.axis), scalar(op.epsilon))
    ],
    nn.LrnOp: lambda op, a: [
        norm.lrn(a[0], scalar(op.size), scalar(op.alpha), scalar(op.beta), scalar(op.bias))
    ],
    nn.ReduceMeanOp: _reduce("mean"),
    nn.ReduceSumOp: _reduce("sum"),
    nn.ReduceMaxOp: _reduce("max"),
    nn.ReduceMinOp: _reduce("min"),
    nn.ReduceProdOp: _reduce("prod"),
    nn.ArgMaxOp: _arg_reduce("max"),
    nn.ArgMinOp: _arg_reduce("min"),
    nn.ReshapeOp: lambda op, a: [movement.reshape(a[0], shape_of(op.output))],
    nn.BroadcastOp: lambda op, a: [movement.broadcast(a[0], shape_of(op.output))],
    nn.TransposeOp: lambda op, a: [movement.transpose(a[0], int_values(op.perm))],
    nn.ConcatOp: lambda op, a: [movement.concat(a, scalar(op.axis))],
    nn.SplitOp: _split,
    nn.SliceOp: lambda op, a: [
        movement.slice_(a[0], int_values(op.starts), int_values(op.ends), int_values(op.steps))
    ],
    nn.PadOp: lambda op, a: [
        movement.pad(a[0], int_values(op.pads), op.mode.data, scalar(op.value))
    ],
    nn.ResizeOp: _resize,
    nn.GatherOp: lambda op, a: [movement.gather(a[0], a[1], scalar(op.axis) % a[0].ndim)],
    nn.DepthToSpaceOp: lambda op, a: [
        movement.depth_to_space(a[0], scalar(op.block_size), op.mode.data)
    ],
    nn.SpaceToDepthOp: lambda op, a: [movement.space_to_depth(a[0], scalar(op.block_size))],
    nn.CastOp: _cast,
    nn.EqualOp: _binary(np.equal),
    nn.LessOp: _binary(np.less),
    nn.LessEqualOp: _binary(np.less_equal),
    nn.GreaterOp: _binary(np.greater),
    nn.GreaterEqualOp: _binary(np.greater_equal),
    nn.NotOp: _unary(np.logical_not),
    nn.AndOp: _binary(np.logical_and),
    nn.OrOp: _binary(np.logical_or),
    nn.XorOp: _binary(np.logical_xor),
    nn.WhereOp: lambda op, a: [logic.where(a[0], a[1], a[2])],
}
