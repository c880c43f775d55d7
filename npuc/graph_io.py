"""How a model's entry function names its inputs and outputs.

The entry point is `func.func @main`; each argument and result carries its
source tensor name as `{nn.name = "..."}` in arg_attrs/res_attrs.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp

NAME_ATTR = "nn.name"
ENTRY = "main"


def entry_function(module: ModuleOp) -> FuncOp:
    """`@main`, or the only function of the module."""
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]
    for f in funcs:
        if f.sym_name.data == ENTRY:
            return f
    if len(funcs) == 1:
        return funcs[0]
    raise ValueError("the module has no entry function: expected `func.func @main`")


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
