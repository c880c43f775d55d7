"""`tests/mutation/run.py --resume LOG` reads back the outcomes an interrupted run printed;
the lines below were printed by the ninth sampled run (docs/testing.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

MUTATION = Path(__file__).parents[1] / "mutation"

LOG = """\
coverage of the core modules over the suite (once per commit) ...
[kernels 9/10] survived    runtime/npu_jit.py:253:core/ReplaceOrWithAnd:18 (69 tests, 144 s)
[kernels 10/10] killed      runtime/npu_requant.py:475:core/NumberReplacer:171 (30 tests, 9 s)
[tiling 6/10] killed      passes/tiling/search.py:828:core/ZeroIterationForLoop:24 (30 tests, 240 s)
[memory 3/10] not covered passes/memory/ir.py:257:core/ReplaceOrWithAnd:4 (0 tests, 0 s)
| memory | 10 | 5 | 5 | 0 | 50.0 % |
[memory 4/10] killed      passes/memory/plan.py:287:core/ReplaceUnaryOperator_USub_UAdd:2 (30 tests
"""


@pytest.fixture(scope="module")
def run_module():
    sys.path.insert(0, str(MUTATION))  # run.py imports its helpers by their plain names
    try:
        spec = importlib.util.spec_from_file_location("mutation_run", MUTATION / "run.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(MUTATION))
    return module


def test_logged_outcomes_are_read_by_mutant_key(tmp_path, run_module):
    log = tmp_path / "run.log"
    log.write_text(LOG)
    found = run_module.logged_outcomes(log)
    assert found == {
        ("runtime/npu_jit.py", "253", "core/ReplaceOrWithAnd", "18"): ("survived", 69, 144.0),
        ("runtime/npu_requant.py", "475", "core/NumberReplacer", "171"): ("killed", 30, 9.0),
        ("passes/tiling/search.py", "828", "core/ZeroIterationForLoop", "24"): (
            "killed",
            30,
            240.0,
        ),
        ("passes/memory/ir.py", "257", "core/ReplaceOrWithAnd", "4"): ("not covered", 0, 0.0),
    }  # the report's table row and the line cut short by the interruption are not outcomes


def test_a_mutant_key_matches_what_the_log_names(run_module):
    mutant = run_module.Mutant("memory", "passes/memory/ir.py", "core/ReplaceOrWithAnd", 4, 257)
    assert ":".join(mutant.key()) == "passes/memory/ir.py:257:core/ReplaceOrWithAnd:4"


def test_resume_refuses_a_missing_log(tmp_path, run_module, capsys, monkeypatch):
    monkeypatch.setattr(run_module.signal, "signal", lambda *args: None)  # keep pytest's
    with pytest.raises(SystemExit) as stopped:
        run_module.main(["--resume", str(tmp_path / "nope.log")])
    assert stopped.value.code == 2
    assert "--resume: no such log" in capsys.readouterr().err
