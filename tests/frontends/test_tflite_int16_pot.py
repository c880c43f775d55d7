"""16-bit ADD/SUB with power-of-two scales (TFLite's POT kernels), broadcasting included.

SUB is checked bit for bit against LiteRT's reference kernel. LiteRT 2.3 aborts on a
broadcasting POT ADD (every resolver), so there the reference is a numpy model of
TFLite's POT ADD written from gemmlowp's RoundingDivideByPOT and SaturatingAdd, itself
checked against LiteRT where LiteRT runs (equal shapes).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from tflite_builder import TFLiteModel, check_exact, run_litert

from npuc.diagnostics import NpucError
from npuc.dialects import qnn
from npuc.frontends.tflite import import_tflite
from npuc.runtime.qnn_interpreter import run_module

RNG = np.random.default_rng(16)


def pot_model(
    op: str, shapes: Sequence[Sequence[int]], exponents: Sequence[int], act: int = 0
) -> tuple[bytes, list[np.ndarray]]:
    """An int16 ADD/SUB with scales 2^e (lhs, rhs, output), zero points 0, PotScaleInt16."""
    a_shape, b_shape = shapes
    out_shape = list(np.broadcast_shapes(tuple(a_shape), tuple(b_shape)))
    m = TFLiteModel()
    a = m.tensor("a", a_shape, np.int16, scale=2.0 ** exponents[0], zero_point=0)
    b = m.tensor("b", b_shape, np.int16, scale=2.0 ** exponents[1], zero_point=0)
    y = m.tensor("y", out_shape, np.int16, scale=2.0 ** exponents[2], zero_point=0)
    options = "AddOptions" if op == "ADD" else "SubOptions"
    m.op(op, [a, b], [y], options, FusedActivationFunction=act, PotScaleInt16=True)
    feeds = [RNG.integers(-32768, 32768, s).astype(np.int16) for s in (a_shape, b_shape)]
    return m.build([a, b], [y]), feeds


def rounding_divide_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT: x / 2^exponent rounded half away from zero."""
    x = x.astype(np.int64)
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + ((x & mask) > threshold)


def pot_reference(
    op: str, feeds: Sequence[np.ndarray], exponents: Sequence[int], act: int
) -> np.ndarray:
    """TFLite's POT kernel per (broadcast) element: saturate16(a' +- b'), then the activation."""
    a, b = np.broadcast_arrays(*feeds)
    a = rounding_divide_by_pot(a, exponents[2] - exponents[0])
    b = rounding_divide_by_pot(b, exponents[2] - exponents[1])
    y = np.clip(a + b if op == "ADD" else a - b, -32768, 32767)
    if act == 1:
        y = np.maximum(y, 0)
    return y.astype(np.int16)


def run_npuc(data: bytes, feeds: Sequence[np.ndarray]) -> np.ndarray:
    (y,) = run_module(import_tflite(data), {"a": feeds[0], "b": feeds[1]}).values()
    return y


SUB_CASES = {
    "same_shape_rhs_finer": ([[2, 64], [2, 64]], [-10, -12, -10], 0),
    "same_shape_lhs_finer_relu": ([[2, 64], [2, 64]], [-13, -10, -10], 1),
    "broadcast_rhs_row": ([[2, 64], [1, 64]], [-12, -10, -10], 0),
    "broadcast_lhs_row": ([[1, 64], [2, 64]], [-12, -10, -10], 0),
    "broadcast_channels_nhwc_relu": ([[1, 4, 4, 8], [1, 1, 1, 8]], [-10, -11, -10], 1),
    "broadcast_both": ([[1, 4, 1, 8], [1, 1, 5, 8]], [-10, -10, -10], 0),
    "broadcast_column_row": ([[3, 1], [1, 5]], [-10, -14, -10], 0),
}


@pytest.mark.parametrize("case", sorted(SUB_CASES))
def test_pot_sub_bit_exact(case: str) -> None:
    shapes, exponents, act = SUB_CASES[case]
    data, feeds = pot_model("SUB", shapes, exponents, act)
    check_exact(data, feeds)


@pytest.mark.parametrize(
    ("shapes", "exponents", "act"),
    [
        ([[2, 64], [2, 64]], [-12, -10, -10], 0),
        ([[3, 40], [3, 40]], [-9, -11, -9], 1),
    ],
)
def test_pot_add_reference_model_matches_litert(shapes, exponents, act) -> None:
    data, feeds = pot_model("ADD", shapes, exponents, act)
    want = run_litert(data, feeds)[0]
    np.testing.assert_array_equal(pot_reference("ADD", feeds, exponents, act), want)
    np.testing.assert_array_equal(run_npuc(data, feeds), want)


@pytest.mark.parametrize(
    ("shapes", "exponents", "act"),
    [
        ([[2, 64], [1, 64]], [-12, -10, -10], 0),
        ([[1, 64], [3, 64]], [-10, -13, -10], 0),
        ([[1, 4, 4, 8], [1, 1, 1, 8]], [-10, -11, -10], 1),
        ([[3, 1], [1, 5]], [-14, -10, -10], 0),
    ],
)
def test_pot_add_broadcast_matches_the_kernel_rule(shapes, exponents, act) -> None:
    data, feeds = pot_model("ADD", shapes, exponents, act)
    got = run_npuc(data, feeds)
    assert got.shape == tuple(np.broadcast_shapes(*map(tuple, shapes)))
    np.testing.assert_array_equal(got, pot_reference("ADD", feeds, exponents, act))


def test_pot_sub_is_qnn_sub_with_exact_shifts() -> None:
    data, _ = pot_model("SUB", [[2, 64], [1, 64]], [-10, -12, -10])
    (sub,) = [op for op in import_tflite(data).walk() if isinstance(op, qnn.SubOp)]
    assert sub.left_shift.value.data == 1
    assert (sub.lhs_shift.value.data, sub.rhs_shift.value.data) == (31, 33)


def test_pot_with_both_inputs_rescaled_is_refused() -> None:
    data, _ = pot_model("SUB", [[2, 8], [2, 8]], [-12, -11, -10])  # LiteRT's Prepare fails too
    with pytest.raises(NpucError, match="16-bit SUB with power-of-two scales needs"):
        import_tflite(data)
