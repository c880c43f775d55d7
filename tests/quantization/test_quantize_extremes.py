"""`quantize` saturates the infinities and reals far outside the range to the matching end,
whatever the zero point (npuc/integer.py's docstring): the zero point is added after the
quotient is bounded, so the bound must leave room for it, and stay inside int64."""

from __future__ import annotations

import numpy as np
import pytest

from npuc.integer import quantize

RANGES = {"int8": (-128, 127), "int16": (-32768, 32767), "int32": (-(2**31), 2**31 - 1)}


@pytest.mark.parametrize("storage", RANGES)
@pytest.mark.parametrize("zero_point", [-100, 0, 100])
@pytest.mark.parametrize("scale", [1.0, 1e-6])
def test_far_values_saturate_whatever_the_zero_point(storage, zero_point, scale):
    lo, hi = RANGES[storage]
    x = np.array([np.inf, 1e300, 2.0**62, -np.inf, -1e300, -(2.0**62), np.nan])
    q = quantize(x, scale, zero_point, lo, hi)
    assert q.tolist() == [hi, hi, hi, lo, lo, lo, zero_point]
