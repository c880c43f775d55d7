"""Raw uint8 camera pixels go straight into a quantized model: preprocessing folded, u8 input."""

from __future__ import annotations

import numpy as np
from onnxruntime_reference import reference_session
from tool_runner import EXAMPLE

from npuc.api import apply_pipeline, load_model
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.graph_io import entry_function
from npuc.passes.quantize import QuantizeConfig
from npuc.quantize_flow import calibrate, quantize
from npuc.runtime.qnn_interpreter import dequantized_outputs, run_module

MEAN = np.array([123.7, 116.3, 103.5], np.float32).reshape(1, 3, 1, 1)
SCALE = np.array([0.0171, 0.0175, 0.0174], np.float32).reshape(1, 3, 1, 1)


def pixels(rng: np.random.Generator, count: int) -> list[np.ndarray]:
    return [rng.integers(0, 256, (1, 3, 16, 16)).astype(np.uint8) for _ in range(count)]


def test_pixels_calibrate_to_an_exact_u8_input_and_track_the_float_model():
    module = load_model(EXAMPLE)
    apply_pipeline(module, "preprocess{mean=123.7,116.3,103.5 scale=0.0171,0.0175,0.0174}")
    apply_pipeline(module)
    rng = np.random.default_rng(3)
    batches = [{"image": p.astype(np.float32)} for p in pixels(rng, 16)]
    stats = calibrate(module, batches, progress=False)
    quantized, _ = quantize(module, stats, QuantizeConfig(scheme="uint8", io="quantized"))

    (image_type,) = entry_function(quantized).function_type.inputs
    element = image_type.element_type
    assert isinstance(element, UniformQuantizedType)
    assert (element.storage, element.scale, element.zero_point) == ("u8", 1.0, 0)

    session = reference_session(EXAMPLE)
    for raw in pixels(rng, 4):
        reference = session.run(None, {"image": (raw.astype(np.float32) - MEAN) * SCALE})[0]
        got = dequantized_outputs(quantized, run_module(quantized, {"image": raw}))["probs"]
        cosine = float(np.sum(got * reference) / np.linalg.norm(got) / np.linalg.norm(reference))
        assert cosine > 0.995, cosine
