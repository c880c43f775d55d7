"""The locked environment: write requirements.lock's stamp, and check an environment against it.

requirements.lock is `uv pip compile --universal --generate-hashes` output (pip-tools format:
exact versions with hashes) for every extra of pyproject.toml and its build backend. Its last
line records a digest of the requirements it was compiled from, so a lock left stale by an edit
of pyproject.toml is caught offline.

    python .ci/environment.py lock UV [ARGS]   compile (ARGS: e.g. --upgrade) and stamp (make lock)
    python .ci/environment.py check UV VENV    the lock is current and VENV holds exactly it
                                               (plus npuc and the example plugin, editable)
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
# Installed editable beside npuc by `make setup` (docs/plugins.md), not from the lock.
EXAMPLE_PLUGIN = ROOT / "examples" / "plugins" / "npuc-example-ops"
STAMP = "# requirements digest: "


def requirements_digest() -> str:
    """sha256 of what the lock is compiled from: Python range, dependencies, extras, build."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    inputs = {
        "requires-python": project.get("requires-python"),
        "dependencies": project.get("dependencies", []),
        "optional-dependencies": project.get("optional-dependencies", {}),
        "build-system": pyproject.get("build-system", {}).get("requires", []),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def lock(uv: str, args: list[str]) -> int:
    """Compile pyproject.toml's requirements (all extras) and its build backend into the lock.

    The versions already in the lock are kept unless ARGS ask for upgrades."""
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    command = [uv, "pip", "compile", "pyproject.toml", "-", "--all-extras", "--universal"]
    command += ["--generate-hashes", "--python-version", "3.11", "-q", "-o", LOCK.name, *args]
    done = subprocess.run(command, cwd=ROOT, input="\n".join(build) + "\n", text=True)
    if done.returncode:
        return done.returncode
    lines = [line for line in LOCK.read_text().splitlines() if not line.startswith(STAMP)]
    LOCK.write_text("\n".join([*lines, STAMP + requirements_digest()]) + "\n")
    return 0


def check(uv: str, venv: str) -> int:
    recorded = next((ln for ln in LOCK.read_text().splitlines() if ln.startswith(STAMP)), "")
    if recorded.removeprefix(STAMP) != requirements_digest():
        print(
            "error: requirements.lock is stale: pyproject.toml's requirements changed since it "
            "was compiled; run 'make lock', then 'make setup'",
            file=sys.stderr,
        )
        return 1
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as project:
        project.write(f"-e {ROOT}\n-e {EXAMPLE_PLUGIN}\n")
        project.flush()
        done = subprocess.run(
            [uv, "pip", "sync", "--dry-run", "--python", venv, str(LOCK), project.name],
            capture_output=True,
            text=True,
        )
    report = done.stdout + done.stderr
    if done.returncode == 0 and "Would make no changes" in report:
        return 0
    changes = [ln.strip() for ln in report.splitlines() if ln.lstrip().startswith(("+", "-"))]
    print(
        f"error: {venv} does not match requirements.lock; run 'make setup'\n  "
        + "\n  ".join(changes or report.strip().splitlines()),
        file=sys.stderr,
    )
    return 1


def main(argv: list[str]) -> int:
    if argv[:1] == ["lock"] and len(argv) >= 2:
        return lock(argv[1], argv[2:])
    if argv[:1] == ["check"] and len(argv) == 3:
        return check(argv[1], argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
