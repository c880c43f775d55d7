"""The compile flow as tests drive it: quantize like npu-compile, then tile, plan, lower, encode,
reload and run the binary, and compare it with the qnn interpreter."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import onnx
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import SSAValue

import npuc
from npuc.backend.bundle import header_text
from npuc.backend.npubin import encode_program
from npuc.backend.outputs import with_program_constants
from npuc.dialects.npu_isa import Program
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.passes.lower_to_npu import program_of
from npuc.passes.memory.ir import PlannedModule, read_plan
from npuc.passes.quantization.datasets import random_dataset
from npuc.passes.quantize import QuantizeConfig
from npuc.quantize_flow import calibrate, quantize
from npuc.registry import DEFAULT_PIPELINE
from npuc.runtime.executor import Executor
from npuc.runtime.loader import load
from npuc.runtime.qnn_interpreter import random_inputs, run_module
from npuc.tensors import numpy_dtype

CALIB_SAMPLES = 4


def compile_program(
    quantized: ModuleOp, target: str, optimise: str, host: str = "float", io: str = "arena"
) -> tuple[PlannedModule, Program]:
    """Tile, plan and lower a copy of `quantized`: (its memory plan, the encoded program
    read back, checked equal to the lowered one)."""
    module = quantized.clone()
    npuc.apply_pipeline(
        module,
        f"tile{{target={target} optimise={optimise}}},plan-memory{{target={target} io={io}}}",
    )
    planned = read_plan(module)
    npuc.apply_pipeline(module, f"lower-to-npu{{host={host}}}")
    module.verify()
    program = program_of(module)
    loaded = load(encode_program(program))
    assert loaded == program
    return planned, loaded


def compile_and_run(
    quantized: ModuleOp,
    target: str,
    optimise: str,
    inputs: dict[str, np.ndarray],
    host: str = "float",
) -> tuple[dict[str, np.ndarray], object]:
    """Tile, plan, lower a copy of `quantized`; run its encoded and reloaded program."""
    _, loaded = compile_program(quantized, target, optimise, host)
    return Executor(loaded).run(inputs), loaded


def assert_header_describes(name: str, planned: PlannedModule, binary: Program) -> None:
    """npu-compile's NAME.h and NAME.weights.bin (backend/outputs.py memory_files, without
    the plots) against the binary: every region's size, every input's and output's offset
    and size, the constants' bytes."""
    described, weights = with_program_constants(planned, binary)
    header = header_text(name, described)
    macros = {m[1]: int(m[2]) for m in re.finditer(r"^#define (\w+) (\d+)$", header, re.M)}
    prefix = name.upper()
    sizes = {region.kind: region.size for region in binary.regions}
    for kind, macro in (("constants", "CONSTANT"), ("mutable", "MUTABLE")):
        assert macros[f"{prefix}_{macro}_MEM_SIZE"] == sizes.get(kind, 0), kind
    assert macros[f"{prefix}_ACTIVATIONS_MEM_SIZE"] == sizes.get("activations", 0)
    assert macros.get(f"{prefix}_SRAM_MEM_SIZE", 0) == sizes.get("sram", 0)
    arena = {d.tensor.region for d in (*binary.inputs, *binary.outputs)} - {"mutable"}
    for kind in ("activations", "sram"):
        assert (macros.get(f"{prefix}_IO_IN_{kind.upper()}") == 1) == (kind in arena), kind
    assert len(weights) == sizes.get("constants", 0)
    assert weights == binary.constants + bytes(len(weights) - len(binary.constants))
    for kind, descs in (("INPUT", binary.inputs), ("OUTPUT", binary.outputs)):
        offsets = [v for k, v in macros.items() if re.fullmatch(rf"{prefix}_{kind}_\w+_OFFSET", k)]
        lengths = [v for k, v in macros.items() if re.fullmatch(rf"{prefix}_{kind}_\w+_SIZE", k)]
        assert offsets == [d.tensor.offset for d in descs], kind
        assert lengths == [d.tensor.numel * d.tensor.itemsize for d in descs], kind


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


def quantized_onnx(model: onnx.ModelProto, directory: Path) -> ModuleOp:
    """`model` saved in `directory`, imported and quantized as npu-compile does."""
    path = directory / "model.onnx"
    onnx.save(model, path)
    return quantize_float(npuc.load_model(path))


def aligned_bytes(value: SSAValue, alignment: int) -> int:
    """A tensor value's bytes (storage type for quantized elements), rounded up to `alignment`."""
    ty = value.type
    assert isinstance(ty, TensorType)
    element = ty.element_type
    size = (
        element.storage_dtype().itemsize
        if isinstance(element, UniformQuantizedType)
        else numpy_dtype(element).itemsize
    )
    n = math.prod(ty.get_shape()) * size
    return -(-n // alignment) * alignment
