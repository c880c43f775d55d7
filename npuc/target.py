"""Target descriptions: the NPU's MAC array, clock and memories, read from `targets/*.toml`
(and from the target files plugins give).

The schema is documented in docs/targets.md. Loading is strict: an unknown key, a
missing key, a value of the wrong type or range, or a placement naming a memory that
does not exist is an `NpucError` naming the file and the dotted key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from . import plugin_registry
from .config import read_toml
from .diagnostics import NpucError

DEFAULT_ALIGNMENT = 64

#: Memory kinds, after Vela's MemArea (Sram, Dram, OnChipFlash, OffChipFlash).
MEMORY_KINDS = ("sram", "dram", "onchip_flash", "offchip_flash")
#: Tensor element types a target may list as supported on its MAC array.
DATA_TYPES = ("int4", "int8", "uint8", "int16", "int32", "float16", "bfloat16", "float32")

_SIZE_UNITS = {"b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)?\s*$")


@dataclass(frozen=True)
class MacArray:
    """MAC array geometry: per cycle, `output_channels x pixels x input_channels` MACs."""

    output_channels: int
    pixels: int
    input_channels: int

    @property
    def macs_per_cycle(self) -> int:
        return self.output_channels * self.pixels * self.input_channels

    def cycles(self, out_channels: int, pixels: int, in_channels: int = 1, taps: int = 1) -> int:
        """Cycles of a layer's MACs on the array (docs/cycle-model.md): whole blocks of
        output channels x pixels x input channels, one block per cycle, for each kernel tap.
        The tiler's estimates and the cycle model both count with this."""
        blocks = (
            -(-out_channels // self.output_channels)
            * -(-pixels // self.pixels)
            * -(-in_channels // self.input_channels)
        )
        return blocks * taps


@dataclass(frozen=True)
class Memory:
    """One memory the NPU reaches through a bus port.

    Latencies are in core clock cycles (as in Vela); `bus_width` is bytes per memory
    clock cycle and `clock_scale` the memory clock over the core clock.
    """

    name: str
    kind: str
    size: int
    bus_width: int
    clock_scale: float
    burst_length: int
    read_latency: int
    write_latency: int
    writable: bool

    @property
    def bytes_per_cycle(self) -> float:
        """Bytes moved per core clock cycle: bus width x clock scale."""
        return self.bus_width * self.clock_scale


@dataclass(frozen=True)
class Placement:
    """Which memory holds each planner region (names of `Target.memories`)."""

    constants: str
    arena: str
    io: str


@dataclass(frozen=True)
class Source:
    """Where the figures come from, for targets that mirror another tool's model."""

    mirrors: str = ""
    notes: str = ""


@dataclass(frozen=True)
class Host:
    """The CPU beside the NPU that runs ops without an NPU instruction (host fallback).

    A host op costs `cycles_per_element` per element it reads or writes plus its MACs at
    `macs_per_cycle`, in host cycles at `clock_mhz` (docs/cycle-model.md)."""

    name: str = "host CPU"
    clock_mhz: float | None = None  # None: the NPU's clock
    cycles_per_element: float = 1.0
    macs_per_cycle: float = 1.0


@dataclass(frozen=True)
class WeightDecoder:
    """The NPU's decoder of encoded constant streams (dialects/constant_codec.py), between
    the DMA and the memory it fills: `elements_per_cycle` decoded values per core cycle."""

    elements_per_cycle: float


@dataclass(frozen=True)
class Target:
    """A parsed, validated target description."""

    name: str
    description: str
    clock_mhz: float
    data_types: tuple[str, ...]
    alignment: int
    dma_channels: int
    mac_array: MacArray
    memories: tuple[Memory, ...]
    placement: Placement
    source: Source
    host: Host = Host()
    path: Path | None = None
    weight_decoder: WeightDecoder | None = None  # None: constants are stored as they are

    @property
    def macs_per_cycle(self) -> int:
        return self.mac_array.macs_per_cycle

    @property
    def clock_hz(self) -> float:
        return self.clock_mhz * 1e6

    def memory(self, name: str) -> Memory:
        """The memory called `name`; an `NpucError` listing the names if there is none."""
        for memory in self.memories:
            if memory.name == name:
                return memory
        names = ", ".join(m.name for m in self.memories)
        raise NpucError(f"target '{self.name}' has no memory '{name}' (memories: {names})")

    def bytes_per_cycle(self, memory: str | Memory) -> float:
        """Bytes per core cycle of a memory (by name or object): bus width x clock scale."""
        return (self.memory(memory) if isinstance(memory, str) else memory).bytes_per_cycle

    @property
    def constants_memory(self) -> Memory:
        return self.memory(self.placement.constants)

    @property
    def arena_memory(self) -> Memory:
        return self.memory(self.placement.arena)

    @property
    def io_memory(self) -> Memory:
        return self.memory(self.placement.io)

    @property
    def sram(self) -> Memory:
        """The memory holding the activation arena: the SRAM that tiling must fit."""
        return self.arena_memory


def parse_size(value: object) -> int:
    """A byte count from an integer or a string such as "256 KiB", "1 MiB", "1.5 MiB", "512 B".

    Raises ValueError (with the accepted forms) for anything else, including sizes that
    are not a whole number of bytes. Decimal units (kB, MB) are refused: they are ambiguous
    in embedded data sheets.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a size in bytes, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        match = _SIZE_RE.match(value)
        unit = (match.group(2) or "b").lower() if match else ""
        if match and unit in _SIZE_UNITS:
            number = float(match.group(1)) * _SIZE_UNITS[unit]
            if number.is_integer():
                return int(number)
            raise ValueError(f"{value!r} is not a whole number of bytes")
    raise ValueError(
        f'expected a size in bytes: an integer or a string like "256 KiB" '
        f"(units B, KiB, MiB, GiB), got {value!r}"
    )


def targets_dir() -> Path:
    """The folder of shipped target files.

    Installed from a wheel they sit in the package (`npuc/targets/`); in the source tree
    (editable install) they are the repository's top-level `targets/` folder.
    """
    here = Path(__file__).resolve().parent
    for candidate in (here / "targets", here.parent / "targets"):
        if candidate.is_dir() and any(candidate.glob("*.toml")):
            return candidate
    return here.parent / "targets"


def shipped_targets() -> list[str]:
    """Names of the targets npuc ships, sorted."""
    return sorted(p.stem for p in targets_dir().glob("*.toml"))


def available_targets() -> list[str]:
    """Names of the shipped targets and of the plugins' targets, sorted (a shipped name
    wins over a plugin's)."""
    return sorted({*shipped_targets(), *plugin_registry.target_names()})


def load_target(name_or_path: str | Path) -> Target:
    """Load a shipped target by name (`"mcu-64"`) or any target file by path."""
    path = _resolve(name_or_path)
    return parse_target(read_toml(path, "target file")[1], path)


def _resolve(name_or_path: str | Path) -> Path:
    text = str(name_or_path)
    is_path = isinstance(name_or_path, Path) or "/" in text or "\\" in text
    if is_path or text.endswith(".toml"):
        path = Path(name_or_path)
        if not _is_file(path):
            raise NpucError(f"no such target file: {path}")
        return path
    path = targets_dir() / f"{text}.toml"
    if _is_file(path):
        return path
    from_plugin = plugin_registry.target_file(text)
    if from_plugin is None:
        available = ", ".join(available_targets()) or "none"
        raise NpucError(f"unknown target '{text}' (available: {available})")
    return from_plugin


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return False


def parse_target(data: Mapping[str, Any], path: Path | str | None = None) -> Target:
    """Validate the parsed TOML of a target file; `path` only labels the errors."""
    r = _Reader(str(path) if path is not None else "<target>")
    top = r.table(data, "", _TOP_KEYS)
    # Check keys roughly in file order, so the first error reported is the first in the file.
    name = r.string(r.required(top, "", "name"), "name", nonempty=True)
    description = r.string(top.get("description", ""), "description")
    clock_mhz = r.positive_number(r.required(top, "", "clock_mhz"), "clock_mhz")

    mac = r.table(r.required(top, "", "mac_array"), "mac_array", _MAC_KEYS)
    mac_array = MacArray(
        *(r.positive_int(r.required(mac, "mac_array", k), f"mac_array.{k}") for k in _MAC_KEYS)
    )

    memories_data = r.required(top, "", "memories")
    if not isinstance(memories_data, dict) or not memories_data:
        r.fail("memories", "expected at least one [memories.<name>] table", memories_data)
    memories = tuple(r.memory(name, table) for name, table in memories_data.items())

    placement = r.placement(r.required(top, "", "placement"), {m.name: m for m in memories})

    source_data = r.table(top.get("source", {}), "source", _SOURCE_KEYS)
    source = Source(**{k: r.string(v, f"source.{k}") for k, v in source_data.items()})

    data_types = r.required(top, "", "data_types")
    if not isinstance(data_types, list) or not data_types:
        r.fail("data_types", "expected a non-empty list of type names", data_types)
    for i, dtype in enumerate(data_types):
        if dtype not in DATA_TYPES:
            r.fail(f"data_types[{i}]", f"expected one of {', '.join(DATA_TYPES)}", dtype)

    host_data = r.table(top.get("host", {}), "host", _HOST_KEYS)
    host = Host(
        name=r.string(host_data.get("name", Host.name), "host.name", nonempty=True),
        clock_mhz=r.positive_number(host_data.get("clock_mhz", clock_mhz), "host.clock_mhz"),
        cycles_per_element=r.positive_number(
            host_data.get("cycles_per_element", Host.cycles_per_element), "host.cycles_per_element"
        ),
        macs_per_cycle=r.positive_number(
            host_data.get("macs_per_cycle", Host.macs_per_cycle), "host.macs_per_cycle"
        ),
    )

    decoder = None
    if "weight_decoder" in top:
        decoder_data = r.table(top["weight_decoder"], "weight_decoder", _DECODER_KEYS)
        rate = r.required(decoder_data, "weight_decoder", "elements_per_cycle")
        decoder = WeightDecoder(r.positive_number(rate, "weight_decoder.elements_per_cycle"))

    alignment = r.positive_int(top.get("alignment", DEFAULT_ALIGNMENT), "alignment")
    if alignment & (alignment - 1):
        r.fail("alignment", "expected a power of two (bytes)", alignment)

    return Target(
        name=name,
        description=description,
        clock_mhz=clock_mhz,
        data_types=tuple(data_types),
        alignment=alignment,
        dma_channels=r.positive_int(r.required(top, "", "dma_channels"), "dma_channels"),
        mac_array=mac_array,
        memories=memories,
        placement=placement,
        source=source,
        host=host,
        path=Path(path) if path is not None else None,
        weight_decoder=decoder,
    )


# Every key a table may hold; anything else is an error (typos must not pass silently).
_TOP_KEYS = (
    "name",
    "description",
    "clock_mhz",
    "data_types",
    "alignment",
    "dma_channels",
    "mac_array",
    "memories",
    "placement",
    "source",
    "host",
    "weight_decoder",
)
_MAC_KEYS = ("output_channels", "pixels", "input_channels")
_MEMORY_KEYS = (
    "kind",
    "size",
    "bus_width",
    "clock_scale",
    "burst_length",
    "read_latency",
    "write_latency",
    "writable",
)
_PLACEMENT_KEYS = ("constants", "arena", "io")
_SOURCE_KEYS = ("mirrors", "notes")
_HOST_KEYS = ("name", "clock_mhz", "cycles_per_element", "macs_per_cycle")
_DECODER_KEYS = ("elements_per_cycle",)


class _Reader:
    """Typed accessors that raise `NpucError(file, "dotted.key: ...")`."""

    def __init__(self, location: str):
        self.location = location

    def fail(self, key: str, expected: str, got: object = None, *, show: bool = True) -> NoReturn:
        text = f"{key}: {expected}" + (f", got {got!r}" if show else "")
        raise NpucError(text, self.location)

    def table(self, value: object, key: str, allowed: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(key or "<top level>", "expected a table", value)
        for k in value:
            if k not in allowed:
                dotted = f"{key}.{k}" if key else k
                self.fail(dotted, f"unknown key (allowed: {', '.join(allowed)})", show=False)
        return value

    def required(self, table: Mapping[str, Any], key: str, name: str) -> Any:
        if name not in table:
            self.fail(f"{key}.{name}" if key else name, "missing required key", show=False)
        return table[name]

    def _check(self, ok: Callable[[object], bool], value: object, key: str, what: str) -> Any:
        if not ok(value):
            self.fail(key, f"expected {what}", value)
        return value

    def string(self, value: object, key: str, nonempty: bool = False) -> str:
        what = "a non-empty string" if nonempty else "a string"
        return self._check(
            lambda v: isinstance(v, str) and bool(v or not nonempty), value, key, what
        )

    def boolean(self, value: object, key: str) -> bool:
        return self._check(lambda v: isinstance(v, bool), value, key, "true or false")

    def positive_int(self, value: object, key: str) -> int:
        return self._check(_is_int_where(lambda v: v > 0), value, key, "a positive integer")

    def nonnegative_int(self, value: object, key: str) -> int:
        what = "a non-negative integer (cycles)"
        return self._check(_is_int_where(lambda v: v >= 0), value, key, what)

    def positive_number(self, value: object, key: str) -> float:
        def ok(v: object) -> bool:
            if not isinstance(v, int | float) or isinstance(v, bool):
                return False
            return math.isfinite(v) and v > 0

        return float(self._check(ok, value, key, "a positive number"))

    def memory(self, name: str, value: object) -> Memory:
        key = f"memories.{name}"
        t = self.table(value, key, _MEMORY_KEYS)
        kind = self.required(t, key, "kind")
        if kind not in MEMORY_KINDS:
            self.fail(f"{key}.kind", f"expected one of {', '.join(MEMORY_KINDS)}", kind)
        raw_size = self.required(t, key, "size")
        try:
            size = parse_size(raw_size)
        except ValueError as e:
            self.fail(f"{key}.size", str(e), show=False)
        if size <= 0:
            self.fail(f"{key}.size", "expected a positive integer (bytes)", raw_size)
        read_latency = self.nonnegative_int(
            self.required(t, key, "read_latency"), f"{key}.read_latency"
        )
        return Memory(
            name=name,
            kind=kind,
            size=size,
            bus_width=self.positive_int(self.required(t, key, "bus_width"), f"{key}.bus_width"),
            clock_scale=self.positive_number(
                self.required(t, key, "clock_scale"), f"{key}.clock_scale"
            ),
            burst_length=self.positive_int(
                self.required(t, key, "burst_length"), f"{key}.burst_length"
            ),
            read_latency=read_latency,
            # Read-only memories need no write latency; default to the read one.
            write_latency=self.nonnegative_int(
                t.get("write_latency", read_latency), f"{key}.write_latency"
            ),
            # Flash is read-only unless the file says otherwise.
            writable=self.boolean(t.get("writable", kind in ("sram", "dram")), f"{key}.writable"),
        )

    def placement(self, value: object, memories: Mapping[str, Memory]) -> Placement:
        t = self.table(value, "placement", _PLACEMENT_KEYS)
        names = ", ".join(memories)
        chosen: dict[str, str] = {}
        for region in _PLACEMENT_KEYS:
            key = f"placement.{region}"
            if region == "io" and region not in t:
                chosen[region] = chosen["arena"]  # inputs/outputs default to the arena's memory
                continue
            name = self.string(self.required(t, "placement", region), key)
            if name not in memories:
                self.fail(key, f"no memory named {name!r} (memories: {names})", show=False)
            if region != "constants" and not memories[name].writable:
                self.fail(key, f"memory {name!r} is read-only (writable = false)", show=False)
            chosen[region] = name
        return Placement(**chosen)


def _is_int_where(cond: Callable[[int], bool]) -> Callable[[object], bool]:
    # TOML booleans are Python ints: refuse them explicitly.
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and cond(v)
