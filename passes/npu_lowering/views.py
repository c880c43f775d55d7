"""Strided views (`TensorRef`s) of planned values: slices, permutations, broadcasts, reshapes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from npuc.dialects.npu import host_dtype
from npuc.dialects.npu_isa import TensorRef, row_major


class ViewError(ValueError):
    """A view that the instruction set cannot express (the message says why)."""


def shape_of(ty: Attribute) -> tuple[int, ...]:
    """A value's logical shape; scalars are one element."""
    shape = tuple(ty.get_shape()) if isinstance(ty, TensorType) else ()
    return shape or (1,)


def dtype_of(ty: Attribute) -> str:
    dtype = host_dtype(ty if isinstance(ty, TensorType) else TensorType(ty, [1]))
    if dtype is None:
        raise ViewError(f"values of type {ty} have no NPU element type")
    return dtype


def contiguous(region: str, offset: int, ty: Attribute) -> TensorRef:
    shape = shape_of(ty)
    return TensorRef(region, offset, shape, row_major(shape), dtype_of(ty))


def sliced(
    ref: TensorRef, offsets: Sequence[int], shape: Sequence[int], steps: Sequence[int] | None = None
) -> TensorRef:
    """The region [offsets, offsets + shape * steps) of `ref` (element steps per axis)."""
    if not offsets and tuple(shape) == (1,):  # a rank-0 value: one element, as shape_of says
        offsets = (0,) * len(ref.shape)
    steps = steps or [1] * len(shape)
    start = sum(o * s for o, s in zip(offsets, ref.strides, strict=True))
    strides = tuple(s * k for s, k in zip(ref.strides, steps, strict=True))
    return replace(
        ref, offset=ref.offset + start * ref.itemsize, shape=tuple(shape), strides=strides
    )


def permuted(ref: TensorRef, perm: Sequence[int]) -> TensorRef:
    """numpy's transpose(ref, perm) as a view."""
    return replace(
        ref, shape=tuple(ref.shape[p] for p in perm), strides=tuple(ref.strides[p] for p in perm)
    )


def broadcast(ref: TensorRef, shape: Sequence[int]) -> TensorRef:
    """numpy broadcasting of `ref` to `shape`: new and size-1 dimensions get stride 0."""
    extra = len(shape) - len(ref.shape)
    if extra < 0:
        raise ViewError(f"cannot broadcast {list(ref.shape)} to {list(shape)}")
    dims = (1,) * extra + ref.shape
    strides = (0,) * extra + ref.strides
    out = []
    for d, s, want in zip(dims, strides, shape, strict=True):
        if d != want and d != 1:
            raise ViewError(f"cannot broadcast {list(ref.shape)} to {list(shape)}")
        out.append(s if d == want else 0)
    return replace(ref, shape=tuple(shape), strides=tuple(out))


def reshaped(ref: TensorRef, shape: Sequence[int]) -> TensorRef | None:
    """`ref` read row-major as `shape`, when strides allow it without a copy (else None)."""
    shape = tuple(shape)
    if ref.is_contiguous():
        return replace(ref, shape=shape, strides=row_major(shape))
    # Drop size-1 dims, then split or merge dims while their strides stay regular.
    dims = [(d, s) for d, s in zip(ref.shape, ref.strides, strict=True) if d != 1]
    want = [d for d in shape if d != 1]
    strides: list[int] = []
    i = 0
    for d in want:
        if i >= len(dims):
            return None
        size, stride = dims[i]
        if size == d:
            strides.append(stride)
            i += 1
        elif size % d == 0:
            dims[i] = (size // d, stride)
            strides.append(stride * (size // d))
        else:
            merged, j = size, i
            while (
                merged < d and j + 1 < len(dims) and dims[j][1] == dims[j + 1][0] * dims[j + 1][1]
            ):
                j += 1
                merged *= dims[j][0]
            if merged != d:
                return None
            strides.append(dims[j][1])
            i = j + 1
    if i != len(dims):
        return None
    it = iter(strides)
    full = tuple(next(it) if d != 1 else 0 for d in shape)
    return replace(ref, shape=shape, strides=full)


def with_rank(ref: TensorRef, rank: int) -> TensorRef:
    """`ref` with leading size-1 dimensions added, or leading dimensions merged, to `rank`."""
    if len(ref.shape) <= rank:
        extra = rank - len(ref.shape)
        return replace(ref, shape=(1,) * extra + ref.shape, strides=(0,) * extra + ref.strides)
    merged = 1
    for d in ref.shape[: len(ref.shape) - rank + 1]:
        merged *= d
    view = reshaped(ref, (merged, *ref.shape[len(ref.shape) - rank + 1 :]))
    if view is None:
        raise ViewError(f"cannot view {list(ref.shape)} as rank {rank}")
    return view


def same_place(a: TensorRef, b: TensorRef) -> bool:
    """Two views of the very same elements."""
    return (a.region, a.offset, a.dtype) == (b.region, b.offset, b.dtype) and (
        a.shape == b.shape
        and all(s1 == s2 for d, s1, s2 in zip(a.shape, a.strides, b.strides, strict=True) if d > 1)
    )
