"""User errors and internal errors, as the tools report them.

A user error (NpucError, xDSL's parse and verifier errors) is a diagnostic with a
location and exit status 1. Anything else escaping a tool is a bug in npuc: an
internal error, exit status 70 (EX_SOFTWARE), reported with what npuc was doing
(the stage, pass, step, op and layer recorded by `working_on`/`note_context`) and,
with --debug or NPUC_DEBUG=1, the traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

EXIT_USER_ERROR = 1
EXIT_INTERNAL_ERROR = 70  # EX_SOFTWARE (sysexits.h)
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class NpucError(Exception):
    """An error in the user's input (file, model, option), reported without a traceback."""

    def __init__(self, message: str, location: str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location

    def diagnostic(self) -> str:
        """`LOCATION: error: MESSAGE`, as the tools print it."""
        return (
            f"{self.location}: error: {self.message}" if self.location else f"error: {self.message}"
        )

    def __str__(self) -> str:
        return self.diagnostic()


class KernelError(NpucError):
    """A value the program computes that its kernel cannot handle: a zero divisor, an
    accumulator beyond its range, an index out of bounds. The input data or the IR causes
    it, so it is reported like any user error, with the op or instruction that met it."""


class InternalError(Exception):
    """A bug npuc caught itself (a broken invariant): reported as an internal error."""


@contextmanager
def user_file(path: str | os.PathLike[str], action: str = "") -> Iterator[None]:
    """An OSError on a file the user named is theirs to fix: an NpucError at the path."""
    try:
        yield
    except OSError as e:
        reason = e.strerror or str(e)
        message = f"cannot {action}: {reason}" if action else reason
        raise NpucError(message, os.fspath(path)) from None


# --------------------------------------------------------------------------- context


@dataclass(frozen=True, slots=True)
class _Frame:
    """One thing npuc was working on: a kind ("stage", "pass", "step", "op", ...) and what."""

    kind: str
    subject: Any  # formatted only when an error is reported
    outer: _Frame | None


_CURRENT: ContextVar[_Frame | None] = ContextVar("npuc_working_on", default=None)
_CONTEXT_ATTR = "_npuc_context"  # the innermost frame an escaping exception was raised in


class working_on:  # lower case: used like a function, `with working_on("stage", "tile"):`
    """Records what npuc is doing while the block runs; an exception escaping the block
    remembers it (the innermost record wins). Cheap: nothing is formatted unless an
    internal error is reported."""

    __slots__ = ("_frame", "_kind", "_subject", "_token")

    def __init__(self, kind: str, subject: Any):
        self._kind, self._subject = kind, subject

    def __enter__(self) -> None:
        self._frame = _Frame(self._kind, self._subject, _CURRENT.get())
        self._token = _CURRENT.set(self._frame)

    def __exit__(self, kind, error, tb) -> None:
        _CURRENT.reset(self._token)
        if isinstance(error, Exception):
            _remember(error, self._frame)


def note_context(error: BaseException, kind: str, subject: Any) -> None:
    """`working_on` for hot loops: call it from an `except` clause (free until an error)."""
    if isinstance(error, Exception):
        _remember(error, _Frame(kind, subject, _CURRENT.get()))


def _remember(error: Exception, frame: _Frame) -> None:
    if getattr(error, _CONTEXT_ATTR, None) is None:
        with suppress(AttributeError):  # an exception without a __dict__ goes without
            setattr(error, _CONTEXT_ATTR, frame)


def error_context(error: BaseException) -> str:
    """What npuc was working on when `error` was raised, outermost first ('' if unknown)."""
    frame = getattr(error, _CONTEXT_ATTR, None)
    parts: list[str] = []
    while frame is not None:
        parts.append(f"{frame.kind} {_describe(frame.kind, frame.subject)}")
        frame = frame.outer
    return ", ".join(reversed(parts))


def _describe(kind: str, subject: Any) -> str:
    try:
        if kind == "op":  # an xDSL Operation, named by its layer where it has one
            attr = subject.properties.get("name") or subject.attributes.get("name")
            layer = getattr(attr, "data", None)
            return f"'{subject.name}'" + (f" (layer '{layer}')" if isinstance(layer, str) else "")
        if kind == "pass" and hasattr(subject, "pipeline_pass_spec"):
            return f"'{subject.pipeline_pass_spec()}'"
        return f"'{subject}'" if kind in ("stage", "step") else str(subject)
    except Exception:  # the report must not fail on an object broken by the bug itself
        return repr(subject)


# --------------------------------------------------------------------------- reporting


_DEBUG: ContextVar[bool] = ContextVar("npuc_debug", default=False)


class DebugAction(argparse.Action):
    """`--debug`: internal errors print their traceback (for the tool run parsing it)."""

    def __init__(self, option_strings, dest, **kwargs):
        kwargs.setdefault("help", "print the traceback of an internal error (or NPUC_DEBUG=1)")
        super().__init__(option_strings, dest, nargs=0, default=False, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, self.dest, True)
        _DEBUG.set(True)  # reset when the enclosing reported_errors ends


def _debugging() -> bool:
    return _DEBUG.get() or os.environ.get("NPUC_DEBUG", "") not in ("", "0")


@contextmanager
def reported_errors(tool: str) -> Iterator[None]:
    """Report what escapes a tool: user errors exit 1, internal errors 70, Ctrl-C 130."""
    from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError

    token = _DEBUG.set(False)
    try:
        yield
    except NpucError as e:
        _fail(tool, e.diagnostic())
    except DiagnosticException as e:
        _fail(tool, f"error: {e}" + _failing_op(e))
    except (ParseError, ArgSpecParseError) as e:
        _fail(tool, str(e))
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
    except Exception as e:
        _internal_error(tool, e)
    finally:
        _DEBUG.reset(token)


def _internal_error(tool: str, error: Exception) -> None:
    debug = _debugging()
    if debug:
        traceback.print_exception(error, file=sys.stderr)
    message = str(error)
    lines = [f"{tool}: internal error: {type(error).__name__}" + (f": {message}" * bool(message))]
    context = error_context(error)
    if context:
        lines.append(f"  while working on: {context}")
    if not debug:
        lines.append("rerun with --debug (or NPUC_DEBUG=1) for the traceback")
    print("\n".join(lines), file=sys.stderr)
    raise SystemExit(EXIT_INTERNAL_ERROR) from None


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
    raise SystemExit(EXIT_USER_ERROR)
