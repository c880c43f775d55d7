"""npuc's dialects by name, loaded lazily, and the one way to make a context that knows them.

Keeping these as name -> factory maps lets `npu-opt --version` start without importing every
dialect. Each plugin's name is registered too, as the namespace of its dialect: the plugin
is imported when IR first names an op or attribute of that namespace
(npuc/plugin_registry.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect

from npuc import xdsl_patches  # noqa: F401  (user input must not hang xDSL's lexer)
from npuc.plugin_registry import dialect_loader, plugin_names


def _lazy(module: str, attr: str) -> Callable[[], Dialect]:
    def load() -> Dialect:
        dialect: Dialect = getattr(importlib.import_module(module), attr)
        return dialect

    return load


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "builtin": _lazy("xdsl.dialects.builtin", "Builtin"),
    "func": _lazy("xdsl.dialects.func", "Func"),
    "arith": _lazy("xdsl.dialects.arith", "Arith"),
    "nn": _lazy("npuc.dialects.nn", "NN"),
    "qnn": _lazy("npuc.dialects.qnn", "QNN"),
    "npu": _lazy("npuc.dialects.npu", "NPU"),
    "tile": _lazy("npuc.dialects.tile", "TILE"),
    "mem": _lazy("npuc.dialects.mem", "MEM"),
}


def register_dialects(ctx: Context) -> None:
    """Make npuc's dialects and the plugins' known to `ctx` (each loaded on first use)."""
    for name, factory in DIALECTS.items():
        ctx.register_dialect(name, factory)
    for name in plugin_names():
        if name not in DIALECTS:
            ctx.register_dialect(name, dialect_loader(name))


def make_context() -> Context:
    """A context that knows npuc's dialects (loaded lazily)."""
    ctx = Context()
    register_dialects(ctx)
    return ctx
