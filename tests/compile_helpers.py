"""The compile flow as tests drive it: quantize like npu-compile, then tile, plan, lower, encode,
reload and run the binary, and compare it with the qnn interpreter."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import ModuleOp

import npuc
from npuc.backend.npubin import encode_program
from npuc.passes.lower_to_npu import program_of
from npuc.passes.quantization.datasets import random_dataset
from npuc.passes.quantize import QuantizeConfig
from npuc.quantize_flow import calibrate, quantize
from npuc.registry import DEFAULT_PIPELINE
from npuc.runtime.executor import Executor
from npuc.runtime.loader import load
from npuc.runtime.qnn_interpreter import random_inputs, run_module

CALIB_SAMPLES = 4


def compile_and_run(
    quantized: ModuleOp,
    target: str,
    optimise: str,
    inputs: dict[str, np.ndarray],
    host: str = "float",
) -> tuple[dict[str, np.ndarray], object]:
    """Tile, plan, lower a copy of `quantized`; run its encoded and reloaded program."""
    module = quantized.clone()
    npuc.apply_pipeline(
        module,
        f"tile{{target={target} optimise={optimise}}},"
        f"plan-memory{{target={target} io=arena}},lower-to-npu{{host={host}}}",
    )
    module.verify()
    program = program_of(module)
    loaded = load(encode_program(program))
    assert loaded == program
    return Executor(loaded).run(inputs), loaded


def lower_and_run(
    module: ModuleOp, host: str = "all", seed: int = 3
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], object]:
    """Lower a memory-planned `module` in place and run its encoded, reloaded program on
    seeded inputs: (the planned module's qnn interpreter outputs, the program's, program)."""
    inputs = random_inputs(module, seed=seed)
    reference = run_module(module, inputs)
    npuc.apply_pipeline(module, f"lower-to-npu{{host={host}}}")
    module.verify()  # the npu verifier: operands inside regions, tokens before reads
    program = program_of(module)
    loaded = load(encode_program(program))
    assert loaded == program
    return reference, Executor(loaded).run(inputs), program


def assert_same(reference: dict, outputs: dict) -> None:
    assert reference.keys() == outputs.keys()
    for name, want in reference.items():
        want, got = np.asarray(want), np.asarray(outputs[name])
        assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
        assert got.shape == want.shape, (name, got.shape, want.shape)
        np.testing.assert_array_equal(got, want, err_msg=name)


def assert_not_degenerate(reference: dict) -> None:
    """Random weights and inputs must give outputs that vary (not one saturated value)."""
    for name, value in reference.items():
        assert np.unique(np.asarray(value)).size > 1, name


def quantize_float(module: ModuleOp, samples: int = CALIB_SAMPLES) -> ModuleOp:
    """npu-compile's quantize stage: default pipeline, int8 calibrated on random samples."""
    npuc.apply_pipeline(module, DEFAULT_PIPELINE)
    statistics = calibrate(module, random_dataset(module, samples, seed=0), progress=False)
    quantized, _ = quantize(module, statistics, QuantizeConfig(scheme="int8", io="quantized"))
    return quantized
