"""Target descriptions: the shipped files load with their stated figures; bad files are
refused with an NpucError naming the file and the dotted key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from npuc.diagnostics import NpucError
from npuc.target import (
    MacArray,
    available_targets,
    load_target,
    parse_size,
    parse_target,
    targets_dir,
)

SHIPPED = ("ethos-u55-256-hee", "mcu-64", "mid-256")
KiB, MiB = 1 << 10, 1 << 20

# A valid file that the bad-file tests break one key at a time.
GOOD = """\
name = "t"
clock_mhz = 100
data_types = ["int8"]
dma_channels = 1

[mac_array]
output_channels = 4
pixels = 2
input_channels = 8

[memories.sram]
kind = "sram"
size = "64 KiB"
bus_width = 8
clock_scale = 1.0
burst_length = 32
read_latency = 4

[memories.flash]
kind = "offchip_flash"
size = 1048576
bus_width = 4
clock_scale = 0.5
burst_length = 64
read_latency = 10

[placement]
constants = "flash"
arena = "sram"
"""


def write(tmp_path: Path, text: str, name: str = "x.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def edited(old: str, new: str) -> str:
    assert old in GOOD, old
    return GOOD.replace(old, new, 1)


def error_of(path: Path) -> str:
    with pytest.raises(NpucError) as info:
        load_target(path)
    return str(info.value)


# --- the shipped targets ---------------------------------------------------------------


def test_available_targets_lists_the_shipped_files():
    assert set(SHIPPED) <= set(available_targets())
    assert available_targets() == sorted(available_targets())


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_target_loads_by_name_and_by_path(name):
    target = load_target(name)
    assert target.name == name  # the name inside matches the file name
    assert target == load_target(targets_dir() / f"{name}.toml")
    assert target.macs_per_cycle == (
        target.mac_array.output_channels * target.mac_array.pixels * target.mac_array.input_channels
    )
    assert "int8" in target.data_types
    # Every placement resolves to a real memory, and the arena to a writable one.
    assert target.constants_memory.name == target.placement.constants
    assert target.arena_memory.writable and target.io_memory.writable


def test_mcu_64():
    t = load_target("mcu-64")
    assert t.macs_per_cycle == 64
    assert t.sram.kind == "sram" and t.sram.size == 256 * KiB
    assert t.constants_memory.kind in ("onchip_flash", "offchip_flash")
    assert not t.constants_memory.writable
    assert t.alignment == 64


def test_mid_256():
    t = load_target("mid-256")
    assert t.macs_per_cycle == 256
    assert t.sram.kind == "sram" and t.sram.size == 1 * MiB
    assert t.constants_memory.kind == "dram"


def test_ethos_u55_256_mirrors_vela_high_end_embedded_shared_sram():
    t = load_target("ethos-u55-256-hee")
    assert t.macs_per_cycle == 256
    assert t.mac_array == MacArray(output_channels=8, pixels=4, input_channels=8)
    assert t.clock_mhz == 500 and t.clock_hz == 500e6
    assert "Ethos_U55_High_End_Embedded" in t.source.mirrors
    assert "Shared_Sram" in t.source.mirrors
    sram, flash = t.memory("sram"), t.memory("flash")
    # Shared_Sram: constants on AXI1 (flash), arena on AXI0 (SRAM).
    assert t.constants_memory == flash and t.arena_memory == sram
    assert flash.kind == "offchip_flash" and not flash.writable
    assert sram.clock_scale == 1.0 and sram.burst_length == 32
    assert sram.read_latency == sram.write_latency == 32
    assert (flash.clock_scale, flash.burst_length, flash.read_latency) == (0.125, 128, 64)
    # 64-bit AXI: 8 B/cycle x scale, i.e. 4 GB/s SRAM and 0.5 GB/s flash at 500 MHz.
    assert t.bytes_per_cycle("sram") == 8.0 and t.bytes_per_cycle(flash) == 1.0
    assert t.bytes_per_cycle("sram") * t.clock_hz == 4e9
    assert t.bytes_per_cycle("flash") * t.clock_hz == 0.5e9
    assert t.alignment == 16  # Vela's allocation alignment
    assert t.weight_decoder is not None and t.weight_decoder.elements_per_cycle == 8
    assert load_target("mcu-64").weight_decoder is None


def test_unknown_memory_lists_the_memories():
    with pytest.raises(NpucError, match=r"no memory 'dram' \(memories: sram, flash\)"):
        load_target("mcu-64").memory("dram")


def test_unknown_target_name_lists_the_available_ones():
    with pytest.raises(NpucError) as info:
        load_target("no-such-npu")
    message = str(info.value)
    assert "unknown target 'no-such-npu'" in message
    for name in SHIPPED:
        assert name in message


def test_missing_target_file(tmp_path):
    with pytest.raises(NpucError, match="no such target file"):
        load_target(tmp_path / "absent.toml")


# --- a good file and its defaults ------------------------------------------------------


def test_good_file_and_defaults(tmp_path):
    t = load_target(write(tmp_path, GOOD))
    assert t.macs_per_cycle == 64
    assert t.alignment == 64  # default
    assert t.description == "" and t.source.mirrors == ""
    assert t.placement.io == "sram"  # defaults to the arena's memory
    sram, flash = t.memory("sram"), t.memory("flash")
    assert sram.size == 64 * KiB and flash.size == MiB
    assert sram.writable and not flash.writable  # writable defaults by kind
    assert flash.write_latency == flash.read_latency == 10
    assert t.bytes_per_cycle("flash") == 2.0
    assert t.path == tmp_path / "x.toml"


def test_parse_target_on_a_dict():
    t = parse_target(tomllib.loads(GOOD))
    assert t.name == "t" and t.path is None


# --- sizes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "size"),
    [
        (4096, 4096),
        ("512 B", 512),
        ("512", 512),
        ("256 KiB", 256 * KiB),
        ("256KiB", 256 * KiB),
        ("1 MiB", MiB),
        ("1.5 MiB", 3 * MiB // 2),
        ("2 gib", 2 << 30),
    ],
)
def test_size_strings_parse(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["256 KB", "1 MB", "lots", "", "-5 KiB", "0.3 B", True, 1.5])
def test_bad_size_strings(text):
    with pytest.raises(ValueError):
        parse_size(text)


# --- bad files: each names the file and the dotted key -----------------------------------

BAD = {
    "unknown top-level key": (
        edited("dma_channels = 1", "dma_channels = 1\ndma_chanels = 2"),
        "dma_chanels: unknown key",
    ),
    "unknown memory key": (
        edited("read_latency = 4", "read_latency = 4\nlatency = 4"),
        "memories.sram.latency: unknown key",
    ),
    "unknown mac_array key": (
        edited("pixels = 2", "pixels = 2\nrows = 2"),
        "mac_array.rows: unknown key",
    ),
    "missing top-level key": (edited("clock_mhz = 100\n", ""), "clock_mhz: missing required key"),
    "missing table": (
        edited('[placement]\nconstants = "flash"\narena = "sram"\n', ""),
        "placement: missing required key",
    ),
    "missing memory key": (
        edited("bus_width = 4\n", ""),
        "memories.flash.bus_width: missing required key",
    ),
    "missing mac_array key": (
        edited("input_channels = 8\n", ""),
        "mac_array.input_channels: missing required key",
    ),
    "string for an integer": (
        edited("dma_channels = 1", 'dma_channels = "one"'),
        "dma_channels: expected a positive integer, got 'one'",
    ),
    "float for an integer": (
        edited("pixels = 2", "pixels = 2.5"),
        "mac_array.pixels: expected a positive integer, got 2.5",
    ),
    "boolean for an integer": (
        edited("bus_width = 8", "bus_width = true"),
        "memories.sram.bus_width: expected a positive integer, got True",
    ),
    "negative size": (
        edited('size = "64 KiB"', "size = -5"),
        "memories.sram.size: expected a positive integer (bytes), got -5",
    ),
    "zero size": (
        edited("size = 1048576", "size = 0"),
        "memories.flash.size: expected a positive integer (bytes), got 0",
    ),
    "bad size string": (
        edited('size = "64 KiB"', 'size = "64 KB"'),
        "memories.sram.size: expected a size in bytes",
    ),
    "zero MACs": (
        edited("output_channels = 4", "output_channels = 0"),
        "mac_array.output_channels: expected a positive integer, got 0",
    ),
    "zero clock": (edited("clock_mhz = 100", "clock_mhz = 0"), "clock_mhz: expected a positive"),
    "negative clock scale": (
        edited("clock_scale = 0.5", "clock_scale = -0.5"),
        "memories.flash.clock_scale: expected a positive number, got -0.5",
    ),
    "infinite clock scale": (
        edited("clock_scale = 0.5", "clock_scale = inf"),
        "memories.flash.clock_scale: expected a positive number, got inf",
    ),
    "negative latency": (
        edited("read_latency = 10", "read_latency = -1"),
        "memories.flash.read_latency: expected a non-negative integer",
    ),
    "alignment not a power of two": (
        edited("dma_channels = 1", "dma_channels = 1\nalignment = 48"),
        "alignment: expected a power of two (bytes), got 48",
    ),
    "zero alignment": (
        edited("dma_channels = 1", "dma_channels = 1\nalignment = 0"),
        "alignment: expected a positive integer, got 0",
    ),
    "unknown memory kind": (
        edited('kind = "sram"', 'kind = "hbm"'),
        "memories.sram.kind: expected one of sram, dram, onchip_flash, offchip_flash, got 'hbm'",
    ),
    "writable not a boolean": (
        edited("read_latency = 4", 'read_latency = 4\nwritable = "yes"'),
        "memories.sram.writable: expected true or false, got 'yes'",
    ),
    "unknown data type": (
        edited('data_types = ["int8"]', 'data_types = ["int8", "int7"]'),
        "data_types[1]: expected one of",
    ),
    "empty data types": (
        edited('data_types = ["int8"]', "data_types = []"),
        "data_types: expected a non-empty list",
    ),
    "empty name": (edited('name = "t"', 'name = ""'), "name: expected a non-empty string"),
    "empty memories": (
        # The memory tables cut out, an empty inline table in their place.
        edited("dma_channels = 1", "dma_channels = 1\nmemories = {}").split("[memories.")[0]
        + GOOD[GOOD.index("[placement]") :],
        "memories: expected at least one [memories.<name>] table",
    ),
    "memory not a table": (
        edited('[memories.sram]\nkind = "sram"', "[memories]\nsram = 3\n[memories.x]\nkind = 1"),
        "memories.sram: expected a table, got 3",
    ),
    "constants in a memory that does not exist": (
        edited('constants = "flash"', 'constants = "rom"'),
        "placement.constants: no memory named 'rom' (memories: sram, flash)",
    ),
    "arena in a memory that does not exist": (
        edited('arena = "sram"', 'arena = "tcm"'),
        "placement.arena: no memory named 'tcm'",
    ),
    "io in a memory that does not exist": (
        edited('arena = "sram"', 'arena = "sram"\nio = "dram"'),
        "placement.io: no memory named 'dram'",
    ),
    "arena in read-only flash": (
        edited('arena = "sram"', 'arena = "flash"'),
        "placement.arena: memory 'flash' is read-only",
    ),
    "unknown placement key": (
        edited('arena = "sram"', 'arena = "sram"\nscratch = "sram"'),
        "placement.scratch: unknown key",
    ),
    "unknown source key": (
        GOOD + '\n[source]\nmirror = "Vela"\n',
        "source.mirror: unknown key (allowed: mirrors, notes)",
    ),
    "weight decoder without a rate": (
        GOOD + "\n[weight_decoder]\n",
        "weight_decoder.elements_per_cycle: missing required key",
    ),
    "weight decoder at zero elements a cycle": (
        GOOD + "\n[weight_decoder]\nelements_per_cycle = 0\n",
        "weight_decoder.elements_per_cycle: expected a positive number, got 0",
    ),
    "unknown weight decoder key": (
        GOOD + "\n[weight_decoder]\nelements_per_cycle = 4\nratio = 2\n",
        "weight_decoder.ratio: unknown key",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_file_names_the_file_and_key(tmp_path, case):
    text, expected = BAD[case]
    path = write(tmp_path, text)
    message = error_of(path)
    assert message.startswith(f"{path}: error: "), message
    assert expected in message, message


def test_invalid_toml_syntax(tmp_path):
    path = write(tmp_path, 'name = "t"\nclock_mhz = \n')
    message = error_of(path)
    assert message.startswith(f"{path}: error: invalid TOML"), message


def test_toml_file_given_by_relative_name(tmp_path, monkeypatch):
    """A name ending in .toml is a path, not a shipped target."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path, GOOD, "mine.toml")
    assert load_target("mine.toml").name == "t"


def test_ethos_u55_256_figures_are_vela_s_own():
    """Against the vela.ini and supported types of the installed ethos-u-vela package."""
    import configparser
    from importlib.resources import files

    from ethosu.vela.tflite_supported_operators import TFLiteSupportedOperators

    ini = configparser.ConfigParser()
    ini.read_string((files("ethosu") / "config_files" / "Arm" / "vela.ini").read_text())
    system = ini["System_Config.Ethos_U55_High_End_Embedded"]
    mode = ini["Memory_Mode.Shared_Sram"]
    t = load_target("ethos-u55-256-hee")
    assert t.clock_hz == float(system["core_clock"])
    ports = {"Axi0": system["axi0_port"], "Axi1": system["axi1_port"]}
    memories = {"Sram": t.memory("sram"), "OffChipFlash": t.memory("flash")}
    assert memories[ports[mode["const_mem_area"]]] == t.constants_memory
    assert memories[ports[mode["arena_mem_area"]]] == t.arena_memory
    assert "arena_cache_size" not in mode  # Vela sets no SRAM size: 2 MiB is ours
    for prefix, memory in memories.items():
        assert memory.clock_scale == float(system[f"{prefix}_clock_scale"])
        assert memory.burst_length == int(system[f"{prefix}_burst_length"])
        assert memory.read_latency == int(system[f"{prefix}_read_latency"])
        assert memory.write_latency == int(system[f"{prefix}_write_latency"])
    vela_types = {str(d) for d in TFLiteSupportedOperators.supported_faf_dtypes}
    assert set(t.data_types) == vela_types == {"int8", "uint8", "int16"}
