"""int8 fidelity on meaningful data: PP-OCR's text-line angle classifier (ppocr_cls) on rendered
text lines, half of them turned by 180 degrees (tests/fidelity/datasets.py).

The data must be meaningful (the float model reads the orientation it was rendered with), and
npuc's default quantization must agree with the float model at least as often as onnxruntime's
quantize_static with MinMax calibration, on the same calibration and test lines, up to a small
margin. tests/fidelity/harness.py measures every strategy and calibration method on more data.
"""

from __future__ import annotations

import numpy as np
import pytest
from fidelity.datasets import ppocr_cls
from fidelity.harness import ORT_METHODS, SPECS, npuc_rows, ort_rows

from npuc.passes.quantize import QuantizeConfig

CALIB, TEST = 32, 64
MARGIN = 2 / TEST  # two lines: near-ties of the float model may flip either way
SPEC = SPECS["ppocr_cls"]
DEFAULT = QuantizeConfig().activation_strategy


def quiet(_: str) -> None:
    pass


@pytest.fixture(scope="module")
def data():
    return ppocr_cls(CALIB, seed=0), ppocr_cls(TEST, seed=1)


@pytest.fixture(scope="module")
def npuc(data):
    calib, test = data
    return npuc_rows(SPEC, calib, test, strategies=(DEFAULT,), log=quiet)


@pytest.fixture(scope="module")
def onnxruntime(data):
    calib, test = data
    return ort_rows(SPEC, calib, test, methods={"MinMax": ORT_METHODS["MinMax"]}, log=quiet)


def test_the_data_has_two_real_classes_and_disjoint_sets(data):
    calib, test = data
    assert np.mean(test.labels) == 0.5
    assert calib.inputs.shape[1:] == test.inputs.shape[1:] == (3, 48, 192)
    flat = calib.inputs.reshape(len(calib), -1)
    assert not any((flat == x.ravel()).all(axis=1).any() for x in test.inputs)


def test_the_float_model_reads_the_rendered_orientation(npuc, onnxruntime):
    ours, theirs = npuc.rows[0], onnxruntime[0]
    assert (ours.method, theirs.method) == ("npuc float", "onnxruntime float")
    assert ours.task >= 0.9, ours
    assert theirs.task == ours.task  # both sides measure against the same float model


def test_npuc_default_agrees_with_float_as_often_as_onnxruntime_minmax(npuc, onnxruntime):
    ours = next(r for r in npuc.rows if r.method == f"npuc {DEFAULT}")
    theirs = next(r for r in onnxruntime if r.method == "onnxruntime MinMax")
    assert ours.agreement >= theirs.agreement - MARGIN, (ours, theirs)
