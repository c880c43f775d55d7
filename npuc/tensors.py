"""Conversion between numpy arrays and xDSL dense attributes, without per-element loops."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute

_TO_XDSL: dict[np.dtype, Attribute] = {
    np.dtype(np.float32): f32,
    np.dtype(np.float64): f64,
    np.dtype(np.float16): f16,
    np.dtype(np.int64): i64,
    np.dtype(np.int32): i32,
    np.dtype(np.int16): i16,
    np.dtype(np.int8): i8,
    np.dtype(np.bool_): i1,
    **{np.dtype(f"u{w // 8}"): IntegerType(w, Signedness.UNSIGNED) for w in (8, 16, 32, 64)},
}


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype that stores an xDSL element type."""
    if isinstance(element_type, Float32Type):
        return np.dtype(np.float32)
    if isinstance(element_type, Float64Type):
        return np.dtype(np.float64)
    if isinstance(element_type, Float16Type):
        return np.dtype(np.float16)
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return np.dtype(np.bool_)
        unsigned = element_type.signedness.data == Signedness.UNSIGNED
        return np.dtype(f"{'u' if unsigned else 'i'}{max(8, width) // 8}")
    raise TypeError(f"no numpy dtype for element type {element_type}")


def element_bytes(element_type: Attribute) -> int:
    """Bytes per element of a tensor of `element_type` (a quantized type: its storage;
    a type numpy cannot hold: 8, for size checks)."""
    storage = getattr(element_type, "storage_dtype", None)
    if callable(storage):
        return storage().itemsize
    try:
        return numpy_dtype(element_type).itemsize
    except TypeError:
        return 8


def xdsl_type(dtype: np.dtype) -> Attribute:
    try:
        return _TO_XDSL[np.dtype(dtype)]
    except KeyError:
        raise TypeError(f"no xDSL element type for numpy dtype {dtype}") from None


def to_dense(array: np.ndarray, element_type: Attribute | None = None) -> DenseIntOrFPElementsAttr:
    """A dense attribute holding `array`'s bytes (little-endian, row-major)."""
    element_type = element_type or xdsl_type(array.dtype)
    data = np.ascontiguousarray(array, dtype=numpy_dtype(element_type).newbyteorder("<"))
    ty = TensorType(element_type, array.shape)
    return DenseIntOrFPElementsAttr(ty, BytesAttr(data.tobytes()))  # type: ignore[arg-type]


def from_dense(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """A read-only numpy view of a dense attribute's bytes."""
    dtype = numpy_dtype(attr.get_element_type()).newbyteorder("<")
    shape = tuple(attr.get_shape())
    flat = np.frombuffer(attr.data.data, dtype=dtype)
    if flat.size == 1 and int(np.prod(shape)) != 1:
        return np.broadcast_to(flat.reshape(()), shape)
    return flat.reshape(shape)
