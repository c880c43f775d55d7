"""npuc: an MLIR-style multi-level compiler for neural-network accelerators, built on xDSL."""

from typing import Any

from .version import __version__

_API = (
    "apply_pipeline",
    "compile",
    "export_qdq",
    "load_model",
    "make_context",
    "parse_mlir",
    "profile",
    "random_inputs",
    "run",
)


def __getattr__(name: str) -> Any:
    # The API imports xDSL and numpy; keep `import npuc` itself cheap for the tools.
    if name in _API:
        from . import api

        return getattr(api, name)
    if name == "sweep":  # npu-sweep's API (npuc.sweep.run), which needs the `sweep` extra
        from importlib import import_module

        return import_module(".sweep", __name__)
    raise AttributeError(f"module 'npuc' has no attribute '{name}'")


__all__ = [*_API, "__version__"]


def __dir__() -> list[str]:
    return sorted(__all__)
