"""User errors and what npuc was doing when an error arose.

A user error (NpucError) carries a message and a location; the tools report it as a one-line
diagnostic (npuc/tools/reporting.py). Anything else is a bug in npuc, reported with the stage,
pass, step, op and layer that `working_on`/`note_context` recorded.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any


class NpucError(Exception):
    """An error in the user's input (file, model, option), reported without a traceback."""

    def __init__(self, message: str, location: str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location

    def diagnostic(self) -> str:
        """`LOCATION: error: MESSAGE`, as the tools print it. Control characters in the
        location, and in the message except its indented continuation lines' breaks, are
        escaped: a line break inside a name the message quotes from a model must not cut
        the first line short (docs/robustness.md)."""
        message = _escape_data_breaks(self.message)
        if not self.location:
            return f"error: {message}"
        return f"{_escape(self.location)}: error: {message}"

    def __str__(self) -> str:
        return self.diagnostic()


def _escape(text: str) -> str:
    """`text` with its control characters and Unicode line breaks (NEL, U+2028, U+2029,
    which str.splitlines splits at) escaped, when it has any."""
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in text):
        return text.encode("unicode_escape").decode("ascii")
    return text


def _escape_data_breaks(message: str) -> str:
    """npuc's own continuation lines are indented; any other line break (or control
    character) came from the input's data and is escaped."""
    lines = message.split("\n")
    merged = [lines[0]]
    for line in lines[1:]:
        if line.startswith("  "):
            merged.append(line)
        else:
            merged[-1] += "\n" + line
    return "\n".join(_escape(line) for line in merged)


class KernelError(NpucError):
    """A value the program computes that its kernel cannot handle: a zero divisor, an
    accumulator beyond its range, an index out of bounds. The input data or the IR causes
    it, so it is reported like any user error, with the op or instruction that met it."""


OUT_OF_MEMORY = (
    "out of memory: the input needs more memory than this machine has (each tensor is "
    "checked against --max-tensor-bytes; lower it to refuse such inputs earlier)"
)


class InputError(NpucError):
    """An input array that does not fit the model's input `name` (its shape, dtype or
    values); a tool that read it from a file reports it at that file."""

    def __init__(self, name: str, message: str, location: str | None = None):
        super().__init__(message, location)
        self.input = name


def continuation(*lines: str) -> str:
    """Lines that follow a diagnostic's first line (which is whole on its own): indented,
    so a reader or a script can tell them from the next diagnostic (docs/robustness.md)."""
    return "".join(f"\n  {line}" for line in lines)


def caret(source: str, column: int) -> str:
    """The line of source text and a caret under `column` (1-based), as continuation lines."""
    return continuation(source, " " * max(column - 1, 0) + "^")


def pipeline_error(error: BaseException) -> str:
    """xDSL's error about a pass pipeline (`Error parsing pass pipeline specification:`,
    `pass-pipeline:1:20`, the spec, a caret, the message, on five lines) as one line
    `column C: MESSAGE` and the caret display below it."""
    lines = str(error).rstrip("\n").splitlines()
    if len(lines) >= 5 and lines[1].startswith("pass-pipeline:"):
        column = int(lines[1].rsplit(":", 1)[1]) if lines[1].rsplit(":", 1)[1].isdigit() else 1
        message = " ".join(line.strip() for line in lines[4:] if line.strip())
        return f"column {column}: {message}" + caret(lines[2], column)
    return "; ".join(line.strip() for line in lines if line.strip())


Issue = tuple[str, str, str]  # (op type, op or node name, why it cannot be imported)


def issues_report(groups: Sequence[tuple[str, Sequence[Issue]]]) -> str:
    """Every construct a model import refused, in one message (reported all at once): each
    group (a title such as "unsupported ONNX constructs (3 nodes)" and its issues) bucketed
    by op type and reason. The first line is a whole diagnostic (the first group's title
    and first bucket: the op type, its names, why); further buckets follow on indented
    lines (docs/robustness.md)."""
    lines: list[str] = []
    for title, issues in groups:
        if not issues:
            continue
        buckets: dict[tuple[str, str], list[str]] = {}
        for op_type, name, reason in issues:
            buckets.setdefault((op_type, reason), []).append(name)
        texts = [
            f"{op_type} x{len(names)}: {', '.join(names[:10])}"
            + (f", ... ({len(names) - 10} more)" if len(names) > 10 else "")
            + f" ({reason})"
            for (op_type, reason), names in buckets.items()
        ]
        if not lines:
            lines.append(f"{title}: {texts[0]}")
            lines += [f"  {text}" for text in texts[1:]]
        else:
            lines.append(f"  {title}:")
            lines += [f"    {text}" for text in texts]
    if len(lines) > 1:
        lines[0] += f"; and {len(lines) - 1} more line{'s' * (len(lines) > 2)}:"
    return "\n".join(lines)


@contextmanager
def input_files(files: dict[str, str]) -> Iterator[None]:
    """An InputError about an input read from a file (name -> path) is reported there."""
    try:
        yield
    except InputError as e:
        if e.location is None and e.input in files:
            raise InputError(e.input, e.message, files[e.input]) from None
        raise


@contextmanager
def located(location: str | os.PathLike[str] | None) -> Iterator[None]:
    """An NpucError without a location (a layer's kernel error, a bad value in a model's
    op) is reported at `location`, the file being processed (an InputError is left to
    `input_files`)."""
    try:
        yield
    except NpucError as e:
        if e.location is None and location is not None and not isinstance(e, InputError):
            e.location = os.fspath(location)
        raise
    except MemoryError:
        raise NpucError(OUT_OF_MEMORY, os.fspath(location) if location else None) from None


@contextmanager
def named_file(path: str | os.PathLike[str] | None) -> Iterator[None]:
    """An NpucError whose text starts with `path: ` (a message built as `f"{where}: ..."`)
    is reported at `path`, as a location, so no enclosing `located` renames it."""
    try:
        yield
    except NpucError as e:
        where = os.fspath(path) if path else None
        prefix = f"{where}: " if where else None
        if prefix and e.location is None and e.message.startswith(prefix):
            raise type(e)(e.message.removeprefix(prefix), where) from None
        raise


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

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: object
    ) -> None:
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
            from .locations import describe

            attr = subject.properties.get("name") or subject.attributes.get("name")
            layer = getattr(attr, "data", None)
            if isinstance(layer, str):
                return f"'{subject.name}' (layer '{layer}')"
            where = describe(subject.location)
            return f"'{subject.name}'" + (f" at {where}" if where else "")
        if kind == "pass" and hasattr(subject, "pipeline_pass_spec"):
            return f"'{subject.pipeline_pass_spec()}'"
        return f"'{subject}'" if kind in ("stage", "step") else str(subject)
    except Exception:  # the report must not fail on an object broken by the bug itself
        return repr(subject)


def failing_op(error: Exception) -> str:
    """The op that xDSL marked in the IR it attached to a verifier error, not the whole module."""
    for note in getattr(error, "__notes__", []):
        lines = note.splitlines()
        for i, line in enumerate(lines):
            if i and line.lstrip().startswith("^^^"):
                op = lines[i - 1].strip()
                return f"\n  in: {op if len(op) < 400 else op[:400] + ' ...'}"
    return ""
