"""16x8 TFLite models compiled to a .npubin run on the NPU runtime bit for bit like LiteRT.

The reference is LiteRT's reference kernels on the model itself, not npuc's interpreter:
the one-operator cases of tests/tflite_int16_cases.py and a network of several layers are
imported, tiled, planned and lowered with host=none (every op an NPU instruction), encoded,
loaded back and run; the network also goes through `npu-compile` and `npu-run`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from compile_helpers import compile_and_run
from tflite_builder import TFLiteModel, layer_weights, run_litert
from tflite_int16_cases import CASES, SAME, VALID
from tool_runner import run_tool

from npuc.frontends.tflite import import_tflite
from npuc.graph_io import entry_function, input_names

TARGETS = ["mcu-64", "ethos-u55-256-hee"]
CONV = {"DilationHFactor": 1, "DilationWFactor": 1}


def assert_like_litert(outputs: dict[str, np.ndarray], litert: list[np.ndarray]) -> None:
    assert len(outputs) == len(litert)
    for (name, got), want in zip(outputs.items(), litert, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, want.dtype)
        assert np.unique(want).size > 1, name  # not one saturated value
        np.testing.assert_array_equal(got, want, err_msg=name)


def run_on_npu(data: bytes, feeds: list[np.ndarray], target: str, optimise: str = "performance"):
    module = import_tflite(data)
    inputs = dict(zip(input_names(entry_function(module)), feeds, strict=True))
    return compile_and_run(module, target, optimise, inputs, host="none")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_int16_operator_on_the_npu_equals_litert(case: str, target: str):
    data, feeds = CASES[case]()
    outputs, program = run_on_npu(data, feeds, target)
    assert_like_litert(outputs, run_litert(data, feeds))
    assert all(inst.op != "host" for inst in program.instructions)  # a reshape may take none


def int16_net() -> bytes:
    """conv+relu, depthwise+relu6, 1x1 conv, residual add, max/avg pool, reshape, fully
    connected: int16 activations (zero point 0), int8 per-channel weights, int64 biases."""
    rng = np.random.default_rng(16)
    m = TFLiteModel()

    def act(name, shape, scale):
        return m.tensor(name, shape, np.int16, scale=scale, zero_point=0)

    def weights(name, shape, axis, x_scale, fan_in):
        return layer_weights(m, rng, name, shape, axis, x_scale, fan_in, np.int64, 3000)

    x = act("x", [1, 16, 16, 3], 0.0003)
    w, b = weights("conv1", [8, 3, 3, 3], 0, 0.0003, 27)
    c1 = act("conv1", [1, 16, 16, 8], 0.0002)
    m.op("CONV_2D", [x, w, b], [c1], "Conv2DOptions", Padding=SAME, StrideH=1, StrideW=1,
         FusedActivationFunction=1, **CONV)  # fmt: skip
    w, b = weights("dw", [1, 3, 3, 8], 3, 0.0002, 9)
    d = act("dw", [1, 16, 16, 8], 6 / 32767)
    m.op("DEPTHWISE_CONV_2D", [c1, w, b], [d], "DepthwiseConv2DOptions", Padding=SAME,
         StrideH=1, StrideW=1, DepthMultiplier=1, FusedActivationFunction=3, **CONV)  # fmt: skip
    w, b = weights("pw", [8, 1, 1, 8], 0, 6 / 32767, 8)
    p = act("pw", [1, 16, 16, 8], 0.0003)
    m.op("CONV_2D", [d, w, b], [p], "Conv2DOptions", Padding=VALID, StrideH=1, StrideW=1,
         FusedActivationFunction=0, **CONV)  # fmt: skip
    a = act("add", [1, 16, 16, 8], 0.0004)
    m.op("ADD", [c1, p], [a], "AddOptions", FusedActivationFunction=0, PotScaleInt16=False)
    mp = act("maxpool", [1, 8, 8, 8], 0.0004)
    m.op("MAX_POOL_2D", [a], [mp], "Pool2DOptions", Padding=VALID, StrideH=2, StrideW=2,
         FilterHeight=2, FilterWidth=2, FusedActivationFunction=0)  # fmt: skip
    ap = act("avgpool", [1, 4, 4, 8], 0.0004)
    m.op("AVERAGE_POOL_2D", [mp], [ap], "Pool2DOptions", Padding=SAME, StrideH=2, StrideW=2,
         FilterHeight=3, FilterWidth=3, FusedActivationFunction=0)  # fmt: skip
    shape = m.tensor("shape", [2], np.int32, data=np.array([1, 128], np.int32))
    r = act("reshape", [1, 128], 0.0004)
    m.op("RESHAPE", [ap, shape], [r], "ReshapeOptions", NewShape=[1, 128])
    w, b = weights("fc", [10, 128], 0, 0.0004, 128)
    y = act("y", [1, 10], 0.0005)
    m.op("FULLY_CONNECTED", [r, w, b], [y], "FullyConnectedOptions", FusedActivationFunction=0)
    return m.build([x], [y])


def net_input() -> np.ndarray:
    return np.random.default_rng(11).integers(-32768, 32768, (1, 16, 16, 3)).astype(np.int16)


@pytest.mark.parametrize("optimise", ["performance", "size"])
@pytest.mark.parametrize("target", TARGETS)
def test_int16_network_on_the_npu_equals_litert(target: str, optimise: str):
    data, x = int16_net(), net_input()
    outputs, program = run_on_npu(data, [x], target, optimise)
    assert_like_litert(outputs, run_litert(data, [x]))
    ops = {inst.op for inst in program.instructions}
    assert {"conv2d", "eltwise", "pool", "matmul"} <= ops and "host" not in ops


def test_int16_network_through_npu_compile_and_npu_run(tmp_path: Path):
    data, x = int16_net(), net_input()
    model = tmp_path / "net16.tflite"
    model.write_bytes(data)
    done = run_tool("npu-compile", model, "--target", "mcu-64", "--no-host-fallback", "-q",
                    "-o", tmp_path / "out")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "host (Arm Cortex-M33): 0 layers" in done.stdout
    np.save(tmp_path / "x.npy", x)
    done = run_tool("npu-run", tmp_path / "out" / "net16.npubin", "--input",
                    f"x={tmp_path / 'x.npy'}", "-o", tmp_path / "y.npz")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert_like_litert({"y": np.load(tmp_path / "y.npz")["y.q"]}, run_litert(data, [x]))
