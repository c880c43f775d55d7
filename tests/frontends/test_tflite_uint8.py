"""uint8 tensors at an int8 model's edges: QUANTIZE between int8 and uint8 (TFLite's
Requantize), float <-> uint8, bit-exact with LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from tflite_builder import TFLiteModel, check_exact

from npuc.dialects import qnn
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.frontends.tflite import import_tflite
from npuc.graph_io import entry_function

RNG = np.random.default_rng(8)
INFO = {np.int8: np.iinfo(np.int8), np.uint8: np.iinfo(np.uint8)}

# (input scale, input zero point, output scale, output zero point) for int8 -> uint8;
# uint8 -> int8 uses the same pairs with the zero points shifted the other way.
RATIOS = [
    (1 / 256, -128, 1 / 256, 0),  # equal scales, zero points 128 apart: LiteRT's XOR path
    (0.05, -3, 0.05, 120),  # equal scales, other zero points
    (0.05, 7, 0.03, 131),  # ratio 5/3
    (0.02, -20, 0.07, 90),  # ratio 2/7
    (0.1, 0, 0.0125, 128),  # ratio 8: saturates
    (0.0037, 100, 0.0041, 3),  # close to one
]


def requantize_model(
    src: type,
    dst: type,
    s_in: float,
    z_in: int,
    s_out: float,
    z_out: int,
    shape: tuple[int, ...] = (4, 64),
) -> bytes:
    m = TFLiteModel()
    x = m.tensor("x", shape, src, scale=s_in, zero_point=z_in)
    y = m.tensor("y", shape, dst, scale=s_out, zero_point=z_out)
    m.op("QUANTIZE", [x], [y])
    return m.build([x], [y])


def every_value(dtype: type) -> np.ndarray:
    info = INFO[dtype]
    return np.arange(info.min, info.max + 1).astype(dtype).reshape(4, 64)


@pytest.mark.parametrize(("s_in", "z_in", "s_out", "z_out"), RATIOS)
def test_quantize_int8_to_uint8_is_litert_requantize(
    s_in: float, z_in: int, s_out: float, z_out: int
) -> None:
    data = requantize_model(np.int8, np.uint8, s_in, z_in, s_out, z_out)
    module = import_tflite(data)
    op = next(o for o in entry_function(module).walk() if isinstance(o, qnn.RequantizeOp))
    out = op.output.type.element_type
    assert isinstance(out, UniformQuantizedType) and out.storage == "u8"
    check_exact(data, [every_value(np.int8)])


@pytest.mark.parametrize(("s_in", "z_in", "s_out", "z_out"), RATIOS)
def test_quantize_uint8_to_int8_is_litert_requantize(
    s_in: float, z_in: int, s_out: float, z_out: int
) -> None:
    # The same pairs mirrored: uint8 zero point z_out + ..., int8 zero point z_in.
    data = requantize_model(np.uint8, np.int8, s_out, z_out, s_in, z_in)
    check_exact(data, [every_value(np.uint8)])


@pytest.mark.parametrize("dst", [np.int8, np.uint8])
def test_quantize_uint8_requantizes_to_uint8_or_int8_of_other_scale(dst: type) -> None:
    zp = 17 if dst is np.int8 else 140
    check_exact(requantize_model(np.uint8, dst, 0.011, 77, 0.013, zp), [every_value(np.uint8)])


def test_uint8_model_edges_around_an_int8_layer() -> None:
    """uint8 in, QUANTIZE to int8, FULLY_CONNECTED, QUANTIZE back to uint8 (as wake-word
    models end), bit-exact."""
    m = TFLiteModel()
    x = m.tensor("x", [3, 16], np.uint8, scale=0.02, zero_point=128)
    xq = m.tensor("xq", [3, 16], np.int8, scale=0.02, zero_point=0)
    w = m.tensor(
        "w",
        [8, 16],
        np.int8,
        data=RNG.integers(-127, 128, (8, 16)).astype(np.int8),
        scale=RNG.uniform(0.004, 0.01, 8).astype(np.float32),
        axis=0,
    )
    b = m.tensor(
        "b",
        [8],
        np.int32,
        data=RNG.integers(-500, 500, 8).astype(np.int32),
        scale=np.full(8, 1e-4, np.float32),
    )
    h = m.tensor("h", [3, 8], np.int8, scale=0.05, zero_point=-5)
    p = m.tensor("p", [3, 8], np.int8, scale=1 / 256, zero_point=-128)
    y = m.tensor("y", [3, 8], np.uint8, scale=1 / 256, zero_point=0)
    m.op("QUANTIZE", [x], [xq])
    m.op("FULLY_CONNECTED", [xq, w, b], [h], "FullyConnectedOptions")
    m.op("LOGISTIC", [h], [p])
    m.op("QUANTIZE", [p], [y])
    data = m.build([x], [y])
    for seed in range(3):
        feed = np.random.default_rng(seed).integers(0, 256, (3, 16)).astype(np.uint8)
        check_exact(data, [feed])


@pytest.mark.parametrize("zp", [0, 128, 201])
def test_float_to_uint8_and_back(zp: int) -> None:
    m = TFLiteModel()
    x = m.tensor("x", [2, 50])
    q = m.tensor("q", [2, 50], np.uint8, scale=0.03, zero_point=zp)
    y = m.tensor("y", [2, 50])
    m.op("QUANTIZE", [x], [q])
    m.op("DEQUANTIZE", [q], [y])
    data = m.build([x], [q, y])
    check_exact(data, [np.linspace(-8, 8, 100, dtype=np.float32).reshape(2, 50)])


def test_uint8_is_refused_by_int8_kernels() -> None:
    m = TFLiteModel()
    x = m.tensor("x", [2, 4], np.uint8, scale=0.1, zero_point=128)
    y = m.tensor("y", [2, 4], np.uint8, scale=0.1, zero_point=128)
    m.op("ADD", [x, x], [y], "AddOptions")
    with pytest.raises(Exception, match="uint8; quantized kernels need int8"):
        import_tflite(m.build([x], [y]))
