"""The byte-overlap test shared by the hazard check and the lowering's tokens."""

from __future__ import annotations

import numpy as np
import pytest

from npuc.dialects.npu_isa import TensorRef, row_major
from npuc.dialects.npu_rules import overlaps

# A 77-row band of every channel of a 64 x 224 x 224 int8 map: 1.1 M elements in 64 runs.
BAND = TensorRef("activations", 16576, (1, 64, 77, 224), (3211264, 50176, 224, 1), "i8")


def brute_force(a: TensorRef, b: TensorRef) -> bool:
    return bool(np.intersect1d(a.byte_offsets(), b.byte_offsets()).size)


@pytest.mark.parametrize(
    "offset",
    [2508800, 2475200, 2492448 - 1, 2492448, 2525376 - 4608, 2525376 - 4607, 0, 3194912],
)
def test_large_strided_views_are_compared_exactly(offset):
    weights = TensorRef("activations", offset, (8, 64, 3, 3), row_major((8, 64, 3, 3)), "i8")
    assert overlaps(BAND, weights) == overlaps(weights, BAND) == brute_force(BAND, weights)


def test_the_gap_between_bands_is_free():
    """vgg19's weights reloaded between two channels' rows must not wait for the reader."""
    weights = TensorRef("activations", 2508800, (8, 64, 3, 3), row_major((8, 64, 3, 3)), "i8")
    assert not overlaps(BAND, weights)
