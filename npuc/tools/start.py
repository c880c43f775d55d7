"""The console scripts: each imports its tool's module with the cyclic garbage collector
off, then runs the tool's `main`.

Importing a tool creates about 10^5 objects (xDSL's and npuc's op and attribute classes,
numpy) and frees next to none of them, so the collections that would run during the imports
walk a growing heap for nothing (10-40 ms of a process; what a tool imports later, while it
works, is covered by its own handling of the collector). The imported objects live as long
as the process, so they are frozen (left out of later collections) before the collector is
turned back on.
"""

from __future__ import annotations

import gc
from importlib import import_module


def _start(tool: str) -> None:
    enabled = gc.isenabled()
    gc.disable()
    try:
        module = import_module(f"npuc.tools.{tool}")
        gc.freeze()
    finally:
        if enabled:
            gc.enable()
    module.main()


def npu_opt() -> None:
    _start("npu_opt")


def npu_run() -> None:
    _start("npu_run")


def npu_bundle() -> None:
    _start("npu_bundle")


def npu_compile() -> None:
    _start("npu_compile")


def npu_sweep() -> None:
    _start("npu_sweep")
