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


def test_compiling_an_int8_model_leaves_out_what_it_does_not_use(tmp_path):
    """Modules a compilation of an int8 TFLite model has no use for stay unimported (each
    costs every process milliseconds): xDSL's arith dialect (15 ms; its constants are
    recognised by name) and ctypes.util (2.6 ms, with subprocess; for 16-bit GELU tables)."""
    import subprocess
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "models"))
    from corpus import MODELS

    model = next(m for m in MODELS if m.name == "wakeword_alexa").file
    code = (
        "import sys\n"
        "from npuc.tools.npu_compile import main\n"
        f"try:\n    main([{str(model)!r}, '--target', 'mcu-64', '-o', {str(tmp_path)!r}])\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "print(sorted(m for m in ('xdsl.dialects.arith', 'ctypes.util', 'subprocess')"
        " if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "wakeword_alexa.npubin").is_file()
