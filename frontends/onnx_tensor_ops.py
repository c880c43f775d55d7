"""ONNX data-movement and shape nodes: folded with numpy on constants, `nn` ops otherwise."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import StringAttr, TensorType, i64

from npuc.dialects import nn
from npuc.dialects.nn_shapes import broadcast
from npuc.tensors import numpy_dtype

from .onnx_elementwise import f32_attr, i64_attr
from .onnx_fold import NARROW, onnx_dtype
from .onnx_graph import Converter, NodeContext, Unsupported, Value, element_for, element_of


def _axis(axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ValueError(f"axis {axis} out of range for rank {rank}")
    return axis % rank if rank else 0


def _axes(axes: Sequence[int], rank: int) -> list[int]:
    normalized = [_axis(int(a), rank) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"repeated axes {list(axes)}")
    return normalized


def _reshaped(ctx: NodeContext, shape: Sequence[int]) -> list[Value]:
    data = ctx.const(0)
    if data is not None:
        return [data.reshape(shape)]
    return [ctx.reshape(ctx.value(0), shape)]


def reshape_target(shape: Sequence[int], target: Sequence[int], allowzero: bool) -> list[int]:
    """ONNX Reshape: 0 copies the input dimension (unless allowzero), -1 is inferred."""
    out = []
    for i, d in enumerate(target):
        if d == 0 and not allowzero:
            if i >= len(shape):
                raise ValueError(f"shape {list(target)} copies dimension {i} the input lacks")
            out.append(shape[i])
        elif d < -1:
            raise ValueError(f"invalid dimension {d} in shape {list(target)}")
        else:
            out.append(d)
    total = math.prod(shape)
    if out.count(-1) > 1:
        raise ValueError(f"shape {list(target)} has more than one -1")
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        if known == 0 or total % known:
            raise ValueError(f"cannot reshape {tuple(shape)} into {list(target)}")
        out[out.index(-1)] = total // known
    if math.prod(out) != total:
        raise ValueError(f"cannot reshape {tuple(shape)} into {list(target)}")
    return out


def _reshape(ctx: NodeContext) -> list[Value]:
    target = ctx.ints(1, "shape") if ctx.has(1) else list(ctx.attr("shape", []))
    return _reshaped(ctx, reshape_target(ctx.shape(0), target, bool(ctx.attr("allowzero", 0))))


def _flatten(ctx: NodeContext) -> list[Value]:
    shape = ctx.shape(0)
    axis = int(ctx.attr("axis", 1))
    if not -len(shape) <= axis <= len(shape):
        raise ValueError(f"axis {axis} out of range for rank {len(shape)}")
    axis += len(shape) if axis < 0 else 0
    return _reshaped(ctx, (math.prod(shape[:axis]), math.prod(shape[axis:])))


def _axes_input(ctx: NodeContext) -> list[int] | None:
    if "axes" in ctx.attrs:
        return [int(a) for a in ctx.attr("axes")]
    if ctx.has(1):
        return ctx.ints(1, "axes")
    return None


def _squeeze(ctx: NodeContext) -> list[Value]:
    shape = ctx.shape(0)
    axes = _axes_input(ctx)
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = _axes(axes, len(shape))
    if any(shape[a] != 1 for a in axes):
        raise ValueError(f"cannot squeeze axes {axes} of shape {shape}")
    return _reshaped(ctx, [d for i, d in enumerate(shape) if i not in axes])


def _unsqueeze(ctx: NodeContext) -> list[Value]:
    shape = list(ctx.shape(0))
    axes = _axes_input(ctx)
    if axes is None:
        raise ValueError("Unsqueeze needs axes")
    axes = _axes(axes, len(shape) + len(axes))
    dims = iter(shape)
    return _reshaped(ctx, [1 if i in axes else next(dims) for i in range(len(shape) + len(axes))])


def _transpose(ctx: NodeContext) -> list[Value]:
    rank = ctx.rank(0)
    perm = [int(p) for p in ctx.attr("perm", list(range(rank))[::-1])]
    if sorted(perm) != list(range(rank)):
        raise ValueError(f"perm {perm} is not a permutation of rank {rank}")
    data = ctx.const(0)
    if data is not None:
        return [np.transpose(data, perm)]
    return [ctx.transpose(ctx.value(0), perm)]


def _concat(ctx: NodeContext) -> list[Value]:
    present = [i for i in range(ctx.num_inputs) if ctx.has(i)]
    if not present:
        raise ValueError("Concat needs inputs")
    shapes = [ctx.shape(i) for i in present]
    axis = _axis(int(ctx.attr("axis")), len(shapes[0]))
    consts = [ctx.const(i) for i in present]
    if all(c is not None for c in consts):
        return [np.concatenate(consts, axis=axis).astype(consts[0].dtype, copy=False)]
    kept = [i for i, s in zip(present, shapes, strict=True) if s[axis] != 0]
    operands, element = ctx.values(kept)
    if len(operands) == 1:
        return operands
    return [ctx.emit(nn.ConcatOp, [*operands], {"axis": i64_attr(axis)}, element_type=element)]


def _split(ctx: NodeContext) -> list[Value]:
    shape = ctx.shape(0)
    axis = _axis(int(ctx.attr("axis", 0)), len(shape))
    dim = shape[axis]
    count = len(ctx.node.output)
    if "split" in ctx.attrs:
        sizes = [int(s) for s in ctx.attr("split")]
    elif ctx.has(1):
        sizes = ctx.ints(1, "split")
    elif "num_outputs" in ctx.attrs:
        parts = int(ctx.attr("num_outputs"))
        chunk = -(-dim // parts)
        sizes = [chunk] * (parts - 1) + [dim - chunk * (parts - 1)]
    else:
        if dim % count:
            raise ValueError(f"cannot split {dim} into {count} equal parts")
        sizes = [dim // count] * count
    if len(sizes) != count or sum(sizes) != dim or any(s < 0 for s in sizes):
        raise ValueError(f"split sizes {sizes} do not cut {dim} into {count} outputs")
    data = ctx.const(0)
    if data is not None:
        return list(np.split(data, np.cumsum(sizes)[:-1], axis=axis))
    x = ctx.value(0)
    types = [TensorType(element_of(x), (*shape[:axis], s, *shape[axis + 1 :])) for s in sizes]
    op = ctx.emit_op(nn.SplitOp, [x], {"axis": i64_attr(axis)}, result_types=types)
    return list(op.results)


def normalize_slice(
    shape: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int] | None,
    steps: Sequence[int] | None,
) -> tuple[list[int], list[int], list[int]]:
    """Per-dimension (start, end, step) as nn.slice wants them, from ONNX's clamped form."""
    rank = len(shape)
    axes = _axes(axes if axes is not None else range(len(starts)), rank)
    steps = list(steps) if steps is not None else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ValueError("starts, ends, axes and steps must have one length")
    out_starts, out_ends, out_steps = [0] * rank, list(shape), [1] * rank
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
        dim = shape[axis]
        if step == 0:
            raise ValueError("slice step must not be zero")
        start += dim if start < 0 else 0
        end += dim if end < 0 else 0
        if step > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        out_starts[axis], out_ends[axis], out_steps[axis] = start, end, step
    return out_starts, out_ends, out_steps


def _slice(ctx: NodeContext) -> list[Value]:
    if ctx.opset < 10:
        starts, ends = ctx.attr("starts", []), ctx.attr("ends", [])
        axes, steps = ctx.attr("axes"), None
    else:
        starts, ends = ctx.ints(1, "starts"), ctx.ints(2, "ends")
        axes = ctx.ints(3, "axes") if ctx.has(3) else None
        steps = ctx.ints(4, "steps") if ctx.has(4) else None
    shape = ctx.shape(0)
    starts, ends, steps = normalize_slice(shape, starts, ends, axes, steps)
    data = ctx.const(0)
    if data is not None:
        index = tuple(
            slice(s, e if e >= 0 else None, st)
            for s, e, st in zip(starts, ends, steps, strict=True)
        )
        return [data[index]]
    x = ctx.value(0)
    if starts == [0] * len(shape) and ends == list(shape) and steps == [1] * len(shape):
        return [x]
    props = {"starts": nn.ints(starts), "ends": nn.ints(ends), "steps": nn.ints(steps)}
    return [ctx.emit(nn.SliceOp, [x], props, element_type=element_of(x))]


PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _pad(ctx: NodeContext) -> list[Value]:
    rank = ctx.rank(0)
    mode = ctx.attr("mode", "constant")
    if mode not in PAD_MODES:
        raise Unsupported(f"mode '{mode}' not supported")
    if ctx.opset < 11:
        pads, value = [int(p) for p in ctx.attr("pads", [])], float(ctx.attr("value", 0.0))
        axes = None
    else:
        pads = ctx.ints(1, "pads")
        constant = ctx.need_const(2, "constant_value") if ctx.has(2) else None
        value = float(constant.reshape(-1)[0]) if constant is not None and constant.size else 0.0
        axes = ctx.ints(3, "axes") if ctx.has(3) else None
    if axes is not None:
        axes = _axes(axes, rank)
        if len(pads) != 2 * len(axes):
            raise ValueError(f"pads {pads} do not match axes {axes}")
        full = [0] * (2 * rank)
        for k, a in enumerate(axes):
            full[a], full[a + rank] = pads[k], pads[k + len(axes)]
        pads = full
    if len(pads) != 2 * rank:
        raise ValueError(f"pads {pads} must have {2 * rank} values")
    data = ctx.const(0)
    if not any(pads):
        return [data if data is not None else ctx.value(0)]
    if data is not None and min(pads) >= 0:
        widths = list(zip(pads[:rank], pads[rank:], strict=True))
        if mode == "constant":
            return [np.pad(data, widths, mode="constant", constant_values=value)]
        return [np.pad(data, widths, mode=mode)]
    props = {"pads": nn.ints(pads), "mode": StringAttr(mode), "value": f32_attr(value)}
    x = ctx.value(0)
    return [ctx.emit(nn.PadOp, [x], props, element_type=element_of(x))]


def _gather(ctx: NodeContext) -> list[Value]:
    shape = ctx.shape(0)
    axis = _axis(int(ctx.attr("axis", 0)), len(shape))
    props = {"axis": i64_attr(axis)}
    constant = ctx.const(1)
    if constant is None:  # run-time indices (i32 or i64), checked when the gather runs
        x = ctx.value(0)
        return [ctx.emit(nn.GatherOp, [x, ctx.value(1)], props, element_type=element_of(x))]
    indices = constant.astype(np.int64)
    dim = shape[axis]
    if indices.size and (indices.min() < -dim or indices.max() >= dim):
        raise ValueError(f"indices out of range for dimension {dim}")
    data = ctx.const(0)
    if data is not None:
        return [np.take(data, indices, axis=axis)]
    x = ctx.value(0)
    indices_value = ctx.constant(indices, i64)
    return [ctx.emit(nn.GatherOp, [x, indices_value], props, element_type=element_of(x))]


def _expand(ctx: NodeContext) -> list[Value]:
    shape = ctx.shape(0)
    out = broadcast(shape, ctx.ints(1, "shape"))
    data = ctx.const(0)
    if data is not None:
        return [np.broadcast_to(data, out)]
    x = ctx.value(0)
    if out == shape:
        return [x]
    return [ctx.emit(nn.BroadcastOp, [x], result_types=[TensorType(element_of(x), out)])]


def _tile(ctx: NodeContext) -> list[Value]:
    shape = ctx.shape(0)
    repeats = ctx.ints(1, "repeats")
    if len(repeats) != len(shape) or any(r < 0 for r in repeats):
        raise ValueError(f"repeats {repeats} do not fit shape {shape}")
    data = ctx.const(0)
    if data is not None:
        return [np.tile(data, repeats)]
    x = ctx.value(0)
    if all(r == 1 for r in repeats):
        return [x]
    interleaved = [v for d in shape for v in (1, d)]
    tiled = [v for r, d in zip(repeats, shape, strict=True) for v in (r, d)]
    y = ctx.reshape(x, interleaved)
    y = ctx.emit(nn.BroadcastOp, [y], result_types=[TensorType(element_of(x), tiled)])
    return [ctx.reshape(y, [r * d for r, d in zip(repeats, shape, strict=True)])]


def _depth_to_space(ctx: NodeContext) -> list[Value]:
    mode = ctx.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise Unsupported(f"mode '{mode}' not supported")
    props = {"block_size": i64_attr(ctx.attr("blocksize")), "mode": StringAttr(mode)}
    x = ctx.value(0)
    return [ctx.emit(nn.DepthToSpaceOp, [x], props, element_type=element_of(x))]


def _space_to_depth(ctx: NodeContext) -> list[Value]:
    props = {"block_size": i64_attr(ctx.attr("blocksize"))}
    x = ctx.value(0)
    return [ctx.emit(nn.SpaceToDepthOp, [x], props, element_type=element_of(x))]


def _shape(ctx: NodeContext) -> list[Value]:
    shape = ctx.shape(0)
    start, end = ctx.attr("start", 0), ctx.attr("end")
    return [np.array(shape[start:end], dtype=np.int64)]


def _size(ctx: NodeContext) -> list[Value]:
    return [np.array(math.prod(ctx.shape(0)), dtype=np.int64)]


def _dropout(ctx: NodeContext) -> list[Value]:
    if ctx.has(2) and bool(ctx.need_const(2, "training_mode").reshape(-1)[0]):
        raise Unsupported("training_mode=1 not supported")
    x = ctx.input(0)
    mask = None
    if ctx.output_used(1):
        mask_type = np.bool_ if ctx.opset >= 10 else np.float32
        mask = np.broadcast_to(np.ones((), mask_type), ctx.shape(0))
    return [x, mask]


def _cast_runtime(ctx: NodeContext, target: np.dtype) -> list[Value]:
    """Cast of a run-time value; wider floats stay f32, as nn computes in float32."""
    if (target.kind == "f" and target.itemsize < 4) or target in NARROW:
        raise Unsupported(f"cast to {NARROW.get(target, target)} at run time not supported")
    x = ctx.value(0)
    element = element_for(target)
    if element_of(x) == element:
        return [x]
    return [ctx.emit(nn.CastOp, [x], element_type=element)]


def _cast(ctx: NodeContext) -> list[Value]:
    return _cast_runtime(ctx, onnx_dtype(int(ctx.attr("to"))))


def _cast_like(ctx: NodeContext) -> list[Value]:
    like = ctx.input(1)
    if isinstance(like, np.ndarray):
        return _cast_runtime(ctx, like.dtype)
    return _cast_runtime(ctx, numpy_dtype(element_of(like)))


CONVERTERS: dict[str, Converter] = {
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Transpose": _transpose,
    "Concat": _concat,
    "Split": _split,
    "Slice": _slice,
    "Pad": _pad,
    "Gather": _gather,
    "Expand": _expand,
    "Tile": _tile,
    "DepthToSpace": _depth_to_space,
    "SpaceToDepth": _space_to_depth,
    "Shape": _shape,
    "Size": _size,
    "Dropout": _dropout,
    "Cast": _cast,
    "CastLike": _cast_like,
}
