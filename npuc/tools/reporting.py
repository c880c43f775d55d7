"""How the tools end on an error: a user error (NpucError, xDSL's parse and verifier errors, an
OSError on a file the user named, running out of memory) and a plugin's fault (PluginError,
its traceback with --debug) are a one-line diagnostic and exit status 1; anything else
escaping a tool is a bug in npuc, an internal error with exit status 70 (EX_SOFTWARE),
reported with what npuc was doing (npuc/diagnostics.py's `working_on` and `note_context`)
and, with --debug or NPUC_DEBUG=1, the traceback.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from xdsl.utils.exceptions import ParseError
    from xdsl.utils.lexer import Span

from ..diagnostics import (
    OUT_OF_MEMORY,
    NpucError,
    caret,
    continuation,
    error_context,
    failing_op,
    pipeline_error,
)
from ..limits import tensor_limit
from ..plugins import PluginError

EXIT_USER_ERROR = 1


EXIT_INTERNAL_ERROR = 70  # EX_SOFTWARE (sysexits.h)


EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


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
    token = _DEBUG.set(False)
    try:
        with tensor_limit(None):  # --max-tensor-bytes holds for this run only
            yield
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
    except Exception as e:
        if isinstance(e, PluginError) and _debugging() and e.__cause__ is not None:
            traceback.print_exception(e.__cause__, file=sys.stderr)  # the plugin's fault
        text = user_error_text(e)
        if text is None:
            _internal_error(tool, e)
        _fail(tool, text)
    finally:
        _DEBUG.reset(token)


def finish(status: int, argv: list[str] | None) -> NoReturn:
    """End a tool's successful run with `status`. Run as the command (`argv` None: the
    process's own arguments), the process ends once the exit handlers have run and the
    output is flushed, without the interpreter's teardown: that collects and frees every
    object of the IR one by one, 0.8 s of a 1000-layer chain's compile and 8 % of a small
    model's. Called with `argv` (tests, scripts) or under a tracer or profiler (coverage and
    cProfile save their data after the program returns), it raises SystemExit as sys.exit
    does."""
    if argv is not None or _traced():
        sys.exit(status)
    atexit._run_exitfuncs()  # multiprocessing's and tempfile's clean-ups
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: what the interpreter's exit reports
            status = status or 120
    os._exit(status)


def _traced() -> bool:
    coverage = sys.modules.get("coverage")
    return (
        sys.gettrace() is not None  # coverage, a debugger
        or sys.getprofile() is not None  # cProfile, which writes its file after main returns
        or (coverage is not None and coverage.Coverage.current() is not None)
    )


def user_error_text(error: Exception) -> str | None:
    """The diagnostic of a user error (`[LOCATION: ]error: MESSAGE`), None for a bug in npuc."""
    from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError

    if isinstance(error, PluginError | NpucError):
        return error.diagnostic()
    if isinstance(error, DiagnosticException):
        return f"error: {error}" + failing_op(error)
    if isinstance(error, ParseError):
        return parse_error_diagnostic(error)
    if isinstance(error, ArgSpecParseError):
        return f"error: {pipeline_error(error)}"
    if isinstance(error, OSError):
        if error.filename is None:
            return None
        # The file system refused a path (too long, a loop, no permission): the user's to fix.
        return NpucError(error.strerror or str(error), os.fsdecode(error.filename)).diagnostic()
    if isinstance(error, MemoryError):  # resources, not a bug: the input asked for too much
        context = error_context(error)
        return f"error: {OUT_OF_MEMORY}" + (f"\n  while working on: {context}" * bool(context))
    return None


def report_user_error(tool: str, text: str) -> None:
    """Print a user error's diagnostic on stderr, as the tools do (without exiting)."""
    print(f"{tool}: {text}" if not text.startswith(tool) else text, file=sys.stderr)


def parse_error_diagnostic(error: ParseError) -> str:
    """`FILE:LINE:COL: error: MESSAGE`, then the line and a caret under the span (xDSL prints
    the location alone on the first line); a MultipleSpansParseError's other spans follow
    as notes."""
    from xdsl.utils.exceptions import MultipleSpansParseError

    message = error.msg.strip()
    if not message or error.msg.startswith(" "):  # xDSL's " in block definition" says no more
        token = error.span.text
        if isinstance(token, bytes):
            token = token.decode(errors="replace")
        found = f"'{token}'" if token.strip() else "the end of a line or of the input"
        message = f"unexpected {found}" + (f" {message}" if message else "")
    text = _span_diagnostic(error.span, f"error: {message}")
    if isinstance(error, MultipleSpansParseError):
        for span, message in error.refs:
            text += continuation(_span_diagnostic(span, f"note: {message or ''}".rstrip()))
    return text


def _span_diagnostic(span: Span, message: str) -> str:
    source = span.input.content
    start = span.input.get_start_of_line(span.start)
    end = span.input.get_end_of_line(span.start)
    line = source[start:end]
    if isinstance(line, bytes):
        line = line.decode(errors="replace")
    return f"{span.get_location()}: {message}" + caret(line, span.start - start + 1)


def _internal_error(tool: str, error: Exception) -> NoReturn:
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


def _fail(tool: str, text: str) -> NoReturn:
    report_user_error(tool, text)
    raise SystemExit(EXIT_USER_ERROR)
