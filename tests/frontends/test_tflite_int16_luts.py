"""16-bit TFLite LOGISTIC, TANH and SOFTMAX: npuc's qnn import and interpreter equal LiteRT's
reference kernels bit for bit, on every int16 input value."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from tflite_builder import TFLiteModel, check_exact, run_litert

from npuc.dialects import qnn_int16 as q16
from npuc.frontends.tflite import import_tflite
from npuc.frontends.tflite_int16_luts import sigmoid_params, softmax_multiplier, softmax_tables
from npuc.graph_io import entry_function

RNG = np.random.default_rng(1616)
Q15 = 2.0**-15
EVERY_INT16 = np.arange(-(2**15), 2**15, dtype=np.int64).astype(np.int16)


def single(
    op: str,
    shape: Sequence[int],
    s_in: float,
    s_out: float = Q15,
    zp_in: int = 0,
    options: str | None = None,
    **fields,
) -> bytes:
    m = TFLiteModel()
    x = m.tensor("x", shape, np.int16, scale=s_in, zero_point=zp_in)
    y = m.tensor("y", shape, np.int16, scale=s_out, zero_point=0)
    m.op(op, [x], [y], options, **fields)
    return m.build([x], [y])


def activation_case(op: str, scale: float) -> tuple[bytes, list[np.ndarray]]:
    """Every int16 value once, as a [256, 256] tensor."""
    return single(op, [256, 256], scale), [EVERY_INT16.reshape(256, 256)]


def softmax_rows(shape: Sequence[int], spread: int) -> np.ndarray:
    """Rows (the last axis) at random offsets, each within a random spread up to `spread`, so
    row sums, and with them the reciprocal table's inputs, vary widely."""
    *outer, depth = shape
    rows = int(np.prod(outer))
    base = RNG.integers(-(2**15) + spread, 2**15, (rows, 1))
    spreads = RNG.integers(1, spread + 1, (rows, 1))
    x = base - RNG.integers(0, 2**31, (rows, depth)) % spreads
    return x.astype(np.int16).reshape(shape)


def softmax_case(scale: float, beta: float, x: np.ndarray) -> tuple[bytes, list[np.ndarray]]:
    data = single("SOFTMAX", list(x.shape), scale, options="SoftmaxOptions", Beta=beta)
    return data, [x]


# Input scales per path of TFLite's Sigmoid/TanhPrepare: power of two with
# input_left_shift = 12 + log2(scale) in {0} (LOGISTIC) / {0, 1} (TANH): multiplier
# 3 << shift; within CheckedLog2's 1e-3 of such a power: the same; otherwise the doubling
# loop, down to 31 doublings (tiny scales) or none (scales above 4/3).
SIGMOID_SCALES = {
    "pot_2^-12": 2.0**-12,
    "near_pot_2^-12": 2.0**-12 * 1.0002,
    "pot_2^-11": 2.0**-11,
    "pot_2^-13": 2.0**-13,
    "pot_2^-4": 2.0**-4,
    "third_of_1e-3": 1 / 3000,
    "1e-3": 0.001,
    "1e-5": 1e-5,
    "1e-9": 1e-9,
    "0.5": 0.5,
    "3.0": 3.0,
}
SOFTMAX_PARAMS = {
    "2^-12_beta1": (2.0**-12, 1.0),
    "3e-4_beta1": (0.0003, 1.0),
    "1e-3_beta0.5": (0.001, 0.5),
    "1e-5_beta1": (1e-5, 1.0),
    "1e-2_beta2": (0.01, 2.0),
    "0.1_beta0.3": (0.1, 0.3),
    "unit_rescale": (10 / 65535, 1.0),  # input differences map 1:1 onto the exp table's input
}

CASES = {
    "softmax_unit_rescale_full_row": lambda: softmax_case(10 / 65535, 1.0, EVERY_INT16[None]),
    "softmax_rank1": lambda: softmax_case(0.001, 1.0, softmax_rows([37], 500)),
    "softmax_rank3": lambda: softmax_case(5e-4, 1.0, softmax_rows([6, 10, 9], 8000)),
    "softmax_rank4": lambda: softmax_case(2**-10, 1.5, softmax_rows([2, 4, 8, 5], 2000)),
    "softmax_rank6": lambda: softmax_case(1e-3, 1.0, softmax_rows([2, 1, 3, 2, 2, 7], 3000)),
    "softmax_single_column": lambda: softmax_case(0.001, 1.0, softmax_rows([40, 1], 10)),
    "softmax_equal_values": lambda: softmax_case(0.001, 1.0, np.full((3, 700), 1234, np.int16)),
}
for _key, _scale in SIGMOID_SCALES.items():
    CASES[f"logistic_{_key}"] = lambda s=_scale: activation_case("LOGISTIC", s)
    CASES[f"tanh_{_key}"] = lambda s=_scale: activation_case("TANH", s)
for _key, _params in SOFTMAX_PARAMS.items():
    CASES[f"softmax_{_key}_every_value"] = lambda p=_params: softmax_case(
        *p, EVERY_INT16.reshape(4, -1)
    )
    CASES[f"softmax_{_key}_small_spreads"] = lambda p=_params: softmax_case(
        *p, softmax_rows([2048, 6], 3000)
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_bit_exact(case: str) -> None:
    check_exact(*CASES[case]())


@pytest.mark.parametrize(
    ("function", "scale", "params"),
    [
        ("logistic", 2.0**-12, (3, 0)),  # power of two, left shift 0
        ("logistic", 2.0**-12 * 1.0002, (3, 0)),  # CheckedLog2 accepts it as 2^-12
        ("logistic", 2.0**-11, (24576, 12)),  # left shift 1: LOGISTIC takes the general path
        ("tanh", 2.0**-11, (6, 0)),  # ... TANH the power-of-two one: 3 << 1
        ("tanh", 2.0**-10, (24576, 11)),
        ("tanh", 1e-9, (26388, 31)),  # the doubling loop stops after 31 doublings
        ("tanh", 3.0, (36864, 0)),  # no doubling: 3 * 4096 * 3
    ],
)
def test_sigmoid_prepare_paths(function: str, scale: float, params: tuple[int, int]) -> None:
    """Multipliers worked out by hand from Sigmoid/TanhPrepare, so each case above really
    exercises the path it is named after."""
    assert sigmoid_params(scale, function) == params


def test_importer_emits_the_table_ops() -> None:
    module = import_tflite(single("TANH", [3, 4], 2.0**-11))
    ops = [op for op in entry_function(module).body.block.ops if op.name.startswith("qnn.")]
    assert [op.name for op in ops] == ["qnn.sigmoid_lut"]
    assert (ops[0].function.data, ops[0].input_multiplier.value.data) == ("tanh", 6)
    module = import_tflite(single("SOFTMAX", [3, 4], 0.001, options="SoftmaxOptions", Beta=1.0))
    names = [op.name for op in entry_function(module).body.block.ops]
    assert q16.SoftmaxLutOp.name in names


def test_softmax_tables_approximate_their_functions() -> None:
    """An independent sanity bound: entries are 32768 f(x) up to TFLite's midpoint bias."""
    exp_table, recip_table = softmax_tables()
    grid = np.arange(513) / 512
    assert np.abs(exp_table - 32768 * np.exp(-10 + 10 * grid)).max() <= 1.5
    assert np.abs(recip_table - 32768 / (1 + grid)).max() <= 1.5
    assert exp_table[-1] == 32767  # exp(0) saturates the int16 table


def test_softmax_multiplier_rounds_scale_times_beta_in_float32() -> None:
    """TFLite multiplies the float32 scale and beta in float32 before the double division."""
    scale, beta = 0.0003, 0.3
    product = float(np.float32(scale) * np.float32(beta))
    exact = float(np.float32(scale)) * float(np.float32(beta))
    assert abs(product / exact - 1) > 2**-28  # the two differ well beyond the Q31 step
    m0, shift = softmax_multiplier(scale, beta)
    assert m0 * 2.0**-shift == pytest.approx(product * 6553.5, rel=2**-30)


SOFTMAX_OPTIONS = {"options": "SoftmaxOptions", "Beta": 1.0}


@pytest.mark.parametrize(
    ("op", "shape", "fields", "reason"),
    [
        ("LOGISTIC", [4], {"s_out": 2.0**-14}, "scale 2\\^-15"),
        ("LOGISTIC", [4], {"s_out": Q15 * 1.0001}, "scale 2\\^-15"),  # LOGISTIC: exactly 2^-15
        ("TANH", [4], {"s_out": 1 / 32000}, "scale 2\\^-15"),
        ("LOGISTIC", [4], {"zp_in": 5}, "zero point"),
        ("SOFTMAX", [4], {"s_out": 1 / 256, **SOFTMAX_OPTIONS}, "1/32768"),
        ("SOFTMAX", [], SOFTMAX_OPTIONS, "scalar"),
    ],
)
def test_what_litert_refuses_is_refused(
    op: str, shape: list[int], fields: dict, reason: str
) -> None:
    data = single(op, shape, 0.001, **fields)
    with pytest.raises(Exception, match=reason):
        import_tflite(data)
    with pytest.raises(Exception):  # noqa: B017  (LiteRT's Prepare/Eval error type varies)
        run_litert(data, [np.zeros(shape, np.int16)])


def test_softmax_beyond_int32_differences_is_refused() -> None:
    """scale * beta >= 5 makes TFLite left-shift differences past int32 (undefined); refused."""
    with pytest.raises(Exception, match="beyond int32"):
        import_tflite(single("SOFTMAX", [4], 8.0, options="SoftmaxOptions", Beta=1.0))


def test_sigmoid_scale_beyond_int32_is_refused() -> None:
    with pytest.raises(Exception, match="int32"):
        import_tflite(single("LOGISTIC", [4], 6.0))
