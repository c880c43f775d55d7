"""lit configuration for npuc's FileCheck tests: `.venv/bin/lit -v filecheck/`."""

# ruff: noqa: F821 (lit injects `config`)

import os
import sys

import lit.formats

config.name = "npuc"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["Output"]

# npu-opt and filecheck come from the environment that runs lit (the project's venv).
bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([bin_dir, config.environment.get("PATH", "")])
for tool in ("npu-opt", "filecheck"):
    config.substitutions.append((rf"(?<![\w/.-]){tool}(?![\w.-])", os.path.join(bin_dir, tool)))
