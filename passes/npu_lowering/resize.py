"""Lowering rules of `qnn.resize` (nearest) and `qnn.resize_bilinear` onto existing instructions.

Each resized axis is described by its taps: the input indices and integer weights of every
output index, taken from the interpreter's own index computation (runtime/kernels/resize.py),
so the construction is exact by design.

- Nearest, when every axis reads `start + (o // repeat) * step` (integer upsampling with
  asymmetric/floor coordinates, integer downsampling, ...): one `move` from a view of the
  input that repeats elements with stride 0, Ethos-U's IFM upscaling. Otherwise, for integer
  upsampling factors: one `move` per output phase and run of equal taps.
- Bilinear by integer factors: the output splits into phases (o mod factor) and, inside a
  phase, runs of outputs whose taps are equal relative to o // factor (the borders clamp).
  Each (row run, column run) is a depthwise `conv2d` without padding on a slice of the input,
  writing a strided slice of the output: weights w_y w_x / 2^k (exact integers), bias 0,
  multiplier 1, shift 20 - k, the op's rounding. A piece of single unit taps is a `move`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product

import numpy as np
from xdsl.ir import Operation

from npuc.dialects import qnn
from npuc.dialects.npu_isa import MAX_RANK, TensorRef
from npuc.runtime.kernels import resize

from .builder import Builder, LoweringError, Rule, Support
from .operands import append_constant
from .views import shape_of, sliced

Q = 10  # TFLite's integer bilinear weights are Q10
MAX_PIECES = 64  # instructions one resize may take; beyond, it runs on the host


@dataclass(frozen=True)
class Run:
    """`count` outputs `out_start + step * j`; output j reads inputs `in_start + j + k`
    with weight `taps[k]`."""

    out_start: int
    step: int
    count: int
    in_start: int
    taps: tuple[int, ...]


Taps = list[dict[int, int]]  # per output index: input index -> non-zero weight
Repeat = tuple[int, int, int]  # (start, repeat, step) of one axis


def nearest_taps(op: qnn.ResizeOp) -> list[Taps]:
    """The input index of every output index, per axis (weight 1), as the interpreter has it."""
    out, axes = shape_of(op.output.type), []
    for in_len, out_len, scale in zip(
        shape_of(op.input.type), out, op.scales.get_values(), strict=True
    ):
        if in_len == out_len and float(scale) == 1.0:
            idx = np.arange(out_len)
        else:
            modes = (op.coordinate_mode.data, op.nearest_mode.data)
            idx = resize.axis_taps(in_len, out_len, float(scale), "nearest", *modes)[0][:, 0]
        axes.append([{int(i): 1} for i in idx])
    return axes


def bilinear_taps(op: qnn.ResizeBilinearOp) -> list[Taps]:
    """Q10 weights of the H and W axes (TFLite's ResizeBilinearInteger)."""
    (h, w), (oh, ow) = shape_of(op.input.type)[2:], shape_of(op.output.type)[2:]
    align, half = op.align_corners.value.data, op.half_pixel_centers.value.data
    axes = []
    for size_in, size_out in ((h, oh), (w, ow)):
        lo, hi, wlo, whi = resize.integer_bilinear_axis(size_in, size_out, bool(align), bool(half))
        taps: Taps = []
        for a, b, wa, wb in zip(lo, hi, wlo, whi, strict=True):
            merged = {int(a): int(wa)}
            merged[int(b)] = merged.get(int(b), 0) + int(wb)
            taps.append({k: v for k, v in merged.items() if v})
        axes.append(taps)
    return axes


def repeat_form(taps: Taps) -> Repeat | None:
    """(start, repeat, step) with output o reading `start + (o // repeat) * step`, else None."""
    idx = np.array([next(iter(t)) if len(t) == 1 else -1 for t in taps])
    if (idx < 0).any():
        return None
    repeat = int(np.argmax(idx != idx[0])) or len(idx)
    if len(idx) % repeat:
        return None
    step = int(idx[repeat] - idx[0]) if repeat < len(idx) else 1
    want = idx[0] + (np.arange(len(idx)) // repeat) * step
    return (int(idx[0]), repeat, step) if step >= 0 and np.array_equal(idx, want) else None


def axis_runs(taps: Taps, in_len: int) -> list[Run] | None:
    """The runs of one axis upsampled by an integer factor: out = factor * in, or
    out - 1 = factor * (in - 1) as align_corners samples (None for other ratios)."""
    out_len = len(taps)
    if out_len % in_len == 0:
        factor = out_len // in_len
    elif in_len > 1 and out_len > in_len and (out_len - 1) % (in_len - 1) == 0:
        factor = (out_len - 1) // (in_len - 1)
    else:
        return None
    runs: list[Run] = []
    for phase in range(factor):
        last: Run | None = None
        for o in range(phase, out_len, factor):
            t = taps[o]
            first = min(t)
            weights = tuple(t.get(k, 0) for k in range(first, max(t) + 1))
            if last and last.taps == weights and last.in_start + last.count == first:
                last = Run(last.out_start, factor, last.count + 1, last.in_start, weights)
                runs[-1] = last
            else:
                last = Run(o, factor, 1, first, weights)
                runs.append(last)
    return runs


def pieces(axes: list[Taps], shape: tuple[int, ...]) -> list[tuple[Run, ...]] | None:
    """Every combination of the axes' runs (None: a ratio without runs, or too many)."""
    runs = []
    for taps, in_len in zip(axes, shape, strict=True):
        axis = axis_runs(taps, in_len)
        if axis is None:
            return None
        runs.append(axis)
    if math.prod(len(r) for r in runs) > MAX_PIECES:
        return None
    return list(product(*runs))


def _repeat_forms(op: qnn.ResizeOp) -> list[Repeat] | None:
    """Every axis's repeat form, if all have one and the repeated view fits MAX_RANK."""
    forms = [repeat_form(t) for t in nearest_taps(op)]
    known = [f for f in forms if f is not None]
    if len(known) < len(forms) or len(known) + sum(f[1] > 1 for f in known) > MAX_RANK:
        return None
    return known


def nearest_supported(op: Operation) -> bool:
    assert isinstance(op, qnn.ResizeOp)
    return _repeat_forms(op) is not None or (
        pieces(nearest_taps(op), shape_of(op.input.type)) is not None
    )


def bilinear_supported(op: Operation) -> bool:
    assert isinstance(op, qnn.ResizeBilinearOp)
    return pieces(bilinear_taps(op), shape_of(op.input.type)[2:]) is not None


def repeated(ref: TensorRef, forms: list[Repeat], out_shape: tuple[int, ...]) -> TensorRef:
    """`ref` read as the nearest-resized tensor: each axis split into (outer, repeat), the
    repeat with stride 0 (its unit dimensions left out)."""
    offset, shape, strides = ref.offset, [], []
    for (start, repeat, step), n, stride in zip(forms, out_shape, ref.strides, strict=True):
        offset += start * stride * ref.itemsize
        shape.append(n // repeat)
        strides.append(stride * step)
        if repeat > 1:
            shape.append(repeat)
            strides.append(0)
    return TensorRef(ref.region, offset, tuple(shape), tuple(strides), ref.dtype)


def _slices(
    ifm: TensorRef, ofm: TensorRef, runs: tuple[Run, ...], span: bool
) -> tuple[TensorRef, TensorRef]:
    """The input and output slices of one piece (the runs cover the last axes)."""
    lead = len(ofm.shape) - len(runs)
    whole, zeros, ones = ofm.shape[:lead], (0,) * lead, (1,) * lead
    extra = [len(r.taps) - 1 if span else 0 for r in runs]
    src_shape = whole + tuple(r.count + e for r, e in zip(runs, extra, strict=True))
    src = sliced(ifm, zeros + tuple(r.in_start for r in runs), src_shape)
    dst_shape = whole + tuple(r.count for r in runs)
    dst = sliced(
        ofm, zeros + tuple(r.out_start for r in runs), dst_shape, ones + tuple(r.step for r in runs)
    )
    return src, dst


def nearest(b: Builder, op: qnn.ResizeOp) -> None:
    ifm, ofm = b.ref(op.input), b.out(op.output)
    forms = _repeat_forms(op)
    if forms is not None:
        b.emit("move", (repeated(ifm, forms, ofm.shape), ofm), (op.input,))
        return
    plan = pieces(nearest_taps(op), ifm.shape)
    if plan is None:
        raise LoweringError("this nearest resize has no NPU lowering")
    for runs in plan:
        b.emit("move", _slices(ifm, ofm, runs, False), (op.input,))


def bilinear(b: Builder, op: qnn.ResizeBilinearOp) -> None:
    ifm, ofm = b.ref(op.input), b.out(op.output)
    plan = pieces(bilinear_taps(op), ifm.shape[2:])
    if plan is None:
        raise LoweringError("this bilinear resize has no NPU lowering")
    q, channels = qnn.qtype(op.output), ofm.shape[1]
    for ry, rx in plan:
        src, dst = _slices(ifm, ofm, (ry, rx), True)
        gy, gx = _power_of_two(ry.taps), _power_of_two(rx.taps)
        kernel = np.outer(np.array(ry.taps) // gy, np.array(rx.taps) // gx)
        shift = 2 * Q - (gy * gx).bit_length() + 1  # 2^20 / (gy gx) = 2^shift
        if kernel.shape == (1, 1) and kernel[0, 0] == 1 and shift == 0:
            b.emit("move", (src, dst), (op.input,))
            continue
        weights = append_constant(b, np.broadcast_to(kernel, (channels, 1, *kernel.shape)))
        table = np.zeros((channels, 4), np.int64)
        table[:, 1], table[:, 2] = 1, shift
        b.emit(
            "conv2d",
            (src, weights, append_constant(b, table, "i32"), dst),
            (op.input,),
            groups=channels,
            clamp_min=q.qmin,
            clamp_max=q.qmax,
            rounding=op.rounding.data,
        )


def _power_of_two(taps: tuple[int, ...]) -> int:
    """The largest power of two dividing every tap."""
    g = math.gcd(*taps)
    return g & -g


RULES: dict[str, Rule] = {
    "qnn.resize": nearest,
    "qnn.resize_bilinear": bilinear,
}
#: Ops whose rule covers only some instances: the others run on the host.
SUPPORTS: dict[str, Support] = {
    "qnn.resize": nearest_supported,
    "qnn.resize_bilinear": bilinear_supported,
}
