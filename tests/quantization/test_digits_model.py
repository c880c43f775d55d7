"""The digits CNN used for quantization accuracy figures trains well and runs alike everywhere."""

from __future__ import annotations

import numpy as np
from digits_model import digits_cnn, digits_data, float_accuracy
from onnxruntime_reference import reference_session

from npuc.frontends.onnx import import_onnx
from npuc.runtime.nn_interpreter import run_module


def test_trained_network_is_accurate():
    assert float_accuracy() > 0.95


def test_npuc_and_onnxruntime_agree_on_the_test_set():
    data = digits_data()
    model = digits_cnn(batch=len(data.test_y))
    session = reference_session(model)
    reference = session.run(None, {"image": data.test_x})[0]
    ours = run_module(import_onnx(model), {"image": data.test_x})["logits"]
    np.testing.assert_allclose(ours, reference, rtol=1e-4, atol=1e-4)
    assert (ours.argmax(1) == reference.argmax(1)).all()
