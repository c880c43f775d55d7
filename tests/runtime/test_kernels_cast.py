"""`nn.cast`'s kernel against its documented rule: float -> integer truncates toward zero,
saturates at the integer type's range and reads NaN as 0; float -> float and integer ->
integer are numpy's conversions (integers wrap)."""

from __future__ import annotations

import numpy as np
import pytest

from npuc.runtime.kernels.logic import cast

FLOATS = np.array(
    [np.nan, np.inf, -np.inf, 1e10, -1e10, 2.7, -2.7, 0.5, -0.5, 127.9, -128.9, 300.0, 65535.5],
    np.float32,
)


def saturated(x: np.ndarray, dtype: np.dtype) -> list[int]:
    info = np.iinfo(dtype)
    out = []
    for v in x.astype(np.float64):
        if np.isnan(v):
            out.append(0)
        elif v >= info.max:
            out.append(int(info.max))
        elif v <= info.min:
            out.append(int(info.min))
        else:
            out.append(int(np.trunc(v)))
    return out


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint16])
def test_float_to_integer_truncates_and_saturates(dtype) -> None:
    got = cast(FLOATS, np.dtype(dtype))
    assert got.dtype == dtype
    assert got.tolist() == saturated(FLOATS, np.dtype(dtype))


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_float_to_float_is_a_plain_conversion(dtype) -> None:
    got = cast(FLOATS, np.dtype(dtype))
    assert got.dtype == dtype
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, FLOATS.astype(dtype))


def test_integers_wrap_and_booleans_are_nonzero() -> None:
    x = np.array([-129, 200, 255, 256, 0, -1], np.int32)
    assert cast(x, np.dtype(np.int8)).tolist() == [127, -56, -1, 0, 0, -1]
    assert cast(x, np.dtype(np.bool_)).tolist() == [True, True, True, True, False, True]
