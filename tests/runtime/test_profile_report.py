"""Profiler outputs: JSON fields and their consistency, the Chrome trace, the HTML page."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from itertools import pairwise

import pytest
from npu_programs import inst, tensor

from npuc.dialects.npu_isa import IODesc, Program, Region
from npuc.runtime import profile_report as report
from npuc.runtime.cycle_model import Profile, estimate
from npuc.target import load_target


def _program() -> Program:
    """conv <double-buffered weights> -> conv -> pool, plus an unassigned copy."""
    w = [tensor("constants", 0, (16, 8, 3, 3)), tensor("constants", 2048, (16, 16, 1, 1))]
    tables = [tensor("constants", 4096 + 256 * i, (16, 4), "i32") for i in range(2)]
    sw = [tensor("sram", 0, (16, 8, 3, 3)), tensor("sram", 2048, (16, 16, 1, 1))]
    x = tensor("mutable", 0, (1, 8, 12, 12))
    a, b = tensor("sram", 4096, (1, 16, 12, 12)), tensor("sram", 8192, (1, 16, 12, 12))
    y = tensor("mutable", 2048, (1, 16, 6, 6))
    body = [
        inst("dma", (w[0], sw[0]), layer=0),
        inst("dma", (w[1], sw[1]), layer=1),
        inst("conv2d", (x, sw[0], tables[0], a), deps=(0,), layer=0, pads=(1, 1, 1, 1)),
        inst("conv2d", (a, sw[1], tables[1], b), deps=(1, 2), layer=1),
        inst("pool", (b, y), deps=(3,), layer=2, mode="max", kernel=(2, 2), strides=(2, 2)),
        inst("dma", (y, tensor("mutable", 4096, (1, 16, 6, 6))), deps=(4,)),
    ]
    regions = (
        Region("constants", 8192, "flash"),
        Region("mutable", 8192, "sram"),
        Region("sram", 16384, "sram"),
    )
    return Program(
        "net",
        regions,
        (IODesc("x", x),),
        (IODesc("y", y),),
        ("conv1", "conv2", "pool"),
        tuple(body),
    )


_PROGRAM = _program()


@pytest.fixture(scope="module")
def profile() -> Profile:
    return estimate(_PROGRAM, load_target("ethos-u55-256-hee"))


def test_json_fields_and_consistency(profile: Profile) -> None:
    data = json.loads(json.dumps(report.to_json(profile)))
    assert data["clock_mhz"] == 500
    assert data["total_cycles"] == profile.total_cycles > 0
    assert data["inference_ms"] == pytest.approx(data["total_cycles"] / 500e3)
    assert data["inferences_per_s"] == pytest.approx(1e3 / data["inference_ms"])
    names = [layer["name"] for layer in data["layers"]]
    assert names == ["conv1", "conv2", "pool", "(no layer)"]
    for layer in data["layers"]:
        for key in ("name", "cycles", "macs", "utilization", "bytes_read", "bytes_written"):
            assert key in layer
        assert layer["bytes_read"] == sum(layer["bytes_read_per_memory"].values())
        assert 0 <= layer["utilization"] <= 1
    assert sum(layer["cycles"] for layer in data["layers"]) == data["total_cycles"]
    assert sum(layer["share"] for layer in data["layers"]) == pytest.approx(1.0)
    conv1 = data["layers"][0]
    assert conv1["macs"] == 16 * 144 * 8 * 9
    assert conv1["bytes_read_per_memory"]["flash"] == 16 * 8 * 9 + 256  # weights by DMA + table
    assert conv1["busy_cycles"]["dma"] > 0 and conv1["busy_cycles"]["compute"] > 0
    assert sum(layer["macs"] for layer in data["layers"]) == data["total_macs"]
    busy = data["busy_cycles"]
    assert busy["dma"] == sum(c.cycles for c in profile.instructions if c.engine == "dma")


def test_chrome_trace(profile: Profile) -> None:
    trace = json.loads(json.dumps(report.chrome_trace(profile)))
    events = trace["traceEvents"]
    threads = {e["args"]["name"]: e["tid"] for e in events if e["name"] == "thread_name"}
    assert set(threads) == {"layers", "dma", "compute", "host"}
    assert len(set(threads.values())) == 4
    spans = [e for e in events if e["ph"] == "X" and e["tid"] != threads["layers"]]
    assert len(spans) == len(profile.instructions)
    for e, c in zip(spans, profile.instructions, strict=True):
        assert e["tid"] == threads[c.engine]
        assert e["ts"] == pytest.approx(c.start / 500) and e["dur"] == pytest.approx(c.cycles / 500)
    # on one track, events never overlap (an engine runs one instruction at a time)
    for tid in threads.values():
        track = sorted((e["ts"], e["ts"] + e["dur"]) for e in spans if e["tid"] == tid)
        assert all(a[1] <= b[0] + 1e-9 for a, b in pairwise(track))


def test_trace_layer_track_covers_the_timeline_once(profile: Profile) -> None:
    """The layers track: disjoint spans, named by layer, whose durations per layer are the
    layers' cycles (the same attribution as the table), with no SRAM counter unless the
    memory plan gave the SRAM in use."""
    events = report.chrome_trace(profile)["traceEvents"]
    tid = next(e["tid"] for e in events if e.get("args", {}).get("name") == "layers")
    track = sorted(
        (e["ts"], e["ts"] + e["dur"], e["name"])
        for e in events
        if e.get("tid") == tid and e["ph"] == "X"
    )
    assert all(a[1] <= b[0] + 1e-9 for a, b in pairwise(track))
    per_layer: dict[str, float] = {}
    for start, end, name in track:
        per_layer[name] = per_layer.get(name, 0.0) + (end - start) * 500
    assert per_layer == pytest.approx({l.name: l.cycles for l in profile.layers if l.cycles})
    assert not [e for e in events if e["ph"] == "C"]


def test_trace_counts_the_sram_in_use_when_known(profile: Profile) -> None:
    from dataclasses import replace

    sram = {"conv1": 4000, "conv2": 9000, "pool": 5000}
    events = report.chrome_trace(replace(profile, sram=sram))["traceEvents"]
    counters = [e for e in events if e["ph"] == "C"]
    assert {e["name"] for e in counters} == {"SRAM in use"}
    assert [e["ts"] for e in counters] == sorted(e["ts"] for e in counters)
    assert {e["args"]["bytes"] for e in counters[:-1]} == set(sram.values())
    assert counters[-1]["args"]["bytes"] == 0
    assert counters[-1]["ts"] == pytest.approx(profile.total_cycles / 500)


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.tags: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "tr" and ("class", "layer") in attrs:
            self.rows.append([])
        if tag == "td" and self.rows:
            self._cell = []

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None


def test_html_report(profile: Profile) -> None:
    page = report.html(profile, "net")
    parser = _Collect()
    parser.feed(page)
    assert [row[1] for row in parser.rows] == [layer.name for layer in profile.layers]
    assert [int(row[4]) for row in parser.rows] == [layer.cycles for layer in profile.layers]
    assert [int(row[0]) for row in parser.rows] == list(range(len(profile.layers)))
    assert parser.tags.count("svg") == 2 and "script" in parser.tags
    # the bars: each layer's cycles stacked by engine, the parts summing to its cycles
    chart = page[page.index('id="cycles-chart"') : page.index("</svg>")]
    for layer in profile.layers:
        parts = re.findall(
            rf"<title>{re.escape(layer.name)}: (\d+) cycles (\w[\w ]*)</title>", chart
        )
        assert sum(int(n) for n, _ in parts) == layer.cycles
        assert {kind for _, kind in parts} <= {"compute", "exposed DMA", "host"}
    conv1 = profile.layers[0]
    assert conv1.timeline["dma"] > 0  # its weights' DMA runs before any compute
    assert "exposed DMA</title>" in chart
    # the timeline names every layer that takes time
    timeline = page[page.index('id="memory-timeline"') :]
    for layer in profile.layers:
        if layer.end > layer.start:
            assert f"<title>{layer.name}: cycles {layer.start}-{layer.end}</title>" in timeline
    assert "http" not in page.replace("http://www.w3.org/2000/svg", "")  # self-contained
    text = report.table(profile)
    assert all(layer.name in text for layer in profile.layers)
    assert f"total: {profile.total_cycles} cycles" in text


def test_memory_timeline_conserves_bytes(profile: Profile) -> None:
    series = report.memory_timeline(profile, buckets=20)
    for memory, values in series.items():
        moved = sum(
            c.bytes_read.get(memory, 0) + c.bytes_written.get(memory, 0)
            for c in profile.instructions
        )
        assert sum(values) == pytest.approx(moved)


def test_write_reports(profile: Profile, tmp_path) -> None:
    paths = report.write_reports(profile, tmp_path / "out", "net")
    assert json.loads(paths["json"].read_text())["total_cycles"] == profile.total_cycles
    assert json.loads(paths["trace"].read_text())["traceEvents"]
    assert paths["html"].read_text().startswith("<!DOCTYPE html>")


# --------------------------------------------------------------------------- per-layer rows, CSV


def test_layer_rows_split_cycles_by_engine_and_name_the_bound(profile: Profile) -> None:
    from npuc.runtime.layer_table import BOUNDS, layer_rows

    rows = layer_rows(profile, _PROGRAM)
    assert [r.name for r in rows] == [layer.name for layer in profile.layers]
    assert [r.op for r in rows] == ["conv2d", "conv2d", "max pool", "DMA"]
    assert [r.runs_on for r in rows[:3]] == ["NPU"] * 3
    for r, layer in zip(rows, profile.layers, strict=True):
        assert r.compute_cycles + r.dma_cycles + r.host_cycles == r.cycles == layer.cycles
        assert r.bound in BOUNDS
        # the bound, from the instructions themselves
        mine = [c for c in profile.instructions if c.layer == r.name and c.engine == "compute"]
        compute = sum(c.compute_cycles for c in mine)
        memory = sum(max(c.memory_cycles.values(), default=0) for c in mine)
        if r.dma_cycles > r.compute_cycles:
            assert r.bound == "DMA"
        else:
            assert r.bound == ("memory" if memory > compute else "compute")
    assert rows[-1].bound == "DMA"  # the unassigned copy is DMA only
    assert all(r.sram_in_use is None for r in rows)  # no memory plan given


def test_layers_csv_has_a_line_per_layer_with_its_figures(profile: Profile) -> None:
    import csv
    import io

    from npuc.runtime.layer_table import layer_rows
    from npuc.runtime.profile_csv import layers_csv

    lines = list(csv.DictReader(io.StringIO(layers_csv(layer_rows(profile, _PROGRAM), profile))))
    assert [line["layer"] for line in lines] == [layer.name for layer in profile.layers]
    assert sum(int(line["cycles"]) for line in lines) == profile.total_cycles
    assert sum(float(line["network_cycles_percent"]) for line in lines) == pytest.approx(
        100, abs=0.01
    )
    for line, layer in zip(lines, profile.layers, strict=True):
        assert int(line["macs"]) == layer.macs
        for memory in profile.memories:
            assert int(line[f"{memory}_read_bytes"]) == layer.bytes_read.get(memory, 0)
            assert int(line[f"{memory}_written_bytes"]) == layer.bytes_written.get(memory, 0)
        assert line["sram_in_use_bytes"] == ""


def test_summary_csv_is_one_line_of_network_figures(profile: Profile) -> None:
    import csv
    import io

    from npuc.runtime.profile_csv import summary_csv

    text = summary_csv(profile, "net", {"constants_bytes": 123})
    head, values, *rest = list(csv.reader(io.StringIO(text)))
    assert rest == []
    line = dict(zip(head, values, strict=True))
    assert line["network"] == "net" and line["target"] == "ethos-u55-256-hee"
    assert int(line["cycles_total"]) == profile.total_cycles
    assert int(line["macs"]) == 16 * 144 * 8 * 9 + 16 * 144 * 16  # the convolutions
    assert int(line["dma_busy_cycles"]) == sum(
        c.cycles for c in profile.instructions if c.engine == "dma"
    )
    moved = sum(c.bytes_read.get("flash", 0) for c in profile.instructions)
    assert int(line["flash_read_bytes"]) == moved
    assert line["constants_bytes"] == "123"
