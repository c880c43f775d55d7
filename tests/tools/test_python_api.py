"""The Python API as a user meets it: what `import npuc` offers, and the pipeline names the
tools accept."""

from __future__ import annotations

from tool_runner import EXAMPLE

import npuc
from npuc.registry import DEFAULT_PIPELINE


def test_dir_lists_the_api():
    assert set(dir(npuc)) >= {"apply_pipeline", "load_model", "run", "random_inputs", "__version__"}
    assert "Any" not in dir(npuc)


def test_default_names_the_default_pipeline_as_in_npu_run():
    by_name, spelled = npuc.load_model(EXAMPLE), npuc.load_model(EXAMPLE)
    npuc.apply_pipeline(by_name, "default")
    npuc.apply_pipeline(spelled, DEFAULT_PIPELINE)
    assert str(by_name) == str(spelled)
    assert str(by_name) != str(npuc.load_model(EXAMPLE))  # the pipeline did something
