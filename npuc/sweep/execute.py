"""Where a sweep's points run: in this process (one job), a local process pool, or Ray tasks
on a cluster or a local Ray instance. Every way yields the same rows, as points finish."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.context import BaseContext
from pathlib import Path
from types import TracebackType
from typing import Any

from .evaluate import PointRunner, evaluate
from .points import Point
from .shared_stages import StageStore

# What compiling a point imports (lazily), imported once by the pool's fork server.
PRELOAD = (
    "npuc.frontends.onnx",
    "npuc.frontends.tflite",
    "npuc.passes.quantize",
    "npuc.passes.tile",
    "npuc.passes.plan_memory",
    "npuc.passes.lower_to_npu",
    "npuc.runtime.nn_interpreter",
    "npuc.runtime.qnn_interpreter",
    "npuc.runtime.cycle_model",
)


def _single_threaded() -> None:
    """Pool workers share the cores: one BLAS/OpenMP thread each."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


def _worker_context() -> BaseContext:
    """Workers forked from a server that has imported the compiler once (a fresh interpreter
    per worker spends seconds importing it; forking this process would copy its threads'
    locks). Where there is no forkserver, fresh interpreters."""
    if "forkserver" not in get_all_start_methods():
        return get_context("spawn")
    context = get_context("forkserver")
    context.set_forkserver_preload([__name__, *PRELOAD])
    return context


def _evaluate_in(folder: str, point: Point, shared_stages: str) -> dict[str, Any]:
    """A Ray task: paths in the sweep are relative to the driver's folder."""
    if os.getcwd() != folder and os.path.isdir(folder):
        os.chdir(folder)
    return evaluate(point, shared_stages)


class Executor:
    """Runs batches of points, keeping its pool (or Ray) up between batches; the stages that
    points share are stored in the folder `shared_stages`."""

    def __init__(
        self, shared_stages: Path, jobs: int = 1, ray: bool = False, address: str | None = None
    ):
        self.shared_stages = str(shared_stages.resolve())
        self.jobs, self.ray, self.address = jobs, ray, address
        self._pool: ProcessPoolExecutor | None = None
        self._runner: PointRunner | None = None
        self._ray_started = False
        self._remote: Any = None

    def __enter__(self) -> Executor:
        if self.ray:
            import ray

            if not ray.is_initialized():
                if self.address:
                    ray.init(address=self.address, log_to_driver=False)
                else:  # "local": not a cluster that RAY_ADDRESS or `ray start` names
                    ray.init(
                        address="local",
                        num_cpus=self.jobs,
                        include_dashboard=False,
                        log_to_driver=False,
                    )
                self._ray_started = True
            self._remote = ray.remote(num_cpus=1)(_evaluate_in)
        elif self.jobs > 1:
            self._pool = ProcessPoolExecutor(
                self.jobs, mp_context=_worker_context(), initializer=_single_threaded
            )
        else:
            self._runner = PointRunner(StageStore(Path(self.shared_stages)))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._pool is not None:
            if error is not None:  # Ctrl-C or a failure: do not wait for the running points
                for process in list((self._pool._processes or {}).values()):
                    process.terminate()
            self._pool.shutdown(wait=error is None, cancel_futures=True)
        if self._ray_started:
            import ray

            ray.shutdown()

    def rows(self, points: list[Point]) -> Iterator[dict[str, Any]]:
        """Each point's row, in the order they finish."""
        if self._runner is not None:
            for point in points:
                yield self._runner.row(point)
        elif self._pool is not None:
            pending: set[Future[dict[str, Any]]] = {
                self._pool.submit(evaluate, p, self.shared_stages) for p in points
            }
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
        else:
            import ray

            folder = os.getcwd()
            refs = [self._remote.remote(folder, p, self.shared_stages) for p in points]
            while refs:
                done, refs = ray.wait(refs, num_returns=1)
                yield ray.get(done[0])
