"""Finding and loading plugins, and the look-ups npuc's consumers make when their tables miss.

Plugins are found, without importing them, as the entry points of the `npuc.plugins` group
(the entry point's name is the plugin's name) and as the modules in the folders of
`NPUC_PLUGIN_PATH` (a module `NAME.py` or a package `NAME/` is plugin NAME; names starting
with `_` are helpers). `NPUC_NO_PLUGIN_ENTRY_POINTS=1` ignores the installed entry points.

A plugin is imported the first time npuc needs something it may provide:

- an op of dialect namespace NAME (a kernel, a quantization rule, a lowering, a host
  cost, or parsing `NAME.op` in IR) loads plugin NAME only;
- an ONNX op, TFLite custom code, pass or target that npuc lacks loads every plugin, since
  any of them may provide it.

Never at `import npuc`. A plugin that fails to load is a PluginError naming it.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .entry_points import entry_points
from .plugins import TFLITE_KINDS, Plugin, PluginError, QuantizationRule, plugin_code

ENTRY_POINT_GROUP = "npuc.plugins"
PATH_VARIABLE = "NPUC_PLUGIN_PATH"
NO_ENTRY_POINTS_VARIABLE = "NPUC_NO_PLUGIN_ENTRY_POINTS"
#: npuc's own dialect namespaces (dialects/context.py): no plugin may take these names.
RESERVED_NAMES = frozenset({"builtin", "func", "arith", "nn", "qnn", "tile", "mem", "npu"})
#: The tables keyed by op names of the plugin's dialect.
OP_TABLES = ("kernels", "quantization", "lowerings", "lowering_supports", "host_costs")


@dataclass(frozen=True)
class Found:
    """A plugin found but not yet imported."""

    name: str
    origin: str  # "entry point MODULE:ATTR (DIST VERSION)" or the module's path
    module: str  # the module it is imported from
    load: Callable[[], object]
    problem: str | None = None  # why it cannot be used, known before importing it


@dataclass(frozen=True)
class Loaded:
    name: str
    origin: str
    plugin: Plugin
    home: str | None  # the plugin's source folder (or file): where its faults are located


class Registry:
    """The plugins of one environment, each imported on first use."""

    def __init__(self, found: list[Found]):
        self.found = {f.name: f for f in found}
        self._loaded: dict[str, Loaded | PluginError] = {}
        self._index: dict[tuple[str, object], str] | None = None

    @property
    def names(self) -> list[str]:
        return sorted(self.found)

    def load(self, name: str) -> Loaded:
        """Plugin `name`, imported and checked (a PluginError if it is broken)."""
        if name not in self._loaded:
            try:
                self._loaded[name] = _load(self.found[name])
            except PluginError as e:
                self._loaded[name] = e
        result = self._loaded[name]
        if isinstance(result, PluginError):
            raise result
        return result

    def load_all(self) -> list[Loaded]:
        return [self.load(name) for name in self.names]

    def op_entry(self, table: str, op_name: str) -> tuple[Loaded, Any] | None:
        """The entry for `op_name` in a table of the plugin named by the op's namespace."""
        namespace = op_name.partition(".")[0]
        if namespace in RESERVED_NAMES or namespace not in self.found:
            return None
        loaded = self.load(namespace)
        entry = getattr(loaded.plugin, table).get(op_name)
        return None if entry is None else (loaded, entry)

    def entry(self, table: str, key: object) -> tuple[Loaded, Any] | None:
        """The entry for `key` in `table` of whichever plugin provides it (all loaded)."""
        if self._index is None:
            self._index = _index(self.load_all())
        owner = self._index.get((table, key))
        if owner is None:
            return None
        loaded = self.load(owner)
        return loaded, _table(loaded.plugin, table)[key]

    def keys(self, table: str) -> list[object]:
        """Every key the plugins provide in `table` (all loaded)."""
        if self._index is None:
            self._index = _index(self.load_all())
        return [key for t, key in self._index if t == table]


@functools.lru_cache(maxsize=8)
def _registry(path: str, entry_points_off: bool) -> Registry:
    found: list[Found] = []
    if not entry_points_off:
        found += _entry_point_plugins()
    for folder in filter(None, path.split(os.pathsep)):
        found += _path_plugins(Path(folder))
    names = [f.name for f in found]
    for name in sorted({n for n in names if names.count(n) > 1}):
        same = [f for f in found if f.name == name]
        problem = "two plugins have this name: " + " and ".join(f.origin for f in same)
        found = [f for f in found if f.name != name] + [replace(same[0], problem=problem)]
    return Registry(found)


def registry() -> Registry:
    """The plugins of this process's environment (NPUC_PLUGIN_PATH, the entry points)."""
    off = os.environ.get(NO_ENTRY_POINTS_VARIABLE, "") not in ("", "0")
    return _registry(os.environ.get(PATH_VARIABLE, ""), off)


def plugin_names() -> list[str]:
    """The names of the plugins found (none imported)."""
    return registry().names


# --------------------------------------------------------------------------- look-ups


def op_function(
    table: str,
    op_name: str,
    what: str,
    passthrough: tuple[type[BaseException], ...] = (),
) -> Callable[..., Any] | None:
    """A plugin's function for `op_name` in `table`, guarded: a fault in it names the
    plugin and `what` (e.g. "the kernel of 'example.qsoft_clip'"); `passthrough`
    exceptions are the ones the caller expects from it."""
    found = op_entry(table, op_name)
    if found is None:
        return None
    return guarded(found[0], found[1], what, passthrough)


def op_entry(table: str, op_name: str) -> tuple[Loaded, Any] | None:
    """`Registry.op_entry` of this environment (npuc's own ops answer None at once)."""
    if op_name.partition(".")[0] in RESERVED_NAMES:
        return None
    return registry().op_entry(table, op_name)


def guarded(
    loaded: Loaded,
    function: Callable[..., Any],
    what: str,
    passthrough: tuple[type[BaseException], ...] = (),
) -> Callable[..., Any]:
    """`function` of plugin `loaded`, its unexpected exceptions reported as PluginErrors."""

    def call(*args: Any, **kwargs: Any) -> Any:
        with plugin_code(loaded.name, what, loaded.home, passthrough):
            return function(*args, **kwargs)

    return call


def quantization_rule(op_name: str) -> tuple[Loaded, QuantizationRule] | None:
    found = op_entry("quantization", op_name)
    return None if found is None else (found[0], found[1])


def is_plugin_op(op_name: str) -> bool:
    """Whether `op_name` belongs to a plugin's namespace (nothing is imported)."""
    namespace = op_name.partition(".")[0]
    return namespace not in RESERVED_NAMES and namespace in registry().found


def onnx_converter(domain: str, op_type: str) -> tuple[Loaded, Callable[..., Any]] | None:
    domain = "" if domain == "ai.onnx" else domain
    return registry().entry("onnx_converters", (domain, op_type))


def tflite_converters(code: str) -> dict[str, tuple[Loaded, Callable[..., Any]]]:
    """A TFLite custom code's plugin converters by kind ("float", "int8", "int16x8")."""
    found = {}
    for kind in TFLITE_KINDS:
        entry = registry().entry("tflite_converters", (code, kind))
        if entry is not None:
            found[kind] = entry
    return found


def pass_factory(name: str) -> Callable[[], Any] | None:
    """A plugin's pass by name, as npu-opt's pass table holds passes (a loader of the class)."""
    found = registry().entry("passes", name)
    if found is None:
        return None
    loaded, factory = found

    def load() -> Any:
        from xdsl.passes import ModulePass

        with plugin_code(loaded.name, f"loading pass '{name}'", loaded.home):
            cls = factory()
        if not (isinstance(cls, type) and issubclass(cls, ModulePass)) or cls.name != name:
            raise PluginError(
                loaded.name, f"pass '{name}' must be a ModulePass class named '{name}'"
            )
        return cls

    return load


def pass_owner(name: str) -> Loaded | None:
    """The plugin that provides pass `name`, if npuc does not (plugins loaded only when one
    provides a pass)."""
    if not registry().found:
        return None
    found = registry().entry("passes", name)
    return None if found is None else found[0]


def target_file(name: str) -> Path | None:
    found = registry().entry("targets", name)
    return None if found is None else found[1]


def target_names() -> list[str]:
    return sorted(str(k) for k in registry().keys("targets"))


def dialect_loader(name: str) -> Callable[[], Any]:
    """The loader xDSL's Context calls for dialect namespace `name` (plugin `name`'s)."""

    def load() -> Any:
        loaded = registry().load(name)
        if loaded.plugin.dialect is None:
            raise PluginError(name, f"ops of namespace '{name}' need a dialect; it defines none")
        with plugin_code(name, "loading its dialect", loaded.home):
            dialect = loaded.plugin.dialect()
        if getattr(dialect, "name", None) != name:
            raise PluginError(
                name, f"its dialect must take the plugin's name '{name}', not {dialect.name!r}"
            )
        return dialect

    return load


# --------------------------------------------------------------------------- finding


def _entry_point_plugins() -> list[Found]:
    found = []
    for ep in entry_points(ENTRY_POINT_GROUP):
        origin = f"entry point {ep.value} ({ep.dist_name} {ep.dist_version})"
        found.append(Found(ep.name, origin, ep.module, ep.load, _name_problem(ep.name)))
    return found


def _path_plugins(folder: Path) -> list[Found]:
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith(("_", ".")):
            continue
        if path.suffix == ".py" and path.is_file():
            name = path.stem
        elif path.is_dir() and (path / "__init__.py").is_file():
            name = path.name
        else:
            continue
        loader = _path_loader(folder, name)
        found.append(Found(name, str(path), name, loader, _name_problem(name)))
    return found


def _path_loader(folder: Path, module: str) -> Callable[[], object]:
    def load() -> object:
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
        loaded = importlib.import_module(module)
        if not hasattr(loaded, "plugin"):
            raise AttributeError(f"module '{module}' defines no `plugin`")
        return loaded.plugin

    return load


def _name_problem(name: str) -> str | None:
    if name in RESERVED_NAMES:
        return f"the name '{name}' is one of npuc's own dialects"
    if not name.isidentifier():
        return "a plugin's name must be an identifier (it names the plugin's dialect)"
    return None


# --------------------------------------------------------------------------- loading


def _load(found: Found) -> Loaded:
    if found.problem is not None:
        raise PluginError(found.name, found.problem, found.origin)
    try:
        value = found.load()
    except Exception as e:
        text = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        raise PluginError(found.name, f"cannot be loaded: {text}", found.origin) from e
    home = _home(found)
    if not isinstance(value, Plugin) and callable(value):
        with plugin_code(found.name, "making its Plugin", home):
            value = value()
    if not isinstance(value, Plugin):
        raise PluginError(
            found.name, f"gives a {type(value).__name__}, not an npuc Plugin", found.origin
        )
    _check(found.name, value, found.origin)
    return Loaded(found.name, found.origin, value, home)


def _home(found: Found) -> str | None:
    """The folder of the plugin's package (or its module's file)."""
    file = getattr(sys.modules.get(found.module), "__file__", None)
    if file is None:
        return None
    path = Path(file)
    return str(path.parent if path.name == "__init__.py" else path)


def _check(name: str, plugin: Plugin, origin: str) -> None:
    """Refuse a descriptor npuc could not use, naming the bad entry."""

    def bad(message: str) -> PluginError:
        return PluginError(name, f"bad descriptor: {message}", origin)

    for table in OP_TABLES:
        entries = getattr(plugin, table)
        if not isinstance(entries, Mapping):
            raise bad(f"`{table}` must be a mapping")
        for key, value in entries.items():
            if not (isinstance(key, str) and key.startswith(f"{name}.")):
                raise bad(f"`{table}` key {key!r} is not an op of the plugin's dialect '{name}'")
            if table == "quantization":
                if not isinstance(value, QuantizationRule):
                    raise bad(f"`quantization` of '{key}' must be a QuantizationRule")
                if not value.quantized_op.startswith(f"{name}."):
                    raise bad(f"'{key}' quantizes to {value.quantized_op!r}, not an op of '{name}'")
            elif not callable(value):
                raise bad(f"`{table}` entry of '{key}' is not callable")
    for key in plugin.onnx_converters:
        if not (isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, str) for k in key)):
            raise bad(f"`onnx_converters` key {key!r} must be (domain, op type)")
    for key in plugin.tflite_converters:
        if not (isinstance(key, tuple) and len(key) == 2 and key[1] in TFLITE_KINDS):
            raise bad(f"`tflite_converters` key {key!r} must be (custom code, {TFLITE_KINDS})")
    for key in plugin.passes:
        if not isinstance(key, str) or not key:
            raise bad(f"`passes` key {key!r} must be a pass name")
    for path in plugin.targets:
        if not (Path(path).suffix == ".toml" and Path(path).is_file()):
            raise bad(f"target file {os.fspath(path)!r} does not exist or is not a .toml file")
    if plugin.dialect is not None and not callable(plugin.dialect):
        raise bad("`dialect` must be a function returning the dialect")


#: The tables looked up by keys that do not name their plugin: every plugin is searched.
SEARCHED_TABLES = ("onnx_converters", "tflite_converters", "passes", "targets")


def _table(plugin: Plugin, table: str) -> Mapping[Any, Any]:
    """A searched table as looked up: ONNX's default domain spelt "", targets by name."""
    if table == "targets":
        return {Path(p).stem: Path(p) for p in plugin.targets}
    if table == "onnx_converters":
        return {
            ("" if d == "ai.onnx" else d, op): f for (d, op), f in plugin.onnx_converters.items()
        }
    entries: Mapping[Any, Any] = getattr(plugin, table)
    return entries


def _index(loaded: list[Loaded]) -> dict[tuple[str, object], str]:
    """(table, key) -> the plugin providing it; two plugins providing one key is an error."""
    index: dict[tuple[str, object], str] = {}
    for plugin in loaded:
        for table in SEARCHED_TABLES:
            for key in _table(plugin.plugin, table):
                other = index.setdefault((table, key), plugin.name)
                if other != plugin.name:
                    raise PluginError(
                        plugin.name, f"{_describe(table, key)} is also provided by plugin '{other}'"
                    )
    return index


def _describe(table: str, key: Any) -> str:
    if table == "onnx_converters":
        return f"ONNX op '{key[0] or 'ai.onnx'}::{key[1]}'"
    if table == "tflite_converters":
        return f"TFLite custom op '{key[0]}' ({key[1]})"
    return f"{table[:-1]} '{key}'"
