"""The console scripts (npuc/tools/start.py): what pyproject names, and how they start."""

from __future__ import annotations

import gc
import tomllib
from pathlib import Path
from types import SimpleNamespace

from npuc.tools import start

ROOT = Path(__file__).resolve().parents[2]


def test_every_script_starts_its_own_tool(monkeypatch):
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    started = []
    monkeypatch.setattr(
        start, "import_module", lambda name: SimpleNamespace(main=lambda: started.append(name))
    )
    try:
        for script, target in scripts.items():
            module, _, function = target.partition(":")
            assert module == "npuc.tools.start"
            getattr(start, function)()
            assert started[-1] == f"npuc.tools.{script.replace('-', '_')}"
    finally:
        gc.unfreeze()
    assert len(started) == len(scripts) == 5


def test_the_tool_is_imported_without_collections_and_runs_with_them(monkeypatch):
    seen = {}

    def tool(name: str) -> SimpleNamespace:
        seen["importing"] = gc.isenabled()
        return SimpleNamespace(main=lambda: seen.setdefault("running", gc.isenabled()))

    monkeypatch.setattr(start, "import_module", tool)
    try:
        start.npu_run()
    finally:
        gc.unfreeze()
    assert seen == {"importing": False, "running": True}
