"""The per-axis slice of a quantized type (a tile's element type) shares its parameters
with the whole type and still verifies, prints and compares as a type built from values."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

from npuc.dialects.quant_types import UniformQuantizedType
from npuc.dialects.tile import region_element_type


def whole() -> UniformQuantizedType:
    rng = np.random.default_rng(3)
    scales = rng.uniform(1e-3, 1e-1, 12).tolist()
    zps = [0, 0, 1, 0, -3, 0, 0, 2, 0, 0, 0, 5]
    return UniformQuantizedType("i8", scales, zps, axis=3, storage_min=-127)


@pytest.mark.parametrize(("lo", "hi"), [(0, 1), (0, 5), (4, 12), (11, 12)])
def test_slice_equals_the_type_built_from_the_sliced_values(lo: int, hi: int) -> None:
    t = whole()
    expected = UniformQuantizedType(
        "i8",
        list(t.scale_values())[lo:hi],
        list(t.zero_point_values())[lo:hi],
        axis=3,
        storage_min=-127,
    )
    got = region_element_type(t, [0, 0, 0, lo], [1, 4, 4, hi - lo])
    assert got == expected
    assert str(got) == str(expected)
    assert got.scale_values() == tuple(t.scale_values()[lo:hi])


def test_whole_range_is_the_type_itself() -> None:
    t = whole()
    assert region_element_type(t, [0, 0, 0, 0], [1, 4, 4, 12]) is t


def test_an_empty_or_out_of_range_slice_is_refused() -> None:
    t = whole()
    with pytest.raises(AssertionError):
        t.sliced(3, 3)  # empty
    with pytest.raises(AssertionError):
        t.sliced(0, 13)  # past the axis


def test_repeated_zero_points_share_one_attribute_and_a_bad_one_is_refused() -> None:
    t = UniformQuantizedType("i8", [0.5] * 4, [0, 0, 7, 0], axis=0)
    zps = t.zero_points.data
    assert zps[0] is zps[1] is zps[3] and zps[2].data == 7
    with pytest.raises(VerifyException, match="outside the storage range"):
        UniformQuantizedType("i8", [0.5, 0.5], [0, 300], axis=0)
