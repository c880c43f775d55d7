"""The `tflite` package (flatbuffer readers generated from LiteRT's schema), its modules
imported as the frontend first reads them.

The package's `__init__` star-imports all of its ~190 generated modules, about 0.1 s of
every TFLite compile, while a model reads a dozen. `tflite` here is that package with
the same names: `tflite.Model` is the class `Model` of module `tflite.Model`, imported on
first use. A name that is not a module's own class (a builder function such as
`ModelStart`) runs the package's real `__init__` first, so code that expects the whole
package still finds it. If `tflite` was imported before npuc, it is used as it is.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

PACKAGE = "tflite"


class _Package(types.ModuleType):
    """The package module; each generated module `X` stands for its class `X`, as after the
    package's star imports."""

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        # importing module tflite.X binds X to the module, where the star import binds the class
        if isinstance(value, types.ModuleType) and not name.startswith("_"):
            return getattr(value, name, value)
        return value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            module = importlib.import_module(f"{PACKAGE}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{PACKAGE}.{name}":
                raise
        else:
            if hasattr(module, name):
                return getattr(module, name)
        spec = super().__getattribute__("__spec__")
        spec.loader.exec_module(self)  # the package's own __init__: every name it exports
        return super().__getattribute__(name)


def _package() -> types.ModuleType:
    found = sys.modules.get(PACKAGE)
    if found is not None:
        return found
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return importlib.import_module(PACKAGE)  # not a plain package: import it as it is
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _Package
    sys.modules[PACKAGE] = module
    return module


tflite = _package()
