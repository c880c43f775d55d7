"""How a model's entry function names its inputs and outputs.

The entry point is `func.func @main`; each argument and result carries its
source tensor name as `{nn.name = "..."}` in arg_attrs/res_attrs.

A stateful model (e.g. TFLite resource variables) has state pairs: an argument and
a result that both carry `{nn.state = "<variable>"}`; the argument is the state
when the call starts, the result the state after it. The initial values may be
stored on the function as `nn.state_init = {"<variable>": dense<...>}`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp

from .diagnostics import NpucError

NAME_ATTR = "nn.name"
STATE_ATTR = "nn.state"
STATE_INIT_ATTR = "nn.state_init"
ENTRY = "main"


class ModelStructureError(NpucError, ValueError):
    """A model without the entry function or state pairs the flow needs: a user error, and
    a ValueError whose text is the bare message, for the callers that add their pass's name."""

    def __str__(self) -> str:
        return self.message


def entry_function(module: ModuleOp) -> FuncOp:
    """`@main`, or the only function of the module."""
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]
    for f in funcs:
        if f.sym_name.data == ENTRY:
            return f
    if len(funcs) == 1:
        return funcs[0]
    raise ModelStructureError("the module has no entry function: expected `func.func @main`")


def _names(attrs: ArrayAttr[DictionaryAttr] | None, count: int, prefix: str) -> list[str]:
    names = []
    for i in range(count):
        attr = attrs.data[i].data.get(NAME_ATTR) if attrs is not None else None
        names.append(attr.data if isinstance(attr, StringAttr) else f"{prefix}{i}")
    return names


def input_names(func: FuncOp) -> list[str]:
    return _names(func.arg_attrs, len(func.args), "input_")


def output_names(func: FuncOp) -> list[str]:
    return _names(func.res_attrs, len(func.function_type.outputs), "output_")


def name_attrs(names: Sequence[str]) -> ArrayAttr[DictionaryAttr]:
    return ArrayAttr([DictionaryAttr({NAME_ATTR: StringAttr(n)}) for n in names])


def io_attrs(names: Sequence[str], states: Sequence[str | None]) -> ArrayAttr[DictionaryAttr]:
    """Like `name_attrs`, with `nn.state` on the entries whose state name is not None."""
    return ArrayAttr(
        [
            DictionaryAttr(
                {NAME_ATTR: StringAttr(n)} | ({STATE_ATTR: StringAttr(s)} if s is not None else {})
            )
            for n, s in zip(names, states, strict=True)
        ]
    )


def _states(attrs: ArrayAttr[DictionaryAttr] | None) -> dict[str, int]:
    found = {}
    for i, entry in enumerate(attrs.data if attrs is not None else ()):
        attr = entry.data.get(STATE_ATTR)
        if isinstance(attr, StringAttr):
            found[attr.data] = i
    return found


def state_names(func: FuncOp) -> list[tuple[int, int, str]]:
    """(argument index, result index, variable name) of each state pair, in argument order."""
    args, results = _states(func.arg_attrs), _states(func.res_attrs)
    unpaired = sorted(set(args) ^ set(results))
    if unpaired:
        raise ModelStructureError(
            f"state without both an argument and a result: {', '.join(unpaired)}"
        )
    return [(i, results[name], name) for name, i in args.items()]


def initial_state(module: ModuleOp) -> dict[str, np.ndarray]:
    """Each state argument's initial value, by state name (zeros when none is stored).

    Quantized state holds its stored integers.
    """
    from .tensors import from_dense, numpy_dtype

    func = entry_function(module)
    stored = func.attributes.get(STATE_INIT_ATTR)
    values = stored.data if isinstance(stored, DictionaryAttr) else {}
    state = {}
    for arg, _, name in state_names(func):
        ty = func.function_type.inputs.data[arg]
        assert isinstance(ty, TensorType)
        element = ty.get_element_type()
        storage = getattr(element, "storage_dtype", None)
        dtype = storage() if storage is not None else numpy_dtype(element)
        shape = tuple(ty.get_shape())
        value = values.get(name)
        if isinstance(value, DenseIntOrFPElementsAttr):
            state[name] = np.array(from_dense(value)).astype(dtype).reshape(shape)
        else:
            state[name] = np.zeros(shape, dtype)
    return state
