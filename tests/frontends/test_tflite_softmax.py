"""int8 SOFTMAX as qnn.softmax: bit-exact with LiteRT's reference (BUILTIN_REF) kernel."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from tflite_builder import TFLiteModel, run_litert

from npuc.diagnostics import KernelError
from npuc.dialects import qnn
from npuc.frontends.tflite import Unsupported, import_tflite
from npuc.frontends.tflite_softmax import softmax_params
from npuc.graph_io import entry_function, input_names
from npuc.runtime.kernels.qnn_arith import softmax_int8
from npuc.runtime.kernels.qnn_int16_lut import softmax_lut
from npuc.runtime.qnn_interpreter import run_module

RNG = np.random.default_rng(2026)
LENGTHS = (1, 2, 4, 10, 1000)  # one class: every row reads 1.0, stored 127
QUANT = ((0.05, -3), (0.1, 10), (0.5, 0), (1.3, 5), (0.03, -128), (8.0, 0))
BETAS = (1.0, 0.5)


def softmax_model(shape: Sequence[int], scale: float, zp: int, beta: float) -> bytes:
    m = TFLiteModel()
    x = m.tensor("x", shape, np.int8, scale=scale, zero_point=zp)
    y = m.tensor("y", shape, np.int8, scale=1 / 256, zero_point=-128)
    m.op("SOFTMAX", [x], [y], "SoftmaxOptions", Beta=beta)
    return m.build([x], [y])


def check_exact(data: bytes, feed: np.ndarray) -> None:
    module = import_tflite(data)
    assert any(isinstance(op, qnn.SoftmaxOp) for op in module.walk())
    names = input_names(entry_function(module))
    (got,) = run_module(module, dict(zip(names, [feed], strict=True))).values()
    np.testing.assert_array_equal(got, run_litert(data, [feed])[0])


def crafted_rows(n: int, diff_min: int) -> np.ndarray:
    """Ties and boundaries: equal rows, several maxima, extremes, diff_min and diff_min - 1."""
    rows = [np.full(n, v) for v in (-128, 0, 127)]
    two_max = np.full(n, -128)
    two_max[[0, -1]] = 127
    rows += [two_max, np.where(np.arange(n) % 2 == 0, 5, 4), np.where(np.arange(n) < 1, 127, -128)]
    for top in (127, 0, -100):
        for d in (diff_min, diff_min - 1, diff_min + 1, -1):
            if -255 <= d <= 0 and top + d >= -128:
                row = np.full(n, top)
                row[1:] = top + d
                rows.append(row)
    return np.stack(rows).astype(np.int8)


def _sum_fits(n: int, scale: float, beta: float) -> bool:
    """LiteRT aborts on rows whose exponentials add up to 512 (see test_large_sums_are_rejected);
    1000 random values stay far below unless beta * scale is tiny."""
    return n < 512 or beta * scale >= 0.01


CASES = [(n, s, z, b) for n in LENGTHS for s, z in QUANT for b in BETAS if _sum_fits(n, s, b)]


@pytest.mark.parametrize(("n", "scale", "zp", "beta"), CASES)
def test_random_rows_bit_exact(n: int, scale: float, zp: int, beta: float) -> None:
    feed = RNG.integers(-128, 128, (2, 3, n)).astype(np.int8)
    check_exact(softmax_model([2, 3, n], scale, zp, beta), feed)


@pytest.mark.parametrize(("n", "scale", "zp", "beta"), [c for c in CASES if c[0] <= 10])
def test_crafted_rows_bit_exact(n: int, scale: float, zp: int, beta: float) -> None:
    _, _, diff_min = softmax_params(np.float32(beta).item(), np.float32(scale).item())
    feed = crafted_rows(n, diff_min)
    check_exact(softmax_model(list(feed.shape), scale, zp, beta), feed)


@pytest.mark.parametrize(("scale", "beta"), [(0.05, 1.0), (0.5, 0.5), (8.0, 1.0), (0.004, 1.0)])
def test_every_difference_bit_exact(scale: float, beta: float) -> None:
    """Rows [m, m - d] for every difference d in 0..255 and a few maxima m."""
    d = np.arange(256)
    feed = np.concatenate(
        [
            np.stack([np.full(256, 127), 127 - d], axis=1),
            np.stack([-128 + d, np.full(256, -128)], axis=1),
        ]
    )
    check_exact(softmax_model(list(feed.shape), scale, 0, beta), feed.astype(np.int8))


def test_long_rows_near_the_limit_bit_exact() -> None:
    """1000 elements, all but a few far below the maximum: long sums with many exact zeros."""
    feed = np.full((4, 1000), -128, np.int8)
    feed[:, ::97] = 127
    feed[1, ::3] = 120
    feed[2] = RNG.integers(100, 128, 1000)
    check_exact(softmax_model([4, 1000], 0.1, 0, 1.0), feed)


@pytest.mark.parametrize("value", [-128, -3, 0, 127])
def test_a_one_element_tensor_bit_exact(value: int) -> None:
    check_exact(softmax_model([1, 1], 0.1, 0, 1.0), np.array([[value]], np.int8))


def test_rows_of_no_elements_give_no_elements() -> None:
    """A softmax over an empty last axis reduces nothing: the result is as empty as the
    input (int8 and the int16 table path alike), not a reduction error."""
    table = np.zeros(513, np.int64)
    for q in (np.zeros((2, 0), np.int8), np.zeros((0, 3), np.int8)):
        got8 = softmax_int8(q, 1 << 30, 20, -32)
        assert got8.shape == q.shape and got8.dtype == np.int8
        got16 = softmax_lut(q.astype(np.int16), 1 << 30, 1, table, table)
        assert got16.shape == q.shape


def test_props_are_tflite_prepare() -> None:
    module = import_tflite(softmax_model([1, 10], 0.05, -3, 0.5))
    (op,) = [op for op in module.walk() if isinstance(op, qnn.SoftmaxOp)]
    props = (op.input_multiplier.value.data, op.input_left_shift.value.data, op.diff_min.value.data)
    assert props == softmax_params(0.5, float(np.float32(0.05)))
    assert qnn.qtype(op.output).scale == 1 / 256 and qnn.qtype(op.output).zero_point == -128


def test_softmax_params() -> None:
    # 2^26 * 1.0 * 1.0: multiplier 2^30 with left shift 27; radius floor(31 * 2^26 / 2^27) = 15.
    assert softmax_params(1.0, 1.0) == (2**30, 27, -15)
    # Capped at 2^31 - 1: only the maximum takes part (diff_min 0).
    assert softmax_params(1.0, 1000.0) == (2**31 - 1, 31, 0)
    with pytest.raises(Unsupported):
        softmax_params(1.0, 1e-9)


def test_large_sums_are_rejected() -> None:
    """TFLite's shift would exceed 31 (gemmlowp asserts; LiteRT aborts): the kernel refuses."""
    m, shift, diff_min = softmax_params(1.0, float(np.float32(0.01)))
    # 511 equal values: the largest sum LiteRT still runs (512 aborts the process).
    check_exact(softmax_model([1, 511], 0.01, 0, 1.0), np.zeros((1, 511), np.int8))
    with pytest.raises(KernelError, match="512"):
        softmax_int8(np.zeros((1, 512), np.int8), m, shift, diff_min)


def test_wrong_output_type_is_unsupported() -> None:
    m = TFLiteModel()
    x = m.tensor("x", [1, 4], np.int8, scale=0.1, zero_point=0)
    y = m.tensor("y", [1, 4], np.int8, scale=1 / 128, zero_point=0)
    m.op("SOFTMAX", [x], [y], "SoftmaxOptions", Beta=1.0)
    with pytest.raises(Exception, match="1/256"):
        import_tflite(m.build([x], [y]))
