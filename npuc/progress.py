"""A dependency-free progress line on stderr for long loops (calibration, evaluation).

On a terminal the line is redrawn in place (`\\r`) with the count, the percentage,
the rate and the estimated time left; elsewhere (a pipe, a log file, CI) nothing
is written until the loop ends, and then a single summary line.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Counts steps of a loop of `total` steps (None when unknown) under `label`.

    Use as a context manager and call `advance()` after each step. `enabled=False`
    writes nothing at all. `stream` defaults to `sys.stderr`; redraws are limited to
    one every `interval` seconds.
    """

    def __init__(
        self,
        total: int | None,
        label: str,
        *,
        unit: str = "it",
        enabled: bool = True,
        stream: TextIO | None = None,
        interval: float = 0.1,
    ):
        self.total = total
        self.label = label
        self.unit = unit
        self.enabled = enabled
        self.stream = stream
        self.interval = interval
        self.count = 0
        self._start = 0.0
        self._last_draw = 0.0
        self._width = 0

    @property
    def _out(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stderr

    @property
    def interactive(self) -> bool:
        isatty = getattr(self._out, "isatty", None)
        return bool(self.enabled and isatty is not None and isatty())

    def __enter__(self) -> Progress:
        self._start = time.perf_counter()
        self._last_draw = 0.0
        if self.interactive:
            self._draw()
        return self

    def advance(self, steps: int = 1) -> None:
        """Record `steps` finished steps and redraw if the last redraw is old enough."""
        self.count += steps
        now = time.perf_counter()
        if self.interactive and (
            now - self._last_draw >= self.interval or self.count == self.total
        ):
            self._draw(now)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self._start
        rate = self.count / elapsed if elapsed > 0 else 0.0
        done = f"{self.count}" if self.total is None else f"{self.count}/{self.total}"
        status = "stopped after" if exc_type is not None else "done:"
        summary = (
            f"{self.label}: {status} {done} {self.unit} in {_duration(elapsed)} "
            f"({rate:.2f} {self.unit}/s)"
        )
        out = self._out
        if self.interactive:
            out.write("\r" + summary.ljust(self._width) + "\n")
        else:
            out.write(summary + "\n")
        out.flush()

    def line(self, now: float | None = None) -> str:
        """The progress line as it is drawn now."""
        now = time.perf_counter() if now is None else now
        elapsed = now - self._start
        rate = self.count / elapsed if elapsed > 0 else 0.0
        parts = [self.label]
        if self.total is None:
            parts.append(f"{self.count} {self.unit}")
        else:
            percent = 100.0 * self.count / self.total if self.total else 100.0
            parts.append(f"{self.count}/{self.total} {self.unit} {percent:3.0f}%")
        parts.append(f"{rate:.2f} {self.unit}/s")
        if self.total is not None and rate > 0:
            parts.append(f"ETA {_duration((self.total - self.count) / rate)}")
        return "  ".join(parts)

    def _draw(self, now: float | None = None) -> None:
        now = time.perf_counter() if now is None else now
        self._last_draw = now
        text = self.line(now)
        self._out.write("\r" + text.ljust(self._width))
        self._out.flush()
        self._width = max(self._width, len(text))
