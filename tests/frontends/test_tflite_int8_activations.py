"""int8 activations imported as qnn.lut equal LiteRT's kernels on all 256 inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tflite_builder import TFLiteModel

from npuc.diagnostics import NpucError
from npuc.dialects import qnn
from npuc.frontends.tflite import import_tflite
from npuc.runtime.qnn_interpreter import run_module

ALL_INT8 = np.arange(-128, 128, dtype=np.int8)
# (input scale, input zero point): small and large ranges, zero points at both ends;
# 0.003 takes HARD_SWISH's right-shift branch, the others its left-shift one.
INPUT_PARAMS = [
    (0.05, -7),
    (0.1, 0),
    (0.0237, 30),
    (0.37, -128),
    (0.01, 127),
    (0.0625, 3),
    (0.003, 10),
]
# op -> (output scale, output zero point, options table, options); LOGISTIC and TANH
# outputs are fixed by TFLite (Prepare rejects anything else).
OPS: dict[str, tuple[float, int, str | None, dict[str, Any]]] = {
    "LOGISTIC": (1 / 256, -128, None, {}),
    "TANH": (1 / 128, 0, None, {}),
    "HARD_SWISH": (0.02, -5, None, {}),
    "LEAKY_RELU": (0.04, 9, "LeakyReluOptions", {"Alpha": 0.1}),
    "LEAKY_RELU_alpha_above_1": (0.04, 9, "LeakyReluOptions", {"Alpha": 1.5}),
    "GELU": (0.03, -10, "GeluOptions", {"Approximate": False}),
    "GELU_tanh": (0.03, -10, "GeluOptions", {"Approximate": True}),
    # BUILTIN_REF registers no ELU; the default int8 ELU kernel is the same LUT.
    "ELU": (0.04, -20, None, {}),
}


def model(
    op: str,
    s_in: float,
    zp_in: int,
    s_out: float,
    zp_out: int,
    options: str | None,
    fields: dict[str, Any],
) -> bytes:
    m = TFLiteModel()
    x = m.tensor("x", [2, 128], np.int8, scale=s_in, zero_point=zp_in)
    y = m.tensor("y", [2, 128], np.int8, scale=s_out, zero_point=zp_out)
    m.op(op, [x], [y], options, **fields)
    return m.build([x], [y])


def litert(data: bytes, x: np.ndarray, reference: bool) -> np.ndarray:
    """LiteRT's reference kernels, or its builtin kernels without XNNPACK (for ELU)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kind = (
        OpResolverType.BUILTIN_REF
        if reference
        else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    )
    interp = Interpreter(model_content=data, experimental_op_resolver_type=kind)
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    return interp.get_tensor(interp.get_output_details()[0]["index"]).copy()


@pytest.mark.parametrize("params", INPUT_PARAMS, ids=lambda p: f"s{p[0]}_zp{p[1]}")
@pytest.mark.parametrize("case", sorted(OPS))
def test_activation_table_is_bit_exact(case: str, params: tuple[float, int]) -> None:
    op = case.split("_alpha")[0].split("_tanh")[0]
    s_out, zp_out, options, fields = OPS[case]
    data = model(op, *params, s_out, zp_out, options, fields)
    module = import_tflite(data)
    assert any(isinstance(o, qnn.LutOp) for o in module.walk())
    x = ALL_INT8.reshape(2, 128)
    (got,) = run_module(module, {"x": x}).values()
    np.testing.assert_array_equal(got, litert(data, x, reference=op != "ELU"))


def test_logistic_with_other_output_params_is_rejected() -> None:
    # TFLite's Prepare requires scale 1/256 and zero point -128 for int8 LOGISTIC.
    with pytest.raises(NpucError, match="LOGISTIC int8 output must have scale"):
        import_tflite(model("LOGISTIC", 0.05, 0, 1 / 128, 0, None, {}))
