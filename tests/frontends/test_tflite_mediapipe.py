"""MediaPipe's custom Convolution2DTransposeBias against its kernel's loop, in numpy.

LiteRT does not register the op, so the reference is MediaPipe's TransposeConvBias
(transpose_conv_bias.cc) written out: bias, then every input pixel scattered through
the OHWI filter, with SAME cropping `max(0, k - (n - 1) % s - 1)`, the smaller half first.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from tflite_builder import TFLiteModel

from npuc.frontends.tflite import import_tflite
from npuc.runtime.qnn_interpreter import run_module

RNG = np.random.default_rng(5)
SAME, VALID = 1, 2  # TfLitePadding


def crops(n: int, k: int, s: int, padding: int) -> int:
    return max(0, k - (n - 1) % s - 1) if padding == SAME else 0


def mediapipe_reference(
    x: np.ndarray, w: np.ndarray, b: np.ndarray, strides: tuple[int, int], padding: int
) -> np.ndarray:
    (_, h, wd, _), (o, kh, kw, _), (sh, sw) = x.shape, w.shape, strides
    ch, cw = crops(h, kh, sh, padding), crops(wd, kw, sw, padding)
    full_h, full_w = sh * (h - 1) + kh, sw * (wd - 1) + kw
    full = np.zeros((x.shape[0], full_h, full_w, o), np.float64)
    for fy in range(kh):
        for fx in range(kw):
            tap = np.einsum("nhwi,oi->nhwo", x.astype(np.float64), w[:, fy, fx, :])
            full[:, fy : fy + sh * h : sh, fx : fx + sw * wd : sw] += tap
    out = full[:, ch // 2 : full_h - (ch - ch // 2), cw // 2 : full_w - (cw - cw // 2)]
    return (out + b).astype(np.float32)


@pytest.mark.parametrize(
    ("hw", "kernel", "strides", "padding"),
    [
        ((8, 8), (2, 2), (2, 2), SAME),
        ((5, 7), (3, 3), (2, 2), SAME),
        ((6, 5), (4, 3), (2, 3), SAME),
        ((4, 4), (3, 3), (2, 2), VALID),
        ((5, 5), (3, 3), (1, 1), SAME),
    ],
)
def test_convolution_2d_transpose_bias_matches_mediapipe(
    hw: tuple[int, int], kernel: tuple[int, int], strides: tuple[int, int], padding: int
) -> None:
    cin, cout = 3, 2
    x = RNG.standard_normal((1, *hw, cin)).astype(np.float32)
    w = RNG.standard_normal((cout, *kernel, cin)).astype(np.float32)
    b = RNG.standard_normal(cout).astype(np.float32)
    expected = mediapipe_reference(x, w, b, strides, padding)
    m = TFLiteModel()
    xt = m.tensor("x", x.shape)
    # float16 weights behind DEQUANTIZE, as MediaPipe ships them
    w16 = m.tensor("w16", w.shape, np.float16, data=w.astype(np.float16))
    wt = m.tensor("w", w.shape)
    m.op("DEQUANTIZE", [w16], [wt])
    bt = m.tensor("b", b.shape, data=b)
    y = m.tensor("y", expected.shape)
    options = struct.pack("<iii", padding, strides[1], strides[0])
    m.custom_op("Convolution2DTransposeBias", [xt, wt, bt], [y], options)
    module = import_tflite(m.build([xt], [y]))
    w_used = w.astype(np.float16).astype(np.float32)
    got = next(iter(run_module(module, {"x": x}).values()))
    np.testing.assert_allclose(
        got, mediapipe_reference(x, w_used, b, strides, padding), rtol=1e-5, atol=1e-5
    )


def test_convolution_2d_transpose_bias_without_options_is_reported() -> None:
    m = TFLiteModel()
    x = m.tensor("x", [1, 4, 4, 2])
    w = m.tensor("w", [1, 2, 2, 2], data=np.ones((1, 2, 2, 2), np.float32))
    b = m.tensor("b", [1], data=np.zeros(1, np.float32))
    y = m.tensor("y", [1, 8, 8, 1])
    m.custom_op("Convolution2DTransposeBias", [x, w, b], [y])
    with pytest.raises(Exception, match="custom options of 0 bytes"):
        import_tflite(m.build([x], [y]))
