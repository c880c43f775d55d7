"""The range checks of per-channel multipliers and shifts (`check_multipliers`), whichever
element of a list is out of range: the multipliers of an integer requantization are
Q31 fractions in [0, 2^31) and the shifts lie in [-31, 62] (docs/quantization.md)."""

from __future__ import annotations

import pytest
from xdsl.utils.exceptions import VerifyException

from npuc.dialects.qnn_base import check_multipliers

EDGES = [0, 1, 2**31 - 1]
SHIFT_EDGES = [-31, 0, 62]


def test_values_at_the_edges_pass():
    check_multipliers("qnn.conv2d", EDGES, SHIFT_EDGES)
    check_multipliers("qnn.conv2d", [], [])


@pytest.mark.parametrize("position", range(3))
@pytest.mark.parametrize("bad", [-1, 2**31, -(2**40)])
def test_one_multiplier_out_of_range_fails(position, bad):
    multipliers = list(EDGES)
    multipliers[position] = bad
    with pytest.raises(VerifyException, match=r"'qnn.conv2d': multipliers must be in \[0, 2\^31\)"):
        check_multipliers("qnn.conv2d", multipliers, SHIFT_EDGES)


@pytest.mark.parametrize("position", range(3))
@pytest.mark.parametrize("bad", [-32, 63])
def test_one_shift_out_of_range_fails(position, bad):
    shifts = list(SHIFT_EDGES)
    shifts[position] = bad
    with pytest.raises(VerifyException, match=r"'qnn.conv2d': shifts must be in \[-31, 62\]"):
        check_multipliers("qnn.conv2d", EDGES, shifts)
