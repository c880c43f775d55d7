"""The console scripts: each imports its tool's module with the cyclic garbage collector
off, then runs the tool's `main`.

Importing a tool creates about 10^5 objects (xDSL's and npuc's op and attribute classes,
numpy) and frees next to none of them, so the collections that would run during the imports
walk a growing heap for nothing (10-40 ms of a process; what a tool imports later, while it
works, is covered by its own handling of the collector). The imported objects live as long
as the process, so they are frozen (left out of later collections) before the collector is
turned back on.

Before that, on glibc, freed memory is kept for reuse (`reuse_freed_memory`).
"""

from __future__ import annotations

import gc
import os
import sys
from importlib import import_module

# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # the largest glibc takes: blocks up to this come from the heap
TRIM_THRESHOLD = 1 << 30  # free memory at the heap's top kept up to this, not returned
MALLOC_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")


def reuse_freed_memory() -> bool:
    """Have glibc keep freed memory for the next allocation: whether it was set.

    The tools allocate and free large numpy temporaries throughout (calibration, the auto
    probe's candidate runs, the accuracy report, the reports' text). By default glibc maps
    blocks above a threshold that adapts (128 KiB to 32 MiB) afresh and unmaps them when
    freed, so every such block faults its pages in zeroed again: 0.4-0.7 s of system time
    of a 4 s palm_detection compile. Left to the user's own settings if the environment
    gives any (MALLOC_*_ or GLIBC_TUNABLES); nothing on other C libraries."""
    if sys.platform != "linux" or any(name in os.environ for name in MALLOC_SETTINGS):
        return False
    if "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return False
    if not hasattr(libc, "gnu_get_libc_version"):  # another C library
        return False
    libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        and libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )


def _start(tool: str) -> None:
    reuse_freed_memory()
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
