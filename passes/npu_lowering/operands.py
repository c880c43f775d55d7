"""What the lowering rules share: activation zero points, the output stage, bias and scale
tables, and constants appended to the constants region."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from npuc.dialects import qnn, tile
from npuc.dialects.arrays import int_values
from npuc.dialects.npu_isa import DTYPES, TensorRef, dtype_range, row_major
from npuc.passes.memory.ir import constant_bytes, element_dtype, is_constant

from .builder import Builder, LoweringError


def activation_zero_point(value: SSAValue) -> int:
    q = qnn.qtype(value)
    if q.per_axis:
        raise LoweringError("per-axis quantized activations have no NPU instruction")
    return q.zero_point


def output_stage(op: qnn.Requantizing) -> dict[str, Any]:
    lo, hi = op.clamp_bounds()
    return {
        "ofm_zero_point": activation_zero_point(op.results[0]),
        "clamp_min": lo,
        "clamp_max": hi,
        "rounding": op.rounding.data,
    }


def constant_values(value: SSAValue, cache: dict[Operation, np.ndarray]) -> np.ndarray | None:
    """The elements of a value computed from constants by loads and slices (else None)."""
    owner = value.owner
    if isinstance(owner, Operation) and is_constant(owner):
        if owner not in cache:
            ty = value.type
            assert isinstance(ty, TensorType)
            dtype = element_dtype(ty.get_element_type()).newbyteorder("<")
            data = np.frombuffer(constant_bytes(owner), dtype)
            cache[owner] = data.reshape(ty.get_shape())
        return cache[owner]
    if isinstance(owner, tile.LoadOp | tile.SliceOp):
        source = constant_values(owner.source, cache)
        if source is None:
            return None
        shape = owner.result.type.get_shape()
        index = tuple(
            slice(o, o + n) for o, n in zip(int_values(owner.offsets), shape, strict=True)
        )
        return source[index]
    return None


def bias_scale_table(
    b: Builder, op: qnn.Requantizing, channels: int, bias: SSAValue | None, wzp: tuple[int, ...]
) -> TensorRef:
    rows = np.zeros((channels, 4), "<i4")
    if bias is not None:
        values = constant_values(bias, b.cache)
        if values is None:
            raise LoweringError("its bias is not a constant (the NPU reads it from a table)")
        rows[:, 0] = values.reshape(-1)
    rows[:, 1] = int_values(op.multiplier)
    rows[:, 2] = int_values(op.shift)
    rows[:, 3] = wzp
    offset = b.constants.add(rows)
    return TensorRef("constants", offset, (channels, 4), (4, 1), "i32")


def weight_zero_points(weight: SSAValue, channels: int) -> tuple[int, ...]:
    zps = qnn.qtype(weight).zero_point_values()
    return zps if len(zps) == channels else zps * channels


def append_constant(b: Builder, values: np.ndarray, dtype: str | None = None) -> TensorRef:
    """`values` appended to the constants region, in the narrowest of i8, i16, i32."""
    if dtype is None:
        lo, hi = int(values.min()), int(values.max())
        dtype = next(
            d for d in ("i8", "i16", "i32") if dtype_range(d)[0] <= lo and hi <= dtype_range(d)[1]
        )
    offset = b.constants.add(np.ascontiguousarray(values, DTYPES[dtype][1]))
    return TensorRef("constants", offset, values.shape, row_major(values.shape), dtype)
