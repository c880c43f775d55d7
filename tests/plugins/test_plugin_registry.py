"""Finding and loading plugins: lazily, by name, refusing clashes (plugin modules written to a
temporary NPUC_PLUGIN_PATH folder, each under a name of its own)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from plugin_variants import MODEL, REPO

from npuc import plugin_registry
from npuc.dialects.context import make_context
from npuc.dialects.qnn import LutOp
from npuc.plugins import PluginError

CONVERTER = "def convert(ctx):\n    return []\n"


def install(monkeypatch: pytest.MonkeyPatch, folder: Path, plugins: dict[str, str]) -> None:
    """Write plugin modules NAME.py (their source after `from npuc.plugin_api import *`)
    and make them the only plugins."""
    folder.mkdir(exist_ok=True)
    for name, body in plugins.items():
        source = "from npuc.plugin_api import Plugin, QuantizationRule\n\n" + textwrap.dedent(body)
        (folder / f"{name}.py").write_text(source)
    monkeypatch.setenv("NPUC_NO_PLUGIN_ENTRY_POINTS", "1")
    monkeypatch.setenv("NPUC_PLUGIN_PATH", str(folder))
    monkeypatch.setattr(sys, "path", list(sys.path))


def test_plugins_load_only_when_something_of_theirs_is_needed() -> None:
    script = f"""
import sys, npuc
from npuc.dialects.context import make_context
from npuc.dialects.qnn import LutOp
make_context()
npuc.run({str(REPO / "examples" / "tiny_cnn.onnx")!r})
before = "npuc_example_ops" in sys.modules
npuc.load_model({str(MODEL)!r})
print(before, "npuc_example_ops" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


def test_an_op_of_a_namespace_loads_only_that_plugin(monkeypatch, tmp_path) -> None:
    install(
        monkeypatch,
        tmp_path,
        {
            "lazy_one": "plugin = Plugin(kernels={'lazy_one.op': lambda op, args: args})\n",
            "lazy_two": "raise ImportError('lazy_two must not be imported')\n",
        },
    )
    assert plugin_registry.plugin_names() == ["lazy_one", "lazy_two"]
    assert plugin_registry.op_entry("kernels", "lazy_one.op") is not None
    assert plugin_registry.op_entry("kernels", "lazy_one.other") is None
    assert plugin_registry.op_entry("kernels", "nn.relu") is None
    assert "lazy_two" not in sys.modules
    with pytest.raises(PluginError, match="plugin 'lazy_two': cannot be loaded: ImportError"):
        plugin_registry.onnx_converter("com.example", "Anything")  # a search loads all


def test_two_plugins_providing_one_onnx_op_are_refused(monkeypatch, tmp_path) -> None:
    table = "plugin = Plugin(onnx_converters={('com.example', 'Twice'): convert})\n"
    install(monkeypatch, tmp_path, {"twice_a": CONVERTER + table, "twice_b": CONVERTER + table})
    with pytest.raises(PluginError) as error:
        plugin_registry.onnx_converter("com.example", "Twice")
    assert error.value.message == (
        "plugin 'twice_b': ONNX op 'com.example::Twice' is also provided by plugin 'twice_a'"
    )


def test_a_plugin_may_not_take_the_name_of_an_npuc_dialect(monkeypatch, tmp_path) -> None:
    install(monkeypatch, tmp_path, {"qnn": "plugin = Plugin()\n"})
    assert make_context().get_op("qnn.lut") is LutOp  # npuc's qnn stays npuc's
    with pytest.raises(PluginError, match="the name 'qnn' is one of npuc's own dialects"):
        plugin_registry.target_names()


def test_a_plugin_dialect_must_take_the_plugin_name(monkeypatch, tmp_path) -> None:
    body = """
    from xdsl.ir import Dialect

    plugin = Plugin(dialect=lambda: Dialect("other_name", [], []))
    """
    install(monkeypatch, tmp_path, {"named_wrong": body})
    with pytest.raises(PluginError, match="its dialect must take the plugin's name"):
        make_context().get_optional_op("named_wrong.op")


def test_a_plugin_that_is_not_a_plugin_is_refused(monkeypatch, tmp_path) -> None:
    install(monkeypatch, tmp_path, {"not_a_plugin": "plugin = {'kernels': {}}\n"})
    with pytest.raises(PluginError, match="gives a dict, not an npuc Plugin"):
        plugin_registry.pass_factory("any-pass")


def test_quantization_rule_must_name_an_op_of_the_plugin(monkeypatch, tmp_path) -> None:
    body = "plugin = Plugin(quantization={'rule_ns.op': QuantizationRule('qnn.lut', print)})\n"
    install(monkeypatch, tmp_path, {"rule_ns": body})
    with pytest.raises(PluginError, match=r"quantizes to 'qnn\.lut', not an op of 'rule_ns'"):
        plugin_registry.quantization_rule("rule_ns.op")


def test_a_plugin_pass_must_be_the_pass_it_names(monkeypatch, tmp_path) -> None:
    install(monkeypatch, tmp_path, {"pass_ns": "plugin = Plugin(passes={'p-x': lambda: int})\n"})
    load = plugin_registry.pass_factory("p-x")
    assert load is not None
    with pytest.raises(PluginError, match="pass 'p-x' must be a ModulePass class named 'p-x'"):
        load()
