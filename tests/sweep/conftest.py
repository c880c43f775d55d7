"""What the sweep tests share: the issue's minimal sweep file and its results in this process
(computed once per test session), and a local Ray cluster started with Ray's own `ray start
--head` for the tests of `--ray ADDRESS`.

The cluster's head takes about 15 s to come up, mostly waiting. So the tests that use it run
after the other sweep tests, the head is started in the background when the first sweep test
starts, and the wait overlaps those tests; it stops after the last test that uses it. It has
its own temporary folder and free ports: a `ray.init()` elsewhere on the machine neither
finds it (Ray records the newest cluster in its temporary folder) nor collides with it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tool_runner import REPO

import npuc.sweep

MINIMAL = """\
[sweep]
models = ["examples/lenet5.onnx"]
targets = ["mcu-64", "ethos-u55-256-hee"]
[sweep.options]
optimise = ["performance", "size"]
scheme = ["int8", "int8-per-channel"]
calib-random = [4]
"""
# Figures that do not depend on the machine (compile_s does).
FIGURES = ["target", "optimise", "scheme", "status", "total_cycles", "sram_peak_bytes"]
FIGURES += ["flash_bytes", "inference_ms"]

RAY_HEAD = pytest.StashKey["RayHead | None"]()
HEAD_TIMEOUT_S = 240


@pytest.fixture(scope="session")
def minimal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("minimal") / "minimal.toml"
    path.write_text(MINIMAL)
    return path


@pytest.fixture(scope="session")
def minimal_local(minimal: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """The minimal file's results in this process (one job), and their folder."""
    out = tmp_path_factory.mktemp("local")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        return npuc.sweep.run(minimal, out, jobs=1, progress=False), out


@pytest.fixture(scope="session")
def assert_same_figures() -> Callable[[Any, Any], None]:
    """Checks two results of the same points have the same rows and figures."""
    import pandas as pd

    def check(got: Any, expected: Any) -> None:
        got, expected = got.set_index("key").sort_index(), expected.set_index("key").sort_index()
        assert list(got.index) == list(expected.index)
        pd.testing.assert_frame_equal(got[FIGURES], expected[FIGURES])

    return check


class RayHead:
    """A Ray cluster's head node run by `ray start --head --block`; stopping that process
    stops the node's processes."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="npuc-ray-"))  # short: Ray's socket paths
        self.log = open(self.folder / "ray-start.log", "w+b")  # noqa: SIM115 (closed in stop)
        self.process = self._start()
        self.tries = 1

    def _start(self) -> subprocess.Popen[bytes]:
        ports = _free_ports(5)
        command = [
            str(Path(sys.executable).with_name("ray")),
            "start",
            "--head",
            "--block",
            "--port=0",
            "--num-cpus=2",
            "--include-dashboard=false",
            "--disable-usage-stats",
            f"--object-store-memory={100 * 2**20}",
            f"--temp-dir={self.folder}",
            f"--dashboard-agent-listen-port={ports[0]}",
            f"--dashboard-agent-grpc-port={ports[1]}",
            f"--runtime-env-agent-port={ports[2]}",
            f"--metrics-export-port={ports[3]}",
            f"--dashboard-port={ports[4]}",
        ]
        # A cluster without the token authentication `ray start` turns on by default: its
        # drivers here are the tests, on this machine.
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        env["RAY_AUTH_MODE"] = "disabled"
        return subprocess.Popen(
            command, stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )

    def address(self) -> str:
        """The head's GCS address, once it is up (`ray start` writes it last). A head that
        exits while starting (a port taken between choosing it and binding it) is started
        again once."""
        written = self.folder / "ray_current_cluster"
        deadline = time.monotonic() + HEAD_TIMEOUT_S
        while not (written.is_file() and written.read_text().strip()):
            if self.process.poll() is not None and self.tries == 1:
                with contextlib.suppress(ProcessLookupError):  # what it left running
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process, self.tries = self._start(), 2
            elif self.process.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                pytest.fail(f"ray start --head did not come up:\n{self.log.read().decode()}")
            time.sleep(0.1)
        return written.read_text().strip()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _free_ports(count: int) -> list[int]:
    """Ports free now (ray start's defaults are fixed numbers another instance may hold)."""
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _uses_cluster(item: pytest.Item) -> bool:
    return "ray_cluster" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The sweep tests that use the cluster run after the other sweep tests."""
    here = Path(__file__).parent
    ours = [item for item in items if here in item.path.parents]
    late = [item for item in ours if _uses_cluster(item)]
    early = [item for item in ours if not _uses_cluster(item)]
    if not late or not early:
        return
    moved = {id(item) for item in late}
    rest = [item for item in items if id(item) not in moved]
    at = rest.index(early[-1]) + 1
    items[:] = rest[:at] + late + rest[at:]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Start the head when the first sweep test starts, if a test will use it."""
    stash = item.session.stash
    if RAY_HEAD not in stash and any(_uses_cluster(i) for i in item.session.items):
        stash[RAY_HEAD] = RayHead()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An interrupted session stops the head too."""
    head = session.stash.get(RAY_HEAD, None)
    if head is not None:
        head.stop()


@pytest.fixture(scope="module")
def ray_cluster(request: pytest.FixtureRequest) -> Iterator[str]:
    """The address of a local Ray cluster's head (see the module's docstring), stopped after
    the module's tests."""
    stash = request.session.stash
    head = stash[RAY_HEAD] = stash.get(RAY_HEAD, None) or RayHead()
    try:
        yield head.address()
    finally:
        head.stop()
        stash[RAY_HEAD] = None  # stopped; not started again
