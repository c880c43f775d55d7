"""Float TFLite models: npuc's import + nn interpreter against LiteRT's reference kernels."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from tflite_builder import TFLiteModel, run_litert

from npuc.dialects import nn
from npuc.frontends.tflite import import_tflite
from npuc.runtime.qnn_interpreter import run_module

RNG = np.random.default_rng(1234)
SAME, VALID = 0, 1


def const(*shape: int, dtype=np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def single(
    op: str,
    inputs: Sequence,
    out_shapes: Sequence[Sequence[int]] | Sequence[int],
    options: str | None = None,
    **fields,
) -> tuple[bytes, list[np.ndarray]]:
    """A one-operator model: inputs are shapes (activations) or arrays (constants); -1 skips."""
    m = TFLiteModel()
    ids, args, feeds = [], [], []
    for i, spec in enumerate(inputs):
        if isinstance(spec, int) and spec == -1:
            ids.append(-1)
        elif isinstance(spec, np.ndarray):
            ids.append(m.tensor(f"c{i}", spec.shape, spec.dtype, data=spec))
        else:
            t = m.tensor(f"x{i}", spec)
            ids.append(t)
            args.append(t)
            feeds.append(RNG.standard_normal(spec).astype(np.float32))
    shapes = [out_shapes] if isinstance(out_shapes[0], int) else out_shapes
    outs = [m.tensor(f"y{i}", s) for i, s in enumerate(shapes)]
    m.op(op, ids, outs, options, **fields)
    return m.build(args, outs), feeds


def check(data: bytes, feeds: list[np.ndarray], atol: float = 1e-5) -> None:
    module = import_tflite(data)
    expected = run_litert(data, feeds)
    names = [f"x{i}" for i in range(8)]
    from npuc.graph_io import entry_function, input_names

    func_inputs = input_names(entry_function(module))
    got = run_module(module, dict(zip(func_inputs, feeds, strict=True)))
    assert len(got) == len(expected)
    for (name, value), ref in zip(got.items(), expected, strict=True):
        assert value.shape == ref.shape, name
        np.testing.assert_allclose(value, ref, rtol=1e-5, atol=atol, err_msg=name)
    assert names  # inputs are named x<i>


CONV = {"DilationHFactor": 1, "DilationWFactor": 1}
CASES = {
    "conv_same_s2_relu6": lambda: single(
        "CONV_2D", [[1, 9, 10, 3], const(4, 3, 3, 3), const(4)], [1, 5, 5, 4], "Conv2DOptions",
        Padding=SAME, StrideH=2, StrideW=2, FusedActivationFunction=3, **CONV),
    "conv_valid_dilated": lambda: single(
        "CONV_2D", [[1, 10, 10, 2], const(3, 3, 2, 2), const(3)], [1, 6, 9, 3], "Conv2DOptions",
        Padding=VALID, StrideH=1, StrideW=1, DilationHFactor=2, DilationWFactor=1),
    "conv_same_even_kernel_relu": lambda: single(
        "CONV_2D", [[1, 7, 7, 3], const(2, 4, 4, 3), const(2)], [1, 4, 4, 2], "Conv2DOptions",
        Padding=SAME, StrideH=2, StrideW=2, FusedActivationFunction=1, **CONV),
    "depthwise_mult2": lambda: single(
        "DEPTHWISE_CONV_2D", [[1, 8, 8, 3], const(1, 3, 3, 6), const(6)], [1, 8, 8, 6],
        "DepthwiseConv2DOptions", Padding=SAME, StrideH=1, StrideW=1, DepthMultiplier=2,
        FusedActivationFunction=2, **CONV),
    "fully_connected": lambda: single(
        "FULLY_CONNECTED", [[2, 16], const(5, 16), const(5)], [2, 5], "FullyConnectedOptions",
        FusedActivationFunction=1),
    "fully_connected_4d_input": lambda: single(
        "FULLY_CONNECTED", [[1, 1, 1, 8], const(3, 8), -1], [1, 3], "FullyConnectedOptions"),
    "transpose_conv_same": lambda: single(
        "TRANSPOSE_CONV", [np.array([1, 8, 8, 2], np.int32), const(2, 3, 3, 3), [1, 4, 4, 3]],
        [1, 8, 8, 2], "TransposeConvOptions", Padding=SAME, StrideH=2, StrideW=2),
    # Bias and fused clip activations (LiteRT's reference kernel applies both).
    "transpose_conv_same_bias_relu6": lambda: single(
        "TRANSPOSE_CONV", [np.array([1, 8, 8, 2], np.int32), const(2, 3, 3, 3), [1, 4, 4, 3],
                           const(2)], [1, 8, 8, 2], "TransposeConvOptions", Padding=SAME,
        StrideH=2, StrideW=2, FusedActivationFunction=3),
    "transpose_conv_same_odd_output_relu": lambda: single(
        "TRANSPOSE_CONV", [np.array([1, 7, 7, 2], np.int32), const(2, 3, 3, 3), [1, 4, 4, 3],
                           const(2)], [1, 7, 7, 2], "TransposeConvOptions", Padding=SAME,
        StrideH=2, StrideW=2, FusedActivationFunction=1),
    "transpose_conv_valid_s1_bias": lambda: single(
        "TRANSPOSE_CONV", [np.array([1, 6, 7, 2], np.int32), const(2, 3, 3, 3), [1, 4, 5, 3],
                           const(2)], [1, 6, 7, 2], "TransposeConvOptions", Padding=VALID,
        StrideH=1, StrideW=1),
    "transpose_conv_valid_s2_output_padding_relu_n1": lambda: single(
        "TRANSPOSE_CONV", [np.array([1, 8, 8, 2], np.int32), const(2, 3, 3, 3), [1, 3, 3, 3]],
        [1, 8, 8, 2], "TransposeConvOptions", Padding=VALID, StrideH=2, StrideW=2,
        FusedActivationFunction=2),
    "batch_matmul_adj_y": lambda: single(
        "BATCH_MATMUL", [[2, 3, 4], [2, 5, 4]], [2, 3, 5], "BatchMatMulOptions", AdjY=True),
    "add_broadcast_relu": lambda: single(
        "ADD", [[1, 4, 4, 3], const(3)], [1, 4, 4, 3], "AddOptions", FusedActivationFunction=1),
    "sub": lambda: single("SUB", [[2, 3], [2, 3]], [2, 3], "SubOptions"),
    "mul_relu6": lambda: single(
        "MUL", [[2, 3], [2, 3]], [2, 3], "MulOptions", FusedActivationFunction=3),
    "div": lambda: single("DIV", [[2, 3], np.full((2, 3), 1.5, np.float32)], [2, 3], "DivOptions"),
    "squared_difference": lambda: single("SQUARED_DIFFERENCE", [[2, 3], [2, 3]], [2, 3]),
    "maximum": lambda: single("MAXIMUM", [[2, 3], [2, 3]], [2, 3]),
    "minimum": lambda: single("MINIMUM", [[2, 3], [1, 3]], [2, 3]),
    "avg_pool_same": lambda: single(
        "AVERAGE_POOL_2D", [[1, 7, 7, 2]], [1, 4, 4, 2], "Pool2DOptions", Padding=SAME,
        StrideH=2, StrideW=2, FilterHeight=3, FilterWidth=3),
    "max_pool_valid_relu": lambda: single(
        "MAX_POOL_2D", [[1, 8, 8, 2]], [1, 4, 4, 2], "Pool2DOptions", Padding=VALID,
        StrideH=2, StrideW=2, FilterHeight=2, FilterWidth=2, FusedActivationFunction=1),
    "mean_hw": lambda: single(
        "MEAN", [[1, 5, 5, 3], np.array([1, 2], np.int32)], [1, 1, 1, 3], "ReducerOptions",
        KeepDims=True),
    "sum": lambda: single("SUM", [[2, 3, 4], np.array([-1], np.int32)], [2, 3], "ReducerOptions"),
    "reduce_max": lambda: single(
        "REDUCE_MAX", [[2, 3, 4], np.array([0], np.int32)], [3, 4], "ReducerOptions"),
    "reshape": lambda: single(
        "RESHAPE", [[1, 2, 3, 4], np.array([6, 4], np.int32)], [6, 4], "ReshapeOptions",
        NewShape=[6, 4]),
    "squeeze": lambda: single(
        "SQUEEZE", [[1, 3, 1, 4]], [3, 4], "SqueezeOptions", SqueezeDims=[0, 2]),
    "expand_dims": lambda: single("EXPAND_DIMS", [[3, 4], np.array([1], np.int32)], [3, 1, 4]),
    "transpose": lambda: single(
        "TRANSPOSE", [[2, 3, 4], np.array([2, 0, 1], np.int32)], [4, 2, 3]),
    "concatenation": lambda: single(
        "CONCATENATION", [[1, 2, 2, 3], [1, 2, 2, 5]], [1, 2, 2, 8], "ConcatenationOptions",
        Axis=-1),
    "split": lambda: single(
        "SPLIT", [np.array([1], np.int32), [2, 6]], [[2, 3], [2, 3]], "SplitOptions",
        NumSplits=2),
    "split_v": lambda: single(
        "SPLIT_V", [[2, 6], np.array([1, 5], np.int32), np.array([1], np.int32)],
        [[2, 1], [2, 5]], "SplitVOptions", NumSplits=2),
    "slice": lambda: single(
        "SLICE", [[3, 5], np.array([1, 1], np.int32), np.array([2, -1], np.int32)], [2, 4]),
    "strided_slice_shrink": lambda: single(
        "STRIDED_SLICE", [[4, 6], np.array([1, 5], np.int32), np.array([3, 0], np.int32),
                          np.array([1, -2], np.int32)], [3], "StridedSliceOptions",
        ShrinkAxisMask=1, EndMask=2),
    "pad": lambda: single("PAD", [[1, 2, 3, 1], np.array([[0, 0], [1, 2], [0, 1], [0, 0]],
                                                          np.int32)], [1, 5, 4, 1]),
    "padv2": lambda: single("PADV2", [[2, 3], np.array([[1, 0], [2, 1]], np.int32),
                                      np.array([0.5], np.float32)], [3, 6]),
    "gather": lambda: single(
        "GATHER", [[5, 3], np.array([4, 0, 2], np.int32)], [3, 3], "GatherOptions", Axis=0),
    "depth_to_space": lambda: single("DEPTH_TO_SPACE", [[1, 3, 4, 12]], [1, 6, 8, 3],
                                     "DepthToSpaceOptions", BlockSize=2),
    "softmax_beta": lambda: single("SOFTMAX", [[2, 7]], [2, 7], "SoftmaxOptions", Beta=0.5),
    "logistic": lambda: single("LOGISTIC", [[2, 7]], [2, 7]),
    "tanh": lambda: single("TANH", [[2, 7]], [2, 7]),
    "relu": lambda: single("RELU", [[2, 7]], [2, 7]),
    "relu6": lambda: single("RELU6", [[2, 7]], [2, 7]),
    "relu_n1_to_1": lambda: single("RELU_N1_TO_1", [[2, 7]], [2, 7]),
    "leaky_relu": lambda: single("LEAKY_RELU", [[2, 7]], [2, 7], "LeakyReluOptions", Alpha=0.1),
    "prelu": lambda: single("PRELU", [[1, 2, 2, 3], const(1, 1, 3)], [1, 2, 2, 3]),
    "hard_swish": lambda: single("HARD_SWISH", [[2, 7]], [2, 7]),
    "gelu": lambda: single("GELU", [[2, 7]], [2, 7], "GeluOptions", Approximate=False),
    "gelu_tanh": lambda: single("GELU", [[2, 7]], [2, 7], "GeluOptions", Approximate=True),
    "resize_nearest": lambda: single(
        "RESIZE_NEAREST_NEIGHBOR", [[1, 3, 4, 2], np.array([6, 8], np.int32)], [1, 6, 8, 2],
        "ResizeNearestNeighborOptions"),
    "resize_nearest_half_pixel": lambda: single(
        "RESIZE_NEAREST_NEIGHBOR", [[1, 3, 4, 2], np.array([5, 7], np.int32)], [1, 5, 7, 2],
        "ResizeNearestNeighborOptions", HalfPixelCenters=True),
    "resize_bilinear": lambda: single(
        "RESIZE_BILINEAR", [[1, 3, 4, 2], np.array([6, 8], np.int32)], [1, 6, 8, 2],
        "ResizeBilinearOptions"),
    "resize_bilinear_align_corners": lambda: single(
        "RESIZE_BILINEAR", [[1, 3, 4, 2], np.array([5, 7], np.int32)], [1, 5, 7, 2],
        "ResizeBilinearOptions", AlignCorners=True),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_matches_litert(case: str) -> None:
    data, feeds = CASES[case]()
    check(data, feeds)


def test_conv_chain_keeps_nchw_between_spatial_ops() -> None:
    """conv -> conv: the NHWC round trip between them folds away at import."""
    m = TFLiteModel()
    x = m.tensor("image", [1, 8, 8, 3])
    w1 = m.tensor("w1", [4, 3, 3, 3], data=const(4, 3, 3, 3))
    w2 = m.tensor("w2", [2, 1, 1, 4], data=const(2, 1, 1, 4))
    b1, b2 = m.tensor("b1", [4], data=const(4)), m.tensor("b2", [2], data=const(2))
    h, y = m.tensor("h", [1, 8, 8, 4]), m.tensor("out", [1, 8, 8, 2])
    m.op("CONV_2D", [x, w1, b1], [h], "Conv2DOptions", Padding=SAME, StrideH=1, StrideW=1, **CONV)
    m.op("CONV_2D", [h, w2, b2], [y], "Conv2DOptions", Padding=SAME, StrideH=1, StrideW=1, **CONV)
    data = m.build([x], [y])
    module = import_tflite(data)
    ops = list(module.walk())
    assert sum(isinstance(op, nn.TransposeOp) for op in ops) == 2
    convs = [op for op in ops if isinstance(op, nn.Conv2dOp)]
    assert [c.layer_name.data for c in convs] == ["h", "out"]
    xi = RNG.standard_normal((1, 8, 8, 3)).astype(np.float32)
    got = run_module(module, {"image": xi})["out"]
    np.testing.assert_allclose(got, run_litert(data, [xi])[0], rtol=1e-5, atol=1e-5)


def test_residual_add_runs_in_nchw() -> None:
    """conv, conv, add(conv outputs): the ADD is hoisted into NCHW, leaving two transposes."""
    m = TFLiteModel()
    x = m.tensor("image", [1, 6, 6, 3])
    w1 = m.tensor("w1", [3, 3, 3, 3], data=const(3, 3, 3, 3))
    w2 = m.tensor("w2", [3, 1, 1, 3], data=const(3, 1, 1, 3))
    b1, b2 = m.tensor("b1", [3], data=const(3)), m.tensor("b2", [3], data=const(3))
    h, g, y = m.tensor("h", [1, 6, 6, 3]), m.tensor("g", [1, 6, 6, 3]), m.tensor("y", [1, 6, 6, 3])
    m.op("CONV_2D", [x, w1, b1], [h], "Conv2DOptions", Padding=SAME, StrideH=1, StrideW=1, **CONV)
    m.op("CONV_2D", [h, w2, b2], [g], "Conv2DOptions", Padding=SAME, StrideH=1, StrideW=1, **CONV)
    m.op("ADD", [h, g], [y], "AddOptions", FusedActivationFunction=1)
    data = m.build([x], [y])
    module = import_tflite(data)
    assert sum(isinstance(op, nn.TransposeOp) for op in module.walk()) == 2
    xi = RNG.standard_normal((1, 6, 6, 3)).astype(np.float32)
    got = run_module(module, {"image": xi})["y"]
    np.testing.assert_allclose(got, run_litert(data, [xi])[0], rtol=1e-5, atol=1e-5)


def _arg_model(op: str, shape: list[int], axis: int, out_dtype: type) -> tuple[bytes, np.ndarray]:
    m = TFLiteModel()
    x = m.tensor("x", shape)
    a = m.tensor("axis", [1], np.int32, data=np.array([axis], np.int32))
    out_shape = [d for i, d in enumerate(shape) if i != axis % len(shape)]
    y = m.tensor("y", out_shape, out_dtype)
    code = 2 if out_dtype == np.int32 else 4  # tflite.TensorType.INT32 / INT64
    options = "ArgMaxOptions" if op == "ARG_MAX" else "ArgMinOptions"
    m.op(op, [x, a], [y], options, OutputType=code)
    return m.build([x], [y]), RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("op", ["ARG_MAX", "ARG_MIN"])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
@pytest.mark.parametrize(("shape", "axis"), [([3, 7], 1), ([2, 5, 4], 0), ([1, 3, 3, 6], -1)])
def test_arg_reduce_matches_litert(op: str, dtype: type, shape: list[int], axis: int) -> None:
    data, x = _arg_model(op, shape, axis, dtype)
    (got,) = run_module(import_tflite(data), {"x": x}).values()
    (want,) = run_litert(data, [x])
    assert got.dtype == want.dtype == dtype
    np.testing.assert_array_equal(got, want)
