"""The float kernels' keyword defaults are ONNX's attribute defaults: a Conv with none of
strides, pads, dilations or group given, against onnxruntime's."""

from __future__ import annotations

import numpy as np

from npuc.runtime.kernels import conv


def test_conv2d_defaults_are_onnx_conv_defaults(rng, onnx_ort, close):
    x = rng.standard_normal((1, 3, 6, 5), dtype=np.float32)
    w = rng.standard_normal((4, 3, 3, 2), dtype=np.float32)
    b = rng.standard_normal(4, dtype=np.float32)
    (expected,) = onnx_ort("Conv", [x, w, b], {})
    got = conv.conv2d(x, w, b)
    assert got.shape == expected.shape == (1, 4, 4, 4)
    close(got, expected)
