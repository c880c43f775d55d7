"""SWEEP.toml errors: one line naming the file, the line and the key, exit status 1."""

from __future__ import annotations

from pathlib import Path

import pytest
from tool_runner import REPO, run_tool

from npuc.diagnostics import NpucError
from npuc.sweep.spec import read_spec

HEAD = """\
[sweep]
models = ["examples/lenet5.onnx"]
targets = ["mcu-64"]
"""

# (the file's text after HEAD, the line the diagnostic names, what it must say)
BAD = {
    "unknown key": ("colour = 1\n", 4, "sweep.colour: unknown key"),
    "unknown option": ("[sweep.options]\nspeed = [1]\n", 5, "sweep.options.speed: not an"),
    "bad choice": ('[sweep.options]\nscheme = ["int7"]\n', 5, "invalid choice: 'int7'"),
    "bad type": ('[sweep.options]\ncalib-random = ["four"]\n', 5, "expected an integer"),
    "bad count": ("[sweep.options]\ncalib-random = [0]\n", 5, "positive number of samples"),
    "exclusive": (
        '[sweep.options]\ncalib-random = [4]\ncalib = ["."]\n',
        6,
        "npu-compile takes one of calib-random and calib",
    ),
    "bad pipeline": ('[sweep.options]\npipeline = ["no-such-pass"]\n', 5, "bad pass pipeline"),
    "unknown field": ("[sweep.target]\nsram_colour = [1]\n", 5, "not a target field"),
    "bad field": ("[sweep.target]\nclock_mhz = [-5]\n", 5, "expected a positive number"),
    "fidelity without data": ('metrics = ["cosine"]\n', 4, "needs data = DIR"),
    "optuna without budget": ('search = "optuna"\n', 4, "needs trials = N"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_sweep_file_names_line_and_key(case: str, tmp_path: Path, monkeypatch) -> None:
    tail, line, message = BAD[case]
    path = tmp_path / "bad.toml"
    path.write_text(HEAD + tail)
    monkeypatch.chdir(REPO)
    with pytest.raises(NpucError) as raised:
        read_spec(path)
    assert raised.value.location == f"{path}:{line}"
    assert message in raised.value.message


def test_missing_model_is_a_one_line_diagnostic(tmp_path: Path) -> None:
    path = tmp_path / "sweep.toml"
    path.write_text(HEAD.replace("examples/lenet5.onnx", "nowhere.onnx"))
    done = run_tool("npu-sweep", path, "-o", tmp_path / "out", cwd=REPO)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        f"npu-sweep: {path}:2: error: sweep.models: no such model file: nowhere.onnx"
    ]
    assert not (tmp_path / "out").exists()
