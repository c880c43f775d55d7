"""The tools keep freed memory for reuse on glibc (npuc/tools/start.py): a large block
allocated again after it was freed faults in no new pages, where glibc's default maps it
afresh each time."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

BLOCK = 20 << 20
CYCLES = 3

WORKLOAD = f"""
import resource
from npuc.tools.start import reuse_freed_memory
print(reuse_freed_memory() if TUNE else "-")
block = bytearray({BLOCK}); del block
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range({CYCLES}):
    block = bytearray({BLOCK}); del block
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""

PAGES = CYCLES * BLOCK // os.sysconf("SC_PAGE_SIZE")


def page_faults(tune: bool, **env: str) -> tuple[str, int]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run(
        [sys.executable, "-c", f"TUNE = {tune}\n{WORKLOAD}"],
        capture_output=True,
        text=True,
        check=True,
        env={**clean, **env},
    )
    tuned, faults = done.stdout.split()
    return tuned, int(faults)


def test_a_freed_block_is_reused_without_new_page_faults():
    assert page_faults(True) == ("True", pytest.approx(0, abs=PAGES // 20))
    # glibc's default maps the block afresh: the reuse is the setting's doing
    assert page_faults(False)[1] > PAGES // 4


def test_the_users_own_malloc_settings_are_kept():
    tuned, faults = page_faults(True, MALLOC_TRIM_THRESHOLD_="0")
    assert tuned == "False" and faults > PAGES // 4
