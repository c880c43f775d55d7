"""Element-wise passes over large arrays, a block of elements at a time.

A whole-array pass over a float32 or int8 tensor that works in float64 makes a
tensor-sized temporary for each step; on tensors of millions of elements these run at
memory speed, and those above glibc's mmap threshold come back freshly mapped, page by
page, on every call (4-5x slower than the same steps on cache-sized blocks, for 8
million elements). Integer results (counts, extrema, element-wise values) are the same
block by block; float sums differ only in rounding order.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

BLOCK = 1 << 15  # elements: a float64 block is 256 KiB, in L2 with its source


def spans(size: int, block: int = BLOCK) -> Iterator[slice]:
    """Consecutive slices of at most `block` elements covering range(size)."""
    for start in range(0, size, block):
        yield slice(start, min(start + block, size))


def scratch_spans(size: int, block: int = BLOCK) -> Iterator[tuple[slice, np.ndarray]]:
    """`spans(size)`, each with float64 scratch space of its length (one buffer for all:
    valid until the next span is taken)."""
    buffer = np.empty(min(block, size))
    for span in spans(size, block):
        yield span, buffer[: span.stop - span.start]


def float64_blocks(x: np.ndarray, block: int = BLOCK) -> Iterator[np.ndarray]:
    """The flattened `x` as float64, a block at a time (each block valid until the next is
    taken)."""
    flat = x.reshape(-1)
    for span, chunk in scratch_spans(flat.size, block):
        np.copyto(chunk, flat[span], casting="unsafe")
        yield chunk
