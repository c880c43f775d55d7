"""The axes a sweep varies besides models and targets: npu-compile's own options, read and
checked by npu-compile's argparse definition and `check_options`, a pass pipeline (the
optimise stage's), and fields of the target description, overridden by name.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from ..compile_flow import CompileOptions, check_options
from ..diagnostics import NpucError
from ..target import Host, MacArray, Memory, load_target, parse_target

PIPELINE = "pipeline"
# npu-compile's options that say where and how to write or what to refuse, not what to compile.
NOT_AXES = {
    "max_tensor_bytes",
    "help",
    "model",
    "target",
    "list_targets",
    "config",
    "output_dir",
    "quiet",
    "debug",
    "version",
    "compare_vela",
    "show_host_ops",
    "name",
}
# `sram_size` and the like: a field of the memory that holds a target's activation arena.
SRAM_PREFIX = "sram_"


class AxisError(NpucError):
    """A bad axis: `key` as the sweep file names it."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


class OptionAxes:
    """npu-compile's parser, turned into CompileOptions for one point's option values."""

    def __init__(self) -> None:
        from ..tools.npu_compile import build_parser

        self.parser = build_parser()
        self.parser.error = self._refuse  # type: ignore[method-assign]
        self.actions = {
            a.dest: a for a in self.parser._actions if a.option_strings and a.dest not in NOT_AXES
        }

    @staticmethod
    def _refuse(message: str) -> NoReturn:
        raise NpucError(message)

    def action(self, key: str) -> argparse.Action:
        action = self.actions.get(key.replace("-", "_"))
        if action is None:
            flags = ", ".join(sorted(a.option_strings[-1][2:] for a in self.actions.values()))
            raise AxisError(key, f"not an npu-compile option (axes: {PIPELINE}, {flags})")
        return action

    def check(self, key: str, values: list[Any]) -> list[Any]:
        """The values of an option axis, each checked as npu-compile checks its flag."""
        if key == PIPELINE:
            from ..pipeline import parse_pipeline

            for value in values:
                if not isinstance(value, str):
                    raise AxisError(key, f"expected a pass pipeline string, got {value!r}")
                if value != "default":
                    self._checked(key, parse_pipeline, value)
            return values
        action = self.action(key)
        for value in values:
            self._check_type(key, action, value)
            self._checked(key, self.options, Path("model"), "target", {key: value})
        return values

    @staticmethod
    def _checked(key: str, check: Callable[..., object], *args: Any) -> None:
        try:
            check(*args)
        except NpucError as e:
            raise AxisError(key, e.message) from None

    @staticmethod
    def _check_type(key: str, action: argparse.Action, value: object) -> None:
        if action.nargs == 0:
            expected, ok = "true or false", isinstance(value, bool)
        elif action.type is int:
            expected, ok = "an integer", isinstance(value, int) and not isinstance(value, bool)
        elif isinstance(action.default, list):  # repeatable (action='append')
            expected = "a string or a list of strings"
            items = value if isinstance(value, list) else [value]
            ok = all(isinstance(v, str) for v in items)
        else:
            expected, ok = "a string", isinstance(value, str)
        if not ok:
            raise AxisError(key, f"expected {expected}, got {value!r}")

    def check_combination(self, keys: list[str]) -> None:
        """Options npu-compile refuses together (its mutually exclusive groups)."""
        for group in self.parser._mutually_exclusive_groups:
            dests = {a.dest for a in group._group_actions}
            both = [k for k in keys if k != PIPELINE and self.action(k).dest in dests]
            if len(both) > 1:
                raise AxisError(both[-1], f"npu-compile takes one of {' and '.join(both)}")

    def argv(self, values: dict[str, Any]) -> list[str]:
        """npu-compile's flags for option values (the pipeline is not a flag)."""
        flags: list[str] = []
        for key, value in values.items():
            if key == PIPELINE:
                continue
            flag = self.action(key).option_strings[-1]
            if isinstance(value, bool):
                flags += [flag] if value else []
            else:
                for item in value if isinstance(value, list) else [value]:
                    flags += [flag, str(item)]
        return flags

    def options(self, model: Path, target: str, values: dict[str, Any]) -> CompileOptions:
        """The CompileOptions npu-compile would build for these option values."""
        from ..tools.npu_compile import options_from

        argv = [str(model), "--target", target, "-o", "sweep", *self.argv(values)]
        options = options_from(self.parser.parse_args(argv))
        pipeline = values.get(PIPELINE, "default")
        options.pipeline = None if pipeline == "default" else pipeline
        check_options(options)
        return options


def _field_names(kind: type) -> set[str]:
    return {f.name for f in dataclasses.fields(kind)} - {"name", "path"}


def field_path(key: str, data: dict[str, Any]) -> list[str]:
    """The TOML path of a target field (`clock_mhz`, `mac_array.pixels`,
    `memories.flash.bus_width`, `sram_size`), or an AxisError naming the fields."""
    if key.startswith(SRAM_PREFIX):
        path = ["memories", data["placement"]["arena"], key.removeprefix(SRAM_PREFIX)]
    else:
        path = key.split(".")
    tables: dict[str, set[str]] = {
        "mac_array": _field_names(MacArray),
        "host": _field_names(Host),
        **{f"memories.{m}": _field_names(Memory) for m in data["memories"]},
    }
    scalars = {"clock_mhz", "alignment", "dma_channels"}
    head, leaf = ".".join(path[:-1]), path[-1]
    if (not head and leaf in scalars) or leaf in tables.get(head, ()):
        return path
    known = sorted(scalars) + [f"{t}.{f}" for t, fs in tables.items() for f in sorted(fs)]
    known += [SRAM_PREFIX + f for f in sorted(_field_names(Memory))]
    raise AxisError(key, f"not a target field (fields: {', '.join(known)})")


def target_data(name: str) -> dict[str, Any]:
    """The parsed TOML of a target (shipped, a plugin's, or a file)."""
    path = load_target(name).path
    assert path is not None
    return tomllib.loads(path.read_text(encoding="utf-8"))


def with_fields(data: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """A target's TOML with fields overridden."""
    data = copy.deepcopy(data)
    for key, value in fields.items():
        *tables, leaf = field_path(key, data)
        table = data
        for name in tables:
            table = table.setdefault(name, {})
        table[leaf] = value
    return data


def check_target_fields(targets: list[str], fields: dict[str, list[Any]]) -> None:
    """Every field exists in every target and every value is one the target accepts."""
    for target in targets:
        data = target_data(target)
        for key, values in fields.items():
            for value in values:
                try:
                    parse_target(with_fields(data, {key: value}))
                except AxisError:
                    raise
                except NpucError as e:
                    raise AxisError(key, f"{target}: {e.message}") from None


def toml_text(data: dict[str, Any]) -> str:
    """A target's data as TOML (scalars, lists of scalars and nested tables: what a target
    file holds), written for the tile and plan-memory passes, which read targets by path."""
    lines: list[str] = []

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(str(v))

    def table(prefix: str, t: dict[str, Any]) -> None:
        scalars = {k: v for k, v in t.items() if not isinstance(v, dict)}
        if prefix:
            lines.append(f"[{prefix}]")
        lines.extend(f"{json.dumps(k)} = {value(v)}" for k, v in scalars.items())
        for k, v in t.items():
            if isinstance(v, dict):
                table(f"{prefix}.{json.dumps(k)}" if prefix else json.dumps(k), v)

    table("", data)
    return "\n".join(lines) + "\n"
