"""Reference interpreter for the `nn` dialect: whole-tensor numpy kernels in float32
(integer and boolean tensors in their own dtype, with runtime/kernels/logic.py's rules).

`KERNELS` (the table in runtime/interpreter_kernels.py) maps each op class to a function
`(op, args) -> results`; a plugin's ops take theirs from the plugin (docs/plugins.md).
`evaluate_op` runs one op (used by constant folding), `run_function`/`run_module` run a
whole graph, freeing each intermediate once its last user has run.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, Literal, TypeAlias, TypeVar, overload

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from npuc import graph_io
from npuc.diagnostics import InputError, KernelError, NpucError, note_context
from npuc.dialects import nn
from npuc.dialects.nn_base import ActivationFusable
from npuc.limits import check_tensor
from npuc.tensors import element_bytes, numpy_dtype

from .in_place import in_place_ops
from .interpreter_kernels import KERNELS
from .kernel_api import Kernel, optional_float, plugin_kernel
from .kernels import elementwise as ew
from .nn_kernels import arith_constant

Keep: TypeAlias = Literal["all"] | Collection[str]
K = TypeVar("K", bound=Kernel)


def register_kernel(op_type: type[Operation]) -> Callable[[K], K]:
    """Decorator registering a kernel for `op_type`; a later registration replaces earlier ones."""

    def decorate(kernel: K) -> K:
        KERNELS[op_type] = kernel
        return kernel

    return decorate


def kernel_for(op_type: type[Operation]) -> Kernel | None:
    """The kernel of `op_type` or of its nearest registered base class; a plugin's op has
    its plugin's kernel."""
    for cls in op_type.__mro__:
        if cls in KERNELS:
            return KERNELS[cls]
    if op_type.name == ARITH_CONSTANT:
        return arith_constant
    return plugin_kernel(op_type)


def evaluate_op(op: Operation, args: list[np.ndarray]) -> list[np.ndarray]:
    """Results of `op` on concrete operand arrays, including any fused activation.

    Raises NotImplementedError for an op without a kernel. Results may be
    read-only views of the arguments (e.g. reshape, transpose).
    """
    kernel = kernel_for(type(op))
    if kernel is None:
        raise NotImplementedError(f"no reference kernel for '{op.name}'")
    with np.errstate(all="ignore"):  # IEEE results (inf, NaN) are the intended semantics
        results = [np.asarray(r) for r in kernel(op, args)]
        if isinstance(op, ActivationFusable) and op.activation is not None:
            y = results[0]
            if not y.flags.writeable or any(np.may_share_memory(y, a) for a in args):
                y = y.copy()
            results[0] = _activate(op, y)
    return results


def evaluate_into_first(op: Operation, ufunc: np.ufunc, args: list[np.ndarray]) -> np.ndarray:
    """`evaluate_op` of an elementwise op (in_place.py) written into its first operand."""
    with np.errstate(all="ignore"):
        y = ufunc(args[0], args[1], out=args[0])
        return _activate(op, y) if op.activation is not None else y  # type: ignore[attr-defined]


def _activate(op: Any, y: np.ndarray) -> np.ndarray:
    return ew.apply_activation(
        y,
        op.activation.data,
        optional_float(op.activation_min),
        optional_float(op.activation_max),
        optional_float(op.activation_alpha),
    )


# --------------------------------------------------------------------------- graph execution

CONSTANT_OPS: tuple[type[Operation], ...] = (nn.ConstantOp,)
# Recognised by its name: importing xDSL's arith dialect takes 15 ms, and only IR that holds
# an arith op needs it (the parser imports it then).
ARITH_CONSTANT = "arith.constant"


def is_constant(op: Operation, classes: tuple[type[Operation], ...] = CONSTANT_OPS) -> bool:
    """Whether `op` is a constant: an instance of `classes`, or `arith.constant`."""
    return isinstance(op, classes) or op.name == ARITH_CONSTANT


def value_names(func: FuncOp) -> dict[SSAValue, str]:
    """Each value's `%name` as xDSL's printer spells it in `func` (name hint, else a number)."""
    names: dict[SSAValue, str] = {}
    used: dict[str, int] = {}
    counter = 0
    block = func.body.block
    values = [*block.args, *(r for op in block.ops for r in op.results)]
    for value in values:
        if value.name_hint:
            k = used.get(value.name_hint, 0)
            used[value.name_hint] = k + 1
            names[value] = f"%{value.name_hint}" + (f"_{k}" if k else "")
        else:
            names[value] = f"%{counter}"
            counter += 1
    return names


def _layer_name(op: Operation) -> str | None:
    attr = op.properties.get("name")
    return getattr(attr, "data", None) if attr is not None else None


class FunctionRunner:
    """Runs one function on many inputs; liveness and op keys are computed once.

    Subclasses for other levels set `CONSTANTS` and `evaluate` (the op kernels)
    and may override `convert_input` (how an argument's array is accepted).
    """

    CONSTANTS: tuple[type[Operation], ...] = CONSTANT_OPS
    evaluate = staticmethod(evaluate_op)

    def is_constant(self, op: Operation) -> bool:
        """Whether `op` is a constant of this level (`CONSTANTS`, or `arith.constant`)."""
        return is_constant(op, self.CONSTANTS)

    def __init__(self, func: FuncOp):
        self.func = func
        block = func.body.block
        self.ops = [op for op in block.ops if not isinstance(op, ReturnOp)]
        returns = [op for op in block.ops if isinstance(op, ReturnOp)]
        if len(returns) != 1 or block.last_op is not returns[0]:
            raise NpucError(f"function @{func.sym_name.data} must end with one func.return")
        self.results = list(returns[0].operands)
        last_use: dict[SSAValue, int] = {}
        for i, op in enumerate(self.ops):
            for v in op.operands:
                last_use[v] = i
        self.dead_after: list[list[SSAValue]] = [[] for _ in self.ops]
        returned = set(self.results)
        for i, op in enumerate(self.ops):
            for r in op.results:
                if r not in returned:
                    self.dead_after[last_use.get(r, i)].append(r)
        for arg in block.args:
            if arg in last_use and arg not in returned:
                self.dead_after[last_use[arg]].append(arg)
        self.keys = self._op_keys()
        self.in_place = in_place_ops(self.ops, returned)
        self._constants: dict[Operation, list[np.ndarray]] = {}
        self._check_sizes()

    def _check_sizes(self) -> None:
        """Refuse a function with a tensor beyond the size limit before allocating any."""
        names = graph_io.input_names(self.func)
        for name, arg in zip(names, self.func.body.block.args, strict=False):
            _check_size(arg, f"input '{name}'")
        for op in self.ops:
            for r in op.results:
                _check_size(r, f"the result of {describe_op(op)}")

    def _op_keys(self) -> dict[SSAValue, str]:
        """Intermediate-tensor key of each op result: its `name` property, else its `%N`."""
        ssa = value_names(self.func)
        total: dict[str, int] = {}
        for op in self.ops:
            if (name := _layer_name(op)) is not None:
                total[name] = total.get(name, 0) + 1
        seen: dict[str, int] = {}
        keys: dict[SSAValue, str] = {}
        for op in self.ops:
            name = _layer_name(op)
            if name is None:
                keys.update((r, ssa[r]) for r in op.results)
                continue
            k = seen.get(name, 0)
            seen[name] = k + 1
            # Several ops may carry one source node's name; the last one produces its output.
            base = name if k == total[name] - 1 else f"{name}#{k}"
            if len(op.results) == 1:
                keys[op.results[0]] = base
            else:
                keys.update((r, f"{base}:{i}") for i, r in enumerate(op.results))
        return keys

    def _kept(self, keep: Keep | None) -> set[SSAValue]:
        if keep is None:
            return set()
        candidates = [op for op in self.ops if not is_constant(op)]
        if keep == "all":
            return {r for op in candidates for r in op.results}
        wanted = {keep} if isinstance(keep, str) else set(keep)
        chosen: set[SSAValue] = set()
        found: set[str] = set()
        for op in self.ops:
            for r in op.results:
                hit = wanted & {self.keys[r], _layer_name(op)}
                if hit:
                    chosen.add(r)
                    found |= hit
        if wanted - found:
            missing = ", ".join(sorted(wanted - found))
            raise NpucError(f"no layer named {missing} in @{self.func.sym_name.data}")
        return chosen

    def check_inputs(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Inputs as arrays, after checking count, shapes and dtypes against the signature."""
        names = graph_io.input_names(self.func)
        if len(inputs) != len(names):
            raise NpucError(f"the model takes {len(names)} input(s), got {len(inputs)}")
        arrays = []
        for name, value, arg in zip(names, inputs, self.func.body.block.args, strict=True):
            array = np.asarray(value)
            ty = arg.type
            if isinstance(ty, TensorType):
                want = tuple(ty.get_shape())
                if array.shape != want:
                    raise InputError(
                        name, f"input '{name}' has shape {array.shape} but the model expects {want}"
                    )
                array = self.convert_input(name, array, ty)
            arrays.append(array)
        return arrays

    def convert_input(self, name: str, array: np.ndarray, ty: TensorType) -> np.ndarray:
        """The array an argument of type `ty` runs on; the dtype must match exactly."""
        dtype = numpy_dtype(ty.get_element_type())
        if array.dtype != dtype:
            raise InputError(
                name, f"input '{name}' has dtype {array.dtype} but the model expects {dtype}"
            )
        return array

    def _constant(self, op: Operation) -> list[np.ndarray]:
        """A constant's value, converted once and read-only so no kernel can change it."""
        if op not in self._constants:
            results = self.evaluate(op, [])
            for array in results:
                array.flags.writeable = False
            self._constants[op] = results
        return self._constants[op]

    def run(
        self, inputs: Sequence[np.ndarray], keep: Keep | None = None
    ) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
        """Outputs (fresh contiguous arrays) and the kept intermediates keyed by layer name."""
        kept = self._kept(keep)
        arrays = self.check_inputs(inputs)
        env: dict[SSAValue, np.ndarray] = dict(zip(self.func.body.block.args, arrays, strict=True))
        intermediates: dict[str, np.ndarray] = {}
        for op, dead in zip(self.ops, self.dead_after, strict=True):
            ufunc = self.in_place.get(op)
            if ufunc is not None and op.operands[0] not in kept:
                env[op.results[0]] = evaluate_into_first(op, ufunc, [env[v] for v in op.operands])
            else:
                self._step(op, env, kept, intermediates)
            for v in dead:
                env.pop(v, None)
        return [_owned(env[v], arrays) for v in self.results], intermediates

    def steps(
        self,
        inputs: Sequence[np.ndarray],
        intermediates: Mapping[str, np.ndarray] | None = None,
    ) -> Iterator[tuple[Operation, dict[SSAValue, np.ndarray]]]:
        """Run op by op, yielding each op after it ran with the live values (its operands
        and results included; values the op used last are freed after the yield). With the
        `intermediates` of a run already made with keep="all", a replay of it: the same ops
        with the same live values, evaluating nothing but constants."""
        env = dict(zip(self.func.body.block.args, self.check_inputs(inputs), strict=True))
        for op, dead in zip(self.ops, self.dead_after, strict=True):
            if intermediates is None or self.is_constant(op):
                self._step(op, env, set(), {})
            else:
                env.update((r, intermediates[self.keys[r]]) for r in op.results)
            yield op, env
            for v in dead:
                env.pop(v, None)

    def _step(
        self,
        op: Operation,
        env: dict[SSAValue, np.ndarray],
        kept: set[SSAValue],
        intermediates: dict[str, np.ndarray],
    ) -> None:
        """Run one op, storing its results (a separate frame, so no local outlives its use)."""
        try:
            if self.is_constant(op):
                results = self._constant(op)
            else:
                results = self.evaluate(op, [env[v] for v in op.operands])
        except NotImplementedError as e:
            raise NpucError(f"{e} ({describe_op(op)})") from e
        except KernelError as e:
            raise KernelError(f"{describe_op(op)}: {e.message}") from e
        except Exception as e:
            note_context(e, "op", op)
            raise
        for r, array in zip(op.results, results, strict=True):
            env[r] = array
            if r in kept:
                intermediates[self.keys[r]] = array


def _check_size(value: SSAValue, what: str) -> None:
    ty = value.type
    if isinstance(ty, TensorType):
        shape = tuple(ty.get_shape())
        if all(d >= 0 for d in shape):
            check_tensor(shape, element_bytes(ty.get_element_type()), what)


def _owned(array: np.ndarray, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """A contiguous, writeable output that shares no memory with an input or a constant."""
    if (
        array.flags.c_contiguous
        and array.flags.writeable
        and not any(np.may_share_memory(array, x) for x in inputs)
    ):
        return array
    return np.array(array, order="C", copy=True)


def describe_op(op: Operation) -> str:
    name = _layer_name(op)
    return f"layer '{name}' ({op.name})" if name else f"'{op.name}'"


@overload
def run_function(
    func: FuncOp,
    inputs: Sequence[np.ndarray],
    *,
    keep: None = None,
    runner: type[FunctionRunner] = ...,
) -> list[np.ndarray]: ...
@overload
def run_function(
    func: FuncOp,
    inputs: Sequence[np.ndarray],
    *,
    keep: Keep,
    runner: type[FunctionRunner] = ...,
) -> tuple[list[np.ndarray], dict[str, np.ndarray]]: ...
def run_function(
    func: FuncOp,
    inputs: Sequence[np.ndarray],
    *,
    keep: Keep | None = None,
    runner: type[FunctionRunner] = FunctionRunner,
) -> list[np.ndarray] | tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """Run `func` on positional inputs; with `keep`, also return intermediates.

    keep="all" keeps every non-constant op's result; a set of names keeps the
    ops whose key or `name` property is listed. Keys are the op's `name`
    (`name:i` for multi-result ops, `name#k` for earlier ops sharing a name)
    or the printed SSA name such as `%7`. `runner` picks the interpreter class
    (the qnn interpreter passes its own).
    """
    outputs, intermediates = runner(func).run(inputs, keep)
    return outputs if keep is None else (outputs, intermediates)


@overload
def run_module(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray],
    *,
    keep: None = None,
    runner: type[FunctionRunner] = ...,
) -> dict[str, np.ndarray]: ...
@overload
def run_module(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray],
    *,
    keep: Keep,
    runner: type[FunctionRunner] = ...,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]: ...
def run_module(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray],
    *,
    keep: Keep | None = None,
    runner: type[FunctionRunner] = FunctionRunner,
) -> dict[str, np.ndarray] | tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Run the entry function on named inputs; returns outputs by name (and intermediates)."""
    try:
        func = graph_io.entry_function(module)
    except ValueError as e:
        raise NpucError(str(e)) from e
    names = graph_io.input_names(func)
    missing = [n for n in names if n not in inputs]
    extra = sorted(set(inputs) - set(names))
    if missing or extra:
        problems = []
        if missing:
            problems.append("missing input(s) " + ", ".join(f"'{n}'" for n in missing))
        if extra:
            problems.append("unknown input(s) " + ", ".join(f"'{n}'" for n in extra))
        expected = ", ".join(f"'{n}'" for n in names)
        raise NpucError(f"{'; '.join(problems)}; the model's inputs are {expected}")
    outputs, intermediates = runner(func).run([inputs[n] for n in names], keep)
    named = dict(zip(graph_io.output_names(func), outputs, strict=True))
    return named if keep is None else (named, intermediates)


def tensor_names(func: FuncOp) -> dict[SSAValue, str]:
    """Every value's tensor name as the interpreter and calibration key it."""
    keys = dict(FunctionRunner(func).keys)
    keys.update(zip(func.body.block.args, graph_io.input_names(func), strict=True))
    return keys
