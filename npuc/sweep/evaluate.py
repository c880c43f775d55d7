"""One point of a sweep: compile it as npu-compile would and measure it, in the process that
runs it (the driver, a pool worker or a Ray worker)."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import math
import shutil
import tempfile
import weakref
from collections import OrderedDict
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

from ..compile_flow import CompileOptions, Stages, lower_model, quantized_model
from ..progress import quiet
from ..target import load_target
from ..tools.reporting import user_error_text
from .axes import OptionAxes, target_data, toml_text, with_fields
from .metrics import measure, overflows
from .points import Point
from .shared_stages import SharedStageFailure, SharedStages, StageStore, stages_key

STATUS_OK = "ok"
STATUS_TOO_BIG = "does-not-fit"  # compiled, but a memory's plan exceeds its capacity
STATUS_ERROR = "error"  # the user's: a diagnostic (a layer that does not fit, a bad option)
STATUS_INTERNAL = "internal-error"  # a bug in npuc


class PointRunner:
    """Compiles points. Import, optimise and quantize depend only on the model and its
    quantization options, not on the target, the tiling or the target fields: the points
    that share them take them from `store` (computed once per sweep, shared_stages.py), and
    the runner keeps the last `keep` it used in memory."""

    def __init__(self, store: StageStore, keep: int = 4):
        self.option_axes = OptionAxes()
        self.store, self.keep = store, keep
        self._fronts: OrderedDict[str, SharedStages | SharedStageFailure] = OrderedDict()
        self._digests: dict[str, str] = {}
        self._folder = Path(tempfile.mkdtemp(prefix="npu-sweep-targets-"))
        weakref.finalize(self, shutil.rmtree, self._folder, True)

    def row(self, point: Point) -> dict[str, Any]:
        """The point's results row: its values, status, metrics and error (if any)."""
        head = {"key": point.key, **point.values()}
        try:
            metrics, overflow = self._measure(point)
        except SharedStageFailure as e:
            return {**head, "status": e.status, "error": e.text}
        except Exception as e:
            status, text = failure(e)
            return {**head, "status": status, "error": text}
        status = STATUS_TOO_BIG if overflow else STATUS_OK
        return {**head, "status": status, **metrics, "error": "; ".join(overflow)}

    def _measure(self, point: Point) -> tuple[dict[str, Any], list[str]]:
        """The point's metrics and the memories it overflows."""
        target = self._target(point.target, point.fields)
        options = self.option_axes.options(Path(point.model), target, point.options)
        shared = self._shared(options, point.data)
        own = dataclasses.replace(shared.front, module=shared.front.module.clone())
        # The tiler's warnings repeat what the status and error columns say.
        with quiet(), redirect_stderr(io.StringIO()):
            stages = Stages(7, enabled=False)
            result = lower_model(own, options, load_target(target), "sweep", stages, files=False)
        seconds = sum(t for _, t in result.timings)
        return measure(result, seconds, shared.fidelity), overflows(result)

    def _target(self, name: str, fields: dict[str, Any]) -> str:
        """The target's name, or a file of the target with its fields overridden."""
        if not fields:
            return name
        text = toml_text(with_fields(target_data(name), fields))
        path = self._folder / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.toml"
        if not path.exists():
            path.write_text(text, encoding="utf-8")
        return str(path)

    def _shared(self, options: CompileOptions, data: str | None) -> SharedStages:
        model = str(options.model)
        if model not in self._digests:
            self._digests[model] = hashlib.sha256(options.model.read_bytes()).hexdigest()
        key = stages_key(options, self._digests[model], data)
        if key not in self._fronts:

            def compute() -> SharedStages:
                try:
                    return self._quantize(options, data)
                except Exception as e:  # every point sharing these stages fails the same way
                    raise SharedStageFailure(*failure(e)) from e

            try:
                self._fronts[key] = self.store.get(key, model, compute)
            except SharedStageFailure as e:
                self._fronts[key] = e
            while len(self._fronts) > self.keep:
                self._fronts.popitem(last=False)
        self._fronts.move_to_end(key)
        found = self._fronts[key]
        if isinstance(found, SharedStageFailure):
            raise found
        return found

    @staticmethod
    def _quantize(options: CompileOptions, data: str | None) -> SharedStages:
        with quiet():
            front = quantized_model(options, Stages(7, enabled=False))
            if data is None:
                return SharedStages(dataclasses.replace(front, float_module=None), None)
            if front.float_module is None:  # quantized already: no float model to compare to
                return SharedStages(front, (math.nan, math.nan))
            from ..passes.quantization.datasets import folder_dataset
            from ..quantize_flow import compare

            samples = list(folder_dataset(front.float_module, data))
            outputs, _ = compare(front.float_module, front.module, samples)
        agreements = [o.top1_agreement for o in outputs if o.top1_agreement is not None]
        cosine = min(o.cosine for o in outputs)
        top1 = min(agreements) if agreements else math.nan
        return SharedStages(dataclasses.replace(front, float_module=None), (cosine, top1))


def failure(error: Exception) -> tuple[str, str]:
    """A failed point's status and error text (one line): the diagnostic npu-compile gives,
    or an internal error's."""
    text = user_error_text(error)
    status = STATUS_ERROR if text is not None else STATUS_INTERNAL
    text = text or f"internal error: {type(error).__name__}: {error}"
    return status, "; ".join(text.splitlines())


# A pool or Ray worker process runs many points; its runner, and so the quantized models it
# keeps, lasts as long as the process (a Ray worker may serve several sweeps).
_RUNNERS: dict[str, PointRunner] = {}


def evaluate(point: Point, shared_stages: str) -> dict[str, Any]:
    """The point's results row, computed in this process (a task for pools and Ray), the
    shared stages stored in the folder `shared_stages`."""
    if shared_stages not in _RUNNERS:
        _RUNNERS.clear()
        _RUNNERS[shared_stages] = PointRunner(StageStore(Path(shared_stages)))
    return _RUNNERS[shared_stages].row(point)
