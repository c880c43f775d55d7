"""The `.npubin` layout walked with struct formats written from docs/binary-format.md:
where the header, the section table, the sections' records, the instruction records and
their tensor descriptors start in one valid file (for tests that corrupt them field by
field; nothing here comes from npuc)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

HEADER = "<4sHHIIQII"  # magic, major, minor, header size, section count, total size, flags, crc
ENTRY = "<IIQQII"  # kind, alignment, offset, size, crc32, reserved
NAMES = {1: "STRINGS", 2: "REGIONS", 3: "IO", 4: "LAYERS", 5: "COMMANDS", 6: "CONSTANTS"}
NAMES |= {7: "DEBUG", 8: "STATE"}
REQUIRED = (1, 2, 3, 4, 5, 6)
REGION_KINDS = ("constants", "mutable", "activations", "sram")
OPCODES = {1: "dma", 2: "conv2d", 3: "matmul", 4: "pool", 5: "eltwise", 6: "lut"}
OPCODES |= {7: "softmax", 8: "move", 9: "host"}
ENGINE = {"dma": 0, "host": 2}  # the others: 1, compute
# per opcode: (parameter block size P, bytes of fields before the padding)
PARAMS = {"dma": (0, 0), "conv2d": (56, 53), "matmul": (24, 17), "pool": (72, 68)}
PARAMS |= {"eltwise": (56, 51), "lut": (8, 4), "softmax": (16, 12), "move": (80, 76)}
PARAMS |= {"host": (8, 8)}
# enum and flag fields of the parameter blocks: (offset, name, codes defined) or a flag
ENUMS = {
    "conv2d": ((52, "rounding", 4),),
    "matmul": ((16, "rounding", 4),),
    "pool": ((64, "mode", 3), (65, "rounding", 4)),
    "eltwise": ((48, "kind", 8), (49, "rounding", 4), (50, "overshift", 2)),
}
FLAGS = {"pool": ((66, "ceil_mode"), (67, "count_include_pad"))}


def u32(data: bytes, at: int) -> int:
    return int(struct.unpack_from("<I", data, at)[0])


def pad8(n: int) -> int:
    return -(-n // 8) * 8


# --------------------------------------------------------------------------- the layout


@dataclass
class Tensor:
    at: int  # the descriptor's first byte
    rank: int
    size: int  # 16 + 8 rank


@dataclass
class Record:
    at: int
    op: str
    operands: int
    deps: int
    params: int
    size: int
    descriptors: list[Tensor]

    @property
    def deps_at(self) -> int:
        return self.at + 16 + self.params


@dataclass
class Layout:
    """Where everything is in one file, walked as the document lays it out."""

    data: bytes
    entries: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)
    strings: int = 0
    io: list[tuple[int, str, Tensor]] = field(default_factory=list)  # entry, what, descriptor
    records: list[Record] = field(default_factory=list)

    def __post_init__(self) -> None:
        data = self.data
        _, major, _, _, count, _, _, _ = struct.unpack_from(HEADER, data, 0)
        self.major, self.count = major, count
        self.table_end = 32 + 32 * count
        for i in range(count):
            kind, alignment, offset, size, _, _ = struct.unpack_from(ENTRY, data, 32 + 32 * i)
            self.entries[kind] = (32 + 32 * i, alignment, offset, size)
        self.strings = u32(data, self.offset(1))
        io = self.offset(3)
        n_in, n_out = struct.unpack_from("<II", data, io + 4)
        at = io + 16
        for i in range(n_in + n_out):
            what = f"input {i}" if i < n_in else f"output {i - n_in}"
            t = self.tensor(at + 16)
            self.io.append((at, what, t))
            at += 16 + t.size
        commands = self.offset(5)
        at = commands + 8
        for _ in range(u32(data, commands)):
            opcode, _, operands, deps, params, _, size = struct.unpack_from("<HBBHHII", data, at)
            cursor = at + 16 + params + pad8(4 * deps)
            descriptors = []
            for _ in range(operands):
                descriptors.append(self.tensor(cursor))
                cursor += descriptors[-1].size
            self.records.append(
                Record(at, OPCODES[opcode], operands, deps, params, size, descriptors)
            )
            at += size

    def tensor(self, at: int) -> Tensor:
        rank = self.data[at + 2]
        return Tensor(at, rank, 16 + 8 * rank)

    def offset(self, kind: int) -> int:
        return self.entries[kind][2]

    def index(self, kind: int) -> int:
        """The section's entry number in the table."""
        return (self.entries[kind][0] - 32) // 32
