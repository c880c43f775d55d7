"""Lowering rule of `qnn.conv_transpose2d`: one stride-1 `conv2d` per output phase.

Sub-pixel decomposition (Vela maps TRANSPOSE_CONV to the NPU likewise). Along one axis with
stride s, dilation d, kernel K and leading pad p, output y sums the taps ky of the inputs iy
with iy s + ky d = y + p. With g = gcd(s, d), the outputs y = r + s j of phase r (0 <= r < s)
take the taps ky = k0 + (s / g) m (m = 0 .. M-1; k0 the first tap with ky d = r + p mod s)
from the inputs iy = c + j - (d / g) m, c = (r + p - k0 d) / s: an ordinary correlation of
stride 1 and dilation d / g with the sub-kernel reversed, whose window
[c - (M-1) d/g, c + J - 1] (J outputs) is clipped to the input and padded with the input zero
point beyond it (output_padding and large pads included). Each (row phase, column phase)
becomes one `conv2d` on a slice of the input writing the strided slice ofm[..., r::s, q::s]
of the output, with the op's own bias_scale table (bias, per-channel multiplier, shift and
weight zero point of each output channel) and output stage, so the sums, the rounding and
the clamp are the conv2d rule's, exactly.

Weights: a single-tap phase (kernel <= stride, PP-OCRv4's and MediaPipe's 2x2 / 2 layers)
reads a transposed view of the planned weight [C, O, kH, kW] itself; longer sub-kernels are
copied, reversed and transposed to [O, C, M, N], into the constants region (the weights must
then be constants). A phase without taps, or whose window misses the input, holds the bias
alone: a 1x1 conv2d of weights equal to their zero points over one input element repeated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation, SSAValue

from npuc.dialects.arrays import int_values
from npuc.dialects.npu_isa import TensorRef
from npuc.dialects.qnn import ConvTranspose2dOp

from .builder import Builder, LoweringError, Rule, Support
from .operands import (
    activation_zero_point,
    append_constant,
    bias_scale_table,
    constant_values,
    output_stage,
    weight_zero_points,
)
from .views import dtype_of, permuted, shape_of, sliced

MAX_PIECES = 64  # conv2d instructions one transposed convolution may take (strides 8 x 8)


@dataclass(frozen=True)
class Phase:
    """Outputs `out_start + stride * j` (j < count) of one axis: a correlation with the taps
    `taps` (kernel indices in window order; empty: bias only) at dilation `dilation` over the
    inputs [in_start, in_start + in_count) padded by `pads` (before, after)."""

    out_start: int
    count: int
    taps: tuple[int, ...]
    in_start: int = 0
    in_count: int = 1
    pads: tuple[int, int] = (0, 0)
    dilation: int = 1


def axis_phases(
    in_len: int, out_len: int, kernel: int, stride: int, dilation: int, pad: int
) -> list[Phase]:
    """The phases of one axis of a transposed convolution (see the module docstring)."""
    g = math.gcd(stride, dilation)
    step, dil = stride // g, dilation // g
    phases = []
    for r in range(stride):
        count = -(-(out_len - r) // stride)
        if count <= 0:
            continue
        k0 = next(
            (k for k in range(min(kernel, step)) if (k * dilation - r - pad) % stride == 0), None
        )
        if k0 is None:
            phases.append(Phase(r, count, ()))
            continue
        m = -(-(kernel - k0) // step)
        c = (r + pad - k0 * dilation) // stride
        start, length = c - (m - 1) * dil, count + (m - 1) * dil
        lo, hi = max(start, 0), min(start + length, in_len)
        if hi <= lo:
            phases.append(Phase(r, count, ()))
            continue
        taps = tuple(k0 + step * (m - 1 - t) for t in range(m))
        phases.append(Phase(r, count, taps, lo, hi - lo, (lo - start, start + length - hi), dil))
    return phases


def plan(op: ConvTranspose2dOp) -> list[tuple[Phase, Phase]]:
    """The (row phase, column phase) of every conv2d, in output order."""
    (h, w), (oh, ow) = shape_of(op.input.type)[2:], shape_of(op.output.type)[2:]
    kh, kw = shape_of(op.weight.type)[2:]
    (sh, sw), (dh, dw), pads = int_values(op.strides), int_values(op.dilations), int_values(op.pads)
    rows = axis_phases(h, oh, kh, sh, dh, pads[0])
    cols = axis_phases(w, ow, kw, sw, dw, pads[1])
    return [(py, px) for py in rows for px in cols]


def _copied(py: Phase, px: Phase) -> bool:
    """Whether the piece's sub-kernel must be copied (more than one tap on an axis)."""
    return bool(py.taps and px.taps) and (len(py.taps) > 1 or len(px.taps) > 1)


def _unsupported(op: ConvTranspose2dOp, cache: dict[Operation, np.ndarray]) -> str | None:
    """Why the rule cannot lower this instance (None: it can); `cache` holds constant values."""
    if len(shape_of(op.input.type)) != 4 or len(shape_of(op.output.type)) != 4:
        return "it needs NCHW tensors"
    if (
        any(p < 0 for p in int_values(op.pads))
        or min(*int_values(op.strides), *int_values(op.dilations)) < 1
    ):
        return "negative pads or non-positive strides or dilations"
    if math.prod(int_values(op.strides)) > MAX_PIECES:
        return f"its strides need more than {MAX_PIECES} conv2d instructions"
    if op.bias is not None and constant_values(op.bias, cache) is None:
        return "its bias is not a constant (the NPU reads it from a table)"
    if any(_copied(*piece) for piece in plan(op)) and constant_values(op.weight, cache) is None:
        return "its weights are not constants (their sub-kernels are reordered copies)"
    return None


def transpose_conv_supported(op: Operation) -> bool:
    assert isinstance(op, ConvTranspose2dOp)
    return _unsupported(op, {}) is None


def conv_transpose2d(b: Builder, op: ConvTranspose2dOp) -> None:
    why = _unsupported(op, b.cache)
    if why is not None:
        raise LoweringError(why)
    pieces = plan(op)
    ifm, ofm, weight = b.ref(op.input), b.out(op.output), b.ref(op.weight)
    n, channels = ofm.shape[:2]
    (sh, sw), wdtype = int_values(op.strides), dtype_of(op.weight.type)
    wzps = weight_zero_points(op.weight, channels)
    table = bias_scale_table(b, op, channels, op.bias, wzps)
    copies = any(_copied(*piece) for piece in pieces)
    values = constant_values(op.weight, b.cache) if copies else None
    for py, px in pieces:
        dst = sliced(
            ofm,
            (0, 0, py.out_start, px.out_start),
            (n, channels, py.count, px.count),
            (1, 1, sh, sw),
        )
        params = {"ifm_zero_point": activation_zero_point(op.input), **output_stage(op)}
        if not (py.taps and px.taps):  # bias only: centred weights of zero, any input
            src = TensorRef(ifm.region, ifm.offset, (n, 1, py.count, px.count), (0,) * 4, ifm.dtype)
            zeros = append_constant(b, np.array(wzps).reshape(channels, 1, 1, 1), wdtype)
            b.emit("conv2d", (src, zeros, table, dst), (op.input,), **params)
            continue
        src = sliced(
            ifm, (0, 0, py.in_start, px.in_start), (n, ifm.shape[1], py.in_count, px.in_count)
        )
        if _copied(py, px):
            assert values is not None  # _unsupported checked it
            kernel = values[:, :, list(py.taps)][:, :, :, list(px.taps)].transpose(1, 0, 2, 3)
            weights = append_constant(b, kernel, wdtype)
            reads: tuple[SSAValue, ...] = (op.input,)
        else:  # one tap: the transposed view of the planned weight
            tap = sliced(weight, (0, 0, py.taps[0], px.taps[0]), (*weight.shape[:2], 1, 1))
            weights, reads = permuted(tap, (1, 0, 2, 3)), (op.input, op.weight)
        b.emit(
            "conv2d",
            (src, weights, table, dst),
            reads,
            pads=(py.pads[0], px.pads[0], py.pads[1], px.pads[1]),
            dilations=(py.dilation, px.dilation),
            **params,
        )


RULES: dict[str, Rule] = {
    "qnn.conv_transpose2d": conv_transpose2d,
}
#: Ops whose rule covers only some instances: the others run on the host.
SUPPORTS: dict[str, Support] = {
    "qnn.conv_transpose2d": transpose_conv_supported,
}
