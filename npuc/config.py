"""`npu-compile --config FILE`: a TOML file holding every option the flags hold.

`[build]` holds the driver's options (model, target, optimise, scheme, calib or
calib_random, tiling, name, output, input_shape); `[run]` the options of running the
compiled program (input, output, profile, json, dump_tensors). Relative paths are
relative to the file. Flags given on the command line override the file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .diagnostics import NpucError

#: key -> (type, is a path) per section
BUILD_KEYS: dict[str, tuple[type | tuple[type, ...], bool]] = {
    "model": (str, True),
    "target": (str, False),
    "optimise": (str, False),
    "scheme": (str, False),
    "calib": (str, True),
    "calib_random": (int, False),
    "tiling": (str, False),
    "host_fallback": (bool, False),
    "name": (str, False),
    "output": (str, True),
    "input_shape": (list, False),
}
RUN_KEYS: dict[str, tuple[type | tuple[type, ...], bool]] = {
    "input": (dict, False),
    "output": (str, True),
    "profile": (bool, False),
    "json": (str, True),
    "dump_tensors": (str, False),
}
SECTIONS = {"build": BUILD_KEYS, "run": RUN_KEYS}


def read_toml(path: Path, what: str) -> tuple[str, dict[str, Any]]:
    """The text and the parsed TOML of `what` (e.g. "target file") at `path`; an NpucError
    naming the file if it cannot be read or parsed."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise NpucError(f"cannot read {what}: {e.strerror or e}", str(path)) from None
    except UnicodeDecodeError as e:
        raise NpucError(f"{what} is not UTF-8 text: {e.reason}", str(path)) from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise NpucError(f"invalid TOML: {e}", str(path)) from None


def read_config(path: str | Path) -> dict[str, dict[str, Any]]:
    """The checked sections of a config file, paths resolved against its folder."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise NpucError("no such config file", str(path)) from None
    except OSError as e:
        raise NpucError(f"cannot read the config file: {e.strerror or e}", str(path)) from None
    except UnicodeDecodeError as e:
        raise NpucError(
            f"not a valid TOML file: not UTF-8 text ({e.reason} at byte {e.start})", str(path)
        ) from None
    except tomllib.TOMLDecodeError as e:
        raise NpucError(f"not a valid TOML file: {e}", str(path)) from None
    unknown = sorted(set(data) - set(SECTIONS))
    if unknown:
        raise NpucError(f"unknown section [{unknown[0]}] (known: build, run)", str(path))
    return {name: _section(path, name, data.get(name, {}), keys) for name, keys in SECTIONS.items()}


def _section(
    path: Path, name: str, values: object, keys: Mapping[str, tuple[Any, bool]]
) -> dict[str, Any]:
    if not isinstance(values, dict):
        raise NpucError(f"[{name}] must be a table", str(path))
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key not in keys:
            known = ", ".join(sorted(keys))
            raise NpucError(f"unknown key '{name}.{key}' (known: {known})", str(path))
        kind, is_path = keys[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise NpucError(f"'{name}.{key}' must be {_kind(kind)}, got {value!r}", str(path))
        if key == "input":
            value = {k: str(_resolve(path, v, f"{name}.input.{k}")) for k, v in value.items()}
        elif key == "input_shape" and not all(isinstance(v, str) for v in value):
            raise NpucError(f"'{name}.input_shape' must list 'NAME:D0,D1,...' strings", str(path))
        out[key] = str(_resolve(path, value, f"{name}.{key}")) if is_path else value
    return out


def _resolve(path: Path, value: object, key: str) -> Path:
    if not isinstance(value, str):
        raise NpucError(f"'{key}' must be a string path, got {value!r}", str(path))
    p = Path(value)
    return p if p.is_absolute() else path.parent / p


def _kind(kind: object) -> str:
    names = {str: "a string", int: "an integer", bool: "a boolean", list: "a list", dict: "a table"}
    return names.get(kind, str(kind))  # type: ignore[call-overload]
