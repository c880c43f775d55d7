"""Average pooling's output stage beyond int64 (a sum times its multiplier, or the count
shifted, reaching 2^62) divides with Python integers; it must round as the int64 path and
as each mode is defined (npuc/integer.py): ties away from zero, to even, or toward
+infinity. The oracle is Fraction arithmetic written from those definitions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from exact_rounding import MODES, round_fraction

from npuc.runtime.kernels.qnn_arith import INT64_SAFE, pooled_output

# (multiplier, shift): the first two stay in int64, the last two take the exact path
SCALES = [(1, 1), (3, 2), (1 << 61, 62), (3 << 60, 63)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("multiplier", "shift"), SCALES)
def test_pooled_output_rounds_ties_by_its_mode_on_both_paths(mode, multiplier, shift):
    total = np.arange(-9, 10, dtype=np.int64)
    count = np.array([1, 3] * 9 + [1], np.int64)
    assert (int(count.max()) << shift >= INT64_SAFE) == (shift >= 62)
    got = pooled_output(total, count, multiplier, shift, mode, 5, (-1000, 1000), np.int32)
    expected = [
        5 + round_fraction(Fraction(int(t) * multiplier, int(c) << shift), mode)
        for t, c in zip(total, count, strict=True)
    ]
    assert got.tolist() == expected
