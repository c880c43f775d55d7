"""onnxruntime as a reference for ONNX semantics: the releases trusted, and the options it needs.

A QDQ graph means DequantizeLinear, then the float op, then QuantizeLinear (the ONNX operator
specification). onnxruntime 1.32.0 fuses DequantizeLinear of an 8-bit weight into the MatMul or
Gemm it feeds, as its com.microsoft MatMulNBits, and runs that at accuracy_level 4 unless told
otherwise: the float activation is quantized to int8 in blocks of 32 along K before the product.
That is not what the graph says; on an int16 activation it moves results by up to 145 steps.
Accuracy level 1 (float32 compute) keeps the fusion faithful; releases without the fusion ignore
the key. docs/quantization.md ("onnxruntime as a reference") has the evidence.

Every test that compares npuc with onnxruntime opens its session here. A release not listed in
TRUSTED_VERSIONS fails tests/quantization/test_onnxruntime_reference.py until someone has checked
it the same way and added it.
"""

from __future__ import annotations

from pathlib import Path

import onnx
import onnxruntime as ort

TRUSTED_VERSIONS = {
    "1.31.1": "runs QDQ MatMul and Gemm as the graph says at default options",
    "1.32.0": "does so with session.qdq_matmulnbits_accuracy_level=1 (its default, 4, does not)",
}

# The fused MatMulNBits computes in float32, as the DequantizeLinear -> MatMul graph does.
FAITHFUL_CONFIG = {"session.qdq_matmulnbits_accuracy_level": "1"}


def reference_options() -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    for key, value in FAITHFUL_CONFIG.items():
        options.add_session_config_entry(key, value)
    return options


def reference_session(model: onnx.ModelProto | str | Path) -> ort.InferenceSession:
    """A CPU session that evaluates `model` by the ONNX specification."""
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    return ort.InferenceSession(source, reference_options(), providers=["CPUExecutionProvider"])
