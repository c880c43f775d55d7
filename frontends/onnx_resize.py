"""ONNX Resize (opsets 10-19) and Upsample (7-9) as `nn.resize` with explicit per-axis scales."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import BoolAttr, DenseArrayBase, StringAttr, TensorType, f32

from npuc.dialects import nn
from npuc.dialects.nn_movement import COORDINATE_MODES, NEAREST_MODES, RESIZE_MODES

from .onnx_elementwise import f32_attr
from .onnx_graph import Converter, NodeContext, Unsupported, Value


def output_size(size: int, scale: float) -> int:
    """floor(size * scale), computed in float32 as onnxruntime does."""
    return math.floor(float(np.float32(size) * np.float32(scale)))


def resize_shape(
    shape: Sequence[int],
    scales: Sequence[float] | None,
    sizes: Sequence[int] | None,
    axes: Sequence[int] | None = None,
    policy: str = "stretch",
) -> tuple[list[int], list[float]]:
    """ONNX output shape and the per-dimension scales that drive the coordinate transform."""
    rank = len(shape)
    axes = [a % rank for a in axes] if axes is not None else list(range(rank))
    full_scales = [1.0] * rank
    out = list(shape)
    if scales is not None:
        if len(scales) != len(axes):
            raise ValueError(f"{len(scales)} scales for {len(axes)} axes")
        for a, s in zip(axes, scales, strict=True):
            if s <= 0:
                raise ValueError(f"scales must be positive, got {list(scales)}")
            full_scales[a] = float(s)
            out[a] = output_size(shape[a], s)
    elif sizes is not None:
        if len(sizes) != len(axes):
            raise ValueError(f"{len(sizes)} sizes for {len(axes)} axes")
        ratios = [
            float(np.float32(n) / np.float32(shape[a])) for a, n in zip(axes, sizes, strict=True)
        ]
        if policy == "stretch":
            for a, n, r in zip(axes, sizes, ratios, strict=True):
                out[a], full_scales[a] = int(n), r
        elif policy in ("not_larger", "not_smaller"):
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                out[a] = math.floor(scale * shape[a] + 0.5)
                full_scales[a] = scale
        else:
            raise Unsupported(f"keep_aspect_ratio_policy '{policy}' not supported")
    else:
        raise ValueError("Resize needs scales or sizes")
    if any(d <= 0 for d in out):
        raise ValueError(f"resize output shape {out} is empty")
    return out, full_scales


def _emit(
    ctx: NodeContext,
    out: Sequence[int],
    scales: Sequence[float],
    mode: str,
    coordinate_mode: str,
    nearest_mode: str,
    cubic_coeff_a: float = -0.75,
    exclude_outside: bool = False,
) -> list[Value]:
    props = {
        "scales": DenseArrayBase.from_list(f32, [float(s) for s in scales]),
        "mode": StringAttr(mode),
        "coordinate_mode": StringAttr(coordinate_mode),
        "nearest_mode": StringAttr(nearest_mode),
        "cubic_coeff_a": f32_attr(cubic_coeff_a),
        "exclude_outside": BoolAttr.from_bool(exclude_outside),
    }
    result = TensorType(f32, [int(d) for d in out])
    return [ctx.emit(nn.ResizeOp, [ctx.operand(0)], props, result_types=[result])]


def _floats(ctx: NodeContext, i: int, what: str) -> list[float] | None:
    """A constant float input, or None when it is absent or empty (the other one is used)."""
    if not ctx.has(i):
        return None
    array = ctx.need_const(i, what)
    return [float(v) for v in array.reshape(-1)] if array.size else None


def _legacy(ctx: NodeContext, scales: Sequence[float]) -> list[Value]:
    """Upsample and Resize-10: asymmetric coordinates; nearest rounds down when enlarging
    and up when shrinking (onnxruntime's rule for these versions)."""
    mode = ctx.attr("mode", "nearest")
    mode = "linear" if mode == "bilinear" else mode
    if mode not in ("nearest", "linear"):
        raise Unsupported(f"mode '{mode}' not supported")
    out, full = resize_shape(ctx.shape(0), scales, None)
    if mode == "nearest" and any(s < 1 for s in full) and any(s > 1 for s in full):
        raise Unsupported("nearest with both enlarged and shrunk axes not supported")
    nearest = "ceil" if any(s < 1 for s in full) else "floor"
    return _emit(ctx, out, full, mode, "asymmetric", nearest)


def _upsample(ctx: NodeContext) -> list[Value]:
    if "scales" in ctx.attrs:
        scales = [float(s) for s in ctx.attr("scales")]
    else:
        scales = _floats(ctx, 1, "scales") or []
    return _legacy(ctx, scales)


def _resize(ctx: NodeContext) -> list[Value]:
    if ctx.opset < 11:
        return _legacy(ctx, _floats(ctx, 1, "scales") or [])
    mode = ctx.attr("mode", "nearest")
    coordinate_mode = ctx.attr("coordinate_transformation_mode", "half_pixel")
    nearest_mode = ctx.attr("nearest_mode", "round_prefer_floor")
    if coordinate_mode == "tf_crop_and_resize":
        raise Unsupported("coordinate_transformation_mode 'tf_crop_and_resize' not supported")
    if coordinate_mode not in COORDINATE_MODES:
        raise Unsupported(f"coordinate_transformation_mode '{coordinate_mode}' not supported")
    if mode not in RESIZE_MODES:
        raise Unsupported(f"mode '{mode}' not supported")
    if nearest_mode not in NEAREST_MODES:
        raise Unsupported(f"nearest_mode '{nearest_mode}' not supported")
    axes = ctx.attr("axes")
    scales = _floats(ctx, 2, "scales")
    sizes = _floats(ctx, 3, "sizes")
    if scales is not None and sizes is not None:
        raise ValueError("Resize takes scales or sizes, not both")
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
    out, full = resize_shape(
        ctx.shape(0),
        scales,
        None if sizes is None else [int(s) for s in sizes],
        axes,
        policy,
    )
    if ctx.attr("antialias", 0) and mode != "nearest" and any(s < 1 for s in full):
        raise Unsupported("antialias not supported")
    return _emit(
        ctx,
        out,
        full,
        mode,
        coordinate_mode,
        nearest_mode,
        float(ctx.attr("cubic_coeff_a", -0.75)),
        bool(ctx.attr("exclude_outside", 0)),
    )


CONVERTERS: dict[str, Converter] = {"Resize": _resize, "Upsample": _upsample}
