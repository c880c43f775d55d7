"""int8 layer TFLite operators (TRANSPOSE_CONV, BATCH_MATMUL, MEAN, SUM, REDUCE_MAX, ARG_MAX,
ARG_MIN): npuc's qnn import and interpreter equal LiteRT's reference kernels bit for bit."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from tflite_builder import Q, TFLiteModel, check_exact, run_litert, single_op
from xdsl.dialects.builtin import StringAttr

from npuc.diagnostics import NpucError
from npuc.dialects import qnn
from npuc.frontends.tflite import import_tflite
from npuc.frontends.tflite_quant import folded_mean_multiplier, tflite_multiplier
from npuc.runtime.qnn_interpreter import run_module

RNG = np.random.default_rng(2024)
INT32, INT64 = 2, 4  # tflite.TensorType.INT32, INT64
SAME, VALID = 0, 1
PER_CHANNEL = (0.011, 0.02, 0.035, 0.007)


def model(op: str, inputs: Sequence, out, options: str | None = None, **fields):
    return single_op(op, inputs, out, options, rng=RNG, **fields)


def matmul(a: Q, b: Q, out: Q, **adj):
    return model("BATCH_MATMUL", [a, b], out, "BatchMatMulOptions", **adj)


def reduce_case(op: str, shape, axes, keep: bool, q_in: tuple, q_out: tuple):
    out_shape = [1 if i in {a % len(shape) for a in axes} else d for i, d in enumerate(shape)]
    if not keep:
        out_shape = [d for i, d in enumerate(shape) if i not in {a % len(shape) for a in axes}]
    return model(
        op,
        [Q(shape, *q_in), np.array(axes, np.int32)],
        Q(out_shape, *q_out),
        "ReducerOptions",
        KeepDims=keep,
    )


def transpose_conv(
    x_shape: Sequence[int],
    out_hw: Sequence[int],
    out_channels: int,
    kernel: Sequence[int],
    stride: int,
    padding: int,
    *,
    w_scales: Sequence[float] = (0.02,),
    bias: bool = True,
    act: int = 0,
    q_in: tuple[float, int] = (0.05, -3),
    q_out: tuple[float, int] = (0.1, 7),
) -> tuple[bytes, list[np.ndarray]]:
    """One int8 TRANSPOSE_CONV; `w_scales` of length > 1 quantizes the filter per channel."""
    n, _, _, c = x_shape
    m = TFLiteModel()
    out_shape = [n, *out_hw, out_channels]
    shape = m.tensor("shape", [4], np.int32, data=np.array(out_shape, np.int32))
    w_data = RNG.integers(-127, 128, [out_channels, *kernel, c]).astype(np.int8)
    scales = list(w_scales) if len(w_scales) > 1 else w_scales[0]
    w = m.tensor("w", list(w_data.shape), np.int8, data=w_data, scale=scales, zero_point=0)
    x = m.tensor("x", list(x_shape), np.int8, scale=q_in[0], zero_point=q_in[1])
    inputs = [shape, w, x]
    if bias:
        b_data = RNG.integers(-3000, 3000, [out_channels]).astype(np.int32)
        b_scales = [q_in[0] * s for s in (w_scales * out_channels)[:out_channels]]
        inputs.append(m.tensor("b", [out_channels], np.int32, data=b_data, scale=b_scales))
    y = m.tensor("y", out_shape, np.int8, scale=q_out[0], zero_point=q_out[1])
    m.op(
        "TRANSPOSE_CONV",
        inputs,
        [y],
        "TransposeConvOptions",
        Padding=padding,
        StrideH=stride,
        StrideW=stride,
        FusedActivationFunction=act,
    )
    feeds = [RNG.integers(-128, 128, x_shape).astype(np.int8)]
    return m.build([x], [y]), feeds


CASES = {
    # MEAN: QuantizedMeanOrSum, 1/count folded into the multiplier (every layout).
    "mean_hw_keepdims": lambda: reduce_case(
        "MEAN", [1, 7, 7, 8], [1, 2], True, (0.05, -7), (0.02, 3)
    ),
    "mean_hw_keepdims_reversed_axes": lambda: reduce_case(
        "MEAN", [2, 5, 4, 6], [2, 1], True, (0.1, 20), (0.1, 20)
    ),
    "mean_hw_keepdims_coarser_out": lambda: reduce_case(
        "MEAN", [1, 3, 3, 16], [1, 2], True, (0.03, 0), (0.2, -100)
    ),
    "mean_hw_no_keepdims": lambda: reduce_case(
        "MEAN", [1, 6, 6, 8], [1, 2], False, (0.05, -7), (0.02, 3)
    ),
    "mean_last_axis": lambda: reduce_case("MEAN", [4, 3, 10], [-1], True, (0.07, 5), (0.03, -9)),
    "mean_all_axes": lambda: reduce_case(
        "MEAN", [2, 3, 5], [0, 1, 2], False, (0.04, 11), (0.01, 0)
    ),
    "mean_count_not_power_of_two": lambda: reduce_case(
        "MEAN", [1, 7, 9, 3], [1], False, (0.2, -1), (0.05, 4)
    ),
    "mean_same_params_zero_zp": lambda: reduce_case(
        "MEAN", [3, 10], [1], False, (0.1, 0), (0.1, 0)
    ),
    "mean_same_params": lambda: reduce_case("MEAN", [2, 6, 9], [1, 2], True, (0.1, 3), (0.1, 3)),
    # SUM: LiteRT's reference kernel reads the int8 bytes as uint8 (storage_view = "uint8").
    "sum_last_axis_rescaled": lambda: reduce_case("SUM", [2, 6], [1], False, (0.1, 3), (0.3, -2)),
    "sum_equal_params": lambda: reduce_case("SUM", [3, 10], [-1], False, (0.1, 3), (0.1, 3)),
    "sum_equal_params_zero_zp_all_axes": lambda: reduce_case(
        "SUM", [3, 10], [0, 1], False, (0.1, 0), (0.1, 0)
    ),
    "sum_hw_keepdims": lambda: reduce_case("SUM", [1, 7, 7, 8], [1, 2], True, (0.02, -3), (0.9, 0)),
    "sum_two_axes_keepdims": lambda: reduce_case(
        "SUM", [4, 5, 6], [2, 1], True, (0.05, -7), (0.4, 10)
    ),
    "sum_first_axis_low_output_zp": lambda: reduce_case(
        "SUM", [4, 5, 6], [0], False, (0.05, 5), (0.2, -128)
    ),
    "sum_finer_output_saturates": lambda: reduce_case(
        "SUM", [2, 3, 16], [2], False, (0.2, 0), (0.01, -20)
    ),
    # REDUCE_MAX.
    "reduce_max_last": lambda: model(
        "REDUCE_MAX",
        [Q([2, 3, 8], 0.05, -3), np.array([2], np.int32)],
        Q([2, 3], 0.05, -3),
        "ReducerOptions",
        KeepDims=False,
    ),
    "reduce_max_hw_keepdims": lambda: model(
        "REDUCE_MAX",
        [Q([1, 5, 5, 4], 0.1, 9), np.array([1, 2], np.int32)],
        Q([1, 1, 1, 4], 0.1, 9),
        "ReducerOptions",
        KeepDims=True,
    ),
    "reduce_max_negative_axes": lambda: model(
        "REDUCE_MAX",
        [Q([3, 4, 5], 0.1, 0), np.array([-3, -1], np.int32)],
        Q([4], 0.1, 0),
        "ReducerOptions",
        KeepDims=False,
    ),
    # ARG_MAX with an int64 result (ties: the first index, as TFLite).
    "arg_max_last": lambda: model(
        "ARG_MAX",
        [Q([3, 10], 0.1, 2), np.array([1], np.int32)],
        ([3], np.int64),
        "ArgMaxOptions",
        OutputType=INT64,
    ),
    "arg_max_axis0_ties": lambda: model(
        "ARG_MAX",
        [Q([4, 6], 0.1, 2), np.array([0], np.int32)],
        ([6], np.int64),
        "ArgMaxOptions",
        feeds=[RNG.integers(-2, 2, [4, 6]).astype(np.int8)],
        OutputType=INT64,
    ),
    "arg_max_nhwc_channels": lambda: model(
        "ARG_MAX",
        [Q([1, 3, 3, 5], 0.05, -1), np.array([-1], np.int32)],
        ([1, 3, 3], np.int64),
        "ArgMaxOptions",
        OutputType=INT64,
    ),
    # ARG_MAX/ARG_MIN with an int32 result (ArgMaxOptions.output_type), and ARG_MIN int64.
    "arg_max_int32": lambda: model(
        "ARG_MAX",
        [Q([3, 10], 0.1, 2), np.array([1], np.int32)],
        ([3], np.int32),
        "ArgMaxOptions",
        OutputType=INT32,
    ),
    "arg_max_int32_axis0_ties": lambda: model(
        "ARG_MAX",
        [Q([5, 4, 3], 0.1, 2), np.array([0], np.int32)],
        ([4, 3], np.int32),
        "ArgMaxOptions",
        feeds=[RNG.integers(-2, 2, [5, 4, 3]).astype(np.int8)],
        OutputType=INT32,
    ),
    "arg_min_int32_ties": lambda: model(
        "ARG_MIN",
        [Q([4, 6], 0.1, 2), np.array([1], np.int32)],
        ([4], np.int32),
        "ArgMinOptions",
        feeds=[RNG.integers(-2, 2, [4, 6]).astype(np.int8)],
        OutputType=INT32,
    ),
    "arg_min_int64_nhwc_channels": lambda: model(
        "ARG_MIN",
        [Q([1, 3, 3, 5], 0.05, -1), np.array([-1], np.int32)],
        ([1, 3, 3], np.int64),
        "ArgMinOptions",
        OutputType=INT64,
    ),
    "arg_min_int64_axis0": lambda: model(
        "ARG_MIN",
        [Q([6, 4], 0.2, 0), np.array([0], np.int32)],
        ([4], np.int64),
        "ArgMinOptions",
        OutputType=INT64,
    ),
    # BATCH_MATMUL.
    "batch_matmul_2d": lambda: matmul(Q([4, 16], 0.05, -3), Q([16, 5], 0.03, 7), Q([4, 5], 0.4, 2)),
    "batch_matmul_batched": lambda: matmul(
        Q([3, 4, 8], 0.021, 1), Q([3, 8, 6], 0.017, -5), Q([3, 4, 6], 0.09, -10)
    ),
    "batch_matmul_broadcast": lambda: matmul(
        Q([2, 1, 3, 8], 0.04, 0), Q([4, 8, 5], 0.02, 0), Q([2, 4, 3, 5], 0.1, 0)
    ),
    "batch_matmul_adj": lambda: matmul(
        Q([2, 8, 3], 0.05, 4), Q([2, 6, 8], 0.03, -2), Q([2, 3, 6], 0.3, -7), AdjX=True, AdjY=True
    ),
    "batch_matmul_const_rhs": lambda: matmul(
        Q([5, 12], 0.06, -9),
        Q([12, 4], 0.011, 0, RNG.integers(-127, 128, [12, 4]).astype(np.int8)),
        Q([5, 4], 0.2, 3),
    ),
    # TRANSPOSE_CONV: the scatter accumulator, rescaled per channel.
    "transpose_conv_same_s2_per_channel_bias": lambda: transpose_conv(
        [1, 4, 4, 3], [8, 8], 4, [3, 3], 2, SAME, w_scales=PER_CHANNEL
    ),
    "transpose_conv_same_s2_per_tensor_bias": lambda: transpose_conv(
        [1, 4, 5, 3], [8, 10], 4, [3, 3], 2, SAME
    ),
    "transpose_conv_same_s2_per_channel_no_bias": lambda: transpose_conv(
        [1, 4, 4, 2], [8, 8], 4, [3, 3], 2, SAME, w_scales=PER_CHANNEL, bias=False
    ),
    "transpose_conv_same_s2_odd_output": lambda: transpose_conv(
        [1, 4, 4, 3], [7, 7], 4, [3, 3], 2, SAME, w_scales=PER_CHANNEL
    ),
    "transpose_conv_same_s1_per_tensor_no_bias": lambda: transpose_conv(
        [2, 5, 5, 3], [5, 5], 2, [3, 3], 1, SAME, bias=False
    ),
    "transpose_conv_same_s1_even_kernel": lambda: transpose_conv(
        [1, 5, 6, 4], [5, 6], 4, [2, 2], 1, SAME, w_scales=PER_CHANNEL
    ),
    "transpose_conv_valid_s1_per_channel_bias": lambda: transpose_conv(
        [1, 4, 5, 3], [6, 7], 4, [3, 3], 1, VALID, w_scales=PER_CHANNEL
    ),
    "transpose_conv_valid_s2_per_tensor_no_bias": lambda: transpose_conv(
        [1, 3, 3, 3], [7, 7], 2, [3, 3], 2, VALID, bias=False
    ),
    "transpose_conv_valid_s2_output_padding": lambda: transpose_conv(
        [1, 3, 4, 3], [8, 10], 4, [3, 3], 2, VALID, w_scales=PER_CHANNEL
    ),
    "transpose_conv_valid_s2_relu": lambda: transpose_conv(
        [1, 3, 3, 4], [7, 7], 4, [3, 3], 2, VALID, w_scales=PER_CHANNEL, act=1
    ),
    "transpose_conv_same_s2_relu6_coarse_output": lambda: transpose_conv(
        [1, 4, 4, 3], [8, 8], 4, [3, 3], 2, SAME, w_scales=PER_CHANNEL, act=3, q_out=(0.03, -100)
    ),
    "transpose_conv_same_s2_relu_n1_to_1": lambda: transpose_conv(
        [1, 4, 4, 3], [8, 8], 2, [4, 4], 2, SAME, act=2, q_out=(0.01, 0)
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_bit_exact(case: str) -> None:
    data, feeds = CASES[case]()
    check_exact(data, feeds)


def test_ops_are_the_qnn_ones() -> None:
    kinds = {
        "reduce_max_last": qnn.ReduceMaxOp,
        "arg_max_last": qnn.ArgMaxOp,
        "batch_matmul_2d": qnn.MatMulOp,
        "sum_equal_params": qnn.ReduceSumOp,
        "transpose_conv_same_s1_per_tensor_no_bias": qnn.ConvTranspose2dOp,
    }
    for case, kind in kinds.items():
        ops = [op for op in import_tflite(CASES[case]()[0]).walk() if isinstance(op, kind)]
        assert len(ops) == 1, case


def test_mean_is_reduce_sum_with_the_count_folded_in() -> None:
    data, _ = CASES["mean_hw_keepdims"]()
    (op,) = [op for op in import_tflite(data).walk() if isinstance(op, qnn.ReduceSumOp)]
    assert op.rounding.data == "tflite"
    # 0.05 / 0.02 = 2.5 with 1/49 folded in: shift = floor(log2 49) = 5.
    assert (op.multiplier.get_values()[0], op.shift.get_values()[0]) == (
        folded_mean_multiplier(
            tflite_multiplier(float(np.float32(0.05)) / float(np.float32(0.02))), 49
        )
    )
    op.verify()


def test_folded_mean_multiplier() -> None:
    # n = 12: shift = 3; m' = (m << 3) // 12; the npuc shift grows by 3.
    assert folded_mean_multiplier((1 << 30, 30), 12) == (((1 << 30) << 3) // 12, 33)
    # Clamped by 31 + tflite_shift (tflite_shift = -31 here): no folding shift at all.
    assert folded_mean_multiplier((1 << 30, 62), 4) == ((1 << 30) // 4, 62)


def test_sum_is_the_uint8_view_of_the_int8_bytes() -> None:
    # The row -67, 45, -105, -74 (zero point 0) at ratio 0.1: LiteRT sums the bytes
    # 189 + 45 + 151 + 182 = 567 -> 57, where the real sum -201 would give -20.
    data, _ = reduce_case("SUM", [1, 4], [1], False, (0.1, 0), (1.0, 0))
    feeds = [np.array([[-67, 45, -105, -74]], np.int8)]
    (got,) = run_module(import_tflite(data), {"x0": feeds[0]}).values()
    np.testing.assert_array_equal(got, run_litert(data, feeds)[0])
    assert got.tolist() == [57]
    (op,) = [op for op in import_tflite(data).walk() if isinstance(op, qnn.ReduceSumOp)]
    assert op.storage_view.data == "uint8"
    op.storage_view = StringAttr("native")  # the canonical integer sum
    (native,) = run_module(op.get_toplevel_object(), {"x0": feeds[0]}).values()
    assert native.tolist() == [-20]


def refused(data: bytes) -> str:
    with pytest.raises(NpucError) as info:
        import_tflite(data)
    return str(info.value)


def test_arg_results_have_the_model_dtype() -> None:
    for case, kind, dtype in (
        ("arg_max_int32", qnn.ArgMaxOp, "i32"),
        ("arg_min_int64_axis0", qnn.ArgMinOp, "i64"),
    ):
        (op,) = [op for op in import_tflite(CASES[case]()[0]).walk() if isinstance(op, kind)]
        assert str(op.output.type.get_element_type()) == dtype


def test_arg_max_int16_output_is_refused() -> None:
    data, _ = model(
        "ARG_MAX",
        [Q([3, 10], 0.1, 2), np.array([1], np.int32)],
        ([3], np.int16),
        "ArgMaxOptions",
        OutputType=7,
    )
    assert "ARG_MAX with output type" in refused(data)


def test_reduce_max_with_different_params_is_refused() -> None:
    data, _ = model(
        "REDUCE_MAX",
        [Q([2, 3], 0.05, 0), np.array([1], np.int32)],
        Q([2], 0.05, 1),
        "ReducerOptions",
        KeepDims=False,
    )
    assert "quantization differ" in refused(data)


def test_transpose_conv_is_qnn_conv_transpose2d_with_tflite_multipliers() -> None:
    data, _ = CASES["transpose_conv_same_s2_per_channel_bias"]()
    (op,) = [op for op in import_tflite(data).walk() if isinstance(op, qnn.ConvTranspose2dOp)]
    s_in, s_out = float(np.float32(0.05)), float(np.float32(0.1))
    want = [tflite_multiplier(s_in * float(np.float32(s)) / s_out) for s in PER_CHANNEL]
    assert list(zip(op.multiplier.get_values(), op.shift.get_values(), strict=True)) == want
    assert op.rounding.data == "tflite" and op.bias is not None
    assert qnn.qtype(op.weight).axis.data == 1  # OHWI -> [C, O, kH, kW], channels on axis 1
    assert list(op.pads.get_values()) == [0, 0, 1, 1]  # SAME 3x3 stride 2 to 8: 1 after


def test_transpose_conv_nonzero_weight_zero_point_is_refused() -> None:
    # LiteRT's int8 kernel ignores a filter zero point; npuc refuses rather than differ.
    x_shape, out = [1, 3, 3, 2], [1, 7, 7, 2]
    m = TFLiteModel()
    shape = m.tensor("shape", [4], np.int32, data=np.array(out, np.int32))
    w = m.tensor(
        "w", [2, 3, 3, 2], np.int8, data=np.ones([2, 3, 3, 2], np.int8), scale=0.02, zero_point=3
    )
    x = m.tensor("x", x_shape, np.int8, scale=0.05, zero_point=0)
    y = m.tensor("y", out, np.int8, scale=0.1, zero_point=0)
    m.op(
        "TRANSPOSE_CONV",
        [shape, w, x],
        [y],
        "TransposeConvOptions",
        Padding=VALID,
        StrideH=2,
        StrideW=2,
    )
    with pytest.raises(NpucError, match="non-zero zero point"):
        import_tflite(m.build([x], [y]))
