"""Reference interpreter for the `qnn` level, and for functions mixing `nn` and `qnn` ops.

`QNN_KERNELS` maps each `qnn` op class to an integer-exact kernel `(op, args) ->
results` (arithmetic: docs/quantization.md, `npuc/integer.py`,
`kernels/qnn_arith.py`). It is separate from the float `KERNELS` registry so
that `nn`-level passes such as fold-constants never evaluate integer ops.
`evaluate` runs any op of either level; `QuantizedFunctionRunner` (a
`FunctionRunner`) runs whole functions, so hybrid graphs whose float layers sit
between `qnn.dequantize` and `qnn.quantize` execute in one pass.

Quantized tensors are numpy arrays of their type's storage dtype (i4 in int8),
i32 tensors (biases) are int32, f32 tensors float32.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TypeVar

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation, SSAValue

from npuc import graph_io, integer
from npuc.diagnostics import InputError, KernelError, NpucError
from npuc.dialects import qnn
from npuc.dialects.nn_base import shape_of
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.limits import check_tensor
from npuc.tensors import from_dense, numpy_dtype

from . import nn_interpreter
from .kernels import movement, pool, reduce, resize
from .kernels import qnn_arith as qa
from .nn_interpreter import (
    _CONSTANTS,
    FunctionRunner,
    Keep,
    Kernel,
    _bool,
    _describe,
    _ints,
    _opt,
    _v,
    evaluate_op,
)

I64 = np.int64
K = TypeVar("K", bound=Kernel)

QNN_KERNELS: dict[type[Operation], Kernel] = {}


def register_qnn_kernel(op_type: type[Operation]) -> Callable[[K], K]:
    """Decorator registering an integer kernel for `op_type`."""

    def decorate(kernel: K) -> K:
        QNN_KERNELS[op_type] = kernel
        return kernel

    return decorate


def evaluate(op: Operation, args: list[np.ndarray]) -> list[np.ndarray]:
    """Results of an `nn` or `qnn` op on concrete operands (NotImplementedError if no kernel)."""
    for cls in type(op).__mro__:
        if cls in QNN_KERNELS:
            return [np.asarray(r) for r in QNN_KERNELS[cls](op, args)]
    return evaluate_op(op, args)


# --------------------------------------------------------------------------- type helpers


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
    bias = _opt(args, 2)
    return acc if bias is None else acc + bias.astype(I64).reshape(channel_shape)


# --------------------------------------------------------------------------- conversions


@register_qnn_kernel(qnn.ConstantOp)
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


@register_qnn_kernel(qnn.QuantizeOp)
def _quantize(op: qnn.QuantizeOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [quantize_array(a[0], qnn.qtype(op.output), op.rounding.data)]


@register_qnn_kernel(qnn.DequantizeOp)
def _dequantize(op: qnn.DequantizeOp, a: list[np.ndarray]) -> list[np.ndarray]:
    scales, zps = qnn.qtype(op.input).broadcast_params(a[0].ndim)
    return [integer.dequantize(a[0], scales, zps)]


@register_qnn_kernel(qnn.RequantizeOp)
def _requantize(op: qnn.RequantizeOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [_finish(op, _centred(a[0], op.input))]


@register_qnn_kernel(qnn.LutOp)
def _lut(op: qnn.LutOp, a: list[np.ndarray]) -> list[np.ndarray]:
    q_in = qnn.qtype(op.input)
    # Entry k is for stored value storage_min + k; a narrow range leaves the last entries unused.
    table = from_dense(op.table)
    index = a[0].astype(I64) - q_in.qmin
    if index.size and (index.min() < 0 or index.max() >= table.size):
        raise KernelError(f"input values outside the storage range [{q_in.qmin}, {q_in.qmax}]")
    return [integer.lut_lookup(a[0], table, q_in.qmin).astype(_dtype(op.output))]


@register_qnn_kernel(qnn.SoftmaxOp)
def _softmax(op: qnn.SoftmaxOp, a: list[np.ndarray]) -> list[np.ndarray]:
    y = qa.softmax_int8(a[0], _v(op.input_multiplier), _v(op.input_left_shift), _v(op.diff_min))
    return [y.astype(_dtype(op.output))]


# --------------------------------------------------------------------------- compute


@register_qnn_kernel(qnn.Conv2dOp)
def _conv2d(op: qnn.Conv2dOp, a: list[np.ndarray]) -> list[np.ndarray]:
    acc = qa.conv2d_acc(
        _centred(a[0], op.input), _centred(a[1], op.weight), strides=_ints(op.strides),
        pads=_ints(op.pads), dilations=_ints(op.dilations), groups=_v(op.groups),
    )  # fmt: skip
    return [_finish(op, _with_bias(acc, a, (-1, 1, 1)))]


@register_qnn_kernel(qnn.FullyConnectedOp)
def _fully_connected(op: qnn.FullyConnectedOp, a: list[np.ndarray]) -> list[np.ndarray]:
    acc = qa.exact_matmul(_centred(a[0], op.input), _centred(a[1], op.weight).T)
    return [_finish(op, _with_bias(acc, a, (-1,)))]


@register_qnn_kernel(qnn.MatMulOp)
def _matmul(op: qnn.MatMulOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [_finish(op, qa.exact_matmul(_centred(a[0], op.lhs), _centred(a[1], op.rhs)))]


def _aligned_sum(subtract: bool) -> Kernel:
    def kernel(op: qnn.AddOp | qnn.SubOp, a: list[np.ndarray]) -> list[np.ndarray]:
        acc = qa.aligned_sum(
            _centred(a[0], op.lhs), _centred(a[1], op.rhs), _v(op.left_shift),
            (_v(op.lhs_multiplier), _v(op.lhs_shift)), (_v(op.rhs_multiplier), _v(op.rhs_shift)),
            op.rounding.data, subtract,
        )  # fmt: skip
        return [_finish(op, acc)]

    return kernel


QNN_KERNELS[qnn.AddOp] = _aligned_sum(subtract=False)
QNN_KERNELS[qnn.SubOp] = _aligned_sum(subtract=True)


@register_qnn_kernel(qnn.MulOp)
def _mul(op: qnn.MulOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [_finish(op, qa.exact_multiply(_centred(a[0], op.lhs), _centred(a[1], op.rhs)))]


@register_qnn_kernel(qnn.AvgPool2dOp)
def _avg_pool2d(op: qnn.AvgPool2dOp, a: list[np.ndarray]) -> list[np.ndarray]:
    total, counts = qa.avg_pool2d_sums(
        _centred(a[0], op.input), _ints(op.kernel), strides=_ints(op.strides),
        pads=_ints(op.pads), ceil_mode=_bool(op.ceil_mode),
        count_include_pad=_bool(op.count_include_pad),
    )  # fmt: skip
    return [_pooled(op, total, counts)]


@register_qnn_kernel(qnn.GlobalAvgPoolOp)
def _global_avg_pool(op: qnn.GlobalAvgPoolOp, a: list[np.ndarray]) -> list[np.ndarray]:
    total, count = qa.global_avg_pool_sums(_centred(a[0], op.input))
    return [_pooled(op, total, count)]


def _pooled(op: qnn.Requantizing, total: np.ndarray, count: np.ndarray | int) -> np.ndarray:
    (multiplier,), (shift,) = op.multiplier.get_values(), op.shift.get_values()
    out = op.results[0]
    return qa.pooled_output(
        total, count, multiplier, shift, op.rounding.data, int(_zp(out)), op.clamp_bounds(),
        _dtype(out), zero_point_in=int(_zp(op.operands[0])),
    )  # fmt: skip


# --------------------------------------------------------------------------- data movement


@register_qnn_kernel(qnn.MaxPool2dOp)
def _max_pool2d(op: qnn.MaxPool2dOp, a: list[np.ndarray]) -> list[np.ndarray]:
    y = qa.max_pool2d(
        a[0], _ints(op.kernel), strides=_ints(op.strides), pads=_ints(op.pads),
        dilations=_ints(op.dilations), ceil_mode=_bool(op.ceil_mode),
    )  # fmt: skip
    return [y]


@register_qnn_kernel(qnn.PadOp)
def _pad(op: qnn.PadOp, a: list[np.ndarray]) -> list[np.ndarray]:
    pads, mode = _ints(op.pads), op.mode.data
    if op.value is not None or mode != "constant":
        value = _v(op.value) if op.value is not None else 0
        return [movement.pad(a[0], pads, mode, value)]
    # Real 0 is the zero point; per-axis types pad each channel with its own.
    zp = _zp(op.input)
    padded = movement.pad(a[0].astype(I64) - zp, pads, mode, 0) + zp
    return [padded.astype(a[0].dtype)]


@register_qnn_kernel(qnn.ResizeOp)
def _resize(op: qnn.ResizeOp, a: list[np.ndarray]) -> list[np.ndarray]:
    scales = [float(s) for s in op.scales.get_values()]
    y = resize.resize(
        a[0], shape_of(op.output), scales, "nearest", op.coordinate_mode.data,
        op.nearest_mode.data,
    )  # fmt: skip
    return [y]


@register_qnn_kernel(qnn.SplitOp)
def _split(op: qnn.SplitOp, a: list[np.ndarray]) -> list[np.ndarray]:
    axis = _v(op.axis) % a[0].ndim
    return movement.split(a[0], [shape_of(r)[axis] for r in op.outputs], axis)


QNN_KERNELS.update(
    {
        qnn.GlobalMaxPoolOp: lambda op, a: [pool.global_max_pool(a[0])],
        qnn.ReshapeOp: lambda op, a: [movement.reshape(a[0], shape_of(op.output))],
        qnn.TransposeOp: lambda op, a: [movement.transpose(a[0], _ints(op.perm))],
        qnn.ConcatOp: lambda op, a: [movement.concat(a, _v(op.axis))],
        qnn.SliceOp: lambda op, a: [
            movement.slice_(a[0], _ints(op.starts), _ints(op.ends), _ints(op.steps))
        ],
        qnn.DepthToSpaceOp: lambda op, a: [
            movement.depth_to_space(a[0], _v(op.block_size), op.mode.data)
        ],
        qnn.SpaceToDepthOp: lambda op, a: [movement.space_to_depth(a[0], _v(op.block_size))],
    }
)


@register_qnn_kernel(qnn.MaximumOp)
def _maximum(op: qnn.MaximumOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [np.maximum(a[0], a[1]).astype(_dtype(op.output))]


@register_qnn_kernel(qnn.MinimumOp)
def _minimum(op: qnn.MinimumOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [np.minimum(a[0], a[1]).astype(_dtype(op.output))]


@register_qnn_kernel(qnn.GatherOp)
def _gather(op: qnn.GatherOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [movement.gather(a[0], a[1], _v(op.axis) % a[0].ndim)]


@register_qnn_kernel(qnn.ReduceMaxOp)
def _reduce_max(op: qnn.ReduceMaxOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [qa.reduce_max(a[0], _ints(op.axes), _bool(op.keepdims))]


@register_qnn_kernel(qnn.ArgMaxOp)
def _argmax(op: qnn.ArgMaxOp, a: list[np.ndarray]) -> list[np.ndarray]:
    index = qa.arg_max(a[0], _v(op.axis), _bool(op.keepdims))
    return [index.astype(numpy_dtype(op.output.type.get_element_type()))]


@register_qnn_kernel(qnn.ArgMinOp)
def _argmin(op: qnn.ArgMinOp, a: list[np.ndarray]) -> list[np.ndarray]:
    index = reduce.arg_reduce(a[0], "min", _v(op.axis), _bool(op.keepdims))
    return [index.astype(numpy_dtype(op.output.type.get_element_type()))]


# --------------------------------------------------------------------------- graph execution


def quantize_input(name: str, array: np.ndarray, q: UniformQuantizedType) -> np.ndarray:
    """A quantized argument from floats (quantized with its type) or from stored integers."""
    if array.dtype.kind == "f":
        return quantize_array(array.astype(np.float32), q)
    if array.dtype != q.storage_dtype():
        raise InputError(
            name,
            f"input '{name}' has dtype {array.dtype} but the model expects floats (to quantize) "
            f"or {q.storage_dtype()} stored integers",
        )
    if array.size and (array.min() < q.qmin or array.max() > q.qmax):
        raise InputError(
            name, f"input '{name}' has values outside the storage range [{q.qmin}, {q.qmax}]"
        )
    return array


class QuantizedFunctionRunner(FunctionRunner):
    """A FunctionRunner for functions of `nn` and `qnn` ops, with quantized arguments allowed.

    A quantized argument takes floats (of any float dtype, cast to f32 and
    quantized with the argument's type, half away from zero, like qnn.quantize)
    or integers of its storage dtype, used as they are.
    """

    CONSTANTS = (*_CONSTANTS, qnn.ConstantOp)
    evaluate = staticmethod(evaluate)

    def convert_input(self, name: str, array: np.ndarray, ty: TensorType) -> np.ndarray:
        q = quantized_type(ty)
        return (
            super().convert_input(name, array, ty) if q is None else quantize_input(name, array, q)
        )

    def _kept(self, keep: Keep | None) -> set[SSAValue]:
        kept = super()._kept(keep)
        if keep == "all":
            kept -= {r for op in self.ops if isinstance(op, qnn.ConstantOp) for r in op.results}
        return kept


def run_function(func: FuncOp, inputs: Sequence[np.ndarray], *, keep: Keep | None = None):
    """`nn_interpreter.run_function` for functions that may contain `qnn` ops."""
    return nn_interpreter.run_function(func, inputs, keep=keep, runner=QuantizedFunctionRunner)


def run_module(module: ModuleOp, inputs: Mapping[str, np.ndarray], *, keep: Keep | None = None):
    """`nn_interpreter.run_module` for modules that may contain `qnn` ops.

    Quantized outputs are their stored integers; `dequantized_outputs` adds reals.
    """
    return nn_interpreter.run_module(module, inputs, keep=keep, runner=QuantizedFunctionRunner)


# --------------------------------------------------------------------------- tool support

LEVELS = {"nn": ("builtin", "func", "arith", "nn")}
LEVELS["qnn"] = (*LEVELS["nn"], "qnn")
LEVELS["tile"] = (*LEVELS["qnn"], "tile")
LEVELS["mem"] = (*LEVELS["tile"], "mem")


def check_level(module: ModuleOp, level: str) -> None:
    """Raise NpucError unless every op and tensor of `module` belongs to `level` (LEVELS)."""
    allowed = LEVELS[level]
    for op in module.walk():
        dialect = op.name.split(".", 1)[0]
        if dialect not in allowed:
            raise NpucError(f"{_describe(op)} is above the {level} level")
        values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
        if "qnn" not in allowed and any(quantized_type(v.type) for v in values):
            raise NpucError(f"{_describe(op)} has quantized tensors, above the {level} level")


def random_inputs(module: ModuleOp, skip: Collection[str] = (), seed: int = 0) -> dict:
    """Seeded standard-normal inputs; a quantized argument gets reals (quantized on entry).

    Uses the same random stream, so a float model and its quantized version get the same data.
    """
    func = graph_io.entry_function(module)
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, ty in zip(graph_io.input_names(func), func.function_type.inputs, strict=True):
        if name in skip:
            continue
        if not isinstance(ty, TensorType) or any(d < 0 for d in ty.get_shape()):
            raise NpucError(f"input '{name}' has type {ty}; npuc runs functions whose inputs "
                            "are statically shaped tensors")  # fmt: skip
        shape = tuple(ty.get_shape())
        quantized = quantized_type(ty) is not None
        try:
            dtype = np.dtype(np.float32) if quantized else numpy_dtype(ty.get_element_type())
        except TypeError:
            raise NpucError(f"input '{name}' has element type {ty.get_element_type()}, which "
                            "npuc cannot run") from None  # fmt: skip
        check_tensor(shape, dtype.itemsize, f"input '{name}'")
        if np.issubdtype(dtype, np.floating):
            feeds[name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[name] = rng.integers(0, 2, shape).astype(dtype)
    return feeds


def dequantized_outputs(module: ModuleOp, outputs: Mapping[str, np.ndarray]) -> dict:
    """Outputs by name; a quantized one as NAME (dequantized f32) and NAME.q (stored integers)."""
    func = graph_io.entry_function(module)
    types = dict(zip(graph_io.output_names(func), func.function_type.outputs, strict=True))
    result: dict[str, np.ndarray] = {}
    for name, array in outputs.items():
        q = quantized_type(types[name])
        if q is None:
            result[name] = array
            continue
        scales, zps = q.broadcast_params(array.ndim)
        result[name] = integer.dequantize(array, scales, zps)
        result[f"{name}.q"] = array
    return result


from .kernels import qnn_int16_lut as _qnn_int16_lut  # noqa: E402, F401
from .kernels import qnn_more as _qnn_more  # noqa: E402, F401  (registers those kernels)
from .kernels import qnn_transpose as _qnn_transpose  # noqa: E402, F401
