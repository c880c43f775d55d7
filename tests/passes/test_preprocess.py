"""The preprocess pass makes the model do what a user would otherwise do in numpy."""

from __future__ import annotations

import numpy as np
import pytest
from onnxruntime_reference import reference_session
from tool_runner import EXAMPLE

from npuc.api import apply_pipeline, load_model
from npuc.diagnostics import NpucError
from npuc.runtime.nn_interpreter import run_module

MEAN = np.array([123.7, 116.3, 103.5], np.float32).reshape(1, 3, 1, 1)
SCALE = np.array([0.0171, 0.0175, 0.0174], np.float32).reshape(1, 3, 1, 1)


@pytest.fixture(scope="module")
def session():
    return reference_session(EXAMPLE)


@pytest.fixture
def pixels():
    return np.random.default_rng(5).integers(0, 256, (1, 3, 16, 16)).astype(np.float32)


@pytest.mark.parametrize("reverse", [False, True])
def test_folded_preprocessing_equals_numpy_preprocessing(session, pixels, reverse):
    module = load_model(EXAMPLE)
    apply_pipeline(
        module,
        "preprocess{mean=123.7,116.3,103.5 scale=0.0171,0.0175,0.0174 "
        f"reverse_channels={'true' if reverse else 'false'}}}",
    )
    source = pixels[:, ::-1] if reverse else pixels
    reference = session.run(None, {"image": (source - MEAN) * SCALE})[0]
    ours = run_module(module, {"image": pixels})["probs"]
    np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-6)


def test_scalar_mean_and_scale(session, pixels):
    module = load_model(EXAMPLE)
    apply_pipeline(module, "preprocess{input=image mean=127.5 scale=0.0078125}")
    reference = session.run(None, {"image": (pixels - 127.5) * 0.0078125})[0]
    np.testing.assert_allclose(
        run_module(module, {"image": pixels})["probs"], reference, rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("preprocess{input=nope mean=1.0}", "no input named 'nope'"),
        ("preprocess{mean=1.0,2.0}", "1 or 3 values"),
    ],
)
def test_bad_options_are_reported(spec, message):
    with pytest.raises(NpucError, match=message):
        apply_pipeline(load_model(EXAMPLE), spec)
