"""What an interpreter kernel is, and how kernels read their op's properties.

A kernel is a function `(op, args) -> results` on numpy arrays; the tables that map op
classes to kernels are listed in runtime/interpreter_kernels.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr
from xdsl.ir import Attribute, Operation

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
