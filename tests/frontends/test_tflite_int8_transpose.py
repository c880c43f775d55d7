"""int8 TRANSPOSE_CONV: npuc's qnn.conv_transpose2d equals LiteRT's reference kernel bit for bit."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from tflite_builder import TFLiteModel, check_exact

from npuc.diagnostics import NpucError
from npuc.dialects import qnn
from npuc.frontends.tflite import import_tflite
from npuc.frontends.tflite_qops import tflite_multiplier

RNG = np.random.default_rng(77)
SAME, VALID = 0, 1


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
    m.op("TRANSPOSE_CONV", inputs, [y], "TransposeConvOptions", Padding=padding, StrideH=stride,
         StrideW=stride, FusedActivationFunction=act)  # fmt: skip
    feeds = [RNG.integers(-128, 128, x_shape).astype(np.int8)]
    return m.build([x], [y]), feeds


PER_CHANNEL = (0.011, 0.02, 0.035, 0.007)
CASES = {
    "same_s2_per_channel_bias": lambda: transpose_conv(
        [1, 4, 4, 3], [8, 8], 4, [3, 3], 2, SAME, w_scales=PER_CHANNEL),
    "same_s2_per_tensor_bias": lambda: transpose_conv([1, 4, 5, 3], [8, 10], 4, [3, 3], 2, SAME),
    "same_s2_per_channel_no_bias": lambda: transpose_conv(
        [1, 4, 4, 2], [8, 8], 4, [3, 3], 2, SAME, w_scales=PER_CHANNEL, bias=False),
    "same_s2_odd_output": lambda: transpose_conv(
        [1, 4, 4, 3], [7, 7], 4, [3, 3], 2, SAME, w_scales=PER_CHANNEL),
    "same_s1_per_tensor_no_bias": lambda: transpose_conv(
        [2, 5, 5, 3], [5, 5], 2, [3, 3], 1, SAME, bias=False),
    "same_s1_even_kernel": lambda: transpose_conv(
        [1, 5, 6, 4], [5, 6], 4, [2, 2], 1, SAME, w_scales=PER_CHANNEL),
    "valid_s1_per_channel_bias": lambda: transpose_conv(
        [1, 4, 5, 3], [6, 7], 4, [3, 3], 1, VALID, w_scales=PER_CHANNEL),
    "valid_s2_per_tensor_no_bias": lambda: transpose_conv(
        [1, 3, 3, 3], [7, 7], 2, [3, 3], 2, VALID, bias=False),
    "valid_s2_output_padding": lambda: transpose_conv(
        [1, 3, 4, 3], [8, 10], 4, [3, 3], 2, VALID, w_scales=PER_CHANNEL),
    "valid_s2_relu": lambda: transpose_conv(
        [1, 3, 3, 4], [7, 7], 4, [3, 3], 2, VALID, w_scales=PER_CHANNEL, act=1),
    "same_s2_relu6_coarse_output": lambda: transpose_conv(
        [1, 4, 4, 3], [8, 8], 4, [3, 3], 2, SAME, w_scales=PER_CHANNEL, act=3,
        q_out=(0.03, -100)),
    "same_s2_relu_n1_to_1": lambda: transpose_conv(
        [1, 4, 4, 3], [8, 8], 2, [4, 4], 2, SAME, act=2, q_out=(0.01, 0)),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_bit_exact(case: str) -> None:
    data, feeds = CASES[case]()
    check_exact(data, feeds)


def test_imported_as_qnn_conv_transpose2d_with_tflite_multipliers() -> None:
    data, _ = CASES["same_s2_per_channel_bias"]()
    (op,) = [op for op in import_tflite(data).walk() if isinstance(op, qnn.ConvTranspose2dOp)]
    s_in, s_out = float(np.float32(0.05)), float(np.float32(0.1))
    want = [tflite_multiplier(s_in * float(np.float32(s)) / s_out) for s in PER_CHANNEL]
    assert list(zip(op.multiplier.get_values(), op.shift.get_values(), strict=True)) == want
    assert op.rounding.data == "tflite" and op.bias is not None
    assert qnn.qtype(op.weight).axis.data == 1  # OHWI -> [C, O, kH, kW], channels on axis 1
    assert list(op.pads.get_values()) == [0, 0, 1, 1]  # SAME 3x3 stride 2 to 8: 1 after


def test_nonzero_weight_zero_point_is_refused() -> None:
    # LiteRT's int8 kernel ignores a filter zero point; npuc refuses rather than differ.
    x_shape, out = [1, 3, 3, 2], [1, 7, 7, 2]
    m = TFLiteModel()
    shape = m.tensor("shape", [4], np.int32, data=np.array(out, np.int32))
    w = m.tensor("w", [2, 3, 3, 2], np.int8, data=np.ones([2, 3, 3, 2], np.int8), scale=0.02,
                 zero_point=3)  # fmt: skip
    x = m.tensor("x", x_shape, np.int8, scale=0.05, zero_point=0)
    y = m.tensor("y", out, np.int8, scale=0.1, zero_point=0)
    m.op("TRANSPOSE_CONV", [shape, w, x], [y], "TransposeConvOptions", Padding=VALID, StrideH=2,
         StrideW=2)  # fmt: skip
    with pytest.raises(NpucError, match="non-zero zero point"):
        import_tflite(m.build([x], [y]))
