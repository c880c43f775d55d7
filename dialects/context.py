"""npuc's dialects by name, loaded lazily, and the one way to make a context that knows them.

Keeping these as name -> factory maps lets `npu-opt --version` start without importing every
dialect.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect

from npuc import xdsl_patches  # noqa: F401  (user input must not hang xDSL's lexer)


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
    """Make npuc's dialects known to `ctx` (each loaded on first use)."""
    for name, factory in DIALECTS.items():
        ctx.register_dialect(name, factory)


def make_context() -> Context:
    """A context that knows npuc's dialects (loaded lazily)."""
    ctx = Context()
    register_dialects(ctx)
    return ctx
