"""Mutators for npuc's inputs: pure functions of their input and a seeded `random.Random`.

Each mutator returns `Mutant(description, data, bad)`: `bad` is True only when the
mutation guarantees an invalid input (a truncated binary whose header states its size,
an ONNX Conv with five inputs, a TFLite stride of 0 ...); a tool that exits 0 on such an
input has missed an error. Everything here is deterministic given the `rng`.

Kinds: bytes (any file), text (.mlir), ONNX protos, TFLite models (through the test
builder's records), .npubin programs (with the CRCs fixed, to reach the checks behind
them), .npy arrays, JSON documents and TOML config files. The CLI option mutations
(`option_values`) are values per option type.
"""

from __future__ import annotations

import copy
import io
import json
import math
import random
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from npu_programs import fix_crcs

#: Integers that tend to find off-by-one and overflow bugs (and their negatives).
INTERESTING_INTS = (
    0,
    1,
    2,
    3,
    7,
    8,
    15,
    16,
    31,
    32,
    63,
    64,
    127,
    128,
    255,
    256,
    1023,
    4096,
    32767,
    32768,
    65535,
    65536,
    2**31 - 1,
    2**31,
    2**32 - 1,
    2**32,
    2**63 - 1,
    2**63,
    2**64 - 1,
)
INTERESTING_FLOATS = (
    0.0,
    -0.0,
    1e-45,
    1e-38,
    1e38,
    3.5e38,
    1e308,
    float("inf"),
    float("-inf"),
    float("nan"),
    -1.0,
    0.5,
)


@dataclass(frozen=True)
class Mutant:
    description: str
    data: Any
    bad: bool = False


def interesting_int(rng: random.Random, signed: bool = True) -> int:
    value = rng.choice(INTERESTING_INTS)
    if signed and rng.random() < 0.4:
        value = -value
    return value


# --------------------------------------------------------------------------- bytes


def mutate_bytes(data: bytes, rng: random.Random) -> Mutant:
    """A generic byte-level mutation: flips, interesting values, truncation, splices."""
    if not data:
        return Mutant("insert into empty", bytes(rng.getrandbits(8) for _ in range(8)))
    buf = bytearray(data)
    kind = rng.choices(
        ["flip", "byte", "int", "truncate", "delete", "duplicate", "insert", "zero-run"],
        [4, 3, 3, 1, 1, 1, 1, 1],
    )[0]
    if kind == "flip":
        n = rng.choice((1, 1, 2, 4, 16))
        for _ in range(n):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        return Mutant(f"flip {n} bits", bytes(buf))
    if kind == "byte":
        at = rng.randrange(len(buf))
        buf[at] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, rng.getrandbits(8)))
        return Mutant(f"byte {at} = {buf[at]}", bytes(buf))
    if kind == "int":
        width = rng.choice((1, 2, 4, 8))
        at = rng.randrange(max(len(buf) - width, 0) + 1)
        value = interesting_int(rng) % (1 << (8 * width))
        buf[at : at + width] = value.to_bytes(width, "little")[: len(buf) - at]
        return Mutant(f"u{8 * width} at {at} = {value}", bytes(buf))
    if kind == "truncate":
        cut = rng.randrange(len(buf))
        return Mutant(f"truncate to {cut}", bytes(buf[:cut]))
    at = rng.randrange(len(buf))
    n = rng.choice((1, 2, 4, 8, 16, 64, 256))
    if kind == "delete":
        del buf[at : at + n]
        return Mutant(f"delete {n} at {at}", bytes(buf))
    if kind == "duplicate":
        buf[at:at] = buf[at : at + n]
        return Mutant(f"duplicate {n} at {at}", bytes(buf))
    if kind == "insert":
        buf[at:at] = bytes(rng.getrandbits(8) for _ in range(n))
        return Mutant(f"insert {n} at {at}", bytes(buf))
    buf[at : at + n] = bytes(len(buf[at : at + n]))
    return Mutant(f"zero {n} at {at}", bytes(buf))


def truncate(data: bytes, rng: random.Random) -> Mutant:
    cut = rng.randrange(len(data)) if data else 0
    return Mutant(f"truncate to {cut}", data[:cut])


# --------------------------------------------------------------------------- .mlir text

_TOKEN = re.compile(
    r"%[\w.$-]+|@[\w.$-]+|\^[\w.$-]+|#[\w.$-]+|![\w.$-]+"  # values, symbols, blocks, aliases
    r"|\"(?:[^\"\\]|\\.)*\""  # strings
    r"|-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?"  # numbers
    r"|\b[a-z_][\w.]*\b"  # keywords, op names, types
    r"|->|[^\s\w]",  # punctuation
    re.ASCII,
)
NUMBERS = (
    "0",
    "-1",
    "1",
    "2",
    "-2147483649",
    "2147483648",
    "9223372036854775808",
    "99999999999999999999",
    "1e309",
    "-1e309",
    "0.0",
    "-0.0",
    "1.5",
    "nan",
    "255",
    "256",
    "-129",
    "65536",
    "4294967296",
)
TYPES = (
    "i1",
    "i8",
    "i16",
    "i32",
    "i64",
    "i642",
    "i0",
    "ui8",
    "si8",
    "f16",
    "bf16",
    "f32",
    "f64",
    "index",
    "none",
    "i99999",
    "tensor<*xf32>",
    "tensor<?xf32>",
    "tensor<f32>",
    "tensor<0xf32>",
    "tensor<1x0xf32>",
    "tensor<99999999999x99999999xf32>",
    "memref<4xf32>",
    "vector<4xf32>",
    "complex<f32>",
    "!qnn.uniform<i8:f32, 0.0>",
    "!qnn.uniform<i8:f32, nan>",
    "!qnn.uniform<i8:f32, 0.1:300>",
    "!qnn.uniform<i8:f32:9, {0.1, 0.2}>",
    "!qnn.uniform<u8:f32, -1.0:0>",
)
WORDS = (
    "nn.relu",
    "nn.add",
    "nn.conv2d",
    "qnn.requantize",
    "qnn.conv2d",
    "func.return",
    "array",
    "dense",
    "tensor",
    "true",
    "false",
    "unit",
    "loc",
    "attributes",
    "i64",
    "f32",
    "x",
    "strides",
    "pads",
    "shift",
    "multiplier",
    "axis",
)


def mlir_tokens(text: str) -> list[re.Match[str]]:
    return list(_TOKEN.finditer(text))


def _replace(text: str, m: re.Match[str], new: str) -> str:
    return text[: m.start()] + new + text[m.end() :]


def mutate_mlir(text: str, rng: random.Random) -> Mutant:
    """A token or line mutation of textual IR (use-before-def moves are definitely bad)."""
    kind = rng.choices(
        [
            "number",
            "type",
            "shape",
            "token-delete",
            "token-dup",
            "token-word",
            "value-swap",
            "line-delete",
            "line-dup",
            "line-swap",
            "use-before-def",
            "bytes",
            "per-axis",
        ],
        [5, 3, 4, 2, 1, 2, 2, 2, 1, 1, 2, 1, 2],
    )[0]
    if kind == "bytes":
        raw = mutate_bytes(text.encode("utf-8", "surrogateescape"), rng)
        return Mutant(f"bytes: {raw.description}", raw.data.decode("utf-8", "surrogateescape"))
    if kind.startswith("line") or kind == "use-before-def":
        return _mutate_lines(text, rng, kind)
    if kind == "per-axis" and (mutant := _mutate_per_axis(text, rng)) is not None:
        return mutant
    tokens = mlir_tokens(text)
    if not tokens:
        return Mutant("no tokens", text)
    if kind == "number":
        numbers = [m for m in tokens if re.fullmatch(r"-?\d.*", m.group())]
        if numbers:
            m = rng.choice(numbers)
            new = rng.choice(NUMBERS)
            return Mutant(f"number {m.group()} -> {new}", _replace(text, m, new))
    if kind == "type":
        types = [m for m in tokens if re.fullmatch(r"[iuf]\d+|bf16|index|ui\d+|si\d+", m.group())]
        if types:
            m = rng.choice(types)
            new = rng.choice(TYPES)
            return Mutant(f"type {m.group()} -> {new}", _replace(text, m, new))
    if kind == "shape":
        shapes = list(re.finditer(r"(?<=[<x])(\d+)(?=x)", text))
        if shapes:
            m = rng.choice(shapes)
            new = rng.choice(
                ("0", "1", "2", "3", "20000", "65536", "99999999999", "4294967297", "?", "-1")
            )
            return Mutant(f"dim {m.group()} -> {new}", _replace(text, m, new))
    if kind == "value-swap":
        values = [m for m in tokens if m.group().startswith("%")]
        if len(values) >= 2:
            a, b = rng.sample(values, 2)
            return Mutant(f"value {a.group()} -> {b.group()}", _replace(text, a, b.group()))
    m = rng.choice(tokens)
    if kind == "token-delete":
        return Mutant(f"delete token {m.group()!r}", _replace(text, m, ""))
    if kind == "token-dup":
        return Mutant(f"duplicate token {m.group()!r}", _replace(text, m, m.group() * 2))
    new = rng.choice([*WORDS, *(t.group() for t in rng.sample(tokens, min(4, len(tokens))))])
    return Mutant(f"token {m.group()!r} -> {new!r}", _replace(text, m, new))


#: A ranked tensor type with static dimensions, and a per-axis quantized type.
_STATIC_TENSOR = re.compile(r"tensor<((?:\d+x)+)([^<>]*(?:<[^<>]*(?:<[^<>]*>)?[^<>]*>)?)>")
_PER_AXIS = re.compile(r"(!qnn\.uniform<[^<>:]*(?:<[^<>]*>)?:f32):(\d+), \{([^{}]*)\}>")


def _mutate_per_axis(text: str, rng: random.Random) -> Mutant | None:
    """A per-axis quantized type that cannot fit its tensor: an axis past any rank, a scale
    dropped, or a function argument's element type made per-axis with one scale too many
    (definitely bad: MLIR's quant dialect refuses each)."""
    per_axis = [
        m for m in _PER_AXIS.finditer(text) if re.search(r"tensor<(?:\d+x)+$", text[: m.start()])
    ]
    args = [
        m
        for m in _STATIC_TENSOR.finditer(text)
        if re.search(r"%[\w.$-]+: $", text[max(0, m.start() - 40) : m.start()])
    ]
    choices = ["axis", "drop"] * bool(per_axis) + ["argument"] * bool(args)
    if not choices:
        return None
    how = rng.choice(choices)
    if how == "argument":
        m = rng.choice(args)
        dims = [int(d) for d in m.group(1).rstrip("x").split("x")]
        small = [i for i, d in enumerate(dims) if d <= 64]
        if not small:
            return None
        axis = rng.choice(small)
        scales = ", ".join(["0.5"] * (dims[axis] + 1))
        new = f"tensor<{m.group(1)}!qnn.uniform<i8:f32:{axis}, {{{scales}}}>>"
        return Mutant(f"argument {m.group()} -> {new[:80]}", _replace(text, m, new), bad=True)
    m = rng.choice(per_axis)
    pairs = [p.strip() for p in m.group(3).split(",")]
    if how == "drop" and len(pairs) > 1:
        pairs.pop(rng.randrange(len(pairs)))
        new = f"{m.group(1)}:{m.group(2)}, {{{', '.join(pairs)}}}>"
        return Mutant(f"per-axis scale dropped: {new[:80]}", _replace(text, m, new), bad=True)
    new = f"{m.group(1)}:9, {{{m.group(3)}}}>"
    return Mutant(f"per-axis axis {m.group(2)} -> 9", _replace(text, m, new), bad=True)


_DEF = re.compile(r"^\s*(%[\w.$-]+)(?::\d+)?\s*=")


def _mutate_lines(text: str, rng: random.Random, kind: str) -> Mutant:
    lines = text.splitlines(keepends=True)
    if len(lines) < 2:
        return Mutant("too short", text)
    if kind == "use-before-def":
        moves = []
        for i, line in enumerate(lines):
            d = _DEF.match(line)
            if d is None:
                continue
            use = re.compile(re.escape(d.group(1)) + r"(?![\w.$-])")
            for j in range(i + 1, len(lines)):
                other = _DEF.match(lines[j])
                if lines[j].strip() and _indent(lines[j]) < _indent(line):
                    break  # the block ended
                if other is not None and other.group(1) == d.group(1):
                    break  # redefined (another region)
                operands = lines[j].split("=", 1)[1] if other else lines[j]
                if use.search(operands):  # the first use; in the same block if equally indented
                    if _indent(lines[j]) == _indent(line):
                        moves.append((i, j))
                    break
        if moves:
            i, j = rng.choice(moves)
            moved = [*lines[:i], *lines[i + 1 : j + 1], lines[i], *lines[j + 1 :]]
            return Mutant(
                f"line {i + 1} moved after its use on line {j + 1}", "".join(moved), bad=True
            )
        kind = "line-swap"
    i = rng.randrange(len(lines))
    if kind == "line-delete":
        return Mutant(f"delete line {i + 1}", "".join(lines[:i] + lines[i + 1 :]))
    if kind == "line-dup":
        return Mutant(f"duplicate line {i + 1}", "".join(lines[: i + 1] + lines[i:]))
    j = rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return Mutant(f"swap lines {i + 1} and {j + 1}", "".join(lines))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


# --------------------------------------------------------------------------- ONNX


def mutate_onnx(model: Any, rng: random.Random) -> Mutant:
    """A semantic mutation of an onnx.ModelProto (a mutated copy is returned as bytes)."""
    import onnx

    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    choices: list[tuple[str, Callable[[], tuple[str, bool]]]] = []

    def node_inputs() -> tuple[str, bool]:
        node = rng.choice(g.node)
        known = [
            *(i.name for i in g.input),
            *(t.name for t in g.initializer),
            *(o for n in g.node for o in n.output),
        ]
        if rng.random() < 0.5 or len(node.input) <= 1:
            extra = rng.choice((1, 2, 3))
            node.input.extend(rng.choice(known) for _ in range(extra))
            too_many = _MAX_INPUTS.get(node.op_type)
            bad = too_many is not None and len(node.input) > too_many
            return f"node '{node.name}' ({node.op_type}) gets {len(node.input)} inputs", bad
        keep = rng.randrange(len(node.input))
        del node.input[keep:]
        needed = _MIN_INPUTS.get(node.op_type)
        bad = needed is not None and len(node.input) < needed
        return f"node '{node.name}' ({node.op_type}) keeps {keep} inputs", bad

    def attribute() -> tuple[str, bool]:
        nodes = [n for n in g.node if n.attribute]
        if not nodes:
            return node_inputs()
        node = rng.choice(nodes)
        attr = rng.choice(node.attribute)
        how = rng.choice(("type", "ints", "int", "empty", "tensor", "float", "delete", "dup"))
        desc = f"node '{node.name}' ({node.op_type}) attribute '{attr.name}'"
        if how == "delete":
            node.attribute.remove(attr)
            return f"{desc} deleted", False
        if how == "dup":
            node.attribute.append(copy.deepcopy(attr))
            return f"{desc} repeated", True
        name = attr.name
        node.attribute.remove(attr)
        if how == "type":
            new = rng.choice(
                (
                    onnx.helper.make_attribute(name, "text"),
                    onnx.helper.make_attribute(name, 1.5),
                    onnx.helper.make_attribute(name, [1.5, 2.5]),
                    onnx.helper.make_attribute(name, ["a", "b"]),
                )
            )
            node.attribute.append(new)
            return f"{desc} becomes {onnx.AttributeProto.AttributeType.Name(new.type)}", False
        if how == "ints":
            n = rng.choice((0, 1, 2, 3, 4, 5, 8))
            new = onnx.AttributeProto(name=name, type=onnx.AttributeProto.INTS)
            new.ints.extend(_int64(interesting_int(rng)) for _ in range(n))
            node.attribute.append(new)
            return f"{desc} = {n} interesting ints", False
        if how == "int":
            node.attribute.append(onnx.helper.make_attribute(name, _int64(interesting_int(rng))))
            return f"{desc} = an interesting int", False
        if how == "float":
            node.attribute.append(onnx.helper.make_attribute(name, rng.choice(INTERESTING_FLOATS)))
            return f"{desc} = an interesting float", False
        if how == "tensor":
            t = onnx.helper.make_tensor(name, onnx.TensorProto.FLOAT, [2], [1.0, float("nan")])
            node.attribute.append(onnx.helper.make_attribute(name, t))
            return f"{desc} = a tensor", False
        node.attribute.append(onnx.AttributeProto(name=name, type=onnx.AttributeProto.INTS))
        return f"{desc} = empty ints", False

    def dims() -> tuple[str, bool]:
        values = [
            vi
            for vi in [*g.input, *g.output, *g.value_info]
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.shape.dim
        ]
        if not values:
            return initializer()
        vi = rng.choice(values)
        dim = rng.choice(vi.type.tensor_type.shape.dim)
        how = rng.choice(("value", "param", "add", "drop"))
        if how == "value":
            value = rng.choice((-5, -1, 0, 2**31, 2**40, 2**62, 7))
            dim.dim_value = value  # a negative one reads as unknown (old exporters wrote -1)
            return f"'{vi.name}' dim = {value}", False
        if how == "param":
            dim.dim_param = rng.choice(("N", "", "batch"))
            return f"'{vi.name}' dim symbolic", False
        if how == "add":
            vi.type.tensor_type.shape.dim.add().dim_value = rng.choice((1, 3, 0))
            return f"'{vi.name}' one more dim", False
        del vi.type.tensor_type.shape.dim[-1]
        return f"'{vi.name}' one dim fewer", False

    def initializer() -> tuple[str, bool]:
        if not g.initializer:
            return node_inputs()
        t = rng.choice(g.initializer)
        how = rng.choice(("dim", "huge", "type", "raw", "drop", "dims", "external", "nan"))
        if how == "dim" and t.dims:
            i = rng.randrange(len(t.dims))
            t.dims[i] = rng.choice((-5, -1, 0))
            return f"initializer '{t.name}' dim {i} = {t.dims[i]}", t.dims[i] < 0 or _has_data(t)
        if how == "huge":
            t.dims.append(rng.choice((2**31, 2**40, 99999999999)))
            return f"initializer '{t.name}' gets a huge dim", True
        if how == "type":
            t.data_type = rng.choice((0, 8, 13, 16, 17, 23, 99))
            return f"initializer '{t.name}' data_type {t.data_type}", t.data_type in (0, 99)
        if how == "raw" and t.raw_data:
            t.raw_data = t.raw_data[: rng.randrange(len(t.raw_data))]
            return f"initializer '{t.name}' raw data truncated", True
        if how == "drop":
            g.initializer.remove(t)
            used = any(t.name in n.input for n in g.node)
            declared = any(i.name == t.name for i in g.input)
            return f"initializer '{t.name}' removed", used and not declared
        if how == "dims":
            del t.dims[:]
            return f"initializer '{t.name}' loses its dims", _has_data(t) and _count(t) != 1
        if how == "external":
            t.data_location = onnx.TensorProto.EXTERNAL
            t.ClearField("raw_data")
            del t.external_data[:]
            entry = t.external_data.add()
            entry.key, entry.value = (
                "location",
                rng.choice(("../../etc/passwd", "nosuch.bin", "/dev/zero", "")),
            )
            return f"initializer '{t.name}' external data {entry.value!r}", True
        if t.data_type == onnx.TensorProto.FLOAT and t.raw_data:
            raw = bytearray(t.raw_data)
            raw[0:4] = struct.pack("<f", rng.choice((float("nan"), float("inf"))))
            t.raw_data = bytes(raw)
            return f"initializer '{t.name}' holds a non-finite value", False
        return attribute()

    def graph_edges() -> tuple[str, bool]:
        node = rng.choice(g.node)
        how = rng.choice(("dangling", "self", "output", "op_type", "domain", "empty-name"))
        if how == "dangling" and node.input:
            i = rng.randrange(len(node.input))
            node.input[i] = "no_such_tensor"
            return f"node '{node.name}' reads an undefined tensor", True
        if how == "self" and node.input and node.output:
            node.input[0] = node.output[0]
            return f"node '{node.name}' reads its own output", True
        if how == "output":
            g.output[0].name = rng.choice(("nowhere", ""))
            return f"graph output renamed to {g.output[0].name!r}", g.output[0].name == "nowhere"
        if how == "op_type":
            node.op_type = rng.choice(
                (
                    "Conv",
                    "Gemm",
                    "Relu",
                    "Reshape",
                    "Concat",
                    "Split",
                    "Slice",
                    "Pad",
                    "Resize",
                    "QLinearConv",
                    "LSTM",
                    "Loop",
                    "If",
                    "Frobnicate",
                    "MaxPool",
                    "Softmax",
                    "Gather",
                )
            )
            return f"node '{node.name}' becomes {node.op_type}", node.op_type == "Frobnicate"
        if how == "domain":
            node.domain = rng.choice(("com.microsoft", "ai.onnx.ml", "bogus"))
            return f"node '{node.name}' in domain {node.domain}", node.domain == "bogus"
        node.name = ""
        return "a node without a name", False

    def model_fields() -> tuple[str, bool]:
        how = rng.choice(("ir", "opset", "no-opset", "elem", "no-outputs", "dup-output"))
        if how == "ir":
            m.ir_version = rng.choice((0, 1, 2, 99, -1))
            return f"ir_version {m.ir_version}", m.ir_version <= 0
        if how == "opset":
            m.opset_import[0].version = rng.choice((1, 5, 6, 7, 22, 23, 99, 0, -1))
            return f"opset {m.opset_import[0].version}", m.opset_import[0].version in (99, 0, -1)
        if how == "no-opset":
            del m.opset_import[:]
            return "no opset imports", True
        if how == "elem":
            vi = rng.choice([*g.input, *g.output])
            vi.type.tensor_type.elem_type = rng.choice((0, 2, 3, 6, 7, 8, 9, 10, 11, 16, 99))
            return f"'{vi.name}' elem_type {vi.type.tensor_type.elem_type}", False
        if how == "no-outputs":
            del g.output[:]
            return "no graph outputs", True
        g.output.append(copy.deepcopy(g.output[0]))
        return "a repeated graph output", False

    choices = [
        ("inputs", node_inputs),
        ("attribute", attribute),
        ("dims", dims),
        ("initializer", initializer),
        ("edges", graph_edges),
        ("model", model_fields),
    ]
    _, fn = rng.choices(choices, [2, 4, 2, 3, 2, 1])[0]
    description, bad = fn()
    return Mutant(description, m.SerializeToString(), bad)


#: Input counts the ONNX spec allows (at most, at least) for the ops the seeds use.
_MAX_INPUTS = {
    "Conv": 3,
    "Relu": 1,
    "Gemm": 3,
    "MaxPool": 1,
    "AveragePool": 1,
    "Add": 2,
    "Mul": 2,
    "Sigmoid": 1,
    "Softmax": 1,
    "Flatten": 1,
    "Reshape": 2,
    "Transpose": 1,
    "GlobalAveragePool": 1,
    "MatMul": 2,
    "QuantizeLinear": 3,
    "DequantizeLinear": 3,
    "BatchNormalization": 5,
    "Clip": 3,
}
_MIN_INPUTS = {
    "Conv": 2,
    "Gemm": 2,
    "Add": 2,
    "Mul": 2,
    "Reshape": 2,
    "MatMul": 2,
    "QuantizeLinear": 2,
    "DequantizeLinear": 2,
    "BatchNormalization": 5,
    "Relu": 1,
    "Transpose": 1,
    "MaxPool": 1,
    "Softmax": 1,
    "Flatten": 1,
}


def _int64(value: int) -> int:
    return max(min(value, 2**63 - 1), -(2**63))


def _has_data(t: Any) -> bool:
    return bool(t.raw_data or t.float_data or t.int32_data or t.int64_data or t.double_data)


def _count(t: Any) -> int:
    return math.prod(t.dims)


# --------------------------------------------------------------------------- TFLite


#: TFLite option fields and the values worth trying (0 strides, out-of-range enums).
TFLITE_OPTION_VALUES = {
    "StrideH": (0, -1, 2, 1000, 2**31 - 1),
    "StrideW": (0, -1, 3, 2**31 - 1),
    "DilationHFactor": (0, -1, 99, 2**31 - 1),
    "DilationWFactor": (0, -2, 7),
    "FilterHeight": (0, -1, 99, 2**31 - 1),
    "FilterWidth": (0, -3, 50),
    "Padding": (2, 7, 127),
    "FusedActivationFunction": (6, 7, 99, 127),
    "DepthMultiplier": (0, -1, 3, 2**31 - 1),
    "Axis": (-9, 7, 2**31 - 1),
    "KeepNumDims": (True,),
    "Beta": (0.0, float("nan"), float("inf"), -1.0),
}


def mutate_tflite(model: Any, rng: random.Random) -> Mutant:
    """A field mutation of a tests/tflite_builder.TFLiteModel (mutated in place: pass a copy);
    the built bytes are the mutant."""
    import numpy as np

    kind = rng.choices(
        ["option", "quant", "type", "shape", "index", "opcode", "data"], [4, 5, 2, 3, 2, 1, 1]
    )[0]
    bad = False
    if kind == "option":
        ops = [op for op in model.ops if op.fields]
        if ops:
            op = rng.choice(ops)
            key = rng.choice(list(op.fields))
            value = rng.choice(TFLITE_OPTION_VALUES.get(key, (0, -1, 2**31 - 1)))
            op.fields[key] = value
            bad = key.startswith(("Stride", "Dilation", "Filter")) and value < 1
            bad |= key == "Padding" and value > 1
            desc = f"option {key} = {value}"
        else:
            kind = "quant"
    if kind == "quant":
        quantized = [t for t in model.tensors if t.scales is not None]
        if not quantized:
            kind = "shape"
        else:
            t = rng.choice(quantized)
            how = rng.choice(("scale", "zp", "axis", "count", "bias-zp"))
            if how == "scale":
                value = rng.choice((0.0, float("nan"), float("inf"), -0.5, 1e-45, 1e38))
                t.scales = [value] * len(t.scales)
                # A bias's scale is not read (LiteRT's kernels take input * weight scales).
                bad = not (value > 0 and math.isfinite(value)) and t.dtype != np.dtype(np.int32)
                desc = f"tensor '{t.name}' scale {value}"
            elif how == "zp":
                value = rng.choice((-129, 128, 256, 300, -1, 2**31, -(2**40)))
                t.zero_points = [value] * len(t.scales)
                low, high = _ZP_RANGE.get(t.dtype.name, (-(2**31), 2**31 - 1))
                bad = not low <= value <= high
                desc = f"tensor '{t.name}' zero point {value}"
            elif how == "axis":
                t.axis = rng.choice((-1, len(t.shape), len(t.shape) + 3, 2**31 - 1))
                if len(t.scales) == 1:
                    t.scales = t.scales * 2
                    t.zero_points = t.zero_points * 2
                bad = True
                desc = f"tensor '{t.name}' quantized dimension {t.axis} of rank {len(t.shape)}"
            elif how == "count":
                n = rng.choice((2, 3, 7))
                t.scales = [t.scales[0]] * n
                t.zero_points = [t.zero_points[0]] * n
                desc = f"tensor '{t.name}' gets {n} scales"
            else:
                biases = [b for b in quantized if b.dtype == np.dtype(np.int32)]
                t = rng.choice(biases) if biases else t
                t.zero_points = [rng.choice((1, -3, 100))] * len(t.scales)
                bad = t.dtype == np.dtype(np.int32)
                desc = f"tensor '{t.name}' zero point {t.zero_points[0]}"
    if kind == "type":
        t = rng.choice(model.tensors)
        # The type is a signed byte: -1 is the byte 0xFF, -128 is 0x80.
        t.type_code = rng.choice((-1, -128, 127, 17, 18, 5, 6, 8, 11, 13, 15, 16))
        desc = f"tensor '{t.name}' type code {t.type_code}"
        bad = t.type_code in (-1, -128, 127) and t.data is not None
    if kind == "shape":
        t = rng.choice(model.tensors)
        how = rng.choice(("huge", "negative", "zero", "rank", "drop"))
        if how == "huge":
            t.shape = [*t.shape[:-1], rng.choice((2**31 - 1, 2**20, 99999))] if t.shape else [2**30]
            bad = t.data is not None
        elif how == "negative" and t.shape:
            t.shape = [*t.shape[:-1], rng.choice((-1, -5))]
            bad = t.data is not None
        elif how == "zero" and t.shape:
            t.shape = [0, *t.shape[1:]]
            bad = t.data is not None and t.data.size > 0
        elif how == "rank":
            t.shape = [*t.shape, 1, 1, 1, 1, 1]
        else:
            t.shape = t.shape[:-1]
        desc = f"tensor '{t.name}' shape {t.shape}"
    if kind == "index":
        op = rng.choice(model.ops)
        ios = op.inputs if rng.random() < 0.6 or not op.outputs else op.outputs
        if ios:
            i = rng.randrange(len(ios))
            ios[i] = rng.choice((-2, -1, len(model.tensors), 2**31 - 1, 0))
            bad = (ios[i] not in (-1, 0) and ios[i] < 0) or ios[i] >= len(model.tensors)
            desc = f"op {op.code} operand {i} = tensor {ios[i]}"
        else:
            desc = "no operands"
    if kind == "opcode":
        op = rng.choice(model.ops)
        op.code = rng.choice((0, 3, 9, 22, 25, 40, 99, 126, 127, 150, 205, 255))
        desc = f"op becomes builtin {op.code}"
    if kind == "data":
        consts = [t for t in model.tensors if t.data is not None]
        if consts:
            t = rng.choice(consts)
            flat = t.data.copy().reshape(-1)
            if flat.dtype.kind == "f":
                flat[rng.randrange(flat.size)] = rng.choice((np.nan, np.inf, -np.inf, 3e38))
            else:
                info = np.iinfo(flat.dtype)
                flat[rng.randrange(flat.size)] = rng.choice((info.min, info.max))
            t.data = flat.reshape(t.data.shape)
            desc = f"tensor '{t.name}' data edited"
        else:
            desc = "no constants"
    try:
        data = model.build(inputs=model.fuzz_inputs, outputs=model.fuzz_outputs)
    except Exception as e:  # the builder refuses some values (out of the field's range)
        return Mutant(f"{desc} (unbuildable: {type(e).__name__})", None)
    return Mutant(desc, data, bad)


_ZP_RANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (0, 0)}


# --------------------------------------------------------------------------- .npubin


def edited_int(
    data: bytes | bytearray,
    at: int,
    width: int,
    rng: random.Random,
    interesting: Sequence[int] = INTERESTING_INTS,
) -> int:
    """A new value for the little-endian `width`-byte integer at `at`: an interesting one,
    one off, one bit flipped, or random (modulo the width)."""
    old = int.from_bytes(data[at : at + width], "little")
    return rng.choice(
        (
            *interesting,
            old + 1,
            old - 1,
            old ^ (1 << rng.randrange(8 * width)),
            rng.getrandbits(8 * width),
        )
    ) % (1 << (8 * width))


def mutate_npubin(data: bytes, rng: random.Random) -> Mutant:
    """Truncations and raw flips (definitely bad: sizes, CRCs and zero padding catch them),
    and integer edits with the CRCs recomputed, which reach the checks behind them."""
    kind = rng.choices(["truncate", "flip", "field", "fields", "splice"], [1, 2, 8, 2, 1])[0]
    buf = bytearray(data)
    if kind == "truncate":
        cut = rng.randrange(len(buf))
        return Mutant(f"truncate to {cut}", bytes(buf[:cut]), bad=True)
    if kind == "flip":
        at = rng.randrange(len(buf))
        buf[at] ^= 1 << rng.randrange(8)
        return Mutant(f"flip a bit of byte {at}", bytes(buf), bad=True)
    if kind == "splice":
        at, n = rng.randrange(32, len(buf)), rng.choice((1, 4, 8, 16))
        del buf[at : at + n]
        struct.pack_into("<Q", buf, 16, len(buf))
        fix_crcs(buf)
        return Mutant(f"delete {n} bytes at {at}, sizes and CRCs fixed", bytes(buf))
    edits = []
    for _ in range(1 if kind == "field" else rng.choice((2, 3, 5))):
        width = rng.choice((1, 2, 4, 4, 8))
        at = rng.randrange(0, len(buf) - width, width if rng.random() < 0.8 else 1)
        value = edited_int(buf, at, width, rng)
        buf[at : at + width] = value.to_bytes(width, "little")
        edits.append(f"u{8 * width}@{at}={value}")
    fix_crcs(buf)
    return Mutant(f"{' '.join(edits)}, CRCs fixed", bytes(buf))


# --------------------------------------------------------------------------- .npy


def npy_bytes(array: Any) -> bytes:
    import numpy as np

    out = io.BytesIO()
    np.save(out, array, allow_pickle=False)
    return out.getvalue()


def npy_header(
    descr: str,
    shape: Sequence[int] | str,
    fortran: bool = False,
    body: bytes = b"",
    version: int = 1,
) -> bytes:
    """A hand-made .npy file: any header, any body."""
    text = f"{{'descr': {descr!r}, 'fortran_order': {fortran}, 'shape': {_shape_text(shape)}, }}"
    size = len(text) + 1
    prefix = 10 if version == 1 else 12
    pad = (-(prefix + size)) % 64
    header = (text + " " * pad + "\n").encode("latin1")
    length = struct.pack("<H" if version == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes((version, 0)) + length + header + body


def _shape_text(shape: Sequence[int] | str) -> str:
    if isinstance(shape, str):
        return shape
    return "(" + "".join(f"{d}, " for d in shape).rstrip(" ") + ")"


def mutate_npy(shape: Sequence[int], rng: random.Random) -> Mutant:
    """An .npy (or .npz) feed for an input of `shape` (float32): wrong shapes, dtypes,
    values, headers and bodies."""
    import numpy as np

    gen = np.random.default_rng(rng.getrandbits(32))
    count = math.prod(shape)
    kind = rng.choices(
        ["shape", "dtype", "values", "header", "body", "npz", "bytes"], [3, 3, 2, 4, 2, 2, 2]
    )[0]
    good = gen.standard_normal(shape).astype(np.float32)
    if kind == "shape":
        new = rng.choice(
            (
                [count + 1],
                [count - 1],
                [*shape, 1],
                [0, *shape[1:]],
                [],
                [2, *shape[1:]],
                list(reversed(shape)),
                [1] * 33,
            )
        )
        size = math.prod(new)
        array = gen.standard_normal(new).astype(np.float32) if size < 10**6 else good
        bad = size != count
        return Mutant(f"shape {new}", npy_bytes(array), bad)
    if kind == "dtype":
        dtype = rng.choice(
            (
                "float16",
                "float64",
                "int8",
                "uint8",
                "int64",
                "bool",
                "complex64",
                ">f4",
                "<U3",
                "S2",
                "V4",
                "datetime64[s]",
                "timedelta64[s]",
            )
        )
        try:
            array = good.astype(dtype)
        except (TypeError, ValueError):
            array = np.zeros(shape, dtype)
        return Mutant(
            f"dtype {dtype}", npy_bytes(array), dtype[0] in "<SVdt" or dtype == "complex64"
        )
    if kind == "values":
        value = rng.choice((np.nan, np.inf, -np.inf, 3.4e38, -3.4e38, 1e-45, 0.0))
        array = good.copy()
        if rng.random() < 0.5:
            array[...] = value
        else:
            array.reshape(-1)[rng.randrange(count)] = value
        return Mutant(f"values {value}", npy_bytes(array))
    if kind == "header":
        descr = rng.choice(
            ("<f4", "<f4", "|O", "<c8", "|V8", "<U4", ">f4", "<f2", "xyz", "", "[('a', '<f4')]")
        )
        how = rng.choice(("huge", "negative", "text", "fortran", "shape", "version"))
        if how == "huge":
            dims = rng.choice(
                (
                    [99999999999, 99999999999],
                    [2**62],
                    [2**31, 2**31, 2**31],
                    [*shape[:-1], 2**40],
                    [10**20],
                )
            )
            return Mutant(
                f"header shape {dims}", npy_header(descr, dims, body=good.tobytes()), True
            )
        if how == "negative":
            return Mutant("header shape negative", npy_header(descr, [-1, *shape[1:]]), True)
        if how == "text":
            text = rng.choice(("(1, 2", "[1, 2]", "'x'", "(1.5,)", "(None,)", "()" * 500))
            return Mutant(
                f"header shape {text!r}",
                npy_header(descr, text, body=good.tobytes()),
                text != "()" * 500,
            )
        if how == "fortran":
            return Mutant("fortran order", npy_header("<f4", shape, True, good.tobytes()))
        if how == "version":
            version = rng.choice((2, 3))
            return Mutant(
                f"header version {version}",
                npy_header(descr, shape, body=good.tobytes(), version=version),
            )
        return Mutant(
            f"descr {descr!r}",
            npy_header(descr, shape, body=good.tobytes()),
            descr in ("|O", "xyz", ""),
        )
    if kind == "body":
        body = good.tobytes()
        cut = rng.randrange(len(body))
        return Mutant(f"body truncated to {cut}", npy_header("<f4", shape, body=body[:cut]), True)
    if kind == "npz":
        out = io.BytesIO()
        how = rng.choice(("empty", "two", "one", "corrupt"))
        if how == "empty":
            np.savez(out)
        elif how == "two":
            np.savez(out, a=good, b=good)
        else:
            np.savez(out, x=good)
        data = out.getvalue()
        if how == "corrupt":
            data = mutate_bytes(data, rng).data
        return Mutant(f"npz {how}", ("npz", data), how in ("empty", "two"))
    raw = mutate_bytes(npy_bytes(good), rng)
    return Mutant(f"bytes: {raw.description}", raw.data)


# --------------------------------------------------------------------------- JSON and TOML


JSON_VALUES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1,
    2**31,
    2**64,
    10**400,
    1e308,
    -1e308,
    0.5,
    "",
    "x",
    "int8",
    [],
    {},
    [1, 2],
    [[]],
    {"a": 1},
    [None, None],
    [0.0, -0.0],
    [1e308, -1e308],
)


def mutate_json(document: Any, rng: random.Random) -> Mutant:
    """A structural mutation (a value replaced, a key dropped or added) or a textual one
    (truncated text is definitely bad)."""
    kind = rng.choices(
        ["value", "drop", "add", "nan", "text", "truncate", "deep"], [6, 2, 1, 1, 2, 1, 1]
    )[0]
    if kind in ("text", "truncate"):
        text = json.dumps(document, indent=1)
        if kind == "truncate":
            cut = rng.randrange(len(text.rstrip()))
            return Mutant(f"truncate to {cut}", text[:cut].encode(), True)
        return Mutant("bytes: " + (m := mutate_bytes(text.encode(), rng)).description, m.data)
    if kind == "deep":
        depth = rng.choice((100, 1000, 100000))
        return Mutant(f"nested {depth} deep", ("[" * depth + "]" * depth).encode(), True)
    doc = copy.deepcopy(document)
    paths = list(_json_paths(doc))
    if not paths:
        return Mutant("empty document", json.dumps(doc).encode())
    path = rng.choice(paths)
    parent, key = _resolve(doc, path)
    desc = "/".join(map(str, path))
    if kind == "value":
        parent[key] = copy.deepcopy(rng.choice(JSON_VALUES))
        desc = f"{desc} = {json.dumps(parent[key])[:40]}"
    elif kind == "drop":
        del parent[key]
        desc = f"{desc} deleted"
    elif kind == "add" and isinstance(parent, dict):
        parent["fuzz_unknown_key"] = 1
        desc = f"{desc}: unknown key added"
    else:
        parent[key] = float(rng.choice(("nan", "inf", "-inf")))
        desc = f"{desc} = {parent[key]}"
    return Mutant(desc, json.dumps(doc, allow_nan=True).encode())


def _json_paths(doc: Any, prefix: tuple = ()):
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    )
    for key, value in items:
        yield (*prefix, key)
        yield from _json_paths(value, (*prefix, key))


def _resolve(doc: Any, path: tuple) -> tuple[Any, Any]:
    for key in path[:-1]:
        doc = doc[key]
    return doc, path[-1]


def mutate_toml(text: str, rng: random.Random) -> Mutant:
    """A line or value mutation of a TOML config file."""
    lines = text.splitlines(keepends=True)
    kind = rng.choice(("value", "value", "delete", "bytes", "section"))
    assignments = [i for i, line in enumerate(lines) if "=" in line]
    if kind == "value" and assignments:
        i = rng.choice(assignments)
        key = lines[i].split("=", 1)[0]
        value = rng.choice(
            (
                '""',
                "-1",
                "0",
                "1e999",
                "nan",
                "true",
                "[]",
                "{}",
                '"nosuch"',
                "99999999999999999999",
                '"../../"',
                "[1, 2]",
                '"a b"',
            )
        )
        lines[i] = f"{key}= {value}\n"
        return Mutant(f"{key.strip()} = {value}", "".join(lines).encode())
    if kind == "delete" and lines:
        i = rng.randrange(len(lines))
        return Mutant(f"delete line {i + 1}", "".join(lines[:i] + lines[i + 1 :]).encode())
    if kind == "section":
        return Mutant("unknown section", (text + "\n[fuzz]\nx = 1\n").encode())
    raw = mutate_bytes(text.encode(), rng)
    return Mutant(f"bytes: {raw.description}", raw.data)


# --------------------------------------------------------------------------- CLI values

#: Values to try per kind of option (out of range, wrong type, malformed).
OPTION_VALUES = {
    "int": (
        "-1",
        "0",
        "-9223372036854775809",
        "99999999999999999999",
        "1.5",
        "abc",
        "",
        "nan",
        "1e3",
        "0x10",
        " 3",
    ),
    "float": ("nan", "inf", "-inf", "1e999", "-0", "abc", "", "-1", "2", "1e-320", "0x1p3"),
    "choice": ("bogus", "", "INT8", " int8", "int8,uint8"),
    "path": (
        "/nonexistent/dir/file",
        "",
        ".",
        "/dev/null",
        "/",
        "a\nb",
        "-",
        "/etc/hostname",
        "/proc/self/mem",
    ),
    # Outputs stay inside the case's folder (the runner's cwd is a scratch folder too).
    "output": (
        "{dir}/nonexistent/x",
        "",
        "{dir}",
        "{dir}/",
        "/dev/null",
        "{dir}/a\nb",
        "-",
        "{dir}/" + "x" * 300,
        "{dir}/out.npz/",
    ),
    "text": ("", ",", ",,a,,", " ", "a:b:c", "é", "-", "x" * 5000, "nosuch"),
    "shape": (
        "x:99999999999999999999,1,28,28",
        "x:0",
        "x:-1,2",
        "x:",
        ":1",
        "x:1,,2",
        "x:1e3",
        "x:" + ",".join(["1"] * 40),
        "x:2147483648,2147483648",
    ),
    "pipeline": (
        "no-such-pass",
        "canonicalize{",
        "canonicalize{x=1}",
        "tile{target=nosuch}",
        "quantize{samples=-1}",
        "quantize{scheme=bogus samples=1}",
        ",,",
        "cse,",
        "plan-memory{target=}",
        "fold-constants{",
        "preprocess{mean=abc}",
    ),
    "size": ("0", "-1", "1", "1K", "abc", "", "1G", "3000000000", "1T", "1.5G", "9" * 40 + "T"),
    "manual": (
        "(0,3,4,1)",
        "(0,0,0,0)",
        "(9,1,1,1)",
        "(0,1,-1,2)",
        "(",
        "none,none",
        "(0,1,99999999999,1)",
        "(a,b,c,d)",
    ),
}
