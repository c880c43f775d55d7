"""The real-model corpus (tests/models/corpus.toml), end to end.

For each model: the import runs and matches onnxruntime or LiteRT on the same seeded input
(a pre-quantized model runs its own quantization); the int8 build (a float model calibrated
on random samples; host fallback on) compiles for every shipped target, and the encoded
binary, reloaded, gives exactly the qnn interpreter's outputs.
docs/models.md (tests/models/table.py) shows every model of the corpus with its figures,
including the stages that do not work yet; this file checks the ones that do.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from compile_helpers import assert_header_describes, assert_same, compile_program, quantize_float
from corpus import MODELS, Model
from onnxruntime_reference import reference_session
from xdsl.dialects.builtin import ModuleOp

import npuc
from npuc.backend.bundle import identifier_from
from npuc.compile_flow import is_quantized
from npuc.frontends.tflite_state import run_sequence
from npuc.registry import DEFAULT_PIPELINE
from npuc.runtime.executor import Executor
from npuc.runtime.qnn_interpreter import random_inputs, run_module
from npuc.target import shipped_targets

BY_NAME = {m.name: m for m in MODELS}

# Fixed shapes for inputs the models leave dynamic (what their packages feed them).
INPUT_SHAPES = {
    "ppocr_cls": {"x": [1, 3, 48, 192]},
    "ppocrv4_det": {"x": [1, 3, 320, 320]},
    "ppocrv4_rec": {"x": [1, 3, 48, 320]},
    "silero_vad": {"input": [1, 576]},  # one 36 ms frame with its context: the streaming step
}

# Models that do not import yet, and why (docs/models.md shows them with their error).
NOT_YET: dict[str, str] = {}
FLOAT_RUNS = [m.name for m in MODELS if m.kind != "tflite-int8" and m.name not in NOT_YET]
BUILDS = FLOAT_RUNS


def float_module(model: Model) -> ModuleOp:
    return npuc.load_model(model.file, input_shapes=INPUT_SHAPES.get(model.name))


def reference_outputs(model: Model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    if model.file.suffix == ".onnx":
        return reference_session(model.file).run(None, feeds)
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(model.file))
    by_name = {d["name"]: d for d in interpreter.get_input_details()}
    for name, array in feeds.items():
        interpreter.resize_tensor_input(by_name[name]["index"], array.shape)
    interpreter.allocate_tensors()
    for name, array in feeds.items():
        interpreter.set_tensor(by_name[name]["index"], array)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


@pytest.mark.parametrize("name", FLOAT_RUNS)
def test_float_import_matches_the_reference(name):
    model = BY_NAME[name]
    module = float_module(model)
    feeds = random_inputs(module, seed=1)
    ours = list(run_module(module, feeds).values())
    theirs = reference_outputs(model, feeds)
    assert len(ours) == len(theirs)
    for got, want in zip(ours, theirs, strict=True):
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
        assert got.shape == want.shape
        scale = np.abs(want).max() or 1.0
        assert np.abs(got - want).max() <= 1e-3 * scale, (name, np.abs(got - want).max(), scale)


@cache
def quantized(name: str) -> tuple[ModuleOp, dict, dict]:
    """(int8 module, inputs, qnn interpreter outputs): a float model calibrated on 2 random
    samples, as npu-compile does it; a pre-quantized one with its own parameters."""
    module = float_module(BY_NAME[name])
    if is_quantized(module):
        npuc.apply_pipeline(module, DEFAULT_PIPELINE)
    else:
        module = quantize_float(module, samples=2)
    # Inputs whose outputs vary, so that equal outputs say something: a random line can leave
    # a two-class softmax at exactly one half (ppocr_cls on seed 3).
    for seed in range(3, 13):
        inputs = random_inputs(module, seed=seed)
        outputs = run_module(module, inputs)
        if any(np.unique(value).size > 1 for value in outputs.values()):
            break
    return module, inputs, outputs


def test_every_corpus_model_is_built_and_its_header_checked():
    assert sorted([*BUILDS, *STREAMING]) == sorted(m.name for m in MODELS)


@pytest.mark.parametrize("target", shipped_targets())
@pytest.mark.parametrize("name", BUILDS)
def test_int8_build_runs_bit_exact_on_every_target(name, target):
    """...and its NAME.h and NAME.weights.bin describe the binary (compile_helpers)."""
    module, inputs, reference = quantized(name)
    assert any(np.unique(value).size > 1 for value in reference.values())
    planned, binary = compile_program(module, target, "performance", host="all")
    assert_header_describes(identifier_from(name), planned, binary)
    assert_same(reference, Executor(binary).run(inputs))


# ------------------------------------------------------------------ stateful int8 (wake words)

STREAMING = [m.name for m in MODELS if m.name.startswith("wakeword_")]
STEPS = 8


def litert_reference(path: str):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    return Interpreter(
        model_path=path,
        experimental_preserve_all_tensors=True,
        experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
    )


@cache
def streaming_case(name: str) -> tuple[ModuleOp, list[dict[str, np.ndarray]], list[str]]:
    """(module, STEPS of int8 input frames spanning the input's range, its outputs).

    The outputs are the model's (a uint8 probability, mostly 0 on random frames) and the
    scores of its last FULLY_CONNECTED, which vary: checking them makes the test bite."""
    interpreter = litert_reference(str(BY_NAME[name].file))
    interpreter.allocate_tensors()
    tensors = interpreter.get_tensor_details()
    fc = [op for op in interpreter._get_ops_details() if op["op_name"] == "FULLY_CONNECTED"]
    outputs = [interpreter.get_output_details()[0]["name"], tensors[fc[-1]["outputs"][0]]["name"]]
    (detail,) = interpreter.get_input_details()
    rng = np.random.default_rng(5)
    info = np.iinfo(detail["dtype"])
    steps = [
        {detail["name"]: rng.integers(info.min, info.max + 1, detail["shape"], detail["dtype"])}
        for _ in range(STEPS)
    ]
    return npuc.load_model(BY_NAME[name].file, outputs=outputs), steps, outputs


def litert_steps(name: str) -> list[dict[str, np.ndarray]]:
    """The case's outputs from LiteRT's reference kernels at each step, state carried."""
    _, steps, outputs = streaming_case(name)
    interpreter = litert_reference(str(BY_NAME[name].file))
    interpreter.allocate_tensors()
    index = {t["name"]: t["index"] for t in interpreter.get_tensor_details()}
    results = []
    for feeds in steps:
        (array,) = feeds.values()
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], array)
        interpreter.invoke()
        results.append({name: interpreter.get_tensor(index[name]) for name in outputs})
    return results


@pytest.mark.parametrize("name", STREAMING)
def test_streaming_model_is_bit_exact_with_litert_reference_kernels(name):
    module, steps, outputs = streaming_case(name)
    got, _ = run_sequence(module, steps)
    scores = set()
    for step, (want, have) in enumerate(zip(litert_steps(name), got, strict=True)):
        for output in outputs:
            np.testing.assert_array_equal(
                have[output], want[output], err_msg=f"{output}, step {step}"
            )
        scores.add(have[outputs[1]].tobytes())
    assert len(scores) > 1  # the scores change from step to step


@pytest.mark.parametrize("target", shipped_targets())
@pytest.mark.parametrize("name", STREAMING)
def test_streaming_build_carries_state_bit_exact_on_every_target(name, target):
    module, steps, _ = streaming_case(name)
    reference, _ = run_sequence(module, steps)
    planned, binary = compile_program(module, target, "performance", host="all", io="separate")
    assert_header_describes(identifier_from(name), planned, binary)
    executor = Executor(binary)
    got, _ = run_sequence(module, steps, run=lambda _module, feeds: executor.run(feeds))
    assert len(got) == len(reference) == STEPS
    for want, have in zip(reference, got, strict=True):
        assert_same(want, have)


def test_magika_one_hot_chain_is_not_cut_into_thousands_of_tiles():
    """The one-hot chain (equal, cast, quantize: 1x2048x257) once became 12,288 tiles for
    0.03 % fewer estimated cycles; every tile is a host call (search.TILE_CHARGE)."""
    from npuc.passes.tile import TilePass, plan_tiling

    module, _, _ = quantized("magika")
    plan = plan_tiling(module.clone(), TilePass(target="mcu-64", optimise="performance"))
    names = [layer.op.name for layer in plan.layers]
    assert names[:3] == ["nn.equal", "nn.cast", "qnn.quantize"]
    (group,) = [g for g in plan.groups if g.first <= 2 <= g.last]
    assert group.estimate.peak <= plan.lowest_peak * 33 // 32  # still within the SRAM threshold
    assert group.estimate.tiles <= 64
    assert sum(g.estimate.tiles for g in plan.groups) <= 256
