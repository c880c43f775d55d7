"""What a plugin gives npuc (`Plugin`), and how a fault in a plugin's code is reported.

A plugin is a `Plugin` value: entries for npuc's tables, under the keys npuc looks them up
with. npuc never copies them into its own tables; each consumer asks the plugin registry
(npuc/plugin_registry.py) when its own table has no entry. docs/plugins.md shows how to
write one.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .diagnostics import NpucError

#: The TFLite arithmetic kinds a converter is keyed by (frontends/tflite_converters.py).
TFLITE_KINDS = ("float", "int8", "int16x8")


@dataclass(frozen=True)
class QuantizationRule:
    """How the `quantize` pass turns a plugin's float op into its integer op.

    `rule` takes a `QuantizeRequest` (npuc.plugin_api) and returns the integer op, not yet
    inserted, whose results stand for the float op's; `quantized_op` names that op (its
    kernel must be in the plugin's `kernels`); layers at other widths than `bits` stay
    float.
    """

    quantized_op: str
    rule: Callable[..., Any]
    bits: tuple[int, ...] = (8,)


@dataclass(frozen=True)
class Plugin:
    """Everything one plugin provides; each table is optional.

    Op names (keys of `kernels`, `quantization`, `lowerings`, `lowering_supports`,
    `host_costs`) belong to the plugin's dialect, whose namespace is the plugin's name.
    """

    description: str = ""
    #: Loads the plugin's xDSL dialect (named like the plugin).
    dialect: Callable[[], Any] | None = None
    #: (ONNX domain, op type) -> converter(NodeContext) -> result values.
    onnx_converters: Mapping[tuple[str, str], Callable[..., Any]] = field(default_factory=dict)
    #: (TFLite custom code, "float" | "int8" | "int16x8") -> converter(OpContext).
    tflite_converters: Mapping[tuple[str, str], Callable[..., Any]] = field(default_factory=dict)
    #: op name -> reference kernel (op, [numpy arrays]) -> [numpy arrays], float or integer.
    kernels: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    #: float op name -> how it is quantized.
    quantization: Mapping[str, QuantizationRule] = field(default_factory=dict)
    #: integer op name -> NPU lowering rule (Builder, op) -> None.
    lowerings: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    #: op name -> which instances its lowering covers (the others run on the host).
    lowering_supports: Mapping[str, Callable[..., bool]] = field(default_factory=dict)
    #: op name -> its work on the host CPU, in multiply-accumulates (the cycle model's unit).
    host_costs: Mapping[str, Callable[..., int]] = field(default_factory=dict)
    #: pass name -> the ModulePass class (a function returning it, imported when used).
    passes: Mapping[str, Callable[[], Any]] = field(default_factory=dict)
    #: target description files (TOML, docs/targets.md); a target is named by its file.
    targets: Sequence[str | os.PathLike[str]] = ()


class PluginError(NpucError):
    """A plugin that cannot be loaded, or whose code failed: reported naming the plugin."""

    def __init__(self, plugin: str, message: str, location: str | None = None):
        super().__init__(f"plugin '{plugin}': {message}", location)
        self.plugin = plugin


def missing_plugin(op: str, installed: Sequence[str]) -> str:
    """The diagnostic for an op no plugin provides, e.g. `op 'com.example::SoftClip' ...`."""
    names = ", ".join(installed) if installed else "none"
    return f"op '{op}' needs a plugin that provides it; installed plugins: {names}"


def missing_plugins_report(ops: Sequence[str], installed: Sequence[str], report: str) -> str:
    """One diagnostic for a model import: the ops no plugin provides (`missing_plugin`), then
    `report` (diagnostics.issues_report of what else was refused). The first line is a whole
    diagnostic; the rest follows on indented lines."""
    lines = [missing_plugin(op, installed) for op in ops]
    lines += [f"  {line}" for line in report.splitlines()] if lines else report.splitlines()
    if ops and len(lines) > 1:
        lines = [f"{lines[0]}; and {len(lines) - 1} more line{'s' * (len(lines) > 2)}:"] + [
            line if line.startswith("  ") else f"  {line}" for line in lines[1:]
        ]
    return "\n".join(lines)


@contextmanager
def plugin_code(
    plugin: str,
    what: str,
    home: str | None = None,
    passthrough: tuple[type[BaseException], ...] = (),
) -> Iterator[None]:
    """Run a plugin's code: an exception it did not mean to raise becomes a PluginError
    saying `what` failed, located at the plugin's deepest frame under `home` (its folder).
    NpucErrors (a plugin's own diagnostics) and `passthrough` exceptions go through."""
    expected: tuple[type[BaseException], ...] = (NpucError, MemoryError, *passthrough)
    try:
        yield
    except expected:
        raise
    except Exception as e:
        text = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        raise PluginError(plugin, f"{what} failed: {text}", _where(e, home)) from e


def _where(error: BaseException, home: str | None) -> str | None:
    if home is None:
        return None
    frames = [f for f in traceback.extract_tb(error.__traceback__) if _under(f.filename, home)]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else home


def _under(path: str, home: str) -> bool:
    try:
        return Path(path).resolve().is_relative_to(Path(home).resolve())
    except (OSError, ValueError):
        return False
