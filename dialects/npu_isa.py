"""The NPU instruction set as plain data, shared by the `npu` dialect, the encoder and the loader.

An instruction names an op of `SPECS`, its tensor operands (`TensorRef`: a
strided view into a memory region), its parameters and the earlier
instructions it waits for; a `Program` holds the instructions, the regions,
the I/O descriptors, the layer names, the constants and the state pairs. The rules they obey
are in npu_rules.py; semantics in docs/binary-format.md and dialects/npu.py.
No xDSL here: the runtime loads binaries into these classes directly.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from npuc.shape_text import shape_text

REGION_KINDS = ("constants", "mutable", "activations", "sram")


def region_kinds(planned: Iterable[str]) -> dict[str, str]:
    """Planned region name -> the binary's region kind. A region named after another memory
    (tiles spilled to DRAM while the arena is SRAM) holds the activations; the arena is then
    the NPU's `sram`. Names without a kind are left out."""
    names = list(planned)
    kinds = {name: name for name in names if name in REGION_KINDS}
    extra = sorted(set(names) - set(kinds))
    if len(extra) == 1 and "sram" not in names and "activations" in names:
        kinds["activations"], kinds[extra[0]] = "sram", "activations"
    return kinds


#: name -> (bytes per element, numpy dtype, storage range or None for floats)
DTYPES: dict[str, tuple[int, str, tuple[int, int] | None]] = {
    "i8": (1, "<i1", (-(1 << 7), (1 << 7) - 1)),
    "u8": (1, "<u1", (0, (1 << 8) - 1)),
    "i16": (2, "<i2", (-(1 << 15), (1 << 15) - 1)),
    "u16": (2, "<u2", (0, (1 << 16) - 1)),
    "i32": (4, "<i4", (-(1 << 31), (1 << 31) - 1)),
    "i64": (8, "<i8", (-(1 << 63), (1 << 63) - 1)),
    "f32": (4, "<f4", None),
    "b8": (1, "|b1", (0, 1)),  # bool, one byte 0 or 1 (nn's i1; host ops only)
}
DTYPE_NAMES = tuple(DTYPES)
ENGINES = ("dma", "compute", "host")
ROUNDING = ("half_away_from_zero", "half_to_even", "tflite", "half_up")
POOL_MODES = ("max", "avg", "sum")
ELTWISE_KINDS = ("add", "sub", "mul", "maximum", "minimum", "squared_difference", "prelu", "div")
OVERSHIFT = ("exact", "x86")
MAX_RANK = 8
MAX_ELEMENTS = 1 << 28  # per operand: a bound on what one instruction may touch
MAX_TABLE = 1 << 16  # LUT entries
MAX_WORK = 1 << 40  # multiply-accumulates (or window taps) of one instruction
INT32 = (-(1 << 31), (1 << 31) - 1)
MULTIPLIER = (0, (1 << 31) - 1)
SHIFT = (-31, 62)


class ISAError(ValueError):
    """A rule of the instruction set is broken; the message says which."""


class InstructionError(ISAError):
    """An ISAError about the program's instruction `index` (the first it names)."""

    def __init__(self, index: int, message: str):
        super().__init__(message)
        self.index = index


# --------------------------------------------------------------------------- tensors


def row_major(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a contiguous row-major tensor."""
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides))


@dataclass(frozen=True)
class TensorRef:
    """`shape` elements of `dtype` at byte `offset` of `region`, element `strides` apart."""

    region: str
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str

    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype][0]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @functools.cached_property  # asked for often (hazards, rules, the cycle model)
    def extent(self) -> int:
        """Bytes from `offset` to the end of the last element."""
        last = sum((d - 1) * s for d, s in zip(self.shape, self.strides, strict=True))
        return (last + 1) * self.itemsize

    @property
    def end(self) -> int:
        return self.offset + self.extent

    def apart_from(self, other: TensorRef) -> bool:
        """Whether the two views' byte ranges [offset, end) cannot meet: other regions, or
        ranges that do not overlap (strided views may still miss each other inside)."""
        return self.region != other.region or self.end <= other.offset or (other.end <= self.offset)

    def is_contiguous(self) -> bool:
        return self.strides == row_major(self.shape)

    def check(self) -> None:
        if self.region not in REGION_KINDS:
            raise ISAError(f"unknown region '{self.region}' (known: {', '.join(REGION_KINDS)})")
        if self.dtype not in DTYPES:
            raise ISAError(f"unknown element type '{self.dtype}'")
        if not 1 <= len(self.shape) <= MAX_RANK:
            raise ISAError(f"rank must be in [1, {MAX_RANK}], got {len(self.shape)}")
        if len(self.strides) != len(self.shape):
            raise ISAError(f"{len(self.strides)} strides for a rank-{len(self.shape)} shape")
        if any(d < 1 for d in self.shape):
            raise ISAError(f"dimensions must be positive, got {shape_text(self.shape)}")
        if any(s < 0 for s in self.strides):
            raise ISAError(f"strides must be non-negative, got {list(self.strides)}")
        if self.offset < 0 or self.offset % self.itemsize:
            raise ISAError(f"offset {self.offset} is not a multiple of the element size")
        if self.numel > MAX_ELEMENTS:
            raise ISAError(f"{self.numel} elements exceed the limit of {MAX_ELEMENTS}")

    def is_nested(self) -> bool:
        """The dimensions, sorted by stride, nest without overlap, so no two elements share a
        byte: the layout a written operand needs (slices and permutations of row-major ones)."""
        span = self.itemsize
        for stride, dim in sorted(
            (s * self.itemsize, d) for d, s in zip(self.shape, self.strides, strict=True) if d > 1
        ):
            if stride < span:
                return False
            span += stride * (dim - 1)
        return True

    def byte_offsets(self) -> np.ndarray:
        """The first byte of every element, relative to the region (int64, any order)."""
        addresses = np.full((), self.offset, np.int64)
        for d, s in zip(self.shape, self.strides, strict=True):
            addresses = addresses[..., None] + np.arange(d, dtype=np.int64) * (s * self.itemsize)
        return addresses.ravel()


def dtype_range(dtype: str) -> tuple[int, int]:
    bounds = DTYPES[dtype][2]
    return bounds if bounds is not None else INT32


def is_integer(dtype: str) -> bool:
    return DTYPES[dtype][2] is not None


# --------------------------------------------------------------------------- instruction specs


@dataclass(frozen=True)
class Field:
    """One parameter: `code` is its struct code ('i' int32, 'I' uint32, 'B' uint8 enum/flag)."""

    name: str
    code: str
    count: int = 0  # 0: a scalar; n: a tuple of n values
    choices: tuple[str, ...] = ()  # an enum: the value is one of these names
    flag: bool = False  # a bool stored as 0/1
    default: Any = 0
    string: bool = False  # a string, stored as an index into the string table
    variable: bool = False  # a tuple of up to `count` values (the rest stored as zeros)
    required: bool = False  # always stated in the IR (it names what the instruction does)


@dataclass(frozen=True)
class OpSpec:
    """An instruction kind: binary opcode, engine, operand roles (written ones last), parameters."""

    name: str
    opcode: int
    engine: str
    operands: tuple[str, ...]
    writes: tuple[str, ...]
    fields: tuple[Field, ...]

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)


def _i(name: str, default: int = 0) -> Field:
    return Field(name, "i", default=default)


def _u(name: str, count: int = 0, default: Any = 0) -> Field:
    return Field(name, "I", count, default=default)


def _enum(name: str, choices: tuple[str, ...], required: bool = False) -> Field:
    return Field(name, "B", choices=choices, default=choices[0], required=required)


def _flag(name: str) -> Field:
    return Field(name, "B", flag=True, default=False)


# clamp_min/clamp_max default to the ofm's storage range (see `default_params`).
_CLAMP = (_i("clamp_min"), _i("clamp_max"))

SPECS: dict[str, OpSpec] = {
    spec.name: spec
    for spec in (
        OpSpec("dma", 1, "dma", ("src", "dst"), ("dst",), ()),
        OpSpec(
            "conv2d",
            2,
            "compute",
            ("ifm", "weights", "bias_scale", "ofm"),
            ("ofm",),
            (
                _u("strides", 2, (1, 1)),
                _u("pads", 4, (0, 0, 0, 0)),
                _u("dilations", 2, (1, 1)),
                _u("groups", default=1),
                _i("ifm_zero_point"),
                _i("ofm_zero_point"),
                *_CLAMP,
                _enum("rounding", ROUNDING),
            ),
        ),
        OpSpec(
            "matmul",
            3,
            "compute",
            ("lhs", "rhs", "bias_scale", "ofm"),
            ("ofm",),
            (_i("lhs_zero_point"), _i("ofm_zero_point"), *_CLAMP, _enum("rounding", ROUNDING)),
        ),
        OpSpec(
            "pool",
            4,
            "compute",
            ("ifm", "ofm"),
            ("ofm",),
            (
                _u("kernel", 2, (1, 1)),
                _u("strides", 2, (1, 1)),
                _u("pads", 4, (0, 0, 0, 0)),
                _u("dilations", 2, (1, 1)),
                _i("ifm_zero_point"),
                _i("ofm_zero_point"),
                _i("multiplier", 1 << 30),
                _i("shift", 30),
                *_CLAMP,
                _enum("mode", POOL_MODES, True),
                _enum("rounding", ROUNDING),
                _flag("ceil_mode"),
                _flag("count_include_pad"),
            ),
        ),
        OpSpec(
            "eltwise",
            5,
            "compute",
            ("lhs", "rhs", "ofm"),
            ("ofm",),
            (
                _i("lhs_zero_point"),
                _i("rhs_zero_point"),
                _i("ofm_zero_point"),
                _i("left_shift"),
                _i("lhs_multiplier"),
                _i("lhs_shift"),
                _i("rhs_multiplier"),
                _i("rhs_shift"),
                _i("multiplier", 1 << 30),
                _i("shift", 30),
                *_CLAMP,
                _enum("kind", ELTWISE_KINDS, True),
                _enum("rounding", ROUNDING),
                _enum("overshift", OVERSHIFT),
            ),
        ),
        OpSpec("lut", 6, "compute", ("ifm", "table", "ofm"), ("ofm",), (_i("table_base"),)),
        OpSpec(
            "softmax",
            7,
            "compute",
            ("ifm", "ofm"),
            ("ofm",),
            (_i("input_multiplier"), _i("input_left_shift"), _i("diff_min")),
        ),
        OpSpec(
            "move",
            8,
            "compute",
            ("ifm", "ofm"),
            ("ofm",),
            (
                _i("pad_value"),
                Field("perm", "B", MAX_RANK, variable=True),
                Field("pads", "I", 2 * MAX_RANK, variable=True),
            ),
        ),
        OpSpec(
            "host",
            9,
            "host",
            (),
            (),
            (Field("body", "I", string=True, default=""), _u("inputs")),
        ),
    )
}
OPCODES = {spec.opcode: spec for spec in SPECS.values()}


@dataclass(frozen=True)
class Instruction:
    """One instruction: `params` holds every field of its spec (see `default_params`).

    A move's `perm` and `pads` are stored at their operands' ranks (perm: ifm rank,
    pads: begins then ends, 2 x ofm rank); a host's operands are its inputs then outputs.
    """

    op: str
    operands: tuple[TensorRef, ...]
    params: Mapping[str, Any]
    deps: tuple[int, ...] = ()
    layer: int | None = None

    @property
    def spec(self) -> OpSpec:
        return SPECS[self.op]

    @property
    def engine(self) -> str:
        return self.spec.engine

    def roles(self) -> tuple[str, ...]:
        if self.op != "host":
            return self.spec.operands
        n = self.params["inputs"]
        return (*(f"in{i}" for i in range(n)), *(f"out{i}" for i in range(len(self.operands) - n)))

    def operand(self, role: str) -> TensorRef:
        return self.operands[self.roles().index(role)]

    def written_roles(self) -> tuple[str, ...]:
        roles = self.roles()
        return roles[self.params["inputs"] :] if self.op == "host" else self.spec.writes

    def written(self) -> tuple[TensorRef, ...]:
        return tuple(self.operand(r) for r in self.written_roles())

    def read(self) -> tuple[TensorRef, ...]:
        written = self.written_roles()
        return tuple(self.operand(r) for r in self.roles() if r not in written)

    def macs(self) -> int:
        """Multiply-accumulates of a conv2d or matmul (0 for other kinds)."""
        if self.op == "conv2d":
            return self.operand("ofm").numel * math.prod(self.operand("weights").shape[1:])
        if self.op == "matmul":
            return self.operand("ofm").numel * self.operand("lhs").shape[2]
        return 0


def default_params(op: str, operands: Sequence[TensorRef]) -> dict[str, Any]:
    """Every field's default; the clamp defaults to the ofm's storage range."""
    spec = SPECS[op]
    params = {f.name: f.default for f in spec.fields}
    if "clamp_min" in params and operands and is_integer(operands[-1].dtype):
        params["clamp_min"], params["clamp_max"] = dtype_range(operands[-1].dtype)
    if op == "move" and len(operands) == 2:
        params["perm"] = tuple(range(len(operands[0].shape)))
        params["pads"] = (0,) * (2 * len(operands[1].shape))
    return params


# --------------------------------------------------------------------------- programs


@dataclass(frozen=True)
class Region:
    """A memory region: `size` bytes in the target memory named `memory`."""

    kind: str
    size: int
    memory: str


@dataclass(frozen=True)
class IODesc:
    """A model input or output: where it lives and its quantization (scale 0: not quantized)."""

    name: str
    tensor: TensorRef
    scale: float = 0.0
    zero_point: int = 0


@dataclass(frozen=True)
class StatePair:
    """State a stateful (streaming) program carries from one call to the next: input number
    `input` takes output number `output` of the previous call, and `initial` (the input
    tensor's stored bytes, row-major, little-endian) on the first call."""

    input: int
    output: int
    initial: bytes


@dataclass(frozen=True)
class ConstantStream:
    """Bytes [offset, offset + size) of the constants region, integers of `dtype`, stored
    encoded with `codec` (dialects/constant_codec.py) instead of as they are."""

    offset: int
    size: int
    dtype: str
    codec: str = "rice"

    @property
    def end(self) -> int:
        return self.offset + self.size


@dataclass(frozen=True)
class Program:
    name: str
    regions: tuple[Region, ...]
    inputs: tuple[IODesc, ...]
    outputs: tuple[IODesc, ...]
    layers: tuple[str, ...]
    instructions: tuple[Instruction, ...]
    constants: bytes = b""
    debug: tuple[tuple[str, str], ...] = field(default=())
    state: tuple[StatePair, ...] = field(default=())
    streams: tuple[ConstantStream, ...] = field(default=())  # encoded runs, by offset

    def region(self, kind: str) -> Region | None:
        return next((r for r in self.regions if r.kind == kind), None)
