"""`data = DIR`: each point's cosine and top-1 agreement equal those of its compiled binary on
the NPU runtime against onnxruntime's float outputs, computed here with numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
from tool_runner import REPO

import npuc
import npuc.sweep
from npuc.runtime.executor import Executor

MODEL = REPO / "examples" / "tiny_cnn.onnx"


def test_fidelity_matches_the_binary_against_onnxruntime(tmp_path: Path, monkeypatch) -> None:
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(7)
    samples = [rng.standard_normal((1, 3, 16, 16)).astype(np.float32) for _ in range(6)]
    for i, sample in enumerate(samples):
        np.save(data / f"{i}.npy", sample)
    sweep = tmp_path / "fidelity.toml"
    sweep.write_text(
        '[sweep]\nmodels = ["examples/tiny_cnn.onnx"]\ntargets = ["mcu-64"]\n'
        f'data = "{data}"\n[sweep.options]\ncalib-random = 2\n'
    )
    monkeypatch.chdir(REPO)
    row = npuc.sweep.run(sweep, tmp_path / "out", progress=False).iloc[0]
    assert row["status"] == "ok"

    program = npuc.compile(MODEL, "mcu-64", calib_random=2).program
    (out,) = program.outputs
    executor = Executor(program)
    session = ort.InferenceSession(str(MODEL))
    ref, got = [], []
    for sample in samples:
        ref.append(session.run(None, {"image": sample})[0].astype(np.float64))
        q = executor.run({"image": sample})[out.name].astype(np.float64)
        got.append((q - out.zero_point) * out.scale)
    r, c = np.concatenate(ref), np.concatenate(got)
    cosine = float((r * c).sum() / np.sqrt((r * r).sum() * (c * c).sum()))
    top1 = float((r.argmax(axis=1) == c.argmax(axis=1)).mean())
    assert abs(row["cosine"] - cosine) < 1e-4
    assert row["top1"] == top1
    assert 0.5 < cosine <= 1.0
