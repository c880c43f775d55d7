"""Integer array properties shared by the dialects: the `I64Array` constraint, `ints` to build
one and `int_values` to read one back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import DenseArrayBase, IntegerType, i64

I64Array = DenseArrayBase.constr(i64)


def ints(values: Sequence[int]) -> DenseArrayBase[IntegerType]:
    """An i64 array property holding `values`."""
    return DenseArrayBase.from_list(i64, list(values))


def int_values(attr: DenseArrayBase[Any]) -> tuple[int, ...]:
    """The values of an integer array property, as Python ints."""
    return tuple(int(v) for v in attr.get_values())
