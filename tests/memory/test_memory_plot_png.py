"""NAME.memory.png's encoder, decoded by Pillow (an independent PNG reader)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from npuc.backend.memory_plot import png_bytes


@pytest.mark.parametrize(("width", "height"), [(1, 1), (7, 5), (300, 2)])
def test_png_bytes_decode_to_the_same_pixels(width, height):
    pixels = np.random.default_rng(width * height).integers(0, 256, (height, width, 3), np.uint8)
    with Image.open(io.BytesIO(png_bytes(width, height, pixels.tobytes()))) as image:
        assert (image.format, image.mode, image.size) == ("PNG", "RGB", (width, height))
        image.load()  # checks every chunk's CRC and the zlib stream
        np.testing.assert_array_equal(np.asarray(image), pixels)
