"""npu-compile: the one-shot driver, from flags and from a config file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from tool_runner import REPO, run_tool

LENET = REPO / "examples" / "lenet5.onnx"
MBV2 = Path("/work/shared/models/mbv2_int8_224.tflite")
VELA_SIZE_OPTIMISED_PEAK_SRAM = int(353.50 * 1024)  # models/README.md


def macros(header: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(r"^#define (\w+) (\d+)$", header, re.M)}


@pytest.fixture(scope="module")
def lenet_build(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("lenet") / "build"
    done = run_tool("npu-compile", LENET, "--target", "mcu-64", "--calib-random", "8", "-o", out)
    assert done.returncode == 0, done.stderr
    return out, done.stdout + done.stderr


def test_float_model_is_quantized_and_every_file_is_written(lenet_build):
    out, log = lenet_build
    names = sorted(p.name for p in out.iterdir())
    for suffix in ("h", "weights.bin", "weights.txt", "memory.txt", "memory.json",
                   "memory.png", "accuracy.txt", "accuracy.json"):  # fmt: skip
        assert f"lenet5.{suffix}" in names
    for stage in ("import", "optimise", "quantize", "tile", "plan memory", "emit"):
        assert re.search(rf"\[\d/6\] {stage}\b.* \d+\.\d\d s", log), stage
    accuracy = json.loads((out / "lenet5.accuracy.json").read_text())
    assert accuracy["outputs"][0]["name"] == "prob"
    assert accuracy["outputs"][0]["cosine"] > 0.99


def test_int8_weights_are_the_quantized_initializers(lenet_build):
    """Every int8 weight tensor is the float initializer quantized per tensor (symmetric)."""
    out, _ = lenet_build
    blob = (out / "lenet5.weights.bin").read_bytes()
    header = macros((out / "lenet5.h").read_text())
    assert header["LENET5_CONSTANT_MEM_SIZE"] == len(blob)
    model = onnx.load(LENET)
    for init in model.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.ndim < 2:
            continue  # biases become int32 with the product of scales
        q = np.round(w / (np.abs(w).max() / 127)).astype(np.int8).tobytes()
        assert q in blob, init.name


def test_header_sizes_match_the_memory_report(lenet_build):
    out, _ = lenet_build
    header = macros((out / "lenet5.h").read_text())
    report = json.loads((out / "lenet5.memory.json").read_text())
    sizes = {r["name"]: r["size"] for r in report["regions"]}
    assert header["LENET5_ACTIVATIONS_MEM_SIZE"] == sizes["activations"]
    assert header["LENET5_CONSTANT_MEM_SIZE"] == sizes["constants"]
    assert header["LENET5_IO_IN_ACTIVATIONS"] == 1  # mcu-64 keeps I/O in the SRAM arena


def test_size_mode_on_the_shared_mobilenet_fits_below_vela(tmp_path):
    out = tmp_path / "mbv2"
    done = run_tool("npu-compile", MBV2, "--target", "ethos-u55-256-hee", "--optimise", "size",
                    "--name", "mbv2", "-o", out, "-q")  # fmt: skip
    assert done.returncode == 0, done.stderr
    header = macros((out / "mbv2.h").read_text())
    peak = header["MBV2_ACTIVATIONS_MEM_SIZE"]
    assert 224 * 224 * 3 < peak < VELA_SIZE_OPTIMISED_PEAK_SRAM
    assert not list(out.glob("*.accuracy.*"))  # the model keeps its own quantization
    assert "keeping" not in done.stderr  # -q: no progress lines


def test_config_file_gives_the_same_build(lenet_build, tmp_path):
    config = tmp_path / "build.toml"
    config.write_text(
        f'[build]\nmodel = "{LENET}"\ntarget = "mcu-64"\ncalib_random = 8\noutput = "out"\n'
        "[run]\nprofile = true\n"
    )
    done = run_tool("npu-compile", "--config", config, "-q")
    assert done.returncode == 0, done.stderr
    ours, theirs = tmp_path / "out", lenet_build[0]
    for name in ("lenet5.h", "lenet5.weights.bin", "lenet5.memory.json"):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name


@pytest.mark.parametrize(
    ("args", "config", "message"),
    [
        ([str(LENET), "--target", "mcu-64"], None, "missing -o OUTDIR"),
        ([str(LENET), "--target", "mcu-64", "-o", "{out}"], None,
         "is a float model: give calibration data with --calib DIR or --calib-random N"),
        ([str(MBV2), "--target", "mcu-64", "--scheme", "int8", "-o", "{out}"], None,
         "is already quantized: it keeps its own quantization (drop --scheme)"),
        ([str(LENET), "--target", "nope", "--calib-random", "2", "-o", "{out}"], None, "nope"),
        (["--config", "{config}"], "[build]\ntargett = 'mcu-64'\n", "unknown key 'build.targett'"),
        (["--config", "{config}"], "[build]\ncalib_random = 'x'\n",
         "'build.calib_random' must be an integer"),
        (["--config", "{config}"], "[bild]\n", "unknown section [bild]"),
        (["--config", "{config}"], "[build\n", "not a valid TOML file"),
    ],
)  # fmt: skip
def test_bad_input_is_one_diagnostic_and_writes_nothing(tmp_path, args, config, message):
    out = tmp_path / "out"
    if config is not None:
        (tmp_path / "c.toml").write_text(config)
    argv = [a.format(out=out, config=tmp_path / "c.toml") for a in args]
    done = run_tool("npu-compile", *argv)
    assert done.returncode == 1
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == (["c.toml"] if config else [])
