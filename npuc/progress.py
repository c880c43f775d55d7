"""Progress bars on stderr for the steps that can take more than a second: calibration, the
auto strategy's whole-model comparison, AdaRound, the tiling search.

tqdm draws them on a terminal only, and only once a step has run for `DELAY` seconds: never on
a pipe, a log file or in CI, and not inside `quiet()` (the tools' `-q`). A finished bar is
cleared, so what stays on the terminal is the tools' own lines.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TextIO, TypeVar

DELAY = 1.0  # seconds before a bar appears

_QUIET: ContextVar[bool] = ContextVar("npuc_quiet", default=False)

T = TypeVar("T")


@contextmanager
def quiet(enabled: bool = True) -> Iterator[None]:
    """No progress bars while the block runs (when `enabled`)."""
    token = _QUIET.set(enabled or _QUIET.get())
    try:
        yield
    finally:
        _QUIET.reset(token)


def progress(
    iterable: Iterable[T] | None = None,
    *,
    desc: str,
    total: int | None = None,
    unit: str = "it",
    enabled: bool = True,
    stream: TextIO | None = None,
    delay: float = DELAY,
) -> Any:
    """A tqdm bar over `iterable` (or updated by hand with `.update(n)`), drawn on `stream`
    (stderr) if it is a terminal, `enabled` and not `quiet()`; use it as a context manager
    or iterate it."""
    stream = stream if stream is not None else sys.stderr
    if not enabled or _QUIET.get() or not _is_terminal(stream):
        return _NoBar(iterable)  # tqdm, not imported: 6-8 ms of a process that draws nothing
    from tqdm import tqdm

    return tqdm(
        iterable,
        desc=desc,
        total=total,
        unit=unit,
        file=stream,
        delay=delay,
        leave=False,
        dynamic_ncols=True,
    )


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class _NoBar:
    """What `progress` returns when it draws nothing: the iterable, and a bar that ignores
    its updates."""

    def __init__(self, iterable: Iterable[Any] | None):
        self._iterable = iterable if iterable is not None else ()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._iterable)

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n: float = 1) -> None:
        return None
