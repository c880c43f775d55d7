"""npuc's quantization next to onnxruntime's `quantize_static` on the trained digits CNN.

Both quantize the same float model with the same calibration images and the
same scheme (min/max ranges, int8 activations, int8 weights per tensor or per
channel), then run the 397 held-out test images. Faithfulness is measured
against the float model's logits: SQNR over all logits and top-1 agreement.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from digits_model import digits_cnn, digits_data
from onnxruntime_reference import reference_session

CALIBRATION_IMAGES = 200


@dataclass(frozen=True)
class Faithfulness:
    sqnr_db: float
    top1_agreement: float
    accuracy: float


def faithfulness(reference: np.ndarray, logits: np.ndarray, labels: np.ndarray) -> Faithfulness:
    ref, got = reference.astype(np.float64), logits.astype(np.float64)
    noise = ((ref - got) ** 2).sum()
    sqnr = math.inf if noise == 0 else 10 * math.log10((ref**2).sum() / noise)
    agreement = float((ref.argmax(1) == got.argmax(1)).mean())
    return Faithfulness(sqnr, agreement, float((got.argmax(1) == labels).mean()))


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    return reference_session(model)


def float_logits() -> np.ndarray:
    data = digits_data()
    return _session(digits_cnn(batch=len(data.test_y))).run(None, {"image": data.test_x})[0]


def onnxruntime_int8(per_channel: bool) -> np.ndarray:
    """Test-set logits of onnxruntime's static QDQ int8 quantization (MinMax calibration)."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    data = digits_data()

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.samples = iter(data.train_x[:CALIBRATION_IMAGES])

        def get_next(self):
            sample = next(self.samples, None)
            return None if sample is None else {"image": sample[None]}

    with tempfile.TemporaryDirectory() as tmp:
        source, target = Path(tmp) / "float.onnx", Path(tmp) / "int8.onnx"
        onnx.save(digits_cnn(batch=1), source)
        quantize_static(
            str(source),
            str(target),
            Reader(),
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QInt8,
            weight_type=QuantType.QInt8,
            per_channel=per_channel,
            calibrate_method=CalibrationMethod.MinMax,
        )
        quantized = onnx.load(target)
    session = _session(quantized)
    return np.concatenate([session.run(None, {"image": x[None]})[0] for x in data.test_x])


def npuc_quantized(scheme: str) -> np.ndarray:
    """Test-set logits of npuc's quantization (extrema ranges) run by the qnn interpreter."""
    from npuc.api import apply_pipeline
    from npuc.frontends.onnx import import_onnx
    from npuc.passes.quantize import QuantizeConfig
    from npuc.quantize_flow import calibrate, quantize
    from npuc.runtime.qnn_interpreter import run_module

    data = digits_data()
    module = apply_pipeline(import_onnx(digits_cnn(batch=1)))
    batches = [{"image": x[None]} for x in data.train_x[:CALIBRATION_IMAGES]]
    statistics = calibrate(module, batches, progress=False)
    quantized, _ = quantize(module, statistics, QuantizeConfig(scheme=scheme))
    return np.concatenate(
        [run_module(quantized, {"image": x[None]})["logits"] for x in data.test_x]
    )


def side_by_side() -> dict[str, Faithfulness]:
    data = digits_data()
    reference = float_logits()
    results = {"float": faithfulness(reference, reference, data.test_y)}
    for per_channel, scheme in ((False, "int8"), (True, "int8-per-channel")):
        results[f"onnxruntime {scheme}"] = faithfulness(
            reference, onnxruntime_int8(per_channel), data.test_y
        )
        results[f"npuc {scheme}"] = faithfulness(reference, npuc_quantized(scheme), data.test_y)
    results["npuc int16"] = faithfulness(reference, npuc_quantized("int16"), data.test_y)
    return results
