"""User-facing errors: a message with a location, turned into exit code 1 by the tools."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


class NpucError(Exception):
    """An error in the user's input (file, model, option), reported without a traceback."""

    def __init__(self, message: str, location: str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location

    def __str__(self) -> str:
        return (
            f"{self.location}: error: {self.message}" if self.location else f"error: {self.message}"
        )


@contextmanager
def reported_errors(tool: str) -> Iterator[None]:
    """Print user errors (npuc's and xDSL's) as diagnostics and exit 1, without a traceback."""
    from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError

    try:
        yield
    except NpucError as e:
        _fail(tool, str(e))
    except DiagnosticException as e:
        _fail(tool, f"error: {e}" + _failing_op(e))
    except (ParseError, ArgSpecParseError) as e:
        _fail(tool, str(e))
    except (OSError, ValueError) as e:
        _fail(tool, f"error: {e}")
    except KeyboardInterrupt:
        _fail(tool, "interrupted")


def _failing_op(error: Exception) -> str:
    """The op that xDSL marked in the IR it attached to a verifier error, not the whole module."""
    for note in getattr(error, "__notes__", []):
        lines = note.splitlines()
        for i, line in enumerate(lines):
            if i and line.lstrip().startswith("^^^"):
                op = lines[i - 1].strip()
                return f"\n  in: {op if len(op) < 400 else op[:400] + ' ...'}"
    return ""


def _fail(tool: str, text: str) -> None:
    print(f"{tool}: {text}" if not text.startswith(tool) else text, file=sys.stderr)
    raise SystemExit(1)
