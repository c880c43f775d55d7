"""Integer array properties shared by the dialects: the `I64Array` constraint, `ints` to build
one and `int_values` to read one back."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import BytesAttr, DenseArrayBase, IntegerType, i64

I64Array = DenseArrayBase.constr(i64)


def ints(values: Sequence[int]) -> DenseArrayBase[IntegerType]:
    """An i64 array property holding `values`."""
    data = list(values)
    try:  # packed at once: from_list normalises each value in Python (MobileNetV2: 73k)
        packed = struct.pack(f"<{len(data)}q", *data)
    except struct.error:  # outside int64, or not integers: from_list's own handling
        return DenseArrayBase.from_list(i64, data)
    return DenseArrayBase(i64, BytesAttr(packed))


def int_values(attr: DenseArrayBase[Any]) -> tuple[int, ...]:
    """The values of an integer array property, as Python ints."""
    if isinstance(attr.elt_type, IntegerType):  # unpacked as ints already
        return attr.get_values()
    return tuple(int(v) for v in attr.get_values())
