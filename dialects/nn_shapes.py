"""Result-shape inference for the `nn` dialect, as pure functions on shape tuples.

The dialect's verifiers and the frontends share these, so an importer never
builds an op whose declared type its verifier would reject.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from xdsl.ir import Attribute

from npuc.shape_text import shape_text, shapes_text

Shape = tuple[int, ...]
#: An op's operand shapes and properties, as shape inference reads them.
Shapes = Sequence[Shape]
Props = Mapping[str, Attribute]


class ShapeError(ValueError):
    """Operand shapes or attributes that no result shape satisfies."""


def broadcast(*shapes: Sequence[int]) -> Shape:
    """Numpy (multidirectional) broadcasting."""
    rank = max((len(s) for s in shapes), default=0)
    result = [1] * rank
    for shape in shapes:
        for i, dim in enumerate(shape, start=rank - len(shape)):
            if dim == result[i] or dim == 1:
                continue
            if result[i] == 1:
                result[i] = dim
            else:
                raise ShapeError(f"shapes {shapes_text(shapes)} do not broadcast")
    return tuple(result)


def normalize_axis(axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ShapeError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def pooled_size(
    size: int,
    kernel: int,
    stride: int,
    pad_begin: int,
    pad_end: int,
    dilation: int,
    ceil_mode: bool,
) -> int:
    """Output length of a sliding window, with ONNX's ceil-mode rule.

    In ceil mode the last window must start inside the input or its leading
    padding; a window starting in the trailing padding is dropped.
    """
    span = dilation * (kernel - 1) + 1
    numerator = size + pad_begin + pad_end - span
    if numerator < 0:
        raise ShapeError(
            f"window of extent {span} does not fit an input of length {size} with padding"
        )
    if ceil_mode:
        out = -(-numerator // stride) + 1
        if (out - 1) * stride >= size + pad_begin:
            out -= 1
        return out
    return numerator // stride + 1


def conv2d(x: Shape, w: Shape, strides: Shape, pads: Shape, dilations: Shape, groups: int) -> Shape:
    if len(x) != 4 or len(w) != 4:
        raise ShapeError(
            f"conv2d needs rank-4 input and weight, got {shape_text(x)} and {shape_text(w)}"
        )
    if groups < 1 or x[1] != w[1] * groups:
        raise ShapeError(f"input channels {x[1]} != weight channels {w[1]} x groups {groups}")
    if w[0] % groups:
        raise ShapeError(f"output channels {w[0]} are not divisible by groups {groups}")
    h = pooled_size(x[2], w[2], strides[0], pads[0], pads[2], dilations[0], False)
    wd = pooled_size(x[3], w[3], strides[1], pads[1], pads[3], dilations[1], False)
    return (x[0], w[0], h, wd)


def conv_transpose2d(
    x: Shape,
    w: Shape,
    strides: Shape,
    pads: Shape,
    dilations: Shape,
    output_padding: Shape,
    groups: int,
) -> Shape:
    if len(x) != 4 or len(w) != 4:
        raise ShapeError(
            "conv_transpose2d needs rank-4 input and weight, "
            f"got {shape_text(x)} and {shape_text(w)}"
        )
    if groups < 1:
        raise ShapeError(f"groups must be >= 1, got {groups}")
    if x[1] != w[0]:
        raise ShapeError(f"input channels {x[1]} != weight input channels {w[0]}")
    if x[1] % groups:
        raise ShapeError(f"input channels {x[1]} are not divisible by groups {groups}")
    spatial = []
    for i in range(2):
        if output_padding[i] >= max(strides[i], dilations[i]):
            raise ShapeError(
                f"output_padding {output_padding[i]} must be smaller than the stride or dilation"
            )
        out = (
            strides[i] * (x[2 + i] - 1)
            + output_padding[i]
            + (w[2 + i] - 1) * dilations[i]
            + 1
            - pads[i]
            - pads[i + 2]
        )
        if out <= 0:
            raise ShapeError("conv_transpose2d output would be empty")
        spatial.append(out)
    return (x[0], w[1] * groups, *spatial)


def pool2d(
    x: Shape,
    kernel: Shape,
    strides: Shape,
    pads: Shape,
    dilations: Shape,
    ceil_mode: bool,
) -> Shape:
    if len(x) != 4:
        raise ShapeError(f"pooling needs a rank-4 NCHW input, got {shape_text(x)}")
    h = pooled_size(x[2], kernel[0], strides[0], pads[0], pads[2], dilations[0], ceil_mode)
    w = pooled_size(x[3], kernel[1], strides[1], pads[1], pads[3], dilations[1], ceil_mode)
    return (x[0], x[1], h, w)


def matmul(a: Shape, b: Shape) -> Shape:
    """Numpy matmul, including the promotion of 1-D operands."""
    if not a or not b:
        raise ShapeError("matmul operands must have rank >= 1")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ShapeError(f"matmul contraction mismatch: {shape_text(a)} and {shape_text(b)}")
    batch = broadcast(a2[:-2], b2[:-2])
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def reduce(x: Shape, axes: Sequence[int], keepdims: bool) -> Shape:
    rank = len(x)
    norm = {normalize_axis(a, rank) for a in axes} if axes else set(range(rank))
    if keepdims:
        return tuple(1 if i in norm else d for i, d in enumerate(x))
    return tuple(d for i, d in enumerate(x) if i not in norm)


def transpose(x: Shape, perm: Sequence[int]) -> Shape:
    if sorted(perm) != list(range(len(x))):
        raise ShapeError(f"perm {tuple(perm)} is not a permutation of rank {len(x)}")
    return tuple(x[p] for p in perm)


def concat(shapes: Sequence[Shape], axis: int) -> Shape:
    if not shapes:
        raise ShapeError("concat needs at least one operand")
    rank = len(shapes[0])
    axis = normalize_axis(axis, rank)
    for s in shapes:
        if len(s) != rank or any(s[i] != shapes[0][i] for i in range(rank) if i != axis):
            raise ShapeError(f"concat operands {shapes_text(shapes)} differ outside axis {axis}")
    return (*shapes[0][:axis], sum(s[axis] for s in shapes), *shapes[0][axis + 1 :])


def check_split(x: Shape, pieces: Sequence[Shape], axis: int) -> None:
    """The pieces of a split must be at least one and tile `x` along `axis`."""
    if not pieces:
        raise ShapeError("needs at least one result")
    joined = concat(pieces, normalize_axis(axis, len(x)))
    if joined != x:
        raise ShapeError(
            f"result pieces {shapes_text(pieces)} make {shape_text(joined)}, "
            f"not the input {shape_text(x)}"
        )


def slice_length(start: int, end: int, step: int) -> int:
    """Length of range(start, end, step) where end == -1 with step < 0 means 'through 0'."""
    if step == 0:
        raise ShapeError("slice step must not be zero")
    return max(0, math.ceil((end - start) / step))


def slice_(x: Shape, starts: Sequence[int], ends: Sequence[int], steps: Sequence[int]) -> Shape:
    if not len(starts) == len(ends) == len(steps) == len(x):
        raise ShapeError("slice needs one start, end and step per dimension")
    out = []
    for dim, start, end, step in zip(x, starts, ends, steps, strict=True):
        lo, hi = (0, dim) if step > 0 else (0, dim - 1)
        if not (lo <= start <= hi) and not (dim == 0 and start == 0):
            raise ShapeError(f"slice start {start} is outside [{lo}, {hi}]")
        if not (-1 <= end <= dim):
            raise ShapeError(f"slice end {end} is outside [-1, {dim}]")
        out.append(slice_length(start, end, step))
    return tuple(out)


def pad(x: Shape, pads: Sequence[int]) -> Shape:
    rank = len(x)
    if len(pads) != 2 * rank:
        raise ShapeError(f"pad needs {2 * rank} values (begins then ends), got {len(pads)}")
    out = tuple(d + pads[i] + pads[i + rank] for i, d in enumerate(x))
    if any(d < 0 for d in out):
        raise ShapeError(f"negative padding removes more than the input holds: {shape_text(out)}")
    return out


def _check_block(x: Shape, block: int) -> None:
    if len(x) != 4:
        raise ShapeError(f"expects a rank-4 NCHW input, got {shape_text(x)}")
    if block < 1:
        raise ShapeError(f"block_size must be >= 1, got {block}")


def depth_to_space(x: Shape, block: int) -> Shape:
    _check_block(x, block)
    if x[1] % (block * block):
        raise ShapeError(f"channels {x[1]} are not divisible by block_size^2 = {block * block}")
    return (x[0], x[1] // (block * block), x[2] * block, x[3] * block)


def space_to_depth(x: Shape, block: int) -> Shape:
    _check_block(x, block)
    if x[2] % block or x[3] % block:
        raise ShapeError(f"space_to_depth: spatial dims {x[2:]} not divisible by block {block}")
    return (x[0], x[1] * block * block, x[2] // block, x[3] // block)


def gather(x: Shape, indices: Shape, axis: int) -> Shape:
    axis = normalize_axis(axis, len(x))
    return (*x[:axis], *indices, *x[axis + 1 :])
