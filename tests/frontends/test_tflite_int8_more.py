"""int8 MEAN, SUM, SQUARED_DIFFERENCE, PRELU, RESIZE_BILINEAR, DIV: npuc equals LiteRT."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from tflite_builder import TFLiteModel, check_exact, run_litert
from xdsl.dialects.builtin import StringAttr

import npuc.frontends.tflite_int8_more  # installs the converters
import npuc.runtime.kernels.qnn_more  # noqa: F401  (installs the kernels)
from npuc.dialects import qnn_more as qm
from npuc.frontends.tflite import import_tflite
from npuc.frontends.tflite_int8_more import folded_mean_multiplier
from npuc.frontends.tflite_qops import tflite_multiplier
from npuc.graph_io import entry_function, input_names
from npuc.runtime.qnn_kernels import run_module

RNG = np.random.default_rng(2024)


class Q:
    """An int8 activation (or, with `data`, a constant): shape, scale, zero point."""

    def __init__(self, shape: Sequence[int], scale: float, zp: int = 0,
                 data: np.ndarray | None = None):  # fmt: skip
        self.shape, self.scale, self.zp, self.data = list(shape), scale, zp, data


def single(op: str, inputs: Sequence, out: Q, options: str | None = None,
           **fields) -> tuple[bytes, list[np.ndarray]]:  # fmt: skip
    m = TFLiteModel()
    ids, args, feeds = [], [], []
    for i, spec in enumerate(inputs):
        if isinstance(spec, Q):
            t = m.tensor(f"x{i}", spec.shape, np.int8, data=spec.data, scale=spec.scale,
                         zero_point=spec.zp)  # fmt: skip
            if spec.data is None:
                args.append(t)
                feeds.append(RNG.integers(-128, 128, spec.shape).astype(np.int8))
        else:
            data = np.asarray(spec)
            t = m.tensor(f"c{i}", data.shape, data.dtype, data=data)
        ids.append(t)
    y = m.tensor("y", out.shape, np.int8, scale=out.scale, zero_point=out.zp)
    m.op(op, ids, [y], options, **fields)
    return m.build(args, [y]), feeds


def reduce_case(op: str, shape, axes, keep: bool, q_in: tuple, q_out: tuple):
    out_shape = [1 if i in {a % len(shape) for a in axes} else d for i, d in enumerate(shape)]
    if not keep:
        out_shape = [d for i, d in enumerate(shape) if i not in {a % len(shape) for a in axes}]
    return single(op, [Q(shape, *q_in), np.array(axes, np.int32)], Q(out_shape, *q_out),
                  "ReducerOptions", KeepDims=keep)  # fmt: skip


def alpha(shape, scale: float, zp: int) -> Q:
    return Q(shape, scale, zp, RNG.integers(-128, 128, shape).astype(np.int8))


CASES = {
    # MEAN: QuantizedMeanOrSum, 1/count folded into the multiplier (every layout).
    "mean_hw_keepdims": lambda: reduce_case("MEAN", [1, 7, 7, 8], [1, 2], True,
                                            (0.05, -7), (0.02, 3)),
    "mean_hw_keepdims_reversed_axes": lambda: reduce_case("MEAN", [2, 5, 4, 6], [2, 1], True,
                                                          (0.1, 20), (0.1, 20)),
    "mean_hw_keepdims_coarser_out": lambda: reduce_case("MEAN", [1, 3, 3, 16], [1, 2], True,
                                                        (0.03, 0), (0.2, -100)),
    "mean_hw_no_keepdims": lambda: reduce_case("MEAN", [1, 6, 6, 8], [1, 2], False,
                                               (0.05, -7), (0.02, 3)),
    "mean_last_axis": lambda: reduce_case("MEAN", [4, 3, 10], [-1], True, (0.07, 5), (0.03, -9)),
    "mean_all_axes": lambda: reduce_case("MEAN", [2, 3, 5], [0, 1, 2], False,
                                         (0.04, 11), (0.01, 0)),
    "mean_count_not_power_of_two": lambda: reduce_case("MEAN", [1, 7, 9, 3], [1], False,
                                                       (0.2, -1), (0.05, 4)),
    "mean_same_params_zero_zp": lambda: reduce_case("MEAN", [3, 10], [1], False,
                                                    (0.1, 0), (0.1, 0)),
    "mean_same_params": lambda: reduce_case("MEAN", [2, 6, 9], [1, 2], True,
                                            (0.1, 3), (0.1, 3)),
    # SUM: LiteRT's reference kernel reads the int8 bytes as uint8 (storage_view = "uint8").
    "sum_last_axis_rescaled": lambda: reduce_case("SUM", [2, 6], [1], False, (0.1, 3), (0.3, -2)),
    "sum_equal_params": lambda: reduce_case("SUM", [3, 10], [-1], False, (0.1, 3), (0.1, 3)),
    "sum_equal_params_zero_zp_all_axes": lambda: reduce_case("SUM", [3, 10], [0, 1], False,
                                                             (0.1, 0), (0.1, 0)),
    "sum_hw_keepdims": lambda: reduce_case("SUM", [1, 7, 7, 8], [1, 2], True, (0.02, -3),
                                           (0.9, 0)),
    "sum_two_axes_keepdims": lambda: reduce_case("SUM", [4, 5, 6], [2, 1], True, (0.05, -7),
                                                 (0.4, 10)),
    "sum_first_axis_low_output_zp": lambda: reduce_case("SUM", [4, 5, 6], [0], False,
                                                        (0.05, 5), (0.2, -128)),
    "sum_finer_output_saturates": lambda: reduce_case("SUM", [2, 3, 16], [2], False,
                                                      (0.2, 0), (0.01, -20)),
    "squared_difference": lambda: single(
        "SQUARED_DIFFERENCE", [Q([2, 4, 8], 0.05, -3), Q([2, 4, 8], 0.11, 12)],
        Q([2, 4, 8], 0.4, -128)),
    "squared_difference_broadcast": lambda: single(
        "SQUARED_DIFFERENCE", [Q([1, 4, 4, 8], 0.02, 5), Q([1, 1, 1, 8], 0.03, -2)],
        Q([1, 4, 4, 8], 0.05, -100)),
    "squared_difference_equal_scales": lambda: single(
        "SQUARED_DIFFERENCE", [Q([3, 16], 0.1, 0), Q([3, 16], 0.1, 0)], Q([3, 16], 1.0, -128)),
    "prelu_per_channel_alpha": lambda: single(
        "PRELU", [Q([1, 4, 4, 8], 0.05, -10), alpha([1, 1, 8], 0.004, 3)],
        Q([1, 4, 4, 8], 0.04, -20)),
    "prelu_full_alpha": lambda: single(
        "PRELU", [Q([2, 3, 5], 0.1, 7), alpha([2, 3, 5], 0.01, -50)], Q([2, 3, 5], 0.08, 0)),
    "prelu_scalar_like_alpha": lambda: single(
        "PRELU", [Q([4, 16], 0.03, 0), alpha([1], 0.002, 0)], Q([4, 16], 0.02, 5)),
    "resize_bilinear_up": lambda: resize_case([1, 3, 4, 2], [5, 7], False, False),
    "resize_bilinear_half_pixel": lambda: resize_case([2, 4, 3, 3], [7, 8], False, True),
    "resize_bilinear_align_corners": lambda: resize_case([1, 5, 5, 4], [9, 3], True, False),
    "resize_bilinear_down": lambda: resize_case([1, 8, 9, 2], [3, 4], False, True),
    "div": lambda: div_case([2, 16], [2, 16], 0.05, 0.02, 0.1, 0),
    "div_broadcast_relu": lambda: div_case([1, 4, 4, 8], [1, 1, 1, 8], 0.1, 0.03, 0.2, 1),
    "div_small_output_scale": lambda: div_case([3, 10], [3, 10], 0.01, 0.5, 0.0005, 0),
}  # fmt: skip


def resize_case(shape, size, align: bool, half: bool):
    n, _, _, c = shape
    return single("RESIZE_BILINEAR", [Q(shape, 0.05, -9), np.array(size, np.int32)],
                  Q([n, *size, c], 0.05, -9), "ResizeBilinearOptions", AlignCorners=align,
                  HalfPixelCenters=half)  # fmt: skip


def div_case(shape_a, shape_b, s_a: float, s_b: float, s_out: float, act: int):
    zp_b = 4
    inputs = [Q(shape_a, s_a, -5), Q(shape_b, s_b, zp_b)]
    data, feeds = single("DIV", inputs, Q(shape_a, s_out, 3), "DivOptions",
                         FusedActivationFunction=act)  # fmt: skip
    feeds[1] = np.where(feeds[1] == zp_b, np.int8(zp_b + 1), feeds[1])  # no division by zero
    # Numerators at and next to the zero point: TFLite's rounding shift reaches 32 or more.
    feeds[0].flat[:6] = [-5, -5, -4, -6, -3, -7]
    return data, feeds


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_bit_exact(case: str) -> None:
    data, feeds = CASES[case]()
    check_exact(data, feeds)


def test_ops_imported_as_qnn_more() -> None:
    data, _ = CASES["mean_hw_keepdims"]()
    (op,) = [op for op in import_tflite(data).walk() if isinstance(op, qm.ReduceSumOp)]
    assert op.rounding.data == "tflite"
    # 0.05 / 0.02 = 2.5 with 1/49 folded in: shift = floor(log2 49) = 5.
    assert (op.multiplier.get_values()[0], op.shift.get_values()[0]) == (
        folded_mean_multiplier(tflite_multiplier(float(np.float32(0.05)) /
                                                 float(np.float32(0.02))), 49))  # fmt: skip
    op.verify()


def test_folded_mean_multiplier() -> None:
    # n = 12: shift = 3; m' = (m << 3) // 12; the npuc shift grows by 3.
    assert folded_mean_multiplier((1 << 30, 30), 12) == (((1 << 30) << 3) // 12, 33)
    # Clamped by 31 + tflite_shift (tflite_shift = -31 here): no folding shift at all.
    assert folded_mean_multiplier((1 << 30, 62), 4) == ((1 << 30) // 4, 62)


def test_div_overshift_modes() -> None:
    # 0 / b at multiplier 0.25: TFLite's rounding shift is 33 + k >= 32; LiteRT (x86-64)
    # adds 1 to the exact 0.
    data, feeds = div_case([1, 8], [1, 8], 0.05, 0.02, 10.0, 0)
    feeds[0][:] = -5  # the zero point: every numerator is 0
    feeds[1][:] = np.arange(6, 14, dtype=np.int8)
    module = import_tflite(data)
    (div,) = [op for op in module.walk() if isinstance(op, qm.DivOp)]
    assert div.overshift.data == "x86"
    names = input_names(entry_function(module))
    (x86,) = run_module(module, dict(zip(names, feeds, strict=True))).values()
    np.testing.assert_array_equal(x86, run_litert(data, feeds)[0])
    assert (x86 == 4).all()  # zp_out 3 + 1
    from xdsl.dialects.builtin import StringAttr

    div.overshift = StringAttr("exact")
    (exact,) = run_module(module, dict(zip(names, feeds, strict=True))).values()
    assert (exact == 3).all()


def test_sum_is_the_uint8_view_of_the_int8_bytes() -> None:
    # The row -67, 45, -105, -74 (zero point 0) at ratio 0.1: LiteRT sums the bytes
    # 189 + 45 + 151 + 182 = 567 -> 57, where the real sum -201 would give -20.
    data, _ = reduce_case("SUM", [1, 4], [1], False, (0.1, 0), (1.0, 0))
    feeds = [np.array([[-67, 45, -105, -74]], np.int8)]
    (got,) = run_module(import_tflite(data), {"x0": feeds[0]}).values()
    np.testing.assert_array_equal(got, run_litert(data, feeds)[0])
    assert got.tolist() == [57]
    (op,) = [op for op in import_tflite(data).walk() if isinstance(op, qm.ReduceSumOp)]
    assert op.storage_view.data == "uint8"
    op.storage_view = StringAttr("native")  # the canonical integer sum
    (native,) = run_module(op.get_toplevel_object(), {"x0": feeds[0]}).values()
    assert native.tolist() == [-20]
