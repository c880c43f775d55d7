"""A per-tensor 16x8 FULLY_CONNECTED takes LiteRT's multiplier: the scales multiplied in
double, as per channel (the int8 kernel's float32 product differs in the last bits)."""

from __future__ import annotations

import numpy as np
from tflite_builder import check_exact
from tflite_int16_cases import Q, single

# float32(s_in * s_w) / s_out and double(s_in) * s_w / s_out give Q31 multipliers 44 apart
# (1514609428 and 1514609384, shift 40): 26028 * 127 = 3305556 then lands on either side of
# 4553.5, at 4554 and 4553.
S_IN, S_W, S_OUT = 0.0007, 0.00787159614264965, 0.004


def test_per_tensor_fully_connected_rounds_like_litert_near_a_tie() -> None:
    rng = np.random.default_rng(16)
    w = rng.integers(-127, 128, [3, 4]).astype(np.int8)
    w[0] = [127, 0, 0, 0]
    x = rng.integers(-32768, 32768, [4, 4]).astype(np.int16)
    x[:2, 0] = [26028, -26028]
    data, _ = single("FULLY_CONNECTED", [Q([4, 4], S_IN), ("w", w, np.float32([S_W]), 0)],
                     Q([4, 3], S_OUT), "FullyConnectedOptions")  # fmt: skip
    check_exact(data, [x])
