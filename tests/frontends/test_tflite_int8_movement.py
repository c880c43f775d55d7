"""int8 data-movement TFLite operators (GATHER, RESIZE_BILINEAR): npuc's qnn import and
interpreter equal LiteRT's reference kernels bit for bit."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from tflite_builder import Q, check_exact, single_op

from npuc.diagnostics import NpucError
from npuc.dialects import qnn
from npuc.frontends.tflite import import_tflite

RNG = np.random.default_rng(2024)


def model(op: str, inputs: Sequence, out, options: str | None = None, **fields):
    return single_op(op, inputs, out, options, rng=RNG, **fields)


def resize_case(shape, size, align: bool, half: bool):
    n, _, _, c = shape
    return model(
        "RESIZE_BILINEAR",
        [Q(shape, 0.05, -9), np.array(size, np.int32)],
        Q([n, *size, c], 0.05, -9),
        "ResizeBilinearOptions",
        AlignCorners=align,
        HalfPixelCenters=half,
    )


CASES = {
    # GATHER with constant indices.
    "gather_axis0": lambda: model(
        "GATHER",
        [Q([5, 4], 0.1, 3), np.array([4, 0, 2, 2], np.int32)],
        Q([4, 4], 0.1, 3),
        "GatherOptions",
        Axis=0,
    ),
    "gather_axis1_2d_indices": lambda: model(
        "GATHER",
        [Q([2, 6, 3], 0.05, -4), np.array([[5, 1], [0, 3]], np.int32)],
        Q([2, 2, 2, 3], 0.05, -4),
        "GatherOptions",
        Axis=1,
    ),
    "gather_negative_axis_i64": lambda: model(
        "GATHER",
        [Q([3, 7], 0.2, 0), np.array([6, 6, 0], np.int64)],
        Q([3, 3], 0.2, 0),
        "GatherOptions",
        Axis=-1,
    ),
    "gather_one_index": lambda: model(
        "GATHER",
        [Q([4, 5], 0.1, 1), np.array([2], np.int32)],
        Q([1, 5], 0.1, 1),
        "GatherOptions",
        Axis=0,
    ),
    "resize_bilinear_up": lambda: resize_case([1, 3, 4, 2], [5, 7], False, False),
    "resize_bilinear_half_pixel": lambda: resize_case([2, 4, 3, 3], [7, 8], False, True),
    "resize_bilinear_align_corners": lambda: resize_case([1, 5, 5, 4], [9, 3], True, False),
    "resize_bilinear_down": lambda: resize_case([1, 8, 9, 2], [3, 4], False, True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_bit_exact(case: str) -> None:
    data, feeds = CASES[case]()
    check_exact(data, feeds)


def test_ops_are_the_qnn_ones() -> None:
    for case, kind in (
        ("gather_axis0", qnn.GatherOp),
        ("resize_bilinear_up", qnn.ResizeBilinearOp),
    ):
        ops = [op for op in import_tflite(CASES[case]()[0]).walk() if isinstance(op, kind)]
        assert len(ops) == 1, case


def refused(data: bytes) -> str:
    with pytest.raises(NpucError) as info:
        import_tflite(data)
    return str(info.value)


def test_gather_out_of_range_index_is_refused() -> None:
    data, _ = model(
        "GATHER",
        [Q([3, 2], 0.1, 0), np.array([3], np.int32)],
        Q([1, 2], 0.1, 0),
        "GatherOptions",
        Axis=0,
    )
    assert "gather indices must lie in [0, 3)" in refused(data)
