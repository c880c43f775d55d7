"""What an interpreter kernel is, and how kernels read their op's properties.

A kernel is a function `(op, args) -> results` on numpy arrays; the tables that map op
classes to kernels are listed in runtime/interpreter_kernels.py, and a plugin's ops find
theirs in the plugin (`plugin_kernel`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr
from xdsl.ir import Attribute, Operation

from npuc import plugin_registry
from npuc.plugins import plugin_code

Kernel: TypeAlias = Callable[[Operation, list[np.ndarray]], list[np.ndarray]]


def scalar(attr: Attribute) -> Any:
    """The Python value of an IntegerAttr, FloatAttr or StringAttr property."""
    return attr.data if isinstance(attr, StringAttr) else attr.value.data  # type: ignore[attr-defined]


def optional_float(attr: Attribute | None) -> float | None:
    """A FloatAttr property's value, None when absent."""
    return float(attr.value.data) if isinstance(attr, FloatAttr) else None


def flag(attr: Attribute | None) -> bool:
    """A boolean (integer) property's value, False when absent."""
    return isinstance(attr, IntegerAttr) and bool(attr.value.data)


def optional_arg(args: list[np.ndarray], index: int) -> np.ndarray | None:
    """An optional trailing operand (bias)."""
    return args[index] if len(args) > index else None


def plugin_kernel(op_type: type[Operation]) -> Kernel | None:
    """The reference kernel a plugin gives for its op (float or integer), or None; a fault
    in it is reported naming the plugin, the op and its layer."""
    found = plugin_registry.op_entry("kernels", op_type.name)
    if found is None:
        return None
    loaded, function = found

    def kernel(op: Operation, args: list[np.ndarray]) -> list[np.ndarray]:
        with plugin_code(loaded.name, f"the kernel of {_described(op)}", loaded.home):
            return list(function(op, args))

    return kernel


def _described(op: Operation) -> str:
    layer = op.properties.get("name")
    return f"'{op.name}'" + (f" (layer '{layer.data}')" if isinstance(layer, StringAttr) else "")
