"""The exact GEMM's last resort is int64: a bound on the accumulators up to 2^63 - 1 (the
largest int64) runs there, exactly; a bound of 2^63 cannot, and is refused with a diagnostic
rather than wrapping. Expected products are Python integers."""

from __future__ import annotations

import numpy as np
import pytest

from npuc.diagnostics import NpucError
from npuc.runtime.npu_conv import Operand, gemm_actions
from npuc.runtime.npu_requant import Scratch

INT64_MAX = (1 << 63) - 1


def run(a: np.ndarray, a_peak: int, b: np.ndarray) -> tuple[np.ndarray, int]:
    actions, acc, bound = gemm_actions(a, a_peak, Operand.of(b), a.shape[-1], Scratch())
    for action in actions:
        action()
    return acc, bound


@pytest.mark.parametrize("a_value", [(1 << 62) - 1, -((1 << 62) - 1), 3])
def test_a_bound_below_two_to_the_63_runs_exactly_in_int64(a_value: int) -> None:
    a_peak = (1 << 62) - 1
    a = np.array([[a_value, -1]], np.int64)
    b = np.array([[2, -1], [0, 1]], np.int64)  # column sums of |b|: 2 and 2
    acc, bound = run(a, a_peak, b)
    assert bound == 2 * a_peak == INT64_MAX - 1
    expected = [[2 * a_value, -a_value - 1]]
    assert acc.dtype == np.int64
    assert acc.tolist() == expected


def test_a_bound_of_two_to_the_63_is_refused() -> None:
    a = np.array([[1, 1]], np.int64)
    b = np.array([[1], [1]], np.int64)  # reach 2
    with pytest.raises(NpucError, match=f"accumulator bound of {1 << 63} exceeds the int64"):
        run(a, 1 << 62, b)
