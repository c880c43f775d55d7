"""npuc's modules import one another in one direction: no cycles, and no layer reaching a later
one (docs/architecture.md, "Folders and layers").

The graph is read with `ast` from the source files, so it includes imports made inside
functions (a lazy import hides a cycle from the interpreter, not from the design). Imports
under `if TYPE_CHECKING:` name types for annotations only and never run: they must respect
the layers, but a cycle through them is not an import cycle.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The top-level modules of `npuc` that drive the others (the Python API, the flows the tools
# run, the pass registry). Every other module directly under npuc/ is core.
DRIVERS = {
    "npuc",
    "npuc.api",
    "npuc.pipeline",
    "npuc.compile_flow",
    "npuc.quantize_flow",
    "npuc.onnx_backend",
    "npuc.registry",
    "npuc.input_shapes",
    "npuc.plugin_api",
}

# Each layer may import its own modules and those of the layers before it.
LAYERS = [
    "core",
    "npuc.dialects",
    "npuc.runtime",
    "npuc.frontends",
    "npuc.passes",
    "npuc.backend",
    "driver",
    "npuc.tools",
]


# Packages that belong to a layer's folder: npu-sweep drives npu-compile's own options.
WITH_LAYER = {"npuc.sweep": "npuc.tools"}


def layer(module: str) -> str:
    if module in DRIVERS:
        return "driver"
    parts = module.split(".")
    package = ".".join(parts[:2])
    package = WITH_LAYER.get(package, package)
    if package in LAYERS:
        return package
    assert len(parts) == 2 and parts[0] == "npuc", module
    return "core"


def package_dirs() -> dict[str, Path]:
    """Package name -> source folder, from pyproject's setuptools `package-dir` mapping."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = config["package-dir"]
    dirs = {}
    for package in config["packages"]:
        base = max((p for p in mapping if package == p or package.startswith(p + ".")), key=len)
        rest = package[len(base) :].lstrip(".").split(".") if package != base else []
        dirs[package] = ROOT / mapping[base] / Path(*rest) if rest else ROOT / mapping[base]
    return dirs


def modules() -> dict[str, Path]:
    """Every npuc module name -> its file."""
    found = {}
    for package, folder in package_dirs().items():
        for path in sorted(folder.glob("*.py")):
            found[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return found


def type_checking_only(tree: ast.Module) -> set[ast.AST]:
    """The import statements under `if TYPE_CHECKING:`."""
    found: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found.update(n for stmt in node.body for n in ast.walk(stmt))
    return found


def imported(module: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int, bool]]:
    """The npuc modules `module` imports (anywhere in the file), with the line and whether the
    import is for type checking only."""
    package = module if path.stem == "__init__" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    typing_only = type_checking_only(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                yield name, node.lineno, node in typing_only


def build_graph(runtime_only: bool) -> dict[str, dict[str, int]]:
    """module -> {imported module: line}."""
    known = modules()
    edges: dict[str, dict[str, int]] = {}
    for module, path in known.items():
        edges[module] = {}
        for target, line, typing_only in imported(module, path, known):
            if not (runtime_only and typing_only):
                edges[module].setdefault(target, line)
    return edges


@pytest.fixture(scope="module")
def graph() -> dict[str, dict[str, int]]:
    return build_graph(runtime_only=False)


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def test_every_module_is_in_a_layer(graph):
    assert len(graph) > 100
    for module in graph:
        assert layer(module) in (*LAYERS, "driver")


def test_no_import_cycles():
    found = cycles(build_graph(runtime_only=True))
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_imports_point_to_earlier_layers(graph):
    rank = {name: i for i, name in enumerate(LAYERS)}
    wrong = [
        f"{module}:{line} imports {target} ({layer(module)} -> {layer(target)})"
        for module, targets in sorted(graph.items())
        for target, line in sorted(targets.items())
        if rank[layer(target)] > rank[layer(module)]
    ]
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def private_uses(module: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """`_name`s that `module` takes from other npuc modules: imported by name, or read as an
    attribute of an imported module."""
    package = module if path.stem == "__init__" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            for a in node.names:
                if f"{base}.{a.name}" in known:
                    aliases[a.asname or a.name] = f"{base}.{a.name}"
                elif base in known and _private(a.name) and base != module:
                    yield f"{module}:{node.lineno} imports {a.name} from {base}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in known and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and _private(node.attr)
        ):
            yield f"{module}:{node.lineno} reads {aliases[node.value.id]}.{node.attr}"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_reaches_into_another_s_private_names():
    known = modules()
    found = [use for module, path in known.items() for use in private_uses(module, path, known)]
    assert not found, "private names used across modules:\n" + "\n".join(found)


def test_the_checker_sees_a_cycle_and_a_wrong_direction():
    edges = {"npuc.a": {"npuc.b": 1}, "npuc.b": {"npuc.a": 2}, "npuc.c": {}}
    assert cycles(edges) == [["npuc.a", "npuc.b"]]
    assert LAYERS.index(layer("npuc.dialects.nn")) < LAYERS.index(layer("npuc.runtime.loader"))
    assert layer("npuc.diagnostics") == "core" and layer("npuc.api") == "driver"
