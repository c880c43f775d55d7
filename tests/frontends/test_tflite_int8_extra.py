"""More int8 TFLite operators (RELU family, MAXIMUM/MINIMUM, GATHER, REDUCE_MAX, ARG_MAX,
BATCH_MATMUL): npuc's qnn import and interpreter equal LiteRT's reference kernels bit for bit."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from tflite_builder import TFLiteModel, check_exact

from npuc.diagnostics import NpucError
from npuc.dialects import qnn
from npuc.frontends.tflite import import_tflite

RNG = np.random.default_rng(2024)
INT32, INT64 = 2, 4  # tflite.TensorType.INT32, INT64


class Q:
    """An int8 activation spec: shape with its scale and zero point (`data` makes a constant)."""

    def __init__(self, shape: Sequence[int], scale: float, zp: int = 0,
                 data: np.ndarray | None = None):  # fmt: skip
        self.shape, self.scale, self.zp, self.data = list(shape), scale, zp, data


def model(op: str, inputs: Sequence, out: Q | tuple[Sequence[int], type],
          options: str | None = None, feeds: Sequence[np.ndarray] | None = None,
          **fields) -> tuple[bytes, list[np.ndarray]]:  # fmt: skip
    """A one-operator model: Q inputs are int8 activations (or constants), arrays int32/int64
    constants; the output is a Q or a (shape, dtype) pair."""
    m = TFLiteModel()
    ids, args, made = [], [], []
    for i, spec in enumerate(inputs):
        if isinstance(spec, Q):
            t = m.tensor(f"x{i}", spec.shape, np.int8, data=spec.data, scale=spec.scale,
                         zero_point=spec.zp)  # fmt: skip
            if spec.data is None:
                args.append(t)
                made.append(RNG.integers(-128, 128, spec.shape).astype(np.int8))
        else:
            data = np.asarray(spec)
            t = m.tensor(f"c{i}", data.shape, data.dtype, data=data)
        ids.append(t)
    if isinstance(out, Q):
        y = m.tensor("y", out.shape, np.int8, scale=out.scale, zero_point=out.zp)
    else:
        y = m.tensor("y", out[0], out[1])
    m.op(op, ids, [y], options, **fields)
    return m.build(args, [y]), list(feeds) if feeds is not None else made


ALL_INT8 = [np.arange(-128, 128, dtype=np.int8).reshape(2, 128)]


def relu(op: str, s_in: float, zp_in: int, s_out: float, zp_out: int):
    """Every int8 input value through a standalone RELU-family op."""
    return model(op, [Q([2, 128], s_in, zp_in)], Q([2, 128], s_out, zp_out), feeds=ALL_INT8)


def matmul(a: Q, b: Q, out: Q, **adj):
    return model("BATCH_MATMUL", [a, b], out, "BatchMatMulOptions", **adj)


CASES = {
    # RELU family: same params, rescaled, zero points that leave the bounds outside int8.
    "relu_same": lambda: relu("RELU", 0.05, -7, 0.05, -7),
    "relu_rescaled": lambda: relu("RELU", 0.05, -7, 0.03, -128),
    "relu_upscaled": lambda: relu("RELU", 0.011, 40, 0.07, -20),
    "relu_zp_high": lambda: relu("RELU", 0.02, 100, 0.02, 120),
    # s_in / s_out rounds differently in float32 and double: input 4 gives -35, not -36.
    "relu_float32_quotient": lambda: relu("RELU", 0.0555, 0, 0.0024, -128),
    "relu6_same": lambda: relu("RELU6", 0.04, 3, 0.04, 3),
    "relu6_rescaled": lambda: relu("RELU6", 0.1, 0, 6 / 255, -128),
    "relu6_tight": lambda: relu("RELU6", 0.013, -50, 0.031, -100),
    "relu_n1_to_1_same": lambda: relu("RELU_N1_TO_1", 0.01, 5, 0.01, 5),
    "relu_n1_to_1_rescaled": lambda: relu("RELU_N1_TO_1", 0.02, -3, 2 / 255, 0),
    "relu_n1_to_1_wide": lambda: relu("RELU_N1_TO_1", 0.003, 17, 0.0021, -9),
    # MAXIMUM/MINIMUM: one quantization, numpy broadcasting.
    "maximum": lambda: model("MAXIMUM", [Q([2, 3, 8], 0.05, -3), Q([2, 3, 8], 0.05, -3)],
                             Q([2, 3, 8], 0.05, -3)),
    "maximum_broadcast": lambda: model(
        "MAXIMUM", [Q([1, 4, 4, 8], 0.1, 7), Q([1, 1, 1, 8], 0.1, 7)], Q([1, 4, 4, 8], 0.1, 7)),
    "maximum_const": lambda: model(
        "MAXIMUM", [Q([3, 5], 0.02, 10), Q([1], 0.02, 10, np.array([10], np.int8))],
        Q([3, 5], 0.02, 10)),
    "minimum": lambda: model("MINIMUM", [Q([4, 6], 0.07, 0), Q([4, 6], 0.07, 0)],
                             Q([4, 6], 0.07, 0)),
    "minimum_broadcast": lambda: model("MINIMUM", [Q([2, 1, 5], 0.03, -20), Q([3, 1], 0.03, -20)],
                                       Q([2, 3, 5], 0.03, -20)),
    # GATHER with constant indices.
    "gather_axis0": lambda: model("GATHER", [Q([5, 4], 0.1, 3), np.array([4, 0, 2, 2], np.int32)],
                                  Q([4, 4], 0.1, 3), "GatherOptions", Axis=0),
    "gather_axis1_2d_indices": lambda: model(
        "GATHER", [Q([2, 6, 3], 0.05, -4), np.array([[5, 1], [0, 3]], np.int32)],
        Q([2, 2, 2, 3], 0.05, -4), "GatherOptions", Axis=1),
    "gather_negative_axis_i64": lambda: model(
        "GATHER", [Q([3, 7], 0.2, 0), np.array([6, 6, 0], np.int64)], Q([3, 3], 0.2, 0),
        "GatherOptions", Axis=-1),
    "gather_one_index": lambda: model("GATHER", [Q([4, 5], 0.1, 1), np.array([2], np.int32)],
                                      Q([1, 5], 0.1, 1), "GatherOptions", Axis=0),
    # REDUCE_MAX.
    "reduce_max_last": lambda: model(
        "REDUCE_MAX", [Q([2, 3, 8], 0.05, -3), np.array([2], np.int32)], Q([2, 3], 0.05, -3),
        "ReducerOptions", KeepDims=False),
    "reduce_max_hw_keepdims": lambda: model(
        "REDUCE_MAX", [Q([1, 5, 5, 4], 0.1, 9), np.array([1, 2], np.int32)],
        Q([1, 1, 1, 4], 0.1, 9), "ReducerOptions", KeepDims=True),
    "reduce_max_negative_axes": lambda: model(
        "REDUCE_MAX", [Q([3, 4, 5], 0.1, 0), np.array([-3, -1], np.int32)], Q([4], 0.1, 0),
        "ReducerOptions", KeepDims=False),
    # ARG_MAX with an int64 result (ties: the first index, as TFLite).
    "arg_max_last": lambda: model("ARG_MAX", [Q([3, 10], 0.1, 2), np.array([1], np.int32)],
                                  ([3], np.int64), "ArgMaxOptions", OutputType=INT64),
    "arg_max_axis0_ties": lambda: model(
        "ARG_MAX", [Q([4, 6], 0.1, 2), np.array([0], np.int32)], ([6], np.int64), "ArgMaxOptions",
        feeds=[RNG.integers(-2, 2, [4, 6]).astype(np.int8)], OutputType=INT64),
    "arg_max_nhwc_channels": lambda: model(
        "ARG_MAX", [Q([1, 3, 3, 5], 0.05, -1), np.array([-1], np.int32)], ([1, 3, 3], np.int64),
        "ArgMaxOptions", OutputType=INT64),
    # ARG_MAX/ARG_MIN with an int32 result (ArgMaxOptions.output_type), and ARG_MIN int64.
    "arg_max_int32": lambda: model("ARG_MAX", [Q([3, 10], 0.1, 2), np.array([1], np.int32)],
                                   ([3], np.int32), "ArgMaxOptions", OutputType=INT32),
    "arg_max_int32_axis0_ties": lambda: model(
        "ARG_MAX", [Q([5, 4, 3], 0.1, 2), np.array([0], np.int32)], ([4, 3], np.int32),
        "ArgMaxOptions", feeds=[RNG.integers(-2, 2, [5, 4, 3]).astype(np.int8)],
        OutputType=INT32),
    "arg_min_int32_ties": lambda: model(
        "ARG_MIN", [Q([4, 6], 0.1, 2), np.array([1], np.int32)], ([4], np.int32),
        "ArgMinOptions", feeds=[RNG.integers(-2, 2, [4, 6]).astype(np.int8)], OutputType=INT32),
    "arg_min_int64_nhwc_channels": lambda: model(
        "ARG_MIN", [Q([1, 3, 3, 5], 0.05, -1), np.array([-1], np.int32)], ([1, 3, 3], np.int64),
        "ArgMinOptions", OutputType=INT64),
    "arg_min_int64_axis0": lambda: model(
        "ARG_MIN", [Q([6, 4], 0.2, 0), np.array([0], np.int32)], ([4], np.int64),
        "ArgMinOptions", OutputType=INT64),
    # BATCH_MATMUL.
    "batch_matmul_2d": lambda: matmul(Q([4, 16], 0.05, -3), Q([16, 5], 0.03, 7),
                                      Q([4, 5], 0.4, 2)),
    "batch_matmul_batched": lambda: matmul(Q([3, 4, 8], 0.021, 1), Q([3, 8, 6], 0.017, -5),
                                           Q([3, 4, 6], 0.09, -10)),
    "batch_matmul_broadcast": lambda: matmul(Q([2, 1, 3, 8], 0.04, 0), Q([4, 8, 5], 0.02, 0),
                                             Q([2, 4, 3, 5], 0.1, 0)),
    "batch_matmul_adj": lambda: matmul(Q([2, 8, 3], 0.05, 4), Q([2, 6, 8], 0.03, -2),
                                       Q([2, 3, 6], 0.3, -7), AdjX=True, AdjY=True),
    "batch_matmul_const_rhs": lambda: matmul(
        Q([5, 12], 0.06, -9),
        Q([12, 4], 0.011, 0, RNG.integers(-127, 128, [12, 4]).astype(np.int8)),
        Q([5, 4], 0.2, 3)),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_bit_exact(case: str) -> None:
    data, feeds = CASES[case]()
    check_exact(data, feeds)


def test_ops_are_the_qnn_ones() -> None:
    kinds = {
        "relu6_rescaled": qnn.RequantizeOp,
        "maximum": qnn.MaximumOp,
        "minimum": qnn.MinimumOp,
        "gather_axis0": qnn.GatherOp,
        "reduce_max_last": qnn.ReduceMaxOp,
        "arg_max_last": qnn.ArgMaxOp,
        "batch_matmul_2d": qnn.MatMulOp,
    }
    for case, kind in kinds.items():
        ops = [op for op in import_tflite(CASES[case]()[0]).walk() if isinstance(op, kind)]
        assert len(ops) == 1, case
    relu6 = next(op for op in import_tflite(CASES["relu6_rescaled"]()[0]).walk()
                 if isinstance(op, qnn.RequantizeOp))  # fmt: skip
    assert relu6.rounding.data == "tflite"
    # 6 / (6/255) = 255 steps above the zero point -128: the clamp is the full int8 range.
    assert relu6.clamp_bounds() == (-128, 127)


def refused(data: bytes) -> str:
    with pytest.raises(NpucError) as info:
        import_tflite(data)
    return str(info.value)


def test_arg_results_have_the_model_dtype() -> None:
    for case, kind, dtype in (("arg_max_int32", qnn.ArgMaxOp, "i32"),
                              ("arg_min_int64_axis0", qnn.ArgMinOp, "i64")):  # fmt: skip
        (op,) = [op for op in import_tflite(CASES[case]()[0]).walk() if isinstance(op, kind)]
        assert str(op.output.type.get_element_type()) == dtype


def test_arg_max_int16_output_is_refused() -> None:
    data, _ = model("ARG_MAX", [Q([3, 10], 0.1, 2), np.array([1], np.int32)], ([3], np.int16),
                    "ArgMaxOptions", OutputType=7)  # fmt: skip
    assert "ARG_MAX with output type" in refused(data)


def test_maximum_with_different_params_is_refused() -> None:
    data, _ = model("MAXIMUM", [Q([2, 3], 0.05, 0), Q([2, 3], 0.07, 0)], Q([2, 3], 0.05, 0))
    assert "quantization differ" in refused(data)


def test_reduce_max_with_different_params_is_refused() -> None:
    data, _ = model("REDUCE_MAX", [Q([2, 3], 0.05, 0), np.array([1], np.int32)], Q([2], 0.05, 1),
                    "ReducerOptions", KeepDims=False)  # fmt: skip
    assert "quantization differ" in refused(data)


def test_gather_out_of_range_index_is_refused() -> None:
    data, _ = model("GATHER", [Q([3, 2], 0.1, 0), np.array([3], np.int32)], Q([1, 2], 0.1, 0),
                    "GatherOptions", Axis=0)  # fmt: skip
    assert "gather indices must lie in [0, 3)" in refused(data)
