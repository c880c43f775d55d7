"""One point of a sweep: compile it as npu-compile would and measure it, in the process that
runs it (the driver, a pool worker or a Ray worker)."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import math
import shutil
import tempfile
import weakref
from collections import OrderedDict
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

from ..compile_flow import CompileOptions, QuantizedModel, Stages, lower_model, quantized_model
from ..progress import quiet
from ..target import load_target
from ..tools.reporting import user_error_text
from .axes import OptionAxes, target_data, toml_text, with_fields
from .metrics import measure, overflows
from .points import Point

STATUS_OK = "ok"
STATUS_TOO_BIG = "does-not-fit"  # compiled, but a memory's plan exceeds its capacity
STATUS_ERROR = "error"  # the user's: a diagnostic (a layer that does not fit, a bad option)
STATUS_INTERNAL = "internal-error"  # a bug in npuc

_Front = tuple[QuantizedModel, tuple[float, float] | None]


class PointRunner:
    """Compiles points, keeping the last `keep` quantized models: import, optimise and
    quantize depend only on the model and its quantization options, not on the target, the
    tiling or the target fields, so the points that share them run those stages once."""

    def __init__(self, keep: int = 4):
        self.option_axes = OptionAxes()
        self.keep = keep
        self._fronts: OrderedDict[str, _Front | Exception] = OrderedDict()
        self._folder = Path(tempfile.mkdtemp(prefix="npu-sweep-targets-"))
        weakref.finalize(self, shutil.rmtree, self._folder, True)
        self.front_runs = 0  # how many times the shared stages ran (tests count them)

    def row(self, point: Point) -> dict[str, Any]:
        """The point's results row: its values, status, metrics and error (if any)."""
        head = {"key": point.key, **point.values()}
        try:
            metrics, overflow = self._measure(point)
        except Exception as e:
            text = user_error_text(e)
            status = STATUS_ERROR if text is not None else STATUS_INTERNAL
            text = text or f"internal error: {type(e).__name__}: {e}"
            return {**head, "status": status, "error": "; ".join(text.splitlines())}
        status = STATUS_TOO_BIG if overflow else STATUS_OK
        return {**head, "status": status, **metrics, "error": "; ".join(overflow)}

    def _measure(self, point: Point) -> tuple[dict[str, Any], list[str]]:
        """The point's metrics and the memories it overflows."""
        target = self._target(point.target, point.fields)
        options = self.option_axes.options(Path(point.model), target, point.options)
        front, fidelity = self._front(options, point.data)
        own = dataclasses.replace(front, module=front.module.clone())
        # The tiler's warnings repeat what the status and error columns say.
        with quiet(), redirect_stderr(io.StringIO()):
            stages = Stages(7, enabled=False)
            result = lower_model(own, options, load_target(target), "sweep", stages, files=False)
        seconds = sum(t for _, t in result.timings)
        return measure(result, seconds, fidelity), overflows(result)

    def _target(self, name: str, fields: dict[str, Any]) -> str:
        """The target's name, or a file of the target with its fields overridden."""
        if not fields:
            return name
        text = toml_text(with_fields(target_data(name), fields))
        path = self._folder / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.toml"
        if not path.exists():
            path.write_text(text, encoding="utf-8")
        return str(path)

    def _front(self, options: CompileOptions, data: str | None) -> _Front:
        key = json.dumps(
            [
                str(options.model),
                options.import_options,
                options.pipeline,
                options.scheme,
                options.calib,
                options.calib_random,
                data,
            ],
            sort_keys=True,
            default=str,
        )
        if key not in self._fronts:
            self.front_runs += 1
            try:
                self._fronts[key] = self._quantize(options, data)
            except Exception as e:  # every point sharing these stages fails the same way
                self._fronts[key] = e
            while len(self._fronts) > self.keep:
                self._fronts.popitem(last=False)
        self._fronts.move_to_end(key)
        found = self._fronts[key]
        if isinstance(found, Exception):
            raise found
        return found

    @staticmethod
    def _quantize(options: CompileOptions, data: str | None) -> _Front:
        with quiet():
            front = quantized_model(options, Stages(7, enabled=False))
            if data is None:
                return front, None
            if front.float_module is None:  # quantized already: no float model to compare to
                return front, (math.nan, math.nan)
            from ..passes.quantization.datasets import folder_dataset
            from ..quantize_flow import compare

            samples = list(folder_dataset(front.float_module, data))
            outputs, _ = compare(front.float_module, front.module, samples)
        agreements = [o.top1_agreement for o in outputs if o.top1_agreement is not None]
        cosine = min(o.cosine for o in outputs)
        return front, (cosine, min(agreements) if agreements else math.nan)


# A pool or Ray worker process runs many points; its runner, and so the quantized models it
# keeps, lasts as long as the process.
_RUNNER: list[PointRunner] = []


def evaluate(point: Point) -> dict[str, Any]:
    """The point's results row, computed in this process (a task for pools and Ray)."""
    if not _RUNNER:
        _RUNNER.append(PointRunner())
    return _RUNNER[0].row(point)
