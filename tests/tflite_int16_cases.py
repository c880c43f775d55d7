"""16x8 TFLite one-operator models (int16 activations, int8 weights, int64 biases) and
their seeded inputs: LiteRT's reference kernels are their reference (tests/frontends/
test_tflite_int16.py for npuc's import and interpreter, tests/e2e/test_int16_litert.py for
the compiled binary)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from tflite_builder import TFLiteModel

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


def single(op: str, inputs: Sequence, outs: Q, options: str | None = None,
           **fields) -> tuple[bytes, list[np.ndarray]]:  # fmt: skip
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


def conv_case(kernel: Sequence[int], channels: int, cin: int, stride: int, padding: int,
              act: int, out_hw: Sequence[int], bias_dtype=np.int64,
              bias_range: int = 2**20) -> tuple[bytes, list[np.ndarray]]:  # fmt: skip
    w, ws = weights([channels, *kernel, cin], 0)
    bias = RNG.integers(-bias_range, bias_range, channels).astype(bias_dtype)
    inputs = [Q([1, 9, 9, cin], 0.0004), ("w", w, ws, 0), ("b", bias, ws * 0.0004)]
    if bias_dtype is None:
        inputs[2] = -1
    return single("CONV_2D", [i for i in inputs if not isinstance(i, int)],
                  Q([1, *out_hw, channels], 0.0011), "Conv2DOptions", Padding=padding,
                  StrideH=stride, StrideW=stride, FusedActivationFunction=act, **CONV)  # fmt: skip


def depthwise_case(act: int, multiplier: int) -> tuple[bytes, list[np.ndarray]]:
    c = 3 * multiplier
    w, ws = weights([1, 3, 3, c], 3)
    bias = RNG.integers(-(2**20), 2**20, c).astype(np.int64)
    return single("DEPTHWISE_CONV_2D", [Q([1, 8, 8, 3], 0.0003), ("w", w, ws, 3),
                                        ("b", bias, ws * 0.0003)], Q([1, 8, 8, c], 0.0005),
                  "DepthwiseConv2DOptions", Padding=SAME, StrideH=1, StrideW=1,
                  DepthMultiplier=multiplier, FusedActivationFunction=act, **CONV)  # fmt: skip


def fc_case(per_channel: bool, act: int = 1, bias_dtype=np.int64,
            k: int = 32) -> tuple[bytes, list[np.ndarray]]:  # fmt: skip
    w, ws = weights([10, k], 0 if per_channel else None)
    inputs = [Q([3, k], 0.0007), ("w", w, ws, 0)]
    if bias_dtype is not None:
        bias = RNG.integers(-(2**21), 2**21, 10).astype(bias_dtype)
        inputs.append(("b", bias, ws * 0.0007))
    return single("FULLY_CONNECTED", inputs, Q([3, 10], 0.004), "FullyConnectedOptions",
                  FusedActivationFunction=act)  # fmt: skip


def pool_case(op: str, kernel: int, stride: int, padding: int, out: int, act: int = 0):
    return single(op, [Q([1, 9, 9, 4], 0.001)], Q([1, out, out, 4], 0.001), "Pool2DOptions",
                  Padding=padding, StrideH=stride, StrideW=stride, FilterHeight=kernel,
                  FilterWidth=kernel, FusedActivationFunction=act)  # fmt: skip


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
