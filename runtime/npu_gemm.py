"""Exact GEMMs of the NPU runtime (runtime/npu_conv.py's convolutions, the matmul
instruction) on numpy views of the arenas.

A GEMM of integers runs in float32 where every partial sum provably stays below 2^24, in
float32 chunks of K summed in float64, in float64 below 2^53, in int64 otherwise
(qnn_arith's dtype choice, with a bound from the weights' column sums), so each path
gives the exact integers. Large float32 weights are kept as 8- or 16-bit integers and
converted before each GEMM; one row times constant weights is one compiled call
(runtime/npu_jit.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from npuc.diagnostics import NpucError

from . import npu_jit
from .npu_requant import F32, F32_EXACT, F64, F64_EXACT, I64, Action, Scratch

MAX_CHUNKS = 8  # float32 chunks summed in float64 before a float64 GEMM is cheaper
# float32 GEMM weights of at least this many bytes are kept as 8- or 16-bit integers
COMPACT_WEIGHTS = 1 << 15


def storage_peak(dtype: np.dtype) -> int:
    """The largest magnitude a stored integer of `dtype` can have."""
    info = np.iinfo(dtype)
    return max(-int(info.min), int(info.max))


@dataclass
class Operand:
    """A constant GEMM operand (weights minus their zero points), converted lazily to each
    dtype a GEMM asks for; `sums` holds its sums over K (per output column), which fold
    the other operand's zero point into the bias."""

    values: np.ndarray  # int64 [..., K, N]
    peak: int  # the largest |value|
    reach: int  # the largest sum of |values| of a column: |a . column| <= max|a| * reach
    sums: np.ndarray  # int64 [..., N]

    @classmethod
    def of(cls, values: np.ndarray) -> Operand:
        if not values.size:
            return cls(values, 0, 0, values.sum(axis=-2))
        magnitude = np.abs(values)
        reach = int(magnitude.sum(axis=-2).max())
        return cls(values, int(magnitude.max()), reach, values.sum(axis=-2))

    def __post_init__(self) -> None:
        self._cache: dict[type, np.ndarray] = {}

    def as_(self, dtype: type) -> np.ndarray:
        if dtype not in self._cache:
            self._cache[dtype] = np.ascontiguousarray(self.values.astype(dtype))
        return self._cache[dtype]


def gemm_actions(
    a: np.ndarray,
    a_peak: int,
    b: Operand,
    k: int,
    scratch: Scratch,
    weights_first: bool = False,
    columns: slice = slice(None),
) -> tuple[list[Action], np.ndarray, int]:
    """(numpy calls, the accumulators they fill, a bound on their magnitude) for a @ b
    exactly, with integer-valued a [..., K] (read when the calls run) and b [..., K, N];
    with `weights_first`, b^T @ a for a [..., K, P], giving [..., N, P]; only b's
    `columns` (N) when given.

    Float32 when every partial sum stays below 2^24, else float32 chunks of K summed in
    float64, else float64 below 2^53, else int64 (as qnn_arith's exact GEMM dtype choice).
    Every partial sum of a column is at most max|a| * (its sum of |b|) <= a_peak * reach.
    """
    term = a_peak * b.peak
    bound = a_peak * b.reach
    batch = np.broadcast_shapes(a.shape[:-2], b.values.shape[:-2])
    n = len(range(b.values.shape[-1])[columns])
    shape = (*batch, n, a.shape[-1]) if weights_first else (*batch, a.shape[-2], n)

    def weights(dtype: type) -> np.ndarray:
        w = b.as_(dtype)[..., columns]
        return np.swapaxes(w, -1, -2) if weights_first else w

    def product(x: np.ndarray, w: np.ndarray, out: np.ndarray) -> Action:
        return partial(np.matmul, *((w, x) if weights_first else (x, w)), out=out)

    def converted(dtype: type) -> tuple[list[Action], np.ndarray]:
        if a.dtype == dtype:
            return [], a
        buffer = scratch.get(f"a_{np.dtype(dtype).name}", a.shape, dtype)
        return [npu_jit.convert_action(buffer, a)], buffer

    if term == 0:
        return [], np.zeros(shape, F32), 0
    if bound >= 1 << 63:
        raise NpucError(f"an accumulator bound of {bound} exceeds the int64 range")
    if bound < F32_EXACT:
        acc = scratch.get("acc", shape, F32)
        narrow = np.int8 if b.peak < 128 else np.int16
        if not weights_first and a.size == k and b.peak < 1 << 15:  # one row of a
            small = np.ascontiguousarray(b.as_(narrow)[..., columns])
            compiled = npu_jit.vector_matrix_action(a, small, acc)
            if compiled is not None:
                return [compiled], acc, bound
        actions, a32 = converted(F32)
        if b.values[..., columns].size * 4 < COMPACT_WEIGHTS or b.peak >= 1 << 15:
            w32 = weights(F32)
        else:
            # read as 8- or 16-bit integers and converted into a buffer that stays in
            # cache: a run of the whole model evicts float32 weights between runs, and
            # these are a quarter or half of their bytes
            small = np.ascontiguousarray(b.as_(narrow)[..., columns])
            kn = scratch.get("weights_float32", small.shape, F32)
            actions.append(npu_jit.convert_action(kn, small))
            w32 = np.swapaxes(kn, -1, -2) if weights_first else kn
        return [*actions, product(a32, w32, acc)], acc, bound
    chunk = (F32_EXACT - 1) // term
    if chunk >= 1 and -(-k // chunk) <= MAX_CHUNKS and bound < F64_EXACT:
        actions, a32 = converted(F32)
        w32 = weights(F32)
        part = scratch.get("acc", shape, F32)
        acc = scratch.get("acc_float64", shape, F64)
        for k0 in range(0, k, chunk):
            ks = slice(k0, k0 + chunk)
            if weights_first:
                actions.append(product(a32[..., ks, :], w32[..., :, ks], part))
            else:
                actions.append(product(a32[..., ks], w32[..., ks, :], part))
            actions.append(
                partial(np.add, acc, part, out=acc) if k0 else partial(np.copyto, acc, part)
            )
        return actions, acc, bound
    dtype = F64 if bound < F64_EXACT else I64
    actions, converted_a = converted(dtype)
    acc = scratch.get(f"acc_{np.dtype(dtype).name}", shape, dtype)
    return [*actions, product(converted_a, weights(dtype), acc)], acc, bound
