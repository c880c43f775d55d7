"""Whole TFLite models and the importer's diagnostics."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from shared_models import MBV2
from tflite_builder import TFLiteModel

from npuc.api import load_model
from npuc.diagnostics import NpucError
from npuc.dialects import qnn
from npuc.frontends.tflite import import_tflite
from npuc.frontends.tflite_context import scale_error
from npuc.frontends.tflite_model import Quant, Tensor
from npuc.runtime.qnn_interpreter import run_module


@pytest.fixture(scope="module")
def litert_mbv2() -> Interpreter:
    interp = Interpreter(
        model_path=str(MBV2),
        experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
        experimental_preserve_all_tensors=True,
    )
    interp.allocate_tensors()
    return interp


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mobilenet_v2_int8_bit_exact(litert_mbv2: Interpreter, seed: int) -> None:
    module = load_model(MBV2)
    module.verify()
    ops = list(module.walk())
    assert sum(isinstance(op, qnn.Conv2dOp) for op in ops) == 52
    x = np.random.default_rng(seed).integers(-128, 128, (1, 224, 224, 3)).astype(np.int8)
    litert_mbv2.set_tensor(litert_mbv2.get_input_details()[0]["index"], x)
    litert_mbv2.invoke()
    tensors = {d["name"]: d["index"] for d in litert_mbv2.get_tensor_details()}
    got = run_module(module, {"input": x})
    # The int8 logits (the last FULLY_CONNECTED) are TFLite's integer arithmetic throughout.
    logits = run_module(load_model(MBV2, outputs=["logits"]), {"input": x})["logits"]
    np.testing.assert_array_equal(logits, litert_mbv2.get_tensor(tensors["logits"]))
    # Softmax goes through float in npuc (not TFLite's fixed-point kernel); on this model's
    # saturated logits its int8 output still agrees.
    np.testing.assert_array_equal(got["softmax"], litert_mbv2.get_tensor(tensors["softmax"]))


def test_mobilenet_v2_folds_layout_transposes() -> None:
    module = import_tflite(MBV2)
    transposes = [op for op in module.walk() if isinstance(op, qnn.TransposeOp)]
    # NHWC -> NCHW at the input and back before the RESHAPE: the residual ADDs run in NCHW.
    assert [list(t.perm.get_values()) for t in transposes] == [[0, 3, 1, 2], [0, 2, 3, 1]]


def _tiny_model() -> bytes:
    m = TFLiteModel()
    x, y = m.tensor("x", [1, 4]), m.tensor("y", [1, 4])
    m.op("RELU", [x], [y])
    return m.build([x], [y])


def test_truncated_and_corrupt_files_are_diagnosed(tmp_path: Path) -> None:
    data = _tiny_model()
    for name, blob in [
        ("empty", b""),
        ("short", data[:6]),
        ("truncated", data[: len(data) // 2]),
        ("not_tflite", b"\x00" * 64),
        ("garbage", data[:8] + bytes(range(256)) * 2),
    ]:
        path = tmp_path / f"{name}.tflite"
        path.write_bytes(blob)
        with pytest.raises(NpucError) as info:
            import_tflite(path)
        assert info.value.location == str(path), name
        assert "TFLite" in info.value.message, name


def test_missing_file() -> None:
    with pytest.raises(NpucError, match="cannot read TFLite model"):
        import_tflite("/nonexistent/model.tflite")


def test_unsupported_and_custom_ops_in_one_diagnostic() -> None:
    m = TFLiteModel()
    x = m.tensor("x", [1, 4])
    a, b, c, d = (m.tensor(n, [1, 4]) for n in ("a", "b", "c", "d"))
    m.op("FLOOR_MOD", [x, x], [a])
    m.custom_op("MyFancyOp", [x], [b])
    m.op("RELU", [a], [c])  # depends on an unsupported op: not reported again
    m.op("COS", [x], [d])
    with pytest.raises(NpucError) as info:
        import_tflite(m.build([x], [c, b, d]))
    text = info.value.message
    assert text.startswith("op 'custom::MyFancyOp' needs a plugin that provides it;")
    assert "unsupported TFLite operators (2)" in text
    assert "FLOOR_MOD x1: a (operator not supported)" in text
    assert "COS x1: d" in text
    assert "RELU" not in text


def test_cut_and_input_shape_options() -> None:
    m = TFLiteModel()
    x, h, y = m.tensor("x", [1, 4]), m.tensor("h", [1, 4]), m.tensor("y", [1, 4])
    m.op("RELU", [x], [h])
    m.op("TANH", [h], [y])
    data = m.build([x], [y])
    module = import_tflite(data, inputs=["h"], outputs=["y"])
    got = run_module(module, {"h": np.array([[-1, 0, 1, 2]], np.float32)})["y"]
    np.testing.assert_allclose(got, np.tanh([[-1, 0, 1, 2]]), rtol=1e-6)
    with pytest.raises(NpucError, match="unknown output tensor name"):
        import_tflite(data, outputs=["nope"])


def test_npu_opt_and_npu_run_read_tflite(tmp_path: Path) -> None:
    path = tmp_path / "tiny.tflite"
    path.write_bytes(_tiny_model())
    bin_dir = Path(sys.executable).parent
    opt = subprocess.run([bin_dir / "npu-opt", path], capture_output=True, text=True)
    assert opt.returncode == 0, opt.stderr
    assert "nn.relu" in opt.stdout and '{nn.name = "x"}' in opt.stdout
    run = subprocess.run([bin_dir / "npu-run", path], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"12345678")
    opt = subprocess.run([bin_dir / "npu-opt", bad], capture_output=True, text=True)
    assert opt.returncode == 1 and "Traceback" not in opt.stderr
    assert "not a TFLite model" in opt.stderr


@pytest.mark.parametrize(
    ("scales", "named"),
    [
        ([0.5, 0.25, 0.125], None),
        ([0.5, 0.0, -1.0], "0.0"),
        ([0.5, 0.25, float("nan"), -1.0], "nan"),
        ([0.5, float("inf")], "inf"),
        ([-0.5], "-0.5"),
    ],
)
def test_a_scale_that_is_not_positive_and_finite_is_named_first_one_first(scales, named):
    quant = Quant(np.array(scales, np.float32), np.zeros(len(scales), np.int64), 0)
    error = scale_error(Tensor(3, "w", (len(scales), 1), np.dtype(np.int8), "INT8", None, quant))
    if named is None:
        assert error is None
    else:
        assert error == (
            f"tensor 'w' has scale {named}; a quantized tensor's scales must be positive and finite"
        )
