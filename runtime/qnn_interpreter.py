"""Reference interpreter for the `qnn` level, and for functions mixing `nn` and `qnn` ops.

`evaluate` runs any op of either level (the integer kernels first, runtime/qnn_kernels.py);
`QuantizedFunctionRunner` (a `FunctionRunner`) runs whole functions, so hybrid graphs whose
float layers sit between `qnn.dequantize` and `qnn.quantize` execute in one pass.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue

from npuc import graph_io, integer
from npuc.diagnostics import InputError, NpucError
from npuc.dialects import qnn
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.limits import check_tensor
from npuc.plugin_registry import is_plugin_op
from npuc.tensors import numpy_dtype

from . import nn_interpreter
from .interpreter_kernels import QNN_KERNELS
from .nn_interpreter import CONSTANT_OPS, FunctionRunner, Keep, describe_op, evaluate_op
from .qnn_kernels import quantize_array, quantized_type


def evaluate(op: Operation, args: list[np.ndarray]) -> list[np.ndarray]:
    """Results of an `nn` or `qnn` op on concrete operands (NotImplementedError if no kernel)."""
    for cls in type(op).__mro__:
        if cls in QNN_KERNELS:
            return [np.asarray(r) for r in QNN_KERNELS[cls](op, args)]
    return evaluate_op(op, args)


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

    CONSTANTS = (*CONSTANT_OPS, qnn.ConstantOp)
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
    """Raise NpucError unless every op and tensor of `module` belongs to `level` (LEVELS;
    a plugin's ops belong to any level their tensors do)."""
    allowed = LEVELS[level]
    for op in module.walk():
        dialect = op.name.split(".", 1)[0]
        if dialect not in allowed and not is_plugin_op(op.name):
            raise NpucError(f"{describe_op(op)} is above the {level} level")
        values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
        if "qnn" not in allowed and any(quantized_type(v.type) for v in values):
            raise NpucError(f"{describe_op(op)} has quantized tensors, above the {level} level")


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
            raise NpucError(
                f"input '{name}' has type {ty}; npuc runs functions whose inputs "
                "are statically shaped tensors"
            )
        shape = tuple(ty.get_shape())
        quantized = quantized_type(ty) is not None
        try:
            dtype = np.dtype(np.float32) if quantized else numpy_dtype(ty.get_element_type())
        except TypeError:
            raise NpucError(
                f"input '{name}' has element type {ty.get_element_type()}, which npuc cannot run"
            ) from None
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
