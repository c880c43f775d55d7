"""int16x8 TFLite models: npuc's qnn import and interpreter equal LiteRT's reference kernels."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tflite_builder import TFLiteModel, check_exact, run_litert

from npuc.dialects import qnn
from npuc.frontends.tflite import import_tflite
from npuc.frontends.tflite_quant import tflite64_multiplier
from npuc.integer import requantize, rounding_divide
from npuc.runtime.qnn_interpreter import run_module

RNG = np.random.default_rng(1616)
SAME, VALID = 0, 1
CONV = {"DilationHFactor": 1, "DilationWFactor": 1}


class Q:
    """An int16 activation spec: shape and scale (zero point 0 unless given)."""

    def __init__(self, shape: Sequence[int], scale: float, zp: int = 0, dtype=np.int16):
        self.shape, self.scale, self.zp, self.dtype = list(shape), scale, zp, dtype


def weights(shape: Sequence[int], axis: int | None) -> tuple[np.ndarray, np.ndarray]:
    w = RNG.integers(-127, 128, shape).astype(np.int8)
    n = 1 if axis is None else shape[axis]
    return w, RNG.uniform(0.002, 0.02, n).astype(np.float32)


def feed(spec: Q) -> np.ndarray:
    info = np.iinfo(spec.dtype)
    return RNG.integers(info.min, info.max + 1, spec.shape).astype(spec.dtype)


def single(
    op: str, inputs: Sequence, outs: Q, options: str | None = None, **fields
) -> tuple[bytes, list[np.ndarray]]:
    """A one-operator 16x8 model; inputs are Q, ("w", int8 array, scales, axis),
    ("b", int64/int32 array, scales) or plain int32 arrays."""
    m = TFLiteModel()
    ids, args, feeds = [], [], []
    for i, spec in enumerate(inputs):
        if isinstance(spec, Q):
            t = m.tensor(f"x{i}", spec.shape, spec.dtype, scale=spec.scale, zero_point=spec.zp)
            args.append(t)
            feeds.append(feed(spec))
        elif isinstance(spec, tuple) and spec[0] == "w":
            _, data, scales, axis = spec
            t = m.tensor(f"w{i}", data.shape, np.int8, data=data, scale=scales, axis=axis)
        elif isinstance(spec, tuple) and spec[0] == "b":
            _, data, scales = spec
            t = m.tensor(f"b{i}", data.shape, data.dtype, data=data, scale=scales)
        else:
            data = np.asarray(spec)
            t = m.tensor(f"c{i}", data.shape, data.dtype, data=data)
        ids.append(t)
    y = m.tensor("y", outs.shape, outs.dtype, scale=outs.scale, zero_point=outs.zp)
    m.op(op, ids, [y], options, **fields)
    return m.build(args, [y]), feeds


def conv_case(
    kernel: Sequence[int],
    channels: int,
    cin: int,
    stride: int,
    padding: int,
    act: int,
    out_hw: Sequence[int],
    bias_dtype=np.int64,
    bias_range: int = 2**20,
) -> tuple[bytes, list[np.ndarray]]:
    w, ws = weights([channels, *kernel, cin], 0)
    bias = RNG.integers(-bias_range, bias_range, channels).astype(bias_dtype)
    inputs = [Q([1, 9, 9, cin], 0.0004), ("w", w, ws, 0), ("b", bias, ws * 0.0004)]
    if bias_dtype is None:
        inputs[2] = -1
    return single(
        "CONV_2D",
        [i for i in inputs if not isinstance(i, int)],
        Q([1, *out_hw, channels], 0.0011),
        "Conv2DOptions",
        Padding=padding,
        StrideH=stride,
        StrideW=stride,
        FusedActivationFunction=act,
        **CONV,
    )


def depthwise_case(act: int, multiplier: int) -> tuple[bytes, list[np.ndarray]]:
    c = 3 * multiplier
    w, ws = weights([1, 3, 3, c], 3)
    bias = RNG.integers(-(2**20), 2**20, c).astype(np.int64)
    return single(
        "DEPTHWISE_CONV_2D",
        [Q([1, 8, 8, 3], 0.0003), ("w", w, ws, 3), ("b", bias, ws * 0.0003)],
        Q([1, 8, 8, c], 0.0005),
        "DepthwiseConv2DOptions",
        Padding=SAME,
        StrideH=1,
        StrideW=1,
        DepthMultiplier=multiplier,
        FusedActivationFunction=act,
        **CONV,
    )


def fc_case(
    per_channel: bool, act: int = 1, bias_dtype=np.int64, k: int = 32
) -> tuple[bytes, list[np.ndarray]]:
    w, ws = weights([10, k], 0 if per_channel else None)
    inputs = [Q([3, k], 0.0007), ("w", w, ws, 0)]
    if bias_dtype is not None:
        bias = RNG.integers(-(2**21), 2**21, 10).astype(bias_dtype)
        inputs.append(("b", bias, ws * 0.0007))
    return single(
        "FULLY_CONNECTED",
        inputs,
        Q([3, 10], 0.004),
        "FullyConnectedOptions",
        FusedActivationFunction=act,
    )


def pool_case(op: str, kernel: int, stride: int, padding: int, out: int, act: int = 0):
    return single(
        op,
        [Q([1, 9, 9, 4], 0.001)],
        Q([1, out, out, 4], 0.001),
        "Pool2DOptions",
        Padding=padding,
        StrideH=stride,
        StrideW=stride,
        FilterHeight=kernel,
        FilterWidth=kernel,
        FusedActivationFunction=act,
    )


def add_case(a: Q, b: Q, out: Q, pot: bool = False, act: int = 0, op: str = "ADD"):
    options = "AddOptions" if op == "ADD" else "SubOptions"
    return single(op, [a, b], out, options, FusedActivationFunction=act, PotScaleInt16=pot)


CASES = {
    "conv_same_s2_relu6": lambda: conv_case([3, 3], 8, 3, 2, SAME, 3, [5, 5]),
    "conv_valid": lambda: conv_case([3, 3], 6, 4, 1, VALID, 0, [7, 7]),
    "conv_1x1_relu": lambda: conv_case([1, 1], 16, 8, 1, SAME, 1, [9, 9]),
    "conv_large_bias": lambda: conv_case([3, 3], 4, 3, 1, SAME, 0, [9, 9], bias_range=2**30),
    "depthwise_relu6": lambda: depthwise_case(3, 1),
    "depthwise_multiplier2": lambda: depthwise_case(0, 2),
    "fully_connected_per_tensor": lambda: fc_case(False),
    "fully_connected_per_channel": lambda: fc_case(True, act=0),
    "fully_connected_no_bias": lambda: fc_case(True, act=0, bias_dtype=None),
    "fully_connected_k128": lambda: fc_case(False, act=0, k=128),
    "add": lambda: add_case(Q([1, 4, 4, 8], 0.0005), Q([1, 4, 4, 8], 0.0011),
                            Q([1, 4, 4, 8], 0.0013)),
    "add_broadcast_relu": lambda: add_case(Q([1, 4, 4, 8], 0.0005), Q([1, 1, 1, 8], 0.0002),
                                           Q([1, 4, 4, 8], 0.0004), act=1),
    "add_pot_default_option": lambda: add_case(Q([2, 64], 2.0**-12), Q([2, 64], 2.0**-10),
                                               Q([2, 64], 2.0**-10), pot=True),
    "add_pot_scales_general_path": lambda: add_case(Q([2, 64], 2.0**-12),
                                                    Q([2, 64], 2.0**-10), Q([2, 64], 2.0**-9)),
    "sub": lambda: add_case(Q([2, 16], 0.0007), Q([2, 16], 0.0003), Q([2, 16], 0.001),
                            op="SUB"),
    "mul_relu": lambda: single("MUL", [Q([2, 16], 0.0007), Q([2, 16], 0.0003)],
                               Q([2, 16], 0.0001), "MulOptions", FusedActivationFunction=1),
    "mul_broadcast": lambda: single("MUL", [Q([1, 4, 4, 8], 0.002), Q([1, 1, 1, 8], 0.0003)],
                                    Q([1, 4, 4, 8], 0.00002), "MulOptions"),
    "avg_pool_global": lambda: pool_case("AVERAGE_POOL_2D", 9, 1, VALID, 1),
    "avg_pool_3x3_s2_same": lambda: pool_case("AVERAGE_POOL_2D", 3, 2, SAME, 5),
    "avg_pool_2x2_relu6": lambda: pool_case("AVERAGE_POOL_2D", 2, 2, SAME, 5, act=3),
    "max_pool_relu": lambda: pool_case("MAX_POOL_2D", 3, 2, SAME, 5, act=1),
    "reshape": lambda: single("RESHAPE", [Q([1, 1, 1, 12], 0.001), np.array([1, 12], np.int32)],
                              Q([1, 12], 0.001), "ReshapeOptions", NewShape=[1, 12]),
    "concatenation": lambda: single(
        "CONCATENATION", [Q([1, 2, 2, 3], 0.001), Q([1, 2, 2, 2], 0.001)],
        Q([1, 2, 2, 5], 0.001), "ConcatenationOptions", Axis=3),
    "requantize_int16": lambda: single("QUANTIZE", [Q([4, 8], 0.0005)], Q([4, 8], 0.0003)),
    "requantize_int16_to_int8": lambda: single("QUANTIZE", [Q([4, 8], 0.0005)],
                                               Q([4, 8], 0.03, 5, np.int8)),
    "requantize_int8_to_int16": lambda: single("QUANTIZE", [Q([4, 8], 0.03, 5, np.int8)],
                                               Q([4, 8], 0.0005)),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_bit_exact(case: str) -> None:
    data, feeds = CASES[case]()
    check_exact(data, feeds)


def test_quantize_and_dequantize_match_litert() -> None:
    m = TFLiteModel()
    x = m.tensor("x", [4, 64])
    q = m.tensor("q", [4, 64], np.int16, scale=0.00037, zero_point=0)
    y = m.tensor("y", [4, 64])
    m.op("QUANTIZE", [x], [q])
    m.op("DEQUANTIZE", [q], [y])
    data = m.build([x], [y])
    xi = (RNG.standard_normal((4, 64)) * 5).astype(np.float32)
    got = run_module(import_tflite(data), {"x": xi})["y"]
    np.testing.assert_array_equal(got, run_litert(data, [xi])[0])


def test_int64_bias_conv_uses_tflite64_rescaling() -> None:
    data, _ = conv_case([3, 3], 8, 3, 2, SAME, 3, [5, 5])
    conv = next(op for op in import_tflite(data).walk() if isinstance(op, qnn.Conv2dOp))
    assert conv.rounding.data == "half_up"
    assert all(m < 2**15 for m in conv.multiplier.get_values())


def test_fully_connected_rounds_once_on_the_q31_multiplier() -> None:
    data, _ = fc_case(True)
    fc = next(op for op in import_tflite(data).walk() if isinstance(op, qnn.FullyConnectedOp))
    assert fc.rounding.data == "half_up"
    assert all(2**30 <= m < 2**31 for m in fc.multiplier.get_values())


def test_pot_add_is_a_shift_and_saturating_add() -> None:
    data, _ = CASES["add_pot_default_option"]()
    add = next(op for op in import_tflite(data).walk() if isinstance(op, qnn.AddOp))
    assert add.left_shift.value.data == 1
    assert (add.lhs_shift.value.data, add.rhs_shift.value.data) == (33, 31)


@pytest.mark.parametrize("layer", ["conv_int32_bias", "conv_no_bias", "fc_int32_bias"])
def test_unverified_bias_forms_are_refused(layer: str) -> None:
    data, _ = {
        "conv_int32_bias": lambda: conv_case([1, 1], 2, 2, 1, SAME, 0, [9, 9], np.int32),
        "conv_no_bias": lambda: conv_case([1, 1], 2, 2, 1, SAME, 0, [9, 9], None),
        "fc_int32_bias": lambda: fc_case(True, bias_dtype=np.int32),
    }[layer]()
    with pytest.raises(Exception, match="bias"):
        import_tflite(data)


def test_int64_bias_beyond_int32_is_refused() -> None:
    data, _ = conv_case([1, 1], 2, 2, 1, SAME, 0, [9, 9], bias_range=2**33)
    with pytest.raises(Exception, match="beyond int32"):
        import_tflite(data)


def test_int16_zero_point_is_refused() -> None:
    data, _ = single("MUL", [Q([2, 4], 0.001, 3), Q([2, 4], 0.001)], Q([2, 4], 0.001), "MulOptions")
    with pytest.raises(Exception, match="zero point"):
        import_tflite(data)


# --------------------------------------------------------------------------- rounding


def reference_mbqm64(x: int, quantized_multiplier: int, shift: int) -> int:
    """TFLite's MultiplyByQuantizedMultiplier(int64_t x, int32_t, int shift), transcribed."""
    reduced = (
        (quantized_multiplier + (1 << 15)) >> 16 if quantized_multiplier < 0x7FFF0000 else 0x7FFF
    )
    total_shift = 15 - shift
    rounding = 1 << (total_shift - 1)
    return (x * reduced + rounding) >> total_shift  # Python's >> floors, as C++20 >> on int64


@settings(max_examples=400, deadline=None)
@given(
    x=st.integers(-(2**47), 2**47 - 1),
    m0=st.integers(2**30, 2**31 - 1),
    tfl_shift=st.integers(-31, 7),
)
def test_half_up_with_reduced_multiplier_is_tflite_64bit_multiply(
    x: int, m0: int, tfl_shift: int
) -> None:
    m, s = tflite64_multiplier((m0, 31 - tfl_shift))
    got = int(requantize(np.array([x]), m, s, "half_up")[0])
    assert got == reference_mbqm64(x, m0, tfl_shift)


def reference_mbqm64_single(x: int, quantized_multiplier: int, shift: int) -> int:
    """The single-rounding form LiteRT's 16x8 FULLY_CONNECTED matches: Q31 multiplier."""
    total_shift = 31 - shift
    return (x * quantized_multiplier + (1 << (total_shift - 1))) >> total_shift


@settings(max_examples=400, deadline=None)
@given(
    x=st.integers(-(2**31), 2**31 - 1),
    m0=st.integers(2**30, 2**31 - 1),
    tfl_shift=st.integers(-31, 7),
)
def test_half_up_is_single_rounding_multiply(x: int, m0: int, tfl_shift: int) -> None:
    got = int(requantize(np.array([x]), m0, 31 - tfl_shift, "half_up")[0])
    assert got == reference_mbqm64_single(x, m0, tfl_shift)


@given(x=st.integers(-(2**40), 2**40), shift=st.integers(0, 20), d=st.integers(1, 1000))
def test_half_up_rounds_ties_toward_plus_infinity(x: int, shift: int, d: int) -> None:
    got = int(requantize(np.array([x]), 1, shift, "half_up")[0])
    assert got == (2 * x + (1 << shift)) // (2 << shift)  # floor(x / 2^shift + 1/2)
    assert int(rounding_divide(np.array([x]), d, "half_up")[0]) == (2 * x + d) // (2 * d)
