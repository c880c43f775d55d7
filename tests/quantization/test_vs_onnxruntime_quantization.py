"""npuc's int8 is at least as faithful as onnxruntime's quantize_static (same model and data)."""

from __future__ import annotations

import numpy as np
import pytest
from digits_model import digits_data
from quantization_peers import faithfulness, float_logits, npuc_quantized, onnxruntime_int8

NEAR_TIE = 0.1  # float top-2 logit gap (logits are ~8): a class flip there is noise, not error


@pytest.fixture(scope="module")
def reference():
    return float_logits()


@pytest.mark.parametrize(("per_channel", "scheme"), [(False, "int8"), (True, "int8-per-channel")])
def test_npuc_int8_is_at_least_as_faithful_as_onnxruntime(reference, per_channel, scheme):
    labels = digits_data().test_y
    ours = npuc_quantized(scheme)
    theirs = onnxruntime_int8(per_channel)
    npuc, ort = faithfulness(reference, ours, labels), faithfulness(reference, theirs, labels)
    assert npuc.sqnr_db >= ort.sqnr_db, (npuc, ort)
    ordered = np.sort(reference, axis=1)
    gaps = ordered[:, -1] - ordered[:, -2]
    flips = np.nonzero(ours.argmax(1) != reference.argmax(1))[0]
    assert all(gaps[i] < NEAR_TIE for i in flips), [(int(i), float(gaps[i])) for i in flips]
    assert npuc.accuracy >= ort.accuracy - 1 / len(labels)
