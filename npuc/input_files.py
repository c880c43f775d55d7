"""Reading files the user names: every way a file can be unreadable is a diagnostic at it."""

from __future__ import annotations

import json
import os
import tokenize
import zipfile
from typing import Any

from .diagnostics import NpucError

#: What numpy's .npy/.npz readers raise on a corrupt file: its header is a Python literal
#: (read with tokenize and ast), an .npz a zip archive, a memory map may not fit the file.
ARRAY_FILE_ERRORS = (
    OSError,
    ValueError,
    EOFError,
    KeyError,
    TypeError,
    SyntaxError,
    OverflowError,
    MemoryError,
    RecursionError,
    NotImplementedError,
    tokenize.TokenError,
    zipfile.BadZipFile,
)


def array_file_error(error: BaseException) -> str:
    """What numpy's failure to read an .npy/.npz file says about the file, in words (the
    header parser's TokenError reads `('EOF in multi-line statement', (2, 0))`)."""
    if isinstance(error, tokenize.TokenError | SyntaxError):
        return "its header is not a valid .npy header (a Python dict literal)"
    if isinstance(error, EOFError):
        return "the file ends before its data (truncated)"
    if isinstance(error, MemoryError):
        return "its data would not fit in memory"
    if isinstance(error, RecursionError):
        return "its header is nested too deeply"
    if isinstance(error, zipfile.BadZipFile):
        return f"a corrupt .npz (zip) archive ({_first_line(error) or 'unreadable'})"
    return _first_line(error) or "the file cannot be decoded"


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def read_json(path: str | os.PathLike[str], what: str, **options: Any) -> Any:
    """The JSON document in `path` (`options` go to json.loads); `what` names the kind of
    file in messages ("a ranges file")."""
    location = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise NpucError(e.strerror or str(e), location) from None
    except UnicodeDecodeError:
        raise NpucError(f"not {what}: not UTF-8 text", location) from None
    try:
        return json.loads(text, **options)
    except json.JSONDecodeError as e:
        raise NpucError(
            f"not {what}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}", location
        ) from None
    except RecursionError:
        raise NpucError(f"not {what}: JSON nested too deeply", location) from None
    except ValueError as e:  # a parse_constant hook's refusal (NaN, Infinity)
        raise NpucError(f"not {what}: {e}", location) from None
