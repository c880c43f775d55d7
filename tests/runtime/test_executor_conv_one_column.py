"""Pointwise convolutions sharing a converted input, on a one-column feature map with a
long reduction: the row bands are sized from the im2col bytes per row (K x width), which
there exceed the rows' own count. Outputs against qnn.conv2d's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from npu_programs import Builder, inst, qnn_conv, random_table

pytestmark = pytest.mark.usefixtures("kernel_path")


@pytest.mark.parametrize("channels", [8, 96])
def test_pointwise_convolutions_of_one_column_share_the_converted_input(channels):
    rng = np.random.default_rng(channels)
    shape = (1, channels, 6, 1)
    x = rng.integers(-128, 128, shape)
    w = rng.integers(-128, 128, (4, channels, 1, 1))
    table = random_table(rng, 4, (40, 44))
    b = Builder()
    xt = b.input("x", x, "i8")
    ys = [b.output(n, (1, 4, 6, 1)) for n in ("y1", "y2")]
    wt, ct = b.const(w, "i8"), b.const(table, "i32")
    first = inst("conv2d", (xt, wt, ct, ys[0]), ifm_zero_point=-3, rounding="tflite")
    # the same convolution again, reusing the converted input
    again = inst("conv2d", (xt, wt, ct, ys[1]), deps=(0,), **first.params)
    out = b.run([first, again])
    want = qnn_conv(x, "i8", w, np.zeros(4, np.int64), table, first.params, (1, 4, 6, 1))
    np.testing.assert_array_equal(out["y1"], want)
    np.testing.assert_array_equal(out["y2"], want)
    assert np.unique(want).size > 4
