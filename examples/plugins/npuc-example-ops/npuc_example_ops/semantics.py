"""What SoftClip computes: the reference kernels the interpreters run, and its host cost."""

from __future__ import annotations

import numpy as np

from npuc.plugin_api import from_dense, lut_lookup, qtype

from .dialect import QSoftClipOp, SoftClipOp

# A tanh on a Cortex-M takes about as long as this many multiply-accumulates (the cycle
# model prices host work in MACs).
TANH_MACS = 16


def soft_clip(x: np.ndarray, limit: float) -> np.ndarray:
    """limit * tanh(x / limit), in the input's precision."""
    return limit * np.tanh(x / limit)


def soft_clip_kernel(op: SoftClipOp, args: list[np.ndarray]) -> list[np.ndarray]:
    limit = np.float32(op.limit.value.data)
    return [soft_clip(args[0].astype(np.float32), limit).astype(np.float32)]


def qsoft_clip_kernel(op: QSoftClipOp, args: list[np.ndarray]) -> list[np.ndarray]:
    q_in, q_out = qtype(op.input), qtype(op.output)
    table = np.asarray(from_dense(op.table))
    return [lut_lookup(args[0], table, q_in.qmin).astype(q_out.storage_dtype())]


def soft_clip_host_macs(op: SoftClipOp) -> int:
    return TANH_MACS * int(np.prod(op.output.type.get_shape()))


def qsoft_clip_host_macs(op: QSoftClipOp) -> int:
    return 0  # a table look-up: the per-element cost of the host CPU covers it
