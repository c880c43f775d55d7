"""Integer-exact kernels of the `qnn` ops: `KERNELS` maps each op class to `(op, args) ->
results` (arithmetic: docs/quantization.md, `npuc/integer.py`, `kernels/qnn_arith.py`).

They are separate from the float kernels (nn_kernels.py) so that `nn`-level passes such as
fold-constants never evaluate integer ops; runtime/interpreter_kernels.py lists both tables.
Quantized tensors are numpy arrays of their type's storage dtype (i4 in int8), i32 tensors
(biases) are int32, f32 tensors float32.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from npuc import integer
from npuc.diagnostics import KernelError
from npuc.dialects import qnn
from npuc.dialects.arrays import int_values
from npuc.dialects.nn_base import shape_of
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.tensors import from_dense, numpy_dtype

from .kernel_api import Kernel, flag, optional_arg, scalar
from .kernels import movement, pool, qnn_int16_lut, reduce, resize
from .kernels import qnn_arith as qa

I64 = np.int64


# --------------------------------------------------------------------------- operands


def quantized_type(ty: Attribute) -> UniformQuantizedType | None:
    """The quantized element type of a tensor type, if it has one."""
    if isinstance(ty, TensorType) and isinstance(ty.element_type, UniformQuantizedType):
        return ty.element_type
    return None


def _zp(value: SSAValue) -> np.ndarray:
    """Zero points (int64) shaped to broadcast against `value`."""
    return qnn.qtype(value).broadcast_params(len(shape_of(value)))[1]


def _centred(array: np.ndarray, value: SSAValue) -> np.ndarray:
    """q - zero_point, in int64."""
    return array.astype(I64) - _zp(value)


def _dtype(value: SSAValue) -> np.dtype:
    return qnn.qtype(value).storage_dtype()


def _finish(op: qnn.Requantizing, acc: np.ndarray) -> np.ndarray:
    """The requantizing ops' output stage, with per-channel parameters on op.channel_axis()."""
    multiplier = np.array(op.multiplier.get_values(), I64)
    shift = np.array(op.shift.get_values(), I64)
    if multiplier.size > 1:
        shape = [1] * acc.ndim
        shape[op.channel_axis()] = -1
        multiplier, shift = multiplier.reshape(shape), shift.reshape(shape)
    else:
        multiplier, shift = multiplier.reshape(()), shift.reshape(())
    out = op.results[0]
    return qa.output_stage(
        acc, multiplier, shift, op.rounding.data, _zp(out), op.clamp_bounds(), _dtype(out)
    )


def _with_bias(acc: np.ndarray, args: list[np.ndarray], channel_shape: Sequence[int]) -> np.ndarray:
    bias = optional_arg(args, 2)
    return acc if bias is None else acc + bias.astype(I64).reshape(channel_shape)


# --------------------------------------------------------------------------- conversions


def _constant(op: qnn.ConstantOp, a: list[np.ndarray]) -> list[np.ndarray]:
    value = from_dense(op.value)
    q = quantized_type(op.output.type)
    # Signless storage holds the bits of unsigned values too: reinterpret, never convert.
    return [value.view(q.storage_dtype()) if q is not None else value]


def quantize_array(
    x: np.ndarray, q: UniformQuantizedType, rounding: str = "half_away_from_zero"
) -> np.ndarray:
    """integer.quantize_reals into q's storage dtype (NaN -> zero point, infinities saturate)."""
    scales, zps = q.broadcast_params(x.ndim)
    y = integer.quantize_reals(x, scales, zps, q.qmin, q.qmax, rounding)
    return y.astype(q.storage_dtype())


def _quantize(op: qnn.QuantizeOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [quantize_array(a[0], qnn.qtype(op.output), op.rounding.data)]


def _dequantize(op: qnn.DequantizeOp, a: list[np.ndarray]) -> list[np.ndarray]:
    scales, zps = qnn.qtype(op.input).broadcast_params(a[0].ndim)
    return [integer.dequantize(a[0], scales, zps)]


def _requantize(op: qnn.RequantizeOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [_finish(op, _centred(a[0], op.input))]


def _lut(op: qnn.LutOp, a: list[np.ndarray]) -> list[np.ndarray]:
    q_in = qnn.qtype(op.input)
    # Entry k is for stored value storage_min + k; a narrow range leaves the last entries unused.
    table = from_dense(op.table)
    index = a[0].astype(I64) - q_in.qmin
    if index.size and (index.min() < 0 or index.max() >= table.size):
        raise KernelError(f"input values outside the storage range [{q_in.qmin}, {q_in.qmax}]")
    return [integer.lut_lookup(a[0], table, q_in.qmin).astype(_dtype(op.output))]


def _softmax(op: qnn.SoftmaxOp, a: list[np.ndarray]) -> list[np.ndarray]:
    y = qa.softmax_int8(
        a[0], scalar(op.input_multiplier), scalar(op.input_left_shift), scalar(op.diff_min)
    )
    return [y.astype(_dtype(op.output))]


# --------------------------------------------------------------------------- compute


def _conv2d(op: qnn.Conv2dOp, a: list[np.ndarray]) -> list[np.ndarray]:
    acc = qa.conv2d_acc(
        _centred(a[0], op.input),
        _centred(a[1], op.weight),
        strides=int_values(op.strides),
        pads=int_values(op.pads),
        dilations=int_values(op.dilations),
        groups=scalar(op.groups),
    )
    return [_finish(op, _with_bias(acc, a, (-1, 1, 1)))]


def _fully_connected(op: qnn.FullyConnectedOp, a: list[np.ndarray]) -> list[np.ndarray]:
    acc = qa.exact_matmul(_centred(a[0], op.input), _centred(a[1], op.weight).T)
    return [_finish(op, _with_bias(acc, a, (-1,)))]


def _matmul(op: qnn.MatMulOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [_finish(op, qa.exact_matmul(_centred(a[0], op.lhs), _centred(a[1], op.rhs)))]


def _aligned_sum(subtract: bool) -> Kernel:
    def kernel(op: qnn.AddOp | qnn.SubOp, a: list[np.ndarray]) -> list[np.ndarray]:
        acc = qa.aligned_sum(
            _centred(a[0], op.lhs),
            _centred(a[1], op.rhs),
            scalar(op.left_shift),
            (scalar(op.lhs_multiplier), scalar(op.lhs_shift)),
            (scalar(op.rhs_multiplier), scalar(op.rhs_shift)),
            op.rounding.data,
            subtract,
        )
        return [_finish(op, acc)]

    return kernel


def _mul(op: qnn.MulOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [_finish(op, qa.exact_multiply(_centred(a[0], op.lhs), _centred(a[1], op.rhs)))]


def _avg_pool2d(op: qnn.AvgPool2dOp, a: list[np.ndarray]) -> list[np.ndarray]:
    total, counts = qa.avg_pool2d_sums(
        _centred(a[0], op.input),
        int_values(op.kernel),
        strides=int_values(op.strides),
        pads=int_values(op.pads),
        ceil_mode=flag(op.ceil_mode),
        count_include_pad=flag(op.count_include_pad),
    )
    return [_pooled(op, total, counts)]


def _global_avg_pool(op: qnn.GlobalAvgPoolOp, a: list[np.ndarray]) -> list[np.ndarray]:
    total, count = qa.global_avg_pool_sums(_centred(a[0], op.input))
    return [_pooled(op, total, count)]


def _pooled(op: qnn.Requantizing, total: np.ndarray, count: np.ndarray | int) -> np.ndarray:
    (multiplier,), (shift,) = op.multiplier.get_values(), op.shift.get_values()
    out = op.results[0]
    return qa.pooled_output(
        total,
        count,
        multiplier,
        shift,
        op.rounding.data,
        int(_zp(out)),
        op.clamp_bounds(),
        _dtype(out),
        zero_point_in=int(_zp(op.operands[0])),
    )


# --------------------------------------------------------------------------- data movement


def _max_pool2d(op: qnn.MaxPool2dOp, a: list[np.ndarray]) -> list[np.ndarray]:
    y = qa.max_pool2d(
        a[0],
        int_values(op.kernel),
        strides=int_values(op.strides),
        pads=int_values(op.pads),
        dilations=int_values(op.dilations),
        ceil_mode=flag(op.ceil_mode),
    )
    return [y]


def _pad(op: qnn.PadOp, a: list[np.ndarray]) -> list[np.ndarray]:
    pads, mode = int_values(op.pads), op.mode.data
    if op.value is not None or mode != "constant":
        value = scalar(op.value) if op.value is not None else 0
        return [movement.pad(a[0], pads, mode, value)]
    # Real 0 is the zero point; per-axis types pad each channel with its own.
    zp = _zp(op.input)
    padded = movement.pad(a[0].astype(I64) - zp, pads, mode, 0) + zp
    return [padded.astype(a[0].dtype)]


def _resize(op: qnn.ResizeOp, a: list[np.ndarray]) -> list[np.ndarray]:
    scales = [float(s) for s in op.scales.get_values()]
    y = resize.resize(
        a[0],
        shape_of(op.output),
        scales,
        "nearest",
        op.coordinate_mode.data,
        op.nearest_mode.data,
    )
    return [y]


def _split(op: qnn.SplitOp, a: list[np.ndarray]) -> list[np.ndarray]:
    axis = scalar(op.axis) % a[0].ndim
    return movement.split(a[0], [shape_of(r)[axis] for r in op.outputs], axis)


def _maximum(op: qnn.MaximumOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [np.maximum(a[0], a[1]).astype(_dtype(op.output))]


def _minimum(op: qnn.MinimumOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [np.minimum(a[0], a[1]).astype(_dtype(op.output))]


def _gather(op: qnn.GatherOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [movement.gather(a[0], a[1], scalar(op.axis) % a[0].ndim)]


def _reduce_max(op: qnn.ReduceMaxOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [qa.reduce_max(a[0], int_values(op.axes), flag(op.keepdims))]


def _argmax(op: qnn.ArgMaxOp, a: list[np.ndarray]) -> list[np.ndarray]:
    index = qa.arg_max(a[0], scalar(op.axis), flag(op.keepdims))
    return [index.astype(numpy_dtype(op.output.type.get_element_type()))]


def _argmin(op: qnn.ArgMinOp, a: list[np.ndarray]) -> list[np.ndarray]:
    index = reduce.arg_reduce(a[0], "min", scalar(op.axis), flag(op.keepdims))
    return [index.astype(numpy_dtype(op.output.type.get_element_type()))]


# ------------------------- sums, TFLite arithmetic, bilinear resize, transposed conv, tables


def _reduce_sum(op: qnn.ReduceSumOp, a: list[np.ndarray]) -> list[np.ndarray]:
    as_bytes = op.storage_view.data == "uint8"
    x = a[0].astype(I64)
    if as_bytes:
        x &= 0xFF  # LiteRT reads the int8 storage as uint8 bytes
    xc = x - _zp(op.input)
    axes = tuple(int_values(op.axes)) or tuple(range(xc.ndim))
    acc = xc.sum(axis=axes, keepdims=True)
    (multiplier,), (shift,) = op.multiplier.get_values(), op.shift.get_values()
    r = qa.wide_requantize(acc, multiplier, shift, op.rounding.data) + _zp(op.output).reshape(())
    if as_bytes:  # saturate as uint8, then the byte is the int8 result
        y = np.clip(r, 0, 255).astype(np.uint8).view(np.int8)
    else:
        lo, hi = op.clamp_bounds()
        y = np.clip(r, lo, hi).astype(_dtype(op.output))
    return [y.reshape(shape_of(op.output))]


def _squared_difference(op: qnn.SquaredDifferenceOp, a: list[np.ndarray]) -> list[np.ndarray]:
    diff = qa.aligned_sum(
        _centred(a[0], op.lhs),
        _centred(a[1], op.rhs),
        scalar(op.left_shift),
        (scalar(op.lhs_multiplier), scalar(op.lhs_shift)),
        (scalar(op.rhs_multiplier), scalar(op.rhs_shift)),
        op.rounding.data,
        subtract=True,
    )
    return [_finish(op, qa.exact_multiply(diff, diff))]


def _prelu(op: qnn.PReluOp, a: list[np.ndarray]) -> list[np.ndarray]:
    (multiplier,), (shift,) = op.multiplier.get_values(), op.shift.get_values()
    r = qa.prelu(
        _centred(a[0], op.input),
        _centred(a[1], op.alpha),
        (multiplier, shift),
        (scalar(op.alpha_multiplier), scalar(op.alpha_shift)),
        op.rounding.data,
    )
    lo, hi = op.clamp_bounds()
    return [np.clip(r + _zp(op.output), lo, hi).astype(_dtype(op.output))]


def _resize_bilinear(op: qnn.ResizeBilinearOp, a: list[np.ndarray]) -> list[np.ndarray]:
    x = a[0].astype(I64)
    (h_in, w_in), (h_out, w_out) = x.shape[2:], shape_of(op.output)[2:]
    align, half = bool(op.align_corners.value.data), bool(op.half_pixel_centers.value.data)
    y0, y1, wy0, wy1 = resize.integer_bilinear_axis(h_in, h_out, align, half)
    x0, x1, wx0, wx1 = resize.integer_bilinear_axis(w_in, w_out, align, half)
    total = np.zeros((*x.shape[:2], h_out, w_out), I64)
    for ys, wy in ((y0, wy0), (y1, wy1)):
        for xs, wx in ((x0, wx0), (x1, wx1)):
            total += x[:, :, ys][:, :, :, xs] * (wy[:, None] * wx[None, :])
    half_unit = 1 << 19
    if op.rounding.data == "half_up":
        y = (total + half_unit) >> 20
    else:
        magnitude = (np.abs(total) + half_unit) >> 20
        y = np.where(total < 0, -magnitude, magnitude)
    q = qnn.qtype(op.output)
    return [np.clip(y, q.qmin, q.qmax).astype(_dtype(op.output))]


def _div(op: qnn.DivOp, a: list[np.ndarray]) -> list[np.ndarray]:
    num, den = np.broadcast_arrays(_centred(a[0], op.lhs), _centred(a[1], op.rhs))
    (multiplier,), (shift,) = op.multiplier.get_values(), op.shift.get_values()
    r = qa.tflite_divide(num, den, multiplier, shift, op.overshift.data)
    lo, hi = op.clamp_bounds()
    return [np.clip(r + _zp(op.output), lo, hi).astype(_dtype(op.output))]


def _conv_transpose2d(op: qnn.ConvTranspose2dOp, a: list[np.ndarray]) -> list[np.ndarray]:
    acc = qa.conv_transpose2d_acc(
        _centred(a[0], op.input),
        _centred(a[1], op.weight),
        strides=int_values(op.strides),
        pads=int_values(op.pads),
        dilations=int_values(op.dilations),
        output_padding=int_values(op.output_padding),
    )
    return [_finish(op, _with_bias(acc, a, (-1, 1, 1)))]


def _sigmoid_lut(op: qnn.SigmoidLutOp, a: list[np.ndarray]) -> list[np.ndarray]:
    y = qnn_int16_lut.sigmoid_lut(
        a[0],
        op.function.data,
        scalar(op.input_multiplier),
        scalar(op.input_shift),
        from_dense(op.table),
    )
    return [y.astype(_dtype(op.output))]


def _softmax_lut(op: qnn.SoftmaxLutOp, a: list[np.ndarray]) -> list[np.ndarray]:
    y = qnn_int16_lut.softmax_lut(
        a[0],
        scalar(op.input_multiplier),
        scalar(op.input_shift),
        from_dense(op.exp_table),
        from_dense(op.reciprocal_table),
    )
    return [y.astype(_dtype(op.output))]


KERNELS: dict[type[Operation], Kernel] = {
    qnn.ConstantOp: _constant,
    qnn.QuantizeOp: _quantize,
    qnn.DequantizeOp: _dequantize,
    qnn.RequantizeOp: _requantize,
    qnn.LutOp: _lut,
    qnn.SoftmaxOp: _softmax,
    qnn.Conv2dOp: _conv2d,
    qnn.FullyConnectedOp: _fully_connected,
    qnn.MatMulOp: _matmul,
    qnn.MulOp: _mul,
    qnn.AvgPool2dOp: _avg_pool2d,
    qnn.GlobalAvgPoolOp: _global_avg_pool,
    qnn.MaxPool2dOp: _max_pool2d,
    qnn.PadOp: _pad,
    qnn.ResizeOp: _resize,
    qnn.SplitOp: _split,
    qnn.MaximumOp: _maximum,
    qnn.MinimumOp: _minimum,
    qnn.GatherOp: _gather,
    qnn.ReduceMaxOp: _reduce_max,
    qnn.ArgMaxOp: _argmax,
    qnn.ArgMinOp: _argmin,
    qnn.AddOp: _aligned_sum(subtract=False),
    qnn.SubOp: _aligned_sum(subtract=True),
    qnn.GlobalMaxPoolOp: lambda op, a: [pool.global_max_pool(a[0])],
    qnn.ReshapeOp: lambda op, a: [movement.reshape(a[0], shape_of(op.output))],
    qnn.TransposeOp: lambda op, a: [movement.transpose(a[0], int_values(op.perm))],
    qnn.ConcatOp: lambda op, a: [movement.concat(a, scalar(op.axis))],
    qnn.SliceOp: lambda op, a: [
        movement.slice_(a[0], int_values(op.starts), int_values(op.ends), int_values(op.steps))
    ],
    qnn.DepthToSpaceOp: lambda op, a: [
        movement.depth_to_space(a[0], scalar(op.block_size), op.mode.data)
    ],
    qnn.SpaceToDepthOp: lambda op, a: [movement.space_to_depth(a[0], scalar(op.block_size))],
    qnn.ReduceSumOp: _reduce_sum,
    qnn.SquaredDifferenceOp: _squared_difference,
    qnn.PReluOp: _prelu,
    qnn.ResizeBilinearOp: _resize_bilinear,
    qnn.DivOp: _div,
    qnn.ConvTranspose2dOp: _conv_transpose2d,
    qnn.SigmoidLutOp: _sigmoid_lut,
    qnn.SoftmaxLutOp: _softmax_lut,
}
