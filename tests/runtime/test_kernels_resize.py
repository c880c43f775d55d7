"""ONNX Resize kernel against onnxruntime (and onnx.reference where the two agree)."""

from __future__ import annotations

import numpy as np
import pytest

from npuc.runtime.kernels import resize

COORDINATE_MODES = [
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
]
NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
SCALES = [
    (1.0, 1.0, 2.0, 3.0),
    (1.0, 1.0, 0.5, 0.5),
    (1.0, 1.0, 1.5, 0.7),  # non-integral: output lengths are floored
    (1.0, 1.0, 0.2, 1.0),  # output length 1
    (1.0, 1.0, 1.3333, 2.5),
]


def _run(x, scales, **attrs):
    sc = np.array(scales, dtype=np.float32)
    out_shape = tuple(int(np.floor(d * s)) for d, s in zip(x.shape, sc, strict=True))
    # An attribute the case leaves out is left to the kernel's default, which must be ONNX's.
    names = {
        "coordinate_transformation_mode": "coordinate_mode",
        "nearest_mode": "nearest_mode",
        "cubic_coeff_a": "cubic_coeff_a",
        "exclude_outside": "exclude_outside",
    }
    given = {names[k]: v for k, v in attrs.items() if k in names}
    if "exclude_outside" in given:
        given["exclude_outside"] = bool(given["exclude_outside"])
    got = resize.resize(x, out_shape, [float(s) for s in sc], attrs["mode"], **given)
    return got, sc


@pytest.fixture
def image(rng):
    return rng.standard_normal((2, 3, 5, 6), dtype=np.float32)


@pytest.mark.parametrize("scales", SCALES)
@pytest.mark.parametrize("coord", COORDINATE_MODES)
@pytest.mark.parametrize("nearest_mode", NEAREST_MODES)
def test_nearest_matches_onnxruntime(image, onnx_ort, scales, coord, nearest_mode):
    attrs = dict(mode="nearest", coordinate_transformation_mode=coord, nearest_mode=nearest_mode)
    got, sc = _run(image, scales, **attrs)
    (expected,) = onnx_ort("Resize", [image, None, sc], attrs, opset=19)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("scales", SCALES)
@pytest.mark.parametrize("coord", COORDINATE_MODES)
def test_linear_matches_onnxruntime(image, onnx_ort, close, scales, coord):
    attrs = dict(mode="linear", coordinate_transformation_mode=coord)
    got, sc = _run(image, scales, **attrs)
    (expected,) = onnx_ort("Resize", [image, None, sc], attrs, opset=19)
    close(got, expected)


@pytest.mark.parametrize("scales", [s for s in SCALES if min(s) >= 1.0] + [SCALES[1], SCALES[2]])
@pytest.mark.parametrize("coord", COORDINATE_MODES)
@pytest.mark.parametrize(("a", "exclude_outside"), [(-0.75, 0), (-0.5, 1), (-0.75, 1)])
def test_cubic_matches_onnxruntime(image, onnx_ort, close, scales, coord, a, exclude_outside):
    attrs = dict(
        mode="cubic",
        coordinate_transformation_mode=coord,
        cubic_coeff_a=a,
        exclude_outside=exclude_outside,
    )
    got, sc = _run(image, scales, **attrs)
    (expected,) = onnx_ort("Resize", [image, None, sc], attrs, opset=19)
    close(got, expected)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_n_linear_over_every_axis_matches_onnx_reference(rng, onnx_ref, close, mode):
    # onnxruntime limits linear/cubic to the inner axes; the reference resizes all of them.
    # No coefficient, coordinate mode or exclude_outside: both sides use their defaults.
    x = rng.standard_normal((3, 4, 5), dtype=np.float32)
    attrs = dict(mode=mode)
    got, sc = _run(x, (2.0, 0.5, 1.6), **attrs)
    (expected,) = onnx_ref("Resize", [x, None, sc], attrs, opset=19)
    close(got, expected)


@pytest.mark.parametrize("nearest_mode", NEAREST_MODES)
@pytest.mark.parametrize("scales", [(1.0, 1.0, 2.0, 3.0), (1.0, 1.0, 0.5, 0.7), (1, 1, 1.5, 1)])
def test_tf_half_pixel_for_nn_matches_onnxruntime_opset11(image, onnx_ort, nearest_mode, scales):
    attrs = dict(
        mode="nearest",
        coordinate_transformation_mode="tf_half_pixel_for_nn",
        nearest_mode=nearest_mode,
    )
    got, sc = _run(image, scales, **attrs)
    roi = np.zeros(0, dtype=np.float32)
    (expected,) = onnx_ort("Resize", [image, roi, sc], attrs, opset=11)
    np.testing.assert_array_equal(got, expected)


def test_nearest_upsample_by_two_repeats_pixels():
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    got = resize.resize(x, (1, 1, 4, 6), (1.0, 1.0, 2.0, 2.0), "nearest", "asymmetric", "floor")
    np.testing.assert_array_equal(got, x.repeat(2, axis=2).repeat(2, axis=3))


def test_source_coordinates_follow_the_spec():
    # half_pixel: (x + 0.5) / s - 0.5; align_corners uses the integer output length.
    np.testing.assert_allclose(
        resize.source_coordinates("half_pixel", 4, 2, 2.0), [-0.25, 0.25, 0.75, 1.25]
    )
    np.testing.assert_allclose(resize.source_coordinates("align_corners", 2, 5, 0.5), [0.0, 4.0])
    np.testing.assert_array_equal(resize.source_coordinates("pytorch_half_pixel", 1, 5, 0.2), [0])
    with pytest.raises(ValueError, match="coordinate_transformation_mode"):
        resize.source_coordinates("tf_crop_and_resize", 2, 2, 1.0)


def test_unknown_modes_are_rejected(image):
    with pytest.raises(ValueError, match="resize mode"):
        resize.resize(image, (2, 3, 10, 12), (1, 1, 2, 2), "area")
    with pytest.raises(ValueError, match="nearest_mode"):
        resize.resize(image, (2, 3, 10, 12), (1, 1, 2, 2), "nearest", nearest_mode="up")
