"""The stages that points share, computed once per sweep: import, optimise and quantize (with
calibration, and the fidelity comparison when the sweep has data) depend only on the model and
its quantization options. The first worker to need a set of them computes it under a file
lock and stores the quantized module as IR text in RESULTS_DIR/shared-stages/; every other
worker (a pool process, a Ray task, a rerun of the sweep) parses it from there.

A worker's module is an xDSL object graph that does not pickle reliably, but it prints and
parses back exactly: printed with its locations, parsed by xDSL's parser in npuc's context
(npuc's own IRParser would locate an op without a location where it is written).

Each computation appends one line to RESULTS_DIR/shared-stages/runs.log (key, model,
seconds, host and process): the record of how often the shared stages ran.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compile_flow import CompileOptions, QuantizedModel
from ..version import __version__

FOLDER = "shared-stages"
RUNS_LOG = "runs.log"

Fidelity = tuple[float, float] | None  # (cosine, top-1 agreement) on the sweep's data


@dataclass
class SharedStages:
    front: QuantizedModel  # float_module is not kept: the fidelity is measured already
    fidelity: Fidelity


class SharedStageFailure(Exception):
    """The shared stages failed; every point sharing them fails with this status and text."""

    def __init__(self, status: str, text: str):
        super().__init__(status, text)
        self.status, self.text = status, text


def stages_key(options: CompileOptions, model_digest: str, data: str | None) -> str:
    """Names a set of shared stages: what import, optimise and quantize depend on."""
    identity = [
        str(options.model),
        model_digest,
        options.import_options,
        options.pipeline,
        options.scheme,
        options.calib,
        options.calib_random,
        data,
        __version__,
    ]
    text = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class StageStore:
    """RESULTS_DIR/shared-stages/: KEY.mlir (the quantized module) and KEY.json (the rest:
    summary, stage timings, accuracy report, fidelity, or the failure), KEY.lock, runs.log."""

    def __init__(self, folder: Path):
        self.folder = folder

    def get(self, key: str, model: str, compute: Callable[[], SharedStages]) -> SharedStages:
        """The shared stages named `key` (of `model`): read, or computed by `compute` (once:
        other processes wait for the lock, then read) and stored. Raises SharedStageFailure."""
        found = self._read(key)
        if found is not None:
            return found
        self.folder.mkdir(parents=True, exist_ok=True)
        with _locked(self.folder / f"{key}.lock"):
            found = self._read(key)
            if found is not None:
                return found
            start = time.perf_counter()
            try:
                stages = compute()
            except SharedStageFailure as failure:
                self._write(key, None, {"failure": [failure.status, failure.text]})
                self._log(key, model, start)
                raise
            self._write(key, stages.front.module, _meta(stages))
            self._log(key, model, start)
            return stages

    def _read(self, key: str) -> SharedStages | None:
        meta_path = self.folder / f"{key}.json"
        if not meta_path.is_file():
            return None
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("failure"):
            raise SharedStageFailure(*meta["failure"])
        module = _parse((self.folder / f"{key}.mlir").read_text(encoding="utf-8"), key)
        accuracy = meta["accuracy"]
        front = QuantizedModel(
            module,
            None,
            (accuracy[0].encode(), accuracy[1].encode()) if accuracy else None,
            list(meta["summary"]),
            [(label, seconds) for label, seconds in meta["timings"]],
        )
        fidelity = meta["fidelity"]
        return SharedStages(front, (fidelity[0], fidelity[1]) if fidelity else None)

    def _write(self, key: str, module: Any, meta: dict[str, Any]) -> None:
        """The module first, its metadata last: a KEY.json is the mark of a whole entry."""
        if module is not None:
            from ..printing import print_module

            _replace(self.folder / f"{key}.mlir", print_module(module, debuginfo=True))
        _replace(self.folder / f"{key}.json", json.dumps(meta, indent=1) + "\n")

    def _log(self, key: str, model: str, start: float) -> None:
        line = f"{key}\t{model}\t{time.perf_counter() - start:.3f}"
        line += f"\t{socket.gethostname()}:{os.getpid()}\n"
        with open(self.folder / RUNS_LOG, "a", encoding="utf-8") as log:
            log.write(line)


def runs(results: Path) -> list[str]:
    """The keys of the shared stages a sweep computed into `results`, once per computation."""
    path = results / FOLDER / RUNS_LOG
    if not path.is_file():
        return []
    return [line.split("\t")[0] for line in path.read_text(encoding="utf-8").splitlines()]


def _meta(stages: SharedStages) -> dict[str, Any]:
    front = stages.front
    accuracy = [part.decode() for part in front.accuracy] if front.accuracy else None
    return {
        "summary": front.summary,
        "timings": front.timings,
        "accuracy": accuracy,
        "fidelity": list(stages.fidelity) if stages.fidelity is not None else None,
        "failure": None,
    }


def _parse(text: str, key: str) -> Any:
    from xdsl.parser import Parser

    from ..dialects.context import make_context

    module = Parser(make_context(), text, f"{FOLDER}/{key}.mlir").parse_module()
    module.verify()
    return module


def _replace(path: Path, text: str) -> None:
    """Write `path` whole or not at all (a killed worker leaves no half file)."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
