"""npuc.entry_points against importlib.metadata, on this environment and on made-up installs."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from npuc.entry_points import entry_points
from npuc.runtime import accuracy


@pytest.mark.parametrize("group", ["console_scripts", "npuc.plugins", "pytest11", "no.such"])
def test_the_installed_entry_points_are_importlib_metadatas(group):
    expected = importlib.metadata.entry_points(group=group)
    got = entry_points(group)
    assert sorted((e.name, e.value) for e in got) == sorted((e.name, e.value) for e in expected)
    versions = {(e.name, e.dist.name, e.dist.version) for e in expected if e.dist is not None}
    assert {(e.name, e.dist_name, e.dist_version) for e in got} == versions
    if group == "npuc.plugins":
        assert [e.name for e in got] == ["example"]


def install(folder: Path, dist: str, entry_points_txt: str, name: str | None = None) -> None:
    info = folder / f"{dist}.dist-info"
    info.mkdir(parents=True)
    (info / "entry_points.txt").write_text(entry_points_txt)
    if name is not None:
        version = dist.split("-")[1]
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_sections_comments_extras_and_the_first_install_of_a_name(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    install(
        first,
        "my_metrics-1.2",
        "# metrics\n[other]\nx = nope:x\n\n[ npuc.metrics ]\n"
        "snr = my_metrics.snr:compute [fast]\n; a comment\nplain=my_metrics\n",
        name="My-Metrics",
    )
    install(second, "My.Metrics-0.9", "[npuc.metrics]\nold = my_metrics:old\n")
    install(second, "other-3.0", "[npuc.metrics]\nmae = other:mae\n")
    install(second, "broken-1.0", "")
    (second / "broken-1.0.dist-info" / "entry_points.txt").write_bytes(b"[npuc.metrics]\xff\xfe")
    (second / "not_metadata").mkdir()
    found = entry_points("npuc.metrics", [str(first), str(tmp_path / "missing"), str(second)])
    assert [(e.name, e.value, e.dist_name, e.dist_version) for e in found] == [
        ("snr", "my_metrics.snr:compute", "My-Metrics", "1.2"),
        ("plain", "my_metrics", "My-Metrics", "1.2"),
        ("mae", "other:mae", "other", "3.0"),  # no METADATA: named after its folder
    ]
    assert found[0].module == "my_metrics.snr"


def test_a_metric_plugin_is_registered_from_its_entry_point(tmp_path, monkeypatch):
    (tmp_path / "npuc_test_metric.py").write_text(
        "def worst(ref, cand):\n    return abs(ref - cand).max()\n"
    )
    install(tmp_path, "npuc_test_metric-0.1", "[npuc.metrics]\nworst = npuc_test_metric:worst\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(accuracy.CUSTOM_METRICS, "worst", raising=False)
    try:
        assert "worst" in accuracy.load_metric_plugins()
        worst = accuracy.CUSTOM_METRICS["worst"]
        assert worst.__module__ == "npuc_test_metric"
    finally:
        accuracy.CUSTOM_METRICS.pop("worst", None)
        sys.modules.pop("npuc_test_metric", None)
