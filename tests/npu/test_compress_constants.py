"""`compress-constants` on a lowered LeNet-5 for the U55 (a target with a weight decoder):
the program runs bit for bit as before, its flash image shrinks, and the cycle model
charges the encoded bytes and the decoder's rate; npu-compile writes the encoded image."""

from __future__ import annotations

import dataclasses
import json
import struct

import numpy as np
import pytest
from tool_runner import REPO, run_tool

import npuc.api as api
from npuc.backend.npubin import constants_image, encode_program
from npuc.passes.lower_to_npu import program_of
from npuc.registry import DEFAULT_PIPELINE
from npuc.runtime.cycle_model import estimate
from npuc.runtime.executor import Executor
from npuc.runtime.loader import load, load_file
from npuc.runtime.qnn_interpreter import random_inputs
from npuc.target import WeightDecoder, load_target

LENET = REPO / "examples" / "lenet5.onnx"
U55 = "ethos-u55-256-hee"


@pytest.fixture(scope="module")
def lowered():
    """(inputs, the lowered module) of LeNet-5 int8, tiled and planned for the U55."""
    module = api.load_model(LENET)
    api.apply_pipeline(module, DEFAULT_PIPELINE + ",quantize{samples=8}")
    api.apply_pipeline(module, f"tile{{target={U55}}},plan-memory{{target={U55} io=arena}}")
    inputs = random_inputs(module, seed=5)
    api.apply_pipeline(module, "lower-to-npu")
    return inputs, module


@pytest.fixture(scope="module")
def both(lowered):
    """(inputs, plain program, compressed program)."""
    inputs, module = lowered
    plain = program_of(module)
    module = module.clone()
    api.apply_pipeline(module, "compress-constants")
    module.verify()
    return inputs, plain, program_of(module)


def test_compressed_program_runs_bit_exact(both):
    inputs, plain, packed = both
    assert not plain.streams and packed.streams
    assert dataclasses.replace(packed, streams=()) == plain  # same bytes, same instructions
    loaded = load(encode_program(packed))
    assert loaded == packed
    want, got = Executor(plain).run(inputs), Executor(loaded).run(inputs)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_the_flash_image_shrinks(both):
    _, plain, packed = both
    assert len(constants_image(packed)) < 0.95 * len(constants_image(plain))
    assert {s.dtype for s in packed.streams} >= {"i8", "i32"}  # weights and bias/scale tables


def test_the_cycle_model_reads_encoded_bytes_at_the_decoders_rate(both):
    _, plain, packed = both
    u55 = load_target(U55)
    before, after = estimate(plain, u55), estimate(packed, u55)
    assert after.busy["dma"] < before.busy["dma"]
    assert after.total_cycles < before.total_cycles
    without = dataclasses.replace(u55, weight_decoder=None)  # the streams cost raw bytes
    assert estimate(packed, without).total_cycles == estimate(plain, without).total_cycles
    slow = dataclasses.replace(u55, weight_decoder=WeightDecoder(0.1))
    assert estimate(packed, slow).busy["dma"] > before.busy["dma"]


def test_npu_compile_writes_the_encoded_image(tmp_path):
    out = tmp_path / "build"
    done = run_tool("npu-compile", LENET, "--target", U55, "--calib-random", "4", "-o", out, "-q")
    assert done.returncode == 0, done.stderr
    data = (out / "lenet5.npubin").read_bytes()
    assert struct.unpack_from("<HH", data, 4) == (2, 0)
    program = load_file(out / "lenet5.npubin")
    image = (out / "lenet5.weights.bin").read_bytes()
    assert image == constants_image(program)
    header = (out / "lenet5.h").read_text()
    assert f"#define LENET5_CONSTANT_MEM_SIZE {len(image)}\n" in header
    region = program.region("constants")
    assert region is not None and len(image) < region.size
    report = json.loads((out / "lenet5.memory.json").read_text())
    constants = next(r for r in report["regions"] if r["name"] == "constants")
    assert constants["size"] == len(image)
    assert constants["lower_bound"] is None  # a bound on raw bytes bounds no encoding
    text = (out / "lenet5.npu.mlir").read_text()
    assert '#npu.stream<"rice", ' in text
