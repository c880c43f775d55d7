"""16-bit TFLite operators beyond conv/add/pools (frontends/tflite_int16.py): npuc's
qnn import and interpreter equal LiteRT's reference kernels bit for bit, and the 16-bit
forms LiteRT rejects (checked in a subprocess) or mis-computes are refused."""

from __future__ import annotations

import pickle
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from tflite_builder import TFLiteModel, check_exact, run_litert

from npuc.diagnostics import NpucError
from npuc.dialects import qnn
from npuc.dialects.qnn import ConvTranspose2dOp
from npuc.frontends.tflite import import_tflite
from npuc.runtime.qnn_interpreter import run_module

RNG = np.random.default_rng(1608)
SAME, VALID = 0, 1
INT64 = 4  # tflite.TensorType.INT64
EVERY_INT16 = np.arange(-(2**15), 2**15, dtype=np.int64).astype(np.int16).reshape(256, 256)


class Q:
    """A quantized tensor spec: int16 activation by default; `data` makes it a constant."""

    def __init__(
        self,
        shape: Sequence[int],
        scale: float,
        zp: int = 0,
        dtype=np.int16,
        data: np.ndarray | None = None,
    ):
        self.shape, self.scale, self.zp = list(shape), scale, zp
        self.dtype, self.data = np.dtype(dtype), data


def feed(spec: Q) -> np.ndarray:
    info = np.iinfo(spec.dtype)
    return RNG.integers(info.min, info.max + 1, spec.shape).astype(spec.dtype)


def model(
    op: str,
    inputs: Sequence,
    outs: Q | Sequence,
    options: str | None = None,
    feeds: Sequence[np.ndarray] | None = None,
    **fields,
) -> tuple[bytes, list[np.ndarray]]:
    """A one-operator model. Inputs: Q, ("w", int8 data, scales, axis), ("b", bias data,
    scales) or plain int32/int64 constants; outputs: Q or (shape, dtype) (a list: several)."""
    m = TFLiteModel()
    ids, args, made = [], [], []
    for i, spec in enumerate(inputs):
        if isinstance(spec, Q):
            t = m.tensor(
                f"x{i}",
                spec.shape,
                spec.dtype,
                data=spec.data,
                scale=spec.scale,
                zero_point=spec.zp,
            )
            if spec.data is None:
                args.append(t)
                made.append(feed(spec))
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
    ys = []
    for j, o in enumerate(outs if isinstance(outs, list) else [outs]):
        if isinstance(o, Q):
            ys.append(m.tensor(f"y{j}", o.shape, o.dtype, scale=o.scale, zero_point=o.zp))
        else:
            ys.append(m.tensor(f"y{j}", o[0], o[1]))
    m.op(op, ids, ys, options, **fields)
    return m.build(args, ys), list(feeds) if feeds is not None else made


def every_value(
    op: str, s_in: float, s_out: float, options: str | None = None, zp: int = 0, **fields
):
    """Every int16 input value once through a unary op."""
    return model(
        op,
        [Q([256, 256], s_in, zp)],
        Q([256, 256], s_out, zp),
        options,
        feeds=[EVERY_INT16],
        **fields,
    )


def transpose_conv(
    x_shape,
    out_hw,
    out_channels: int,
    kernel,
    stride: int,
    padding: int,
    per_channel: bool = True,
    bias=np.int64,
    act: int = 0,
):
    n, _, _, c = x_shape
    w = RNG.integers(-127, 128, [out_channels, *kernel, c]).astype(np.int8)
    ws = RNG.uniform(0.002, 0.02, out_channels if per_channel else 1).astype(np.float32)
    out_shape = [n, *out_hw, out_channels]
    inputs = [np.array(out_shape, np.int32), ("w", w, ws, 0), Q(x_shape, 0.0004)]
    if bias is not None:
        data = RNG.integers(-(2**20), 2**20, out_channels).astype(bias)
        inputs.append(("b", data, np.broadcast_to(ws * 0.0004, out_channels)))
    return model(
        "TRANSPOSE_CONV",
        inputs,
        Q(out_shape, 0.001),
        "TransposeConvOptions",
        Padding=padding,
        StrideH=stride,
        StrideW=stride,
        FusedActivationFunction=act,
    )


def matmul(a: Q, b: Q, out: Q, **adj):
    return model("BATCH_MATMUL", [a, b], out, "BatchMatMulOptions", **adj)


def div(shape_a, shape_b, s_a: float, s_b: float, s_out: float, act: int = 0, zp: int = 0):
    data, feeds = model(
        "DIV",
        [Q(shape_a, s_a, zp), Q(shape_b, s_b, zp)],
        Q(shape_a, s_out, zp),
        "DivOptions",
        FusedActivationFunction=act,
    )
    feeds[1] = np.where(feeds[1] == zp, np.int16(zp + 1), feeds[1])  # no division by zero
    feeds[0].flat[:5] = [zp, zp + 1, zp - 1, zp + 3, zp - 7]  # rounding shifts of 32 and more
    return data, feeds


def reduce(op: str, shape, axes, keep: bool, s_in: float, s_out: float):
    reduced = {a % len(shape) for a in axes}
    out = (
        [1 if i in reduced else d for i, d in enumerate(shape)]
        if keep
        else [d for i, d in enumerate(shape) if i not in reduced]
    )
    return model(
        op,
        [Q(shape, s_in), np.array(axes, np.int32)],
        Q(out, s_out),
        "ReducerOptions",
        KeepDims=keep,
    )


def resize(op: str, shape, size, options: str, zp: int = 0, **fields):
    n, _, _, c = shape
    return model(
        op,
        [Q(shape, 0.0005, zp), np.array(size, np.int32)],
        Q([n, *size, c], 0.0005, zp),
        options,
        **fields,
    )


def int8_alpha(shape, scale: float, zp: int = 0) -> Q:
    return Q(shape, scale, zp, np.int8, RNG.integers(-128, 128, shape).astype(np.int8))


S = 0.0005
CASES = {
    # TRANSPOSE_CONV: int64 scatter accumulator, + bias, 64-bit rescaling (15-bit multiplier).
    "transpose_conv_same_s2": lambda: transpose_conv([1, 4, 4, 3], [8, 8], 4, [3, 3], 2, SAME),
    "transpose_conv_valid_s2_per_tensor_no_bias": lambda: transpose_conv(
        [1, 3, 3, 3], [7, 7], 2, [3, 3], 2, VALID, per_channel=False, bias=None),
    "transpose_conv_same_s1_relu": lambda: transpose_conv(
        [2, 5, 5, 3], [5, 5], 4, [2, 2], 1, SAME, act=1),
    "transpose_conv_valid_output_padding_relu6": lambda: transpose_conv(
        [1, 3, 4, 3], [8, 10], 4, [3, 3], 2, VALID, act=3),
    # BATCH_MATMUL: int64 accumulator, 64-bit rescaling.
    "batch_matmul_2d": lambda: matmul(Q([4, 16], S), Q([16, 5], 0.0003), Q([4, 5], 0.002)),
    "batch_matmul_batched_adj": lambda: matmul(Q([3, 8, 4], 0.0007), Q([3, 6, 8], 0.0002),
                                               Q([3, 4, 6], 0.0009), AdjX=True, AdjY=True),
    "batch_matmul_broadcast": lambda: matmul(Q([2, 1, 3, 8], 0.0004), Q([4, 8, 5], 0.0002),
                                             Q([2, 4, 3, 5], 0.0006)),
    "batch_matmul_const_rhs_large_k": lambda: matmul(
        Q([5, 300], 0.0002), Q([300, 4], 0.0001, data=feed(Q([300, 4], 1))), Q([5, 4], 0.01)),
    # DIV: DivElementwise, numerators at the zero point included.
    "div": lambda: div([2, 16], [2, 16], S, S, 0.01),
    "div_broadcast_relu": lambda: div([1, 4, 4, 8], [1, 1, 1, 8], 0.001, 0.0003, 0.02, act=1),
    "div_zero_points": lambda: div([3, 10], [3, 10], 0.0002, 0.001, 0.0001, zp=-5),
    # MEAN: QuantizedMeanOrSum with 1/count folded into the multiplier.
    "mean_hw_keepdims": lambda: reduce("MEAN", [1, 5, 5, 4], [1, 2], True, S, 0.0003),
    "mean_last_axis_same_scale": lambda: reduce("MEAN", [3, 10], [-1], False, S, S),
    "mean_all_axes": lambda: reduce("MEAN", [2, 3, 7], [0, 1, 2], False, 0.0002, 0.00001),
    # Stored values: one quantization in and out.
    "maximum": lambda: model("MAXIMUM", [Q([2, 8], S), Q([2, 8], S)], Q([2, 8], S)),
    "maximum_broadcast_zero_point": lambda: model(
        "MAXIMUM", [Q([1, 4, 4, 8], S, 3), Q([1, 1, 1, 8], S, 3)], Q([1, 4, 4, 8], S, 3)),
    "minimum": lambda: model("MINIMUM", [Q([4, 6], S), Q([4, 6], S)], Q([4, 6], S)),
    "minimum_const": lambda: model(
        "MINIMUM", [Q([3, 5], S), Q([1], S, data=np.array([1000], np.int16))], Q([3, 5], S)),
    "reduce_max_last": lambda: reduce("REDUCE_MAX", [2, 3, 8], [2], False, S, S),
    "reduce_max_hw_keepdims": lambda: reduce("REDUCE_MAX", [1, 5, 5, 4], [1, 2], True, S, S),
    "gather_axis0": lambda: model("GATHER", [Q([5, 4], S), np.array([4, 0, 2, 2], np.int32)],
                                  Q([4, 4], S), "GatherOptions", Axis=0),
    "gather_axis1_zero_point": lambda: model(
        "GATHER", [Q([2, 6, 3], S, 7), np.array([[5, 1], [0, 3]], np.int32)],
        Q([2, 2, 2, 3], S, 7), "GatherOptions", Axis=1),
    "resize_bilinear": lambda: resize("RESIZE_BILINEAR", [1, 3, 4, 2], [5, 7],
                                      "ResizeBilinearOptions"),
    "resize_bilinear_half_pixel": lambda: resize("RESIZE_BILINEAR", [2, 4, 3, 3], [7, 8],
                                                 "ResizeBilinearOptions", HalfPixelCenters=True),
    "resize_bilinear_align_corners_zero_point": lambda: resize(
        "RESIZE_BILINEAR", [1, 5, 5, 2], [9, 3], "ResizeBilinearOptions", zp=-9,
        AlignCorners=True),
    "resize_nearest": lambda: resize("RESIZE_NEAREST_NEIGHBOR", [1, 3, 3, 2], [6, 5],
                                     "ResizeNearestNeighborOptions"),
    "resize_nearest_half_pixel": lambda: resize(
        "RESIZE_NEAREST_NEIGHBOR", [1, 4, 3, 2], [7, 5], "ResizeNearestNeighborOptions",
        HalfPixelCenters=True),
    "resize_nearest_align_corners": lambda: resize(
        "RESIZE_NEAREST_NEIGHBOR", [1, 4, 3, 2], [7, 5], "ResizeNearestNeighborOptions",
        AlignCorners=True),
    # Pools (more in test_tflite_int16.py).
    "avg_pool_valid_2x3": lambda: model(
        "AVERAGE_POOL_2D", [Q([1, 7, 8, 3], S)], Q([1, 3, 2, 3], S), "Pool2DOptions",
        Padding=VALID, StrideH=2, StrideW=3, FilterHeight=2, FilterWidth=3),
    "max_pool_valid": lambda: model(
        "MAX_POOL_2D", [Q([2, 6, 6, 2], S)], Q([2, 2, 2, 2], S), "Pool2DOptions",
        Padding=VALID, StrideH=3, StrideW=3, FilterHeight=3, FilterWidth=3),
    # Data movement: the int8 converters on int16 storage.
    "reshape": lambda: model("RESHAPE", [Q([2, 6], S), np.array([3, 4], np.int32)], Q([3, 4], S)),
    "squeeze": lambda: model("SQUEEZE", [Q([1, 6, 1], S)], Q([6], S), "SqueezeOptions",
                             SqueezeDims=[0, 2]),
    "expand_dims": lambda: model("EXPAND_DIMS", [Q([2, 6], S), np.array([1], np.int32)],
                                 Q([2, 1, 6], S)),
    "transpose": lambda: model("TRANSPOSE", [Q([2, 3, 4], S), np.array([2, 0, 1], np.int32)],
                               Q([4, 2, 3], S)),
    "concatenation": lambda: model("CONCATENATION", [Q([2, 3], S), Q([2, 4], S)], Q([2, 7], S),
                                   "ConcatenationOptions", Axis=1),
    "split": lambda: model("SPLIT", [np.array([1], np.int32), Q([2, 6], S)],
                           [Q([2, 3], S), Q([2, 3], S)], "SplitOptions", NumSplits=2),
    "split_v": lambda: model("SPLIT_V", [Q([2, 6], S), np.array([2, 4], np.int32),
                                         np.array([1], np.int32)],
                             [Q([2, 2], S), Q([2, 4], S)], "SplitVOptions", NumSplits=2),
    "slice": lambda: model("SLICE", [Q([3, 6], S), np.array([1, 2], np.int32),
                                     np.array([2, -1], np.int32)], Q([2, 4], S)),
    "strided_slice": lambda: model(
        "STRIDED_SLICE", [Q([4, 6], S), np.array([0, 1], np.int32), np.array([4, 6], np.int32),
                          np.array([2, 2], np.int32)], Q([2, 3], S), "StridedSliceOptions"),
    "pad_zero_point": lambda: model("PAD", [Q([2, 3], S, 5), np.array([[1, 0], [2, 1]], np.int32)],
                                    Q([3, 6], S, 5)),
    "padv2": lambda: model("PADV2", [Q([2, 3], S), np.array([[1, 0], [2, 1]], np.int32),
                                     Q([1], S, data=np.array([-1234], np.int16))], Q([3, 6], S)),
    # Activations over every int16 value.
    "relu_rescaled": lambda: every_value("RELU", S, 0.0003),
    "relu_same": lambda: every_value("RELU", S, S),
    "relu6_rescaled": lambda: every_value("RELU6", 0.0004, 0.0001),
    "relu6_coarse": lambda: every_value("RELU6", 0.001, 0.05),
    "leaky_relu": lambda: every_value("LEAKY_RELU", S, 0.0003, "LeakyReluOptions", Alpha=0.2),
    "leaky_relu_alpha_above_one": lambda: every_value("LEAKY_RELU", 0.0002, 0.0007,
                                                      "LeakyReluOptions", Alpha=1.7),
    "leaky_relu_alpha_zero": lambda: every_value("LEAKY_RELU", S, S, "LeakyReluOptions",
                                                 Alpha=0.0),
    "gelu": lambda: every_value("GELU", S, 0.0003, "GeluOptions"),
    "gelu_approximate": lambda: every_value("GELU", 0.0002, 0.0001, "GeluOptions",
                                            Approximate=True),
    "gelu_zero_point": lambda: every_value("GELU", 0.0003, 0.0002, "GeluOptions", zp=-300),
    "prelu_per_channel_alpha": lambda: model(
        "PRELU", [Q([1, 4, 4, 8], S), int8_alpha([1, 1, 8], 0.004, 3)], Q([1, 4, 4, 8], 0.0004)),
    "prelu_zero_points": lambda: model(
        "PRELU", [Q([2, 3, 5], 0.001, -20), int8_alpha([2, 3, 5], 0.01, -50)],
        Q([2, 3, 5], 0.0008, 11)),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_bit_exact(case: str) -> None:
    check_exact(*CASES[case]())


def ops_of(data: bytes, kind: type) -> list:
    return [op for op in import_tflite(data).walk() if isinstance(op, kind)]


def test_weighted_ops_rescale_like_tflite_64bit() -> None:
    """The 64-bit MultiplyByQuantizedMultiplier: 15-bit multipliers, one half-up rounding."""
    for data, kind in (
        (CASES["transpose_conv_same_s2"]()[0], ConvTranspose2dOp),
        (CASES["batch_matmul_2d"]()[0], qnn.MatMulOp),
    ):
        (op,) = ops_of(data, kind)
        assert op.rounding.data == "half_up"
        assert all(2**14 <= m < 2**15 for m in op.multiplier.get_values())


def test_table_and_slope_forms() -> None:
    (lut,) = ops_of(CASES["gelu"]()[0], qnn.LutOp)
    assert tuple(lut.table.get_shape()) == (65536,)
    (prelu,) = ops_of(CASES["leaky_relu"]()[0], qnn.PReluOp)
    assert prelu.alpha_multiplier.value.data > 0


def test_int16_alpha_is_read_as_int8_bytes_by_litert() -> None:
    """LiteRT's PRELU reads an int16 alpha buffer as int8: the model with those bytes as an
    int8 alpha gives LiteRT's output. npuc refuses the int16 alpha instead."""
    alpha = np.array([100, -200, 300, 1, 0, -1, 50, 7], np.int16)
    x = np.array([[-1000] * 8, [-30000] * 8, [5] * 8], np.int16)
    as16, _ = model("PRELU", [Q([3, 8], S), Q([8], 0.001, data=alpha)], Q([3, 8], 0.0003))
    as8, _ = model(
        "PRELU",
        [Q([3, 8], S), Q([8], 0.001, 0, np.int8, alpha.view(np.int8)[:8])],
        Q([3, 8], 0.0003),
    )
    np.testing.assert_array_equal(run_litert(as16, [x])[0], run_litert(as8, [x])[0])
    np.testing.assert_array_equal(
        run_module(import_tflite(as8), {"x0": x})["y0"], run_litert(as8, [x])[0]
    )
    assert "reads it as per-tensor int8" in refused(as16)


def refused(data: bytes) -> str:
    with pytest.raises(NpucError) as info:
        import_tflite(data)
    return str(info.value)


# Models LiteRT's reference kernels reject at 16 bits (Prepare or Eval fails).
REJECTED = {
    "ARG_MAX": lambda: model("ARG_MAX", [Q([3, 10], S), np.array([1], np.int32)],
                             ([3], np.int64), "ArgMaxOptions", OutputType=INT64),
    "ARG_MIN": lambda: model("ARG_MIN", [Q([3, 10], S), np.array([1], np.int32)],
                             ([3], np.int64), "ArgMinOptions", OutputType=INT64),
    "HARD_SWISH": lambda: model("HARD_SWISH", [Q([2, 8], S)], Q([2, 8], 0.0003)),
    "RELU_N1_TO_1": lambda: model("RELU_N1_TO_1", [Q([2, 8], S)], Q([2, 8], 0.0003)),
    "SQUARED_DIFFERENCE": lambda: model("SQUARED_DIFFERENCE", [Q([2, 8], S), Q([2, 8], S)],
                                        Q([2, 8], 0.01)),
    "CONCATENATION": lambda: model("CONCATENATION", [Q([2, 3], S, 4), Q([2, 4], S, 4)],
                                   Q([2, 7], S, 4), "ConcatenationOptions", Axis=1),
    "EXPAND_DIMS": lambda: model("EXPAND_DIMS", [Q([2, 6], S, 3), np.array([1], np.int32)],
                                 Q([2, 1, 6], S, 3)),
    "RELU": lambda: model("RELU", [Q([2, 8], S, 3)], Q([2, 8], S, 3)),
    "LEAKY_RELU": lambda: model("LEAKY_RELU", [Q([2, 8], S, 3)], Q([2, 8], S, 3),
                                "LeakyReluOptions", Alpha=0.1),
    "MEAN": lambda: reduce_zp("MEAN"),
    "REDUCE_MAX": lambda: reduce_zp("REDUCE_MAX"),
    "BATCH_MATMUL": lambda: matmul(Q([2, 4], S, 3), Q([4, 2], S, 3), Q([2, 2], S, 3)),
}  # fmt: skip


def reduce_zp(op: str):
    return model(
        op,
        [Q([3, 4], S, 3), np.array([1], np.int32)],
        Q([3], S, 3),
        "ReducerOptions",
        KeepDims=False,
    )


_PROBE = """
import pickle, sys
sys.path.insert(0, sys.argv[1])
from tflite_builder import run_litert
for name, (data, feeds) in pickle.load(sys.stdin.buffer).items():
    print(name, end=" ", flush=True)
    try:
        run_litert(data, feeds)
        print("accepted", flush=True)
    except Exception:
        print("rejected", flush=True)
"""


def litert_verdicts(models: dict[str, tuple[bytes, list[np.ndarray]]]) -> dict[str, str]:
    """LiteRT's verdict per model, run in one subprocess: an abort cannot take pytest down."""
    verdicts: dict[str, str] = {}
    while pending := {k: v for k, v in models.items() if k not in verdicts}:
        run = subprocess.run(
            [sys.executable, "-c", _PROBE, str(Path(__file__).parents[1])],
            input=pickle.dumps(pending),
            capture_output=True,
            timeout=120,
        )
        for line in run.stdout.decode().splitlines():
            name, _, verdict = line.partition(" ")
            verdicts[name] = verdict or "aborted"
        if run.returncode == 0:
            break
        verdicts.setdefault(next(k for k in pending if k not in verdicts), "aborted")
    return verdicts


@pytest.fixture(scope="module")
def rejected() -> dict[str, tuple[str, str]]:
    models = {name: build() for name, build in REJECTED.items()}
    verdicts = litert_verdicts(models)
    return {name: (verdicts[name], refused(data)) for name, (data, _) in models.items()}


@pytest.mark.parametrize("op", sorted(REJECTED))
def test_what_litert_rejects_is_refused(op: str, rejected) -> None:
    verdict, message = rejected[op]
    assert verdict in ("rejected", "aborted")
    assert op in message
    assert "LiteRT" in message or "zero point" in message


@pytest.mark.parametrize(
    ("build", "reason"),
    [
        # LiteRT runs its uint8 SUM code on the int16 buffers (uninitialised bytes leak out).
        (lambda: reduce("SUM", [3, 10], [1], False, S, S), "uint8 code"),
        # LiteRT reads an int32 bias as int64 (every output saturates).
        (
            lambda: transpose_conv([1, 4, 4, 3], [8, 8], 4, [3, 3], 2, SAME, bias=np.int32),
            "int64 expected",
        ),
        # LiteRT copies the stored values whatever the scales: not a concatenation.
        (
            lambda: model(
                "CONCATENATION",
                [Q([2, 3], S), Q([2, 4], 0.0003)],
                Q([2, 7], S),
                "ConcatenationOptions",
                Axis=1,
            ),
            "quantization differ",
        ),
    ],
)
def test_what_litert_miscomputes_is_refused(build, reason: str) -> None:
    assert reason in refused(build()[0])
