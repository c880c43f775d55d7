"""Which kernels the NPU runtime runs: compiled (numba, runtime/jit_kernels.py) or numpy.

`NPUC_KERNELS=numba` (the default) plans the output stage of channels-first
accumulators, whole depthwise convolutions, 8-bit eltwise table lookups and average pools
over the whole image as compiled kernels where their exactness conditions hold (the same
as the numpy path's: the float64 output stage's bound, float32 depthwise accumulators
below 2^24); `NPUC_KERNELS=numpy` plans the numpy calls only, as does a missing numba.
The choice is read when a program is planned (an `Executor` is built). The kernels are
compiled on first use and cached on disk (NUMBA_CACHE_DIR, by default npuc/numba under
the user's cache directory), so a process pays only for loading them."""

from __future__ import annotations

import importlib
import math
import os
from functools import lru_cache, partial
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from npuc.diagnostics import NpucError

if TYPE_CHECKING:
    from .npu_conv import ConvGeometry
    from .npu_gemm import Operand
    from .npu_requant import Action, FloatForm

ENV = "NPUC_KERNELS"
CHOICES = ("numba", "numpy")
# a depthwise convolution with at least this many channels and at most this many outputs
# a channel runs channels last (`jit_kernels.depthwise_channels_last`): rows of a small
# image are too short for the channels-first loops
CHANNELS_LAST_CHANNELS = 64
CHANNELS_LAST_PIXELS = 64
F32_EXACT = 1 << 24  # float32 sums of integers are exact below this


def choice() -> str:
    """The kernels NPUC_KERNELS asks for (numba when unset)."""
    value = os.environ.get(ENV, "") or CHOICES[0]
    if value not in CHOICES:
        raise NpucError(f"{ENV}={value}: expected one of {', '.join(CHOICES)}")
    return value


def enabled() -> bool:
    """Whether plans made now use the compiled kernels."""
    return choice() == "numba" and kernels() is not None


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "npuc" / "numba"


@lru_cache(maxsize=1)
def kernels() -> ModuleType | None:
    """runtime/jit_kernels.py, imported on first use (numba's import is slow), or None
    without numba."""
    os.environ.setdefault("NUMBA_CACHE_DIR", str(_cache_dir()))
    try:
        return importlib.import_module(".jit_kernels", __package__)
    except ImportError:
        return None


def _stage_arguments(
    form: FloatForm, clamp: tuple[int, int], wrap: bool
) -> tuple[np.ndarray, tuple[float, bool, bool, int, int, int]]:
    """(the per-channel constants [scale, offset, tie] as rows [3, C], the stage's scalars)
    as `jit_kernels` takes them."""
    constants = np.stack([v.reshape(-1) for v in (form.scale, form.offset, form.tie)])
    constants = np.ascontiguousarray(constants, dtype=np.float64)
    return constants, (float(form.half), form.signed, wrap, clamp[0], clamp[1], form.lift)


def requant_action(
    acc: np.ndarray,
    out: np.ndarray,
    form: FloatForm,
    clamp: tuple[int, int],
    wrap: bool,
) -> Action | None:
    """The float64 output stage (`npu_requant.float_actions`) as one compiled call, or None
    when the compiled kernels are off or the arrays are neither channels first [C, rows,
    ...] with out's rows at most as long as acc's nor one row of channels last. `wrap`:
    the output's lift is its type's range."""
    if not enabled() or out.dtype.kind not in "iu":
        return None
    if not form.channels_first:  # one row of channels last is a column of channels first
        channels = form.scale.size
        sizes = (acc.size, out.size, form.offset.size, form.tie.size)
        if any(size != channels for size in sizes):
            return None
        try:
            acc, out = (a.reshape((channels, 1, 1), copy=False) for a in (acc, out))
        except ValueError:
            return None
    if acc.ndim == 2 and out.ndim == 2:
        acc, out = acc[:, None], out[:, None]
    if acc.ndim != 3 or out.ndim != 3 or acc.shape[:2] != out.shape[:2]:
        return None
    if out.shape[2] > acc.shape[2]:
        return None
    if acc.shape == out.shape:  # each channel's rows as one, where both arrays allow it
        try:
            flat = (-1, 1, acc.shape[1] * acc.shape[2])
            acc, out = acc.reshape(flat, copy=False), out.reshape(flat, copy=False)
        except ValueError:
            pass
    jit = kernels()
    assert jit is not None
    arguments = _stage_arguments(form, clamp, wrap)
    return partial(jit.requantize_rows, acc, out, *arguments)


def depthwise_actions(
    x: np.ndarray,
    out: np.ndarray,
    zero_point: int,
    weights: Operand,
    form: FloatForm | None,
    clamp: tuple[int, int],
    wrap: bool,
    geo: ConvGeometry,
) -> list[Action] | None:
    """One image's depthwise convolution, x [Ci, H, W] into out [Co, OH, OW], as one
    compiled call, or None when the compiled kernels are off, `form` is None (the float64
    stage is not exact for these accumulators) or a float32 partial sum could reach 2^24."""
    if form is None or not enabled() or x.dtype.kind not in "iu" or out.dtype.kind not in "iu":
        return None
    info = np.iinfo(x.dtype)
    peak = max(-int(info.min), int(info.max))
    # float32 partial sums of x * w stay exact
    if peak * weights.reach >= F32_EXACT:
        return None
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel, geo.strides, geo.dilations
    top, left, bottom, right = geo.pads
    (oh, ow), co = geo.out_hw, out.shape[0]
    taps = np.ascontiguousarray(weights.values.T.reshape(co, kh, kw).astype(np.float32))
    height = max(x.shape[1] + top + bottom, (oh - 1) * sh + (kh - 1) * dh + 1)
    width = max(x.shape[2] + left + right, (ow - 1) * sw + (kw - 1) * dw + 1)
    jit = kernels()
    assert jit is not None
    geometry = (sh, sw, dh, dw, top, left)
    arguments = _stage_arguments(form, clamp, wrap)
    same = (kh, kw, sh, sw, dh, dw) == (3, 3, 1, 1, 1, 1) and geo.pads == (1, 1, 1, 1)
    contiguous = x.flags.c_contiguous and out.flags.c_contiguous
    if same and co == x.shape[0] and contiguous:
        flat = np.full((x.shape[1] + 2) * x.shape[2] + 2, zero_point, np.float32)
        edges = _edges(oh, ow)
        action = partial(jit.depthwise_3x3_same, x, taps, float(zero_point), flat, edges, out)
        return [partial(action, *arguments)]
    halved = (kh, kw, sh, sw, dh, dw) == (3, 3, 2, 2, 1, 1) and geo.pads == (0, 0, 1, 1)
    if halved and co == x.shape[0] and x.shape[1:] == (2 * oh, 2 * ow) and contiguous:
        phases = np.full((4, (oh + 1) * ow + 1), zero_point, np.float32)
        edges = _edges(oh, ow)
        action = partial(jit.depthwise_3x3_s2, x, taps, float(zero_point), phases, edges, out)
        return [partial(action, *arguments)]
    if co == x.shape[0] and co >= CHANNELS_LAST_CHANNELS and oh * ow <= CHANNELS_LAST_PIXELS:
        weights_last = np.ascontiguousarray(taps.transpose(1, 2, 0))
        padded = np.full((height, width, co), zero_point, np.float32)  # the padding holds zp
        acc_last = np.empty(co, np.float32)
        return [
            partial(
                jit.depthwise_channels_last,
                x,
                weights_last,
                geometry,
                padded,
                acc_last,
                out,
                *arguments,
            )
        ]
    # the stride phases of the padded image, with rows and columns enough for every
    # tap's run over all outputs (`jit_kernels.depthwise`)
    wq = -(-width // sw)
    hq = -(-height // sh) + 1  # the last tap's run reads past its last row's junk columns
    phases = np.full((sh * sw, hq * wq), zero_point, np.float32)  # the padding holds zp
    padded_row = np.full(sw * wq, zero_point, np.float32)
    acc = np.empty(oh * wq, np.float32)
    staged = np.empty(oh * wq, out.dtype)
    return [
        partial(jit.depthwise, x, taps, geometry, phases, padded_row, acc, staged, out, *arguments)
    ]


def convert_action(target: np.ndarray, source: np.ndarray) -> Action:
    """`np.copyto(target, source, casting="unsafe")`: one compiled call when 8- or 16-bit
    integers become float32 and both arrays are rows of contiguous elements."""
    narrow = source.dtype.kind in "iu" and source.dtype.itemsize <= 2
    if enabled() and narrow and target.dtype == np.float32 and source.shape == target.shape:
        rows = _contiguous_rows(source, target)
        if rows is not None:
            jit = kernels()
            assert jit is not None
            return partial(jit.to_float32, *rows)
    return partial(np.copyto, target, source, casting="unsafe")


def _contiguous_rows(*arrays: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """Views [R, N] of arrays of one shape whose rows are contiguous, the longest rows
    their strides allow, or None."""
    shape = arrays[0].shape
    for split in range(len(shape) + 1):
        rows = (math.prod(shape[:split]), math.prod(shape[split:]))
        try:
            views = tuple(a.reshape(rows, copy=False) for a in arrays)
        except ValueError:
            continue
        if all(v.strides[1] == v.itemsize or v.shape[1] <= 1 for v in views):
            return views
    return None


def _edges(height: int, width: int) -> np.ndarray:
    """uint8 [height * width]: bit 0 set on a row's first pixel, bit 1 on its last."""
    columns = np.arange(height * width) % width
    return ((columns == 0) | (columns == width - 1) << 1).astype(np.uint8)


def average_action(x: np.ndarray, p: dict, out: np.ndarray) -> Action | None:
    """An average pool over the whole of each channel of x [N, C, H, W] with `tflite`
    rounding (`npu_kernels.pool`) as one compiled call, or None (another pool, or x's
    channels not contiguous)."""
    whole = tuple(p["kernel"]) == x.shape[2:] and not any(p["pads"])
    if not enabled() or p["mode"] != "avg" or p["rounding"] != "tflite" or not whole:
        return None
    if x.dtype.kind not in "iu" or out.dtype.kind not in "iu" or not x.flags.c_contiguous:
        return None
    if out.size != x.shape[0] * x.shape[1] or not out.flags.c_contiguous:
        return None
    if p["multiplier"] * 2.0 ** -p["shift"] != 1.0:  # refused by `npu_kernels.pool`
        return None
    jit = kernels()
    assert jit is not None
    rows, flat = x.reshape(out.size, -1), out.reshape(-1)
    shift = p["ofm_zero_point"] - p["ifm_zero_point"]
    return partial(jit.average_whole, rows, flat, shift, p["clamp_min"], p["clamp_max"])


def vector_matrix_action(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> Action | None:
    """out = a @ b in float32 for one row a [..., K] of integers and contiguous b [..., K, N]
    of 8- or 16-bit integers as one compiled call, converting b as it goes instead of into
    a float32 copy (the caller checked that float32 is exact), or None."""
    if not enabled() or a.dtype.kind not in "iuf" or b.dtype.itemsize > 2:
        return None
    k, n = b.shape[-2], b.shape[-1]
    if b.size != k * n or out.size != n or a.size != k or not out.flags.c_contiguous:
        return None
    try:  # views only: a copy would not see the values a holds when the call runs
        rows = (a.reshape(k, copy=False), b.reshape(k, n, copy=False), out.reshape(n))
    except ValueError:
        return None
    jit = kernels()
    assert jit is not None
    return partial(jit.vector_matrix, *rows)


def lookup_action(
    lhs: np.ndarray, rhs: np.ndarray, table: np.ndarray, out: np.ndarray
) -> Action | None:
    """`npu_kernels.eltwise_lookup` as one compiled call on 8-bit operands of one shape of
    rank at most 4, or None."""
    arrays = (lhs, rhs, out)
    if not enabled() or any(a.dtype.itemsize != 1 or a.shape != out.shape for a in arrays):
        return None
    if out.ndim > 4 or table.dtype.itemsize != 1:
        return None
    lead = (1,) * (4 - out.ndim)
    views = [a.view(np.uint8).reshape(lead + a.shape) for a in arrays]
    jit = kernels()
    assert jit is not None
    return partial(jit.lookup_pairs, views[0], views[1], table.view(np.uint8), views[2])
