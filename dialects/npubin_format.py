"""Byte layouts of the `.npubin` format (docs/binary-format.md), shared by encoder and loader.

Every struct is little-endian and packed; the tables in the doc give the same
offsets. Parameter blocks follow the field order of `npu_isa.SPECS`.
"""

from __future__ import annotations

import struct

from .npu_isa import MAX_RANK, Field, OpSpec

MAGIC = b"NPUB"
#: The newest version this npuc reads and writes. The encoder writes the oldest version
#: that holds the file: 2.0 when its constants hold encoded streams (the CONSTANTS
#: section's layout changes), else 1.0 unless it has a section of a later minor version
#: (`SECTION_SINCE`), so a 1.0 loader reads every file without one.
VERSION = (2, 0)
#: The newest minor version of each major version this npuc reads.
MINORS = {1: 1, 2: 0}
#: The version whose CONSTANTS section starts with a stream table (`CONSTANTS_HEAD`).
STREAMS_SINCE = (2, 0)

HEADER = struct.Struct(
    "<4sHHIIQII"
)  # magic, major, minor, header size, sections, total, flags, crc
SECTION = struct.Struct("<IIQQII")  # kind, alignment, offset, size, crc32, reserved
COUNT = struct.Struct("<II")  # count, reserved: the head of STRINGS, REGIONS, LAYERS, COMMANDS
STRING = struct.Struct("<II")  # offset into the string data, length
REGION = struct.Struct("<IIQ")  # kind, memory name (string), size
IO_HEAD = struct.Struct("<IIII")  # program name (string), inputs, outputs, reserved
IO_ENTRY = struct.Struct("<Iid")  # name (string), zero point, scale; a tensor descriptor follows
TENSOR = struct.Struct("<BBBBIQ")  # region, dtype, rank, reserved, reserved, offset
DIM = struct.Struct("<II")  # size, element stride
INSTRUCTION = struct.Struct("<HBBHHII")  # opcode, engine, operands, deps, params size, layer, size
DEBUG_ENTRY = struct.Struct("<II")  # key, value (strings)
STATE_ENTRY = struct.Struct("<IIQQ")  # input, output, initial value's offset and size
CONSTANTS_HEAD = struct.Struct("<QII")  # decoded size, stream count, reserved (version 2)
# offset, decoded size, payload offset in the data area, payload size, codec, element type,
# reserved
STREAM_ENTRY = struct.Struct("<QQQIBBH")

NO_LAYER = 0xFFFFFFFF
MAX_SECTIONS = 16

SECTION_KINDS = {
    1: "STRINGS",
    2: "REGIONS",
    3: "IO",
    4: "LAYERS",
    5: "COMMANDS",
    6: "CONSTANTS",
    7: "DEBUG",
    8: "STATE",
}
SECTION_IDS = {name: kind for kind, name in SECTION_KINDS.items()}
REQUIRED_SECTIONS = ("STRINGS", "REGIONS", "IO", "LAYERS", "COMMANDS", "CONSTANTS")
#: The version that added a section; the others are in 1.0.
SECTION_SINCE = {"STATE": (1, 1)}
SECTION_ALIGNMENT = {"CONSTANTS": 64}  # every other section: 8
DEFAULT_ALIGNMENT = 8
MAX_ALIGNMENT = 4096


def pad8(n: int) -> int:
    return (n + 7) & ~7


def align(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


def field_format(f: Field) -> str:
    return f"{f.count}{f.code}" if f.count else f.code


def params_struct(spec: OpSpec) -> struct.Struct:
    """The packed parameter block of an instruction kind (before padding to 8 bytes)."""
    return struct.Struct("<" + "".join(field_format(f) for f in spec.fields))


def params_size(spec: OpSpec) -> int:
    return pad8(params_struct(spec).size)


def tensor_size(rank: int) -> int:
    return TENSOR.size + rank * DIM.size


assert TENSOR.size == 16 and INSTRUCTION.size == 16 and HEADER.size == 32 and SECTION.size == 32
assert STATE_ENTRY.size == 24 and CONSTANTS_HEAD.size == 16 and STREAM_ENTRY.size == 32
assert MAX_RANK <= 255
