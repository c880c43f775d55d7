"""int8 TFLite models: npuc's qnn import and interpreter equal LiteRT's reference kernels."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from tflite_builder import TFLiteModel, check_exact, run_litert

from npuc.dialects import qnn
from npuc.frontends.tflite import import_tflite
from npuc.frontends.tflite_quant import tflite_multiplier
from npuc.integer import quantize_multiplier
from npuc.runtime.qnn_interpreter import run_module

RNG = np.random.default_rng(99)
SAME, VALID = 0, 1
CONV = {"DilationHFactor": 1, "DilationWFactor": 1}


class Q:
    """An activation spec: shape with its scale and zero point."""

    def __init__(self, shape: Sequence[int], scale: float, zp: int = 0):
        self.shape, self.scale, self.zp = list(shape), scale, zp


def weights(shape: Sequence[int], axis: int | None) -> tuple[np.ndarray, np.ndarray]:
    w = RNG.integers(-127, 128, shape).astype(np.int8)
    n = 1 if axis is None else shape[axis]
    return w, RNG.uniform(0.002, 0.02, n).astype(np.float32)


def single(
    op: str, inputs: Sequence, outs: Q | Sequence[Q], options: str | None = None, **fields
) -> tuple[bytes, list[np.ndarray]]:
    """A one-operator int8 model; inputs are Q (activations), ("w", array, scales, axis),
    ("b", int32 array, scales) or plain int32 arrays (shapes, axes)."""
    m = TFLiteModel()
    ids, args, feeds = [], [], []
    for i, spec in enumerate(inputs):
        if isinstance(spec, Q):
            t = m.tensor(f"x{i}", spec.shape, np.int8, scale=spec.scale, zero_point=spec.zp)
            args.append(t)
            feeds.append(RNG.integers(-128, 128, spec.shape).astype(np.int8))
        elif isinstance(spec, tuple) and spec[0] == "w":
            _, data, scales, axis = spec
            t = m.tensor(f"w{i}", data.shape, np.int8, data=data, scale=scales, axis=axis)
        elif isinstance(spec, tuple) and spec[0] == "b":
            _, data, scales = spec
            t = m.tensor(f"b{i}", data.shape, np.int32, data=data, scale=scales)
        else:
            data = np.asarray(spec)
            t = m.tensor(f"c{i}", data.shape, data.dtype, data=data)
        ids.append(t)
    outs = [outs] if isinstance(outs, Q) else list(outs)
    out_ids = [
        m.tensor(f"y{i}", q.shape, np.int8, scale=q.scale, zero_point=q.zp)
        for i, q in enumerate(outs)
    ]
    m.op(op, ids, out_ids, options, **fields)
    return m.build(args, out_ids), feeds


def conv_case(
    kernel: Sequence[int],
    channels: int,
    cin: int,
    stride: int,
    padding: int,
    act: int,
    out_hw: Sequence[int],
) -> tuple[bytes, list[np.ndarray]]:
    w, ws = weights([channels, *kernel, cin], 0)
    x = Q([1, 9, 9, cin], 0.05, -7)
    bias = RNG.integers(-3000, 3000, channels).astype(np.int32)
    return single(
        "CONV_2D",
        [x, ("w", w, ws, 0), ("b", bias, ws * 0.05)],
        Q([1, *out_hw, channels], 0.09, 5),
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
    bias = RNG.integers(-2000, 2000, c).astype(np.int32)
    return single(
        "DEPTHWISE_CONV_2D",
        [Q([1, 8, 8, 3], 0.04, 3), ("w", w, ws, 3), ("b", bias, ws * 0.04)],
        Q([1, 8, 8, c], 0.03, -20),
        "DepthwiseConv2DOptions",
        Padding=SAME,
        StrideH=1,
        StrideW=1,
        DepthMultiplier=multiplier,
        FusedActivationFunction=act,
        **CONV,
    )


def fc_case(per_channel: bool) -> tuple[bytes, list[np.ndarray]]:
    w, ws = weights([10, 32], 0 if per_channel else None)
    bias = RNG.integers(-5000, 5000, 10).astype(np.int32)
    return single(
        "FULLY_CONNECTED",
        [Q([3, 32], 0.037, -11), ("w", w, ws, 0), ("b", bias, ws * 0.037)],
        Q([3, 10], 0.21, 9),
        "FullyConnectedOptions",
        FusedActivationFunction=1,
    )


def pool_case(op: str, kernel: int, stride: int, padding: int, out: int, zp: int, act: int = 0):
    return single(
        op,
        [Q([1, 9, 9, 4], 0.1, zp)],
        Q([1, out, out, 4], 0.1, zp),
        "Pool2DOptions",
        Padding=padding,
        StrideH=stride,
        StrideW=stride,
        FilterHeight=kernel,
        FilterWidth=kernel,
        FusedActivationFunction=act,
    )


CASES = {
    "conv_per_channel_same_s2_relu6": lambda: conv_case([3, 3], 8, 3, 2, SAME, 3, [5, 5]),
    "conv_per_channel_valid": lambda: conv_case([3, 3], 6, 4, 1, VALID, 0, [7, 7]),
    "conv_1x1_relu": lambda: conv_case([1, 1], 16, 8, 1, SAME, 1, [9, 9]),
    "depthwise_relu6": lambda: depthwise_case(3, 1),
    "depthwise_multiplier2": lambda: depthwise_case(0, 2),
    "fully_connected_per_tensor": lambda: fc_case(False),
    "fully_connected_per_channel": lambda: fc_case(True),
    "add": lambda: single("ADD", [Q([1, 4, 4, 8], 0.05, -3), Q([1, 4, 4, 8], 0.11, 12)],
                          Q([1, 4, 4, 8], 0.13, -5), "AddOptions"),
    "add_broadcast_relu6": lambda: single(
        "ADD", [Q([1, 4, 4, 8], 0.05, -3), Q([1, 1, 1, 8], 0.02, 1)], Q([1, 4, 4, 8], 0.04, -128),
        "AddOptions", FusedActivationFunction=3),
    "sub": lambda: single("SUB", [Q([2, 16], 0.07, 4), Q([2, 16], 0.03, -9)], Q([2, 16], 0.1, 2),
                          "SubOptions"),
    "mul_relu": lambda: single("MUL", [Q([2, 16], 0.07, 4), Q([2, 16], 0.03, -9)],
                               Q([2, 16], 0.01, -30), "MulOptions", FusedActivationFunction=1),
    "avg_pool_global_7x7_like": lambda: pool_case("AVERAGE_POOL_2D", 9, 1, VALID, 1, -128),
    "avg_pool_3x3_s2_valid": lambda: pool_case("AVERAGE_POOL_2D", 3, 2, VALID, 4, 17),
    "avg_pool_2x2_zero_zp": lambda: pool_case("AVERAGE_POOL_2D", 2, 2, SAME, 5, 0),
    # Border windows of 4 and 6 positions with zero point 17: exact ties in the mean.
    "avg_pool_3x3_s2_same_ties": lambda: pool_case("AVERAGE_POOL_2D", 3, 2, SAME, 5, 17),
    "max_pool_relu": lambda: pool_case("MAX_POOL_2D", 3, 2, SAME, 5, -10, act=1),
    "reshape": lambda: single("RESHAPE", [Q([1, 1, 1, 12], 0.1, 3), np.array([1, 12], np.int32)],
                              Q([1, 12], 0.1, 3), "ReshapeOptions", NewShape=[1, 12]),
    "squeeze": lambda: single("SQUEEZE", [Q([1, 1, 1, 12], 0.1, 3)], Q([1, 12], 0.1, 3),
                              "SqueezeOptions", SqueezeDims=[1, 2]),
    "transpose": lambda: single("TRANSPOSE", [Q([2, 3, 4], 0.1, 3), np.array([1, 2, 0], np.int32)],
                                Q([3, 4, 2], 0.1, 3)),
    "concatenation": lambda: single(
        "CONCATENATION", [Q([1, 2, 2, 3], 0.1, 3), Q([1, 2, 2, 2], 0.1, 3)],
        Q([1, 2, 2, 5], 0.1, 3), "ConcatenationOptions", Axis=3),
    "pad": lambda: single("PAD", [Q([1, 2, 3, 2], 0.1, -4),
                                  np.array([[0, 0], [1, 1], [2, 0], [0, 0]], np.int32)],
                          Q([1, 4, 5, 2], 0.1, -4)),
    "split": lambda: single("SPLIT", [np.array([1], np.int32), Q([2, 6], 0.1, 3)],
                            [Q([2, 3], 0.1, 3), Q([2, 3], 0.1, 3)], "SplitOptions", NumSplits=2),
    "requantize": lambda: single("QUANTIZE", [Q([4, 8], 0.05, 7)], Q([4, 8], 0.03, -2)),
    "depth_to_space": lambda: single("DEPTH_TO_SPACE", [Q([1, 2, 3, 18], 0.1, 5)],
                                     Q([1, 6, 9, 2], 0.1, 5), "DepthToSpaceOptions", BlockSize=3),
    # Activations as qnn.lut (all 256 inputs: test_tflite_int8_activations).
    "logistic": lambda: single("LOGISTIC", [Q([2, 32], 0.06, -3)], Q([2, 32], 1 / 256, -128)),
    "tanh": lambda: single("TANH", [Q([2, 32], 0.03, 11)], Q([2, 32], 1 / 128, 0)),
    "hard_swish": lambda: single("HARD_SWISH", [Q([1, 4, 4, 8], 0.05, -7)],
                                 Q([1, 4, 4, 8], 0.03, -90)),
    "leaky_relu": lambda: single("LEAKY_RELU", [Q([2, 32], 0.05, 4)], Q([2, 32], 0.03, -20),
                                 "LeakyReluOptions", Alpha=0.2),
    "gelu": lambda: single("GELU", [Q([2, 32], 0.04, 0)], Q([2, 32], 0.02, -60), "GeluOptions",
                           Approximate=False),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_bit_exact(case: str) -> None:
    data, feeds = CASES[case]()
    check_exact(data, feeds)


def test_quantize_and_dequantize_match_litert() -> None:
    m = TFLiteModel()
    x = m.tensor("x", [4, 16])
    q = m.tensor("q", [4, 16], np.int8, scale=0.037, zero_point=-5)
    y = m.tensor("y", [4, 16])
    m.op("QUANTIZE", [x], [q])
    m.op("DEQUANTIZE", [q], [y])
    data = m.build([x], [y])
    xi = (RNG.standard_normal((4, 16)) * 3).astype(np.float32)
    got = run_module(import_tflite(data), {"x": xi})["y"]
    np.testing.assert_array_equal(got, run_litert(data, [xi])[0])


def test_conv_props_are_tflite_multipliers() -> None:
    data, _ = conv_case([3, 3], 8, 3, 2, SAME, 3, [5, 5])
    conv = next(op for op in import_tflite(data).walk() if isinstance(op, qnn.Conv2dOp))
    assert conv.rounding.data == "tflite"
    assert len(conv.multiplier.get_values()) == 8
    q = qnn.qtype(conv.output)
    # relu6 clamp: [zp, zp + round(6 / scale)] (CalculateActivationRangeQuantized)
    assert (conv.clamp_min.value.data, conv.clamp_max.value.data) == (5, 5 + round(6 / 0.09))
    assert q.zero_point == 5


def test_tflite_multiplier_rounds_like_std_round() -> None:
    # frac * 2^31 = 2^30 + 0.5 exactly: std::round goes up, Python's round() to even would not.
    real = (2**30 + 0.5) / 2**31
    assert tflite_multiplier(real) == (2**30 + 1, 31)
    assert quantize_multiplier(real) == (2**30, 31)
    assert tflite_multiplier(1.0) == (2**30, 30)
    assert tflite_multiplier((2**31 - 0.25) / 2**31) == (2**30, 30)  # rounds up to 2^31: halved
    assert tflite_multiplier(2.0**-40) == (0, 0)  # TFLite flushes shifts below -31 to zero
