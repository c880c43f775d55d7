"""Hand-built NPU programs and their `qnn` references, for the runtime's tests.

`Builder` places inputs, outputs and constants in byte regions and runs a list of
instructions through the encoder, the loader and the executor; `qnn` evaluates one
`qnn` op parsed from text with the reference kernels (runtime/qnn_interpreter.py).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
from xdsl.parser import Parser

from npuc.dialects.context import make_context
from npuc.dialects.npu_isa import (
    Instruction,
    IODesc,
    Program,
    Region,
    TensorRef,
    default_params,
    row_major,
)
from npuc.dialects.npu_rules import check_instruction, check_program
from npuc.dialects.npubin_format import MAX_SECTIONS
from npuc.runtime.executor import Executor
from npuc.runtime.qnn_interpreter import evaluate

TINY = Path(__file__).parent / "npu" / "tiny.mlir"
NP = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "i32": np.int32}


CTX = make_context()


# --------------------------------------------------------------------------- building programs


def tensor(region, offset, shape, dtype="i8", strides=None) -> TensorRef:
    shape = tuple(shape)
    return TensorRef(region, offset, shape, tuple(strides or row_major(shape)), dtype)


def nhwc(shape) -> tuple[int, ...]:
    """Element strides of an NCHW view stored as NHWC."""
    _, c, h, w = shape
    return (h * w * c, 1, w * c, c)


def inst(op, operands, deps=(), layer=None, **params) -> Instruction:
    values = default_params(op, operands)
    values.update(params)
    return Instruction(op, tuple(operands), values, tuple(deps), layer)


class Builder:
    """Lays out constants, inputs and outputs and assembles a checked Program."""

    def __init__(self) -> None:
        self.constants = bytearray()
        self.mutable = 0
        self.inputs: list[IODesc] = []
        self.outputs: list[IODesc] = []
        self.feeds: dict[str, np.ndarray] = {}

    def const(self, array: np.ndarray, dtype: str, strides=None, shape=None) -> TensorRef:
        offset = (len(self.constants) + 63) // 64 * 64
        data = np.ascontiguousarray(array, NP[dtype]).tobytes()
        self.constants += bytes(offset - len(self.constants)) + data
        return tensor("constants", offset, shape or array.shape, dtype, strides)

    def _place(self, shape, dtype, strides) -> TensorRef:
        t = tensor("mutable", self.mutable, shape, dtype, strides)
        self.mutable = (t.end + 63) // 64 * 64
        return t

    def input(self, name: str, array: np.ndarray, dtype: str, strides=None) -> TensorRef:
        t = self._place(array.shape, dtype, strides)
        self.inputs.append(IODesc(name, t))
        self.feeds[name] = array.astype(NP[dtype])
        return t

    def output(self, name: str, shape, dtype: str = "i8", strides=None) -> TensorRef:
        t = self._place(shape, dtype, strides)
        self.outputs.append(IODesc(name, t))
        return t

    def program(self, body, sram: int = 1 << 16) -> Program:
        regions = (
            Region("constants", max(len(self.constants), 1), "flash"),
            Region("mutable", max(self.mutable, 1), "sram"),
            Region("sram", sram, "sram"),
        )
        prog = Program(
            "t",
            regions,
            tuple(self.inputs),
            tuple(self.outputs),
            (),
            tuple(body),
            bytes(self.constants),
        )
        check_program(prog)
        for i in body:
            check_instruction(i)
        return prog

    def run(self, body, **kw) -> dict[str, np.ndarray]:
        return Executor(self.program(body, **kw)).run(self.feeds)


# --------------------------------------------------------------------------- qnn references


def qt(shape, dtype="i8", zp=0, scale=0.05) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x!qnn.uniform<{dtype}:f32, {scale}:{zp}>>"


def qt_axis(shape, zps, dtype="i8", axis=0) -> str:
    params = ", ".join(f"0.01:{z}" for z in zps)
    return f"tensor<{'x'.join(map(str, shape))}x!qnn.uniform<{dtype}:f32:{axis}, {{{params}}}>>"


def arr(values) -> str:
    return f"array<i64: {', '.join(str(int(v)) for v in values)}>"


def qnn(op: str, args: list[np.ndarray], types: list[str], out_type: str, attrs: str) -> np.ndarray:
    """Evaluate one qnn op (parsed from text) on stored integers with the reference kernels."""
    names = [f"%a{i}" for i in range(len(args))]
    sig = ", ".join(f"{n}: {t}" for n, t in zip(names, types, strict=True))
    text = (
        f"func.func @f({sig}) {{\n  %r = {op} {', '.join(names)} {{{attrs}}} : "
        f"({', '.join(types)}) -> {out_type}\n  func.return\n}}"
    )
    module = Parser(CTX, text).parse_module()
    target = next(o for o in module.walk() if o.name == op)
    return evaluate(target, list(args))[0]


def clamp_attrs(p: dict) -> str:
    return (
        f'rounding = "{p["rounding"]}", clamp_min = {p["clamp_min"]} : i64, '
        f"clamp_max = {p['clamp_max']} : i64"
    )


def random_table(rng, channels: int, shift_range, wzp=None) -> np.ndarray:
    rows = np.stack(
        [
            rng.integers(-5000, 5000, channels),
            rng.integers(1 << 30, 1 << 31, channels),
            rng.integers(*shift_range, channels),
            wzp if wzp is not None else np.zeros(channels, np.int64),
        ],
        axis=1,
    )
    return rows.astype(np.int32)


def spread(y: np.ndarray, lo: int, hi: int) -> None:
    """The comparison means something: not every output sits at a clamp bound."""
    assert np.mean((y > lo) & (y < hi)) > 0.2


def qnn_conv(
    x: np.ndarray,
    xd: str,
    w: np.ndarray,
    wzp: np.ndarray,
    table: np.ndarray,
    p: dict,
    out_shape: tuple[int, ...],
    out_dtype: str = "i8",
) -> np.ndarray:
    """qnn.conv2d of stored x (dtype xd) with int8 weights, their zero points and a
    bias_scale table [bias, multiplier, shift, weight zp] per output channel."""
    attrs = (
        f"strides = {arr(p['strides'])}, pads = {arr(p['pads'])}, "
        f"dilations = {arr(p['dilations'])}, groups = {p['groups']} : i64, "
        f"multiplier = {arr(table[:, 1])}, shift = {arr(table[:, 2])}, " + clamp_attrs(p)
    )
    return qnn(
        "qnn.conv2d",
        [x.astype(NP[xd]), w.astype(np.int8), table[:, 0].copy()],
        [qt(x.shape, xd, p["ifm_zero_point"]), qt_axis(w.shape, wzp), f"tensor<{w.shape[0]}xi32>"],
        qt(out_shape, out_dtype, p["ofm_zero_point"]),
        attrs,
    )


def fix_crcs(data: bytearray) -> None:
    """Recompute an encoded program's section and header CRC32s after an edit (the loader
    then reaches the check the edit is meant for). A table an edit broke is left as far as
    it cannot be read: too short, too many sections, or a section past the end."""
    if len(data) < 32:
        return
    (count,) = struct.unpack_from("<I", data, 12)
    if count > MAX_SECTIONS or 32 + 32 * count > len(data):
        return
    for i in range(count):
        at = 32 + 32 * i
        offset, size = struct.unpack_from("<QQ", data, at + 8)
        if offset + size <= len(data):
            struct.pack_into("<I", data, at + 24, zlib.crc32(data[offset : offset + size]))
    struct.pack_into("<I", data, 28, zlib.crc32(data[:28] + data[32 : 32 + 32 * count]))
