"""mypy over npuc (`make typecheck`, part of `make test`), with [tool.mypy] from pyproject.toml.

npuc's packages live in top-level folders that setuptools maps to `npuc.*` (pyproject's
`package-dir`); mypy cannot follow that mapping, nor the editable install's import hook. So
this links the folders into build/typecheck/npuc, checks that tree as the package `npuc`, and
reports every path as the repository's own.

    python .ci/typecheck.py [MYPY ARGS]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / "build" / "typecheck"


def link_tree() -> dict[str, str]:
    """Build TREE/npuc from the package-dir mapping; return {tree prefix: repository prefix}."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping: dict[str, str] = config["package-dir"]
    package = TREE / "npuc"
    package.mkdir(parents=True, exist_ok=True)
    for old in package.iterdir():
        old.unlink()
    links = {}
    for entry in sorted((ROOT / mapping["npuc"]).iterdir()):
        if entry.suffix == ".py" or (entry / "__init__.py").exists():
            (package / entry.name).symlink_to(entry)
    for name, folder in mapping.items():
        if name == "npuc":
            continue
        sub = name.removeprefix("npuc.")
        (package / sub).symlink_to(ROOT / folder, target_is_directory=True)
        links[f"build/typecheck/npuc/{sub}/"] = f"{folder}/"
    links["build/typecheck/npuc/"] = f"{mapping['npuc']}/"
    return links


def main(args: list[str]) -> int:
    links = link_tree()
    env = dict(os.environ, MYPYPATH=str(TREE))
    command = [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", "-p", "npuc"]
    done = subprocess.run(
        [*command, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    for line in (done.stdout + done.stderr).splitlines():
        for tree, repo in links.items():
            if line.startswith(tree):
                line = repo + line.removeprefix(tree)
                break
        print(line)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
