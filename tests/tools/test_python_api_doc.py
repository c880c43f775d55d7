"""docs/python-api.md runs: its Python blocks, in order, in one namespace, from the
repository's root (as a notebook would), and what they print is what the page says."""

from __future__ import annotations

import contextlib
import io
import os
import re

from tool_runner import REPO

PAGE = REPO / "docs" / "python-api.md"


def blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)


def test_every_block_of_the_page_runs_in_order():
    code = blocks(PAGE.read_text())
    assert len(code) >= 8
    namespace: dict[str, object] = {"__name__": "python_api_doc"}
    printed = io.StringIO()
    here = os.getcwd()
    os.chdir(REPO)
    try:
        for i, block in enumerate(code):
            with contextlib.redirect_stdout(printed):
                exec(compile(block, f"{PAGE.name}, block {i + 1}", "exec"), namespace)
    finally:
        os.chdir(here)
    text = printed.getvalue()
    assert "'compile'" in text and "'profile'" in text  # dir(npuc)
    assert "{'prob': (1, 10)}" in text
    assert re.search(r"conv1\s+conv2d\s+\d+ cycles, bound by \w+, \d+ bytes of SRAM", text)
    assert "lenet5.layers.csv" in text and "lenet5.npubin" in text
    result = namespace["result"]
    assert (namespace["out"] / "lenet5.npubin").read_bytes() == result.files["lenet5.npubin"]
