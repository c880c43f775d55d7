"""Reference kernels of the `tile` dialect, for the float and the qnn interpreters.

They join the float interpreter's table (runtime/interpreter_kernels.py), which the qnn
interpreter falls back to, so that any runner executes tiled functions. A slice is
a numpy view; a load copies (it is a DMA into another buffer). Insert and store
write into their destination in place when nothing else reads it (it was made by
`tile.empty` or a previous insert/store and has this op as its only user), so
assembling a tensor from n tiles costs one buffer, not n copies; otherwise they copy
first, as value semantics require.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from npuc.dialects import tile
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.tensors import numpy_dtype

from .kernel_api import Kernel

_ASSEMBLING = (tile.EmptyOp, tile.InsertOp, tile.StoreOp)


def _index(offsets, shape) -> tuple[slice, ...]:
    return tuple(slice(o, o + n) for o, n in zip(offsets, shape, strict=True))


def _storage(ty) -> np.dtype:
    assert isinstance(ty, TensorType)
    element = ty.element_type
    if isinstance(element, UniformQuantizedType):
        return element.storage_dtype()
    return numpy_dtype(element)


def _slice(op: tile.SliceOp, a: list[np.ndarray]) -> list[np.ndarray]:
    shape = tuple(op.result.type.get_shape())  # type: ignore[attr-defined]
    return [a[0][_index(op.offsets.get_values(), shape)]]


def _load(op: tile.LoadOp, a: list[np.ndarray]) -> list[np.ndarray]:
    shape = tuple(op.result.type.get_shape())  # type: ignore[attr-defined]
    return [np.array(a[0][_index(op.offsets.get_values(), shape)], order="C")]


def _empty(op: tile.EmptyOp, a: list[np.ndarray]) -> list[np.ndarray]:
    ty = op.result.type
    assert isinstance(ty, TensorType)
    return [np.zeros(tuple(ty.get_shape()), _storage(ty))]


def _assemble(op: Operation, a: list[np.ndarray]) -> list[np.ndarray]:
    source, dest = a
    dest_value = op.operands[1]
    owned = (
        isinstance(dest_value.owner, _ASSEMBLING)
        and dest_value.has_one_use()
        and dest.flags.writeable
        and dest.flags.c_contiguous
    )
    out = dest if owned else np.array(dest, order="C")
    out[_index(op.offsets.get_values(), source.shape)] = source  # type: ignore[attr-defined]
    return [out]


KERNELS: dict[type[Operation], Kernel] = {
    tile.SliceOp: _slice,
    tile.LoadOp: _load,
    tile.EmptyOp: _empty,
    tile.InsertOp: _assemble,
    tile.StoreOp: _assemble,
}
