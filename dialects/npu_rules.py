"""The rules of the NPU instruction set, shared by the `npu` dialect's verifiers and the loader.

`check_instruction` and `check_program` hold every rule a well-formed program
obeys, so a binary loads exactly when its disassembly verifies. The hazard
check (`check_hazards`) is the dialect's alone: the executor runs instructions
in program order, so a missing token changes the cycle estimate, never a result.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from npuc.shape_text import shape_text, shapes_text

from .constant_codec import CODEC_IDS, ELEMENT_TYPES
from .nn_shapes import ShapeError, conv2d, pooled_size
from .npu_isa import (
    DTYPES,
    ENGINES,
    INT32,
    MAX_TABLE,
    MAX_WORK,
    MULTIPLIER,
    REGION_KINDS,
    SHIFT,
    SPECS,
    Instruction,
    InstructionError,
    IODesc,
    ISAError,
    Program,
    StatePair,
    TensorRef,
    dtype_range,
    is_integer,
)


def _range(name: str, value: int, bounds: tuple[int, int]) -> None:
    if not bounds[0] <= value <= bounds[1]:
        raise ISAError(f"{name} {value} is outside [{bounds[0]}, {bounds[1]}]")


def _check_field_values(inst: Instruction) -> None:
    for f in inst.spec.fields:
        if f.name not in inst.params:
            raise ISAError(f"missing parameter {f.name}")
        value = inst.params[f.name]
        if f.choices:
            if value not in f.choices:
                raise ISAError(f"{f.name} must be one of {', '.join(f.choices)}, got {value!r}")
        elif f.flag:
            if not isinstance(value, bool):
                raise ISAError(f"{f.name} must be a boolean")
        elif f.string:
            if not isinstance(value, str):
                raise ISAError(f"{f.name} must be a string")
        else:
            values = value if f.count else (value,)
            if not isinstance(values, tuple) or not all(isinstance(v, int) for v in values):
                raise ISAError(f"{f.name} must be {'a tuple of ' if f.count else 'an '}integer")
            if f.count and (len(values) > f.count if f.variable else len(values) != f.count):
                raise ISAError(f"{f.name} needs {f.count} values, got {len(values)}")
            bounds = {"i": INT32, "I": (0, (1 << 32) - 1), "B": (0, 255)}[f.code]
            for v in values:
                _range(f.name, v, bounds)
    unknown = set(inst.params) - {f.name for f in inst.spec.fields}
    if unknown:
        raise ISAError(f"unknown parameters {', '.join(sorted(unknown))}")


def _zero_point(p: Mapping[str, Any], name: str, t: TensorRef) -> None:
    _range(name, p[name], dtype_range(t.dtype))


def _clamp(p: Mapping[str, Any], ofm: TensorRef) -> None:
    lo, hi = dtype_range(ofm.dtype)
    if p["clamp_min"] > p["clamp_max"]:
        raise ISAError(f"clamp_min {p['clamp_min']} exceeds clamp_max {p['clamp_max']}")
    if not lo <= p["clamp_min"] <= p["clamp_max"] <= hi:
        raise ISAError(
            f"clamp [{p['clamp_min']}, {p['clamp_max']}] must lie within the ofm's storage "
            f"range [{lo}, {hi}]"
        )


def _multiplier(p: Mapping[str, Any], multiplier: str, shift: str) -> None:
    _range(multiplier, p[multiplier], MULTIPLIER)
    _range(shift, p[shift], SHIFT)


def _integer(inst: Instruction, *roles: str) -> None:
    for role in roles:
        if not is_integer(inst.operand(role).dtype) or inst.operand(role).dtype == "i64":
            raise ISAError(f"{role} must hold 8, 16 or 32-bit integers")


def _rank(inst: Instruction, rank: int, *roles: str) -> None:
    for role in roles:
        if len(inst.operand(role).shape) != rank:
            raise ISAError(f"{role} must have rank {rank}, got {len(inst.operand(role).shape)}")


def _same_shape(inst: Instruction, *roles: str) -> None:
    shapes = [inst.operand(r).shape for r in roles]
    if any(s != shapes[0] for s in shapes):
        described = ", ".join(f"{r} {shape_text(s)}" for r, s in zip(roles, shapes, strict=True))
        raise ISAError(f"shapes differ: {described}")


def _same_dtype(inst: Instruction, *roles: str) -> None:
    types = [inst.operand(r).dtype for r in roles]
    if any(t != types[0] for t in types):
        raise ISAError(f"{', '.join(roles)} must have one element type, got {', '.join(types)}")


def _bias_scale(inst: Instruction, channels: int) -> None:
    table = inst.operand("bias_scale")
    if table.dtype != "i32" or table.shape != (channels, 4):
        raise ISAError(
            f"bias_scale must be i32 of shape {channels}x4 (bias, multiplier, shift, "
            f"weight zero point per output channel), got {table.dtype} {shape_text(table.shape)}"
        )
    if not table.is_contiguous():
        raise ISAError(f"bias_scale must be contiguous (strides [4, 1]), got {list(table.strides)}")


def _positive(p: Mapping[str, Any], *names: str) -> None:
    for name in names:
        if any(v < 1 for v in p[name]):
            raise ISAError(f"{name} must be positive, got {list(p[name])}")


def _check_conv2d(inst: Instruction, p: Mapping[str, Any]) -> None:
    _rank(inst, 4, "ifm", "weights", "ofm")
    _integer(inst, "ifm", "weights", "ofm")
    _positive(p, "strides", "dilations")
    if p["groups"] < 1:
        raise ISAError("groups must be positive")
    ifm, weights, ofm = inst.operand("ifm"), inst.operand("weights"), inst.operand("ofm")
    try:
        want = conv2d(
            ifm.shape, weights.shape, p["strides"], p["pads"], p["dilations"], p["groups"]
        )
    except ShapeError as e:
        raise ISAError(str(e)) from e
    if ofm.shape != want:
        raise ISAError(f"ofm shape must be {shape_text(want)}, got {shape_text(ofm.shape)}")
    _work(ofm.numel * math.prod(weights.shape[1:]))
    _bias_scale(inst, weights.shape[0])
    _zero_point(p, "ifm_zero_point", ifm)
    _zero_point(p, "ofm_zero_point", ofm)
    _clamp(p, ofm)


def _work(macs: int) -> None:
    if macs > MAX_WORK:
        raise ISAError(f"{macs} multiply-accumulates exceed the limit of {MAX_WORK}")


def _check_matmul(inst: Instruction, p: Mapping[str, Any]) -> None:
    _rank(inst, 3, "lhs", "rhs", "ofm")
    _integer(inst, "lhs", "rhs", "ofm")
    (b, m, k), (b2, k2, n) = inst.operand("lhs").shape, inst.operand("rhs").shape
    if b2 != b or k2 != k or inst.operand("ofm").shape != (b, m, n):
        raise ISAError(
            f"needs lhs BxMxK, rhs BxKxN, ofm BxMxN; got "
            f"{shapes_text([(b, m, k), (b2, k2, n), inst.operand('ofm').shape])}"
        )
    _work(b * m * n * k)
    _bias_scale(inst, n)
    _zero_point(p, "lhs_zero_point", inst.operand("lhs"))
    _zero_point(p, "ofm_zero_point", inst.operand("ofm"))
    _clamp(p, inst.operand("ofm"))


def _check_pool(inst: Instruction, p: Mapping[str, Any]) -> None:
    _rank(inst, 4, "ifm", "ofm")
    _integer(inst, "ifm", "ofm")
    _positive(p, "kernel", "strides", "dilations")
    ifm, ofm = inst.operand("ifm"), inst.operand("ofm")
    mode = p["mode"]
    if mode != "max" and p["dilations"] != (1, 1):
        raise ISAError(f"{mode} pooling takes no dilations")
    if mode != "avg" and p["count_include_pad"]:
        raise ISAError("count_include_pad applies to avg pooling only")
    out = []
    for a in range(2):
        span = p["dilations"][a] * (p["kernel"][a] - 1) + 1
        if max(p["pads"][a], p["pads"][a + 2]) >= span:
            raise ISAError(f"pads {list(p['pads'])} must be smaller than the window")
        try:
            out.append(
                pooled_size(
                    ifm.shape[2 + a],
                    p["kernel"][a],
                    p["strides"][a],
                    p["pads"][a],
                    p["pads"][a + 2],
                    p["dilations"][a],
                    p["ceil_mode"],
                )
            )
        except ShapeError as e:
            raise ISAError(str(e)) from e
    want = (*ifm.shape[:2], *out)
    if ofm.shape != want:
        raise ISAError(f"ofm shape must be {shape_text(want)}, got {shape_text(ofm.shape)}")
    _work(ofm.numel * p["kernel"][0] * p["kernel"][1])
    if mode == "max":
        _same_dtype(inst, "ifm", "ofm")
    else:
        _zero_point(p, "ifm_zero_point", ifm)
        _zero_point(p, "ofm_zero_point", ofm)
        _multiplier(p, "multiplier", "shift")
        if (
            mode == "avg"
            and p["rounding"] == "tflite"
            and (not 0 <= p["shift"] <= 30 or p["multiplier"] != 1 << p["shift"])
        ):
            raise ISAError("tflite avg pooling needs a multiplier of 1 (multiplier = 2^shift)")
    _clamp(p, ofm)


def _check_eltwise(inst: Instruction, p: Mapping[str, Any]) -> None:
    _same_shape(inst, "lhs", "rhs", "ofm")
    _integer(inst, "lhs", "rhs", "ofm")
    kind = p["kind"]
    if kind in ("maximum", "minimum"):
        _same_dtype(inst, "lhs", "rhs", "ofm")
    else:
        for name, role in (
            ("lhs_zero_point", "lhs"),
            ("rhs_zero_point", "rhs"),
            ("ofm_zero_point", "ofm"),
        ):
            _zero_point(p, name, inst.operand(role))
        _multiplier(p, "multiplier", "shift")
    if kind in ("add", "sub", "squared_difference"):
        _range("left_shift", p["left_shift"], (0, 31))
        _multiplier(p, "lhs_multiplier", "lhs_shift")
        _multiplier(p, "rhs_multiplier", "rhs_shift")
    if kind == "prelu":
        _multiplier(p, "rhs_multiplier", "rhs_shift")
    if kind == "div":
        if p["rounding"] != "tflite":
            raise ISAError("div needs tflite rounding")
        if any(inst.operand(r).itemsize > 2 for r in ("lhs", "rhs", "ofm")):
            raise ISAError("div operands must have at most 16 bits")
    elif p["overshift"] != "exact":
        raise ISAError("overshift applies to div only")
    _clamp(p, inst.operand("ofm"))


def _check_lut(inst: Instruction, p: Mapping[str, Any]) -> None:
    _same_shape(inst, "ifm", "ofm")
    ifm, table, ofm = inst.operand("ifm"), inst.operand("table"), inst.operand("ofm")
    if ifm.dtype not in ("i8", "u8", "i16", "u16"):
        raise ISAError("ifm must hold 8 or 16-bit integers")
    if len(table.shape) != 1 or table.numel > MAX_TABLE:
        raise ISAError(f"table must have rank 1 and at most {MAX_TABLE} entries")
    if table.dtype != ofm.dtype:
        raise ISAError(f"table element type {table.dtype} must be the ofm's {ofm.dtype}")
    _range("table_base", p["table_base"], dtype_range(ifm.dtype))


def _check_softmax(inst: Instruction, p: Mapping[str, Any]) -> None:
    _same_shape(inst, "ifm", "ofm")
    if inst.operand("ifm").dtype != "i8" or inst.operand("ofm").dtype != "i8":
        raise ISAError("softmax reads and writes i8")
    _range("input_multiplier", p["input_multiplier"], MULTIPLIER)
    _range("input_left_shift", p["input_left_shift"], (0, 31))
    if p["diff_min"] > 0 or (-p["diff_min"]) << p["input_left_shift"] >= 1 << 31:
        raise ISAError("diff_min must be <= 0 with -diff_min * 2^input_left_shift < 2^31")


def _check_move(inst: Instruction, p: Mapping[str, Any]) -> None:
    ifm, ofm = inst.operand("ifm"), inst.operand("ofm")
    _same_dtype(inst, "ifm", "ofm")
    if sorted(p["perm"]) != list(range(len(ifm.shape))):
        raise ISAError(f"perm {list(p['perm'])} is not a permutation of the ifm's dimensions")
    rank = len(ofm.shape)
    if len(p["pads"]) != 2 * rank:
        raise ISAError(f"pads needs {2 * rank} entries (begins, then ends), got {len(p['pads'])}")
    inner = [
        d - b - e for d, b, e in zip(ofm.shape, p["pads"][:rank], p["pads"][rank:], strict=True)
    ]
    if min(inner) < 1 or math.prod(inner) != ifm.numel:
        raise ISAError(f"the unpadded ofm {inner} must hold the ifm's {ifm.numel} elements")
    if is_integer(ifm.dtype):
        _range("pad_value", p["pad_value"], dtype_range(ifm.dtype))


def _check_dma(inst: Instruction, p: Mapping[str, Any]) -> None:
    _same_shape(inst, "src", "dst")
    _same_dtype(inst, "src", "dst")


def _check_host(inst: Instruction, p: Mapping[str, Any]) -> None:
    if not p["body"]:
        raise ISAError("a host instruction needs a body")


_CHECKS = {
    "dma": _check_dma,
    "conv2d": _check_conv2d,
    "matmul": _check_matmul,
    "pool": _check_pool,
    "eltwise": _check_eltwise,
    "lut": _check_lut,
    "softmax": _check_softmax,
    "move": _check_move,
    "host": _check_host,
}


def check_instruction(inst: Instruction) -> None:
    """Rules that involve one instruction only (shapes, types, parameter ranges)."""
    if inst.op not in SPECS:
        raise ISAError(f"unknown instruction '{inst.op}'")
    spec = inst.spec
    _check_field_values(inst)
    if spec.operands and len(inst.operands) != len(spec.operands):
        raise ISAError(f"needs {len(spec.operands)} operands, got {len(inst.operands)}")
    if inst.op == "host" and not inst.params["inputs"] < len(inst.operands):
        raise ISAError("a host instruction needs at least one output")
    for role, t in zip(inst.roles(), inst.operands, strict=True):
        try:
            t.check()
        except ISAError as e:
            raise ISAError(f"{role}: {e}") from None
    for role in inst.written_roles():
        t = inst.operand(role)
        if t.region == "constants":
            raise ISAError(f"{role}: the constants region is read-only")
        if not t.is_nested():
            raise ISAError(f"{role}: strides {list(t.strides)} make written elements overlap")
    _CHECKS[inst.op](inst, inst.params)


MAX_REGION_BYTES = 1 << 32


def check_regions(program: Program) -> None:
    seen = set()
    for r in program.regions:
        if r.kind not in REGION_KINDS:
            raise ISAError(f"unknown region '{r.kind}'")
        if r.kind in seen:
            raise ISAError(f"region '{r.kind}' is declared twice")
        seen.add(r.kind)
        if not 0 <= r.size <= MAX_REGION_BYTES:
            raise ISAError(f"region '{r.kind}' size {r.size} is outside [0, 2^32]")
        if not r.memory:
            raise ISAError(f"region '{r.kind}' names no memory")
    constants = program.region("constants")
    if len(program.constants) > (constants.size if constants else 0):
        raise ISAError(
            f"{len(program.constants)} bytes of constants exceed the constants region "
            f"({constants.size if constants else 0} bytes)"
        )


def check_streams(program: Program) -> None:
    """Encoded constant streams: known codec and element type, whole elements, inside the
    constants the program holds, in order and apart."""
    end = 0
    for i, s in enumerate(program.streams):
        if s.codec not in CODEC_IDS:
            raise ISAError(f"stream {i}: unknown codec '{s.codec}'")
        if s.dtype not in ELEMENT_TYPES:
            raise ISAError(
                f"stream {i}: element type {s.dtype} is not one of {', '.join(ELEMENT_TYPES)}"
            )
        size = DTYPES[s.dtype][0]
        if s.size <= 0 or s.size % size or s.offset % size:
            raise ISAError(f"stream {i}: bytes [{s.offset}, {s.end}) are not whole {s.dtype}s")
        if s.offset < end:
            raise ISAError(f"stream {i} starts at {s.offset}, before the end of the last ({end})")
        if s.end > len(program.constants):
            raise ISAError(
                f"stream {i} ends at {s.end}, past the {len(program.constants)} bytes of constants"
            )
        end = s.end


def check_debug(program: Program) -> None:
    keys = [k for k, _ in program.debug]
    if len(set(keys)) != len(keys):
        raise ISAError("debug keys must be unique")


def check_placement(program: Program, t: TensorRef) -> None:
    """`t` lies inside a declared region."""
    region = program.region(t.region)
    if region is None:
        raise ISAError(f"region '{t.region}' is not declared")
    if t.end > region.size:
        raise ISAError(
            f"bytes [{t.offset}, {t.end}) lie outside region '{t.region}' of {region.size} bytes"
        )


def check_io(program: Program, desc: IODesc) -> None:
    desc.tensor.check()
    check_placement(program, desc.tensor)
    if desc.tensor.region == "constants":
        raise ISAError("inputs and outputs cannot live in the read-only constants region")
    if not (math.isfinite(desc.scale) and desc.scale >= 0):
        raise ISAError(f"scale must be finite and >= 0, got {desc.scale}")
    if not is_integer(desc.tensor.dtype) and (desc.scale or desc.zero_point):
        raise ISAError("a float tensor has no quantization (scale 0, zero point 0)")
    if desc.scale:
        _range("zero point", desc.zero_point, dtype_range(desc.tensor.dtype))
    elif desc.zero_point:
        raise ISAError("an unquantized tensor (scale 0) has zero point 0")


def check_io_names(program: Program) -> None:
    for kind, descs in (("input", program.inputs), ("output", program.outputs)):
        names = [d.name for d in descs]
        for name in names:
            if not name or names.count(name) > 1:
                raise ISAError(f"{kind} names must be unique and non-empty, got {name!r}")


def check_state_pair(program: Program, pair: StatePair, earlier: Sequence[StatePair]) -> None:
    """One state pair: indices in range and not used by an `earlier` pair, input and output
    of one type (shape, element type, scale, zero point), an initial value of the input's
    size (a b8 state's bytes 0 or 1)."""
    if not 0 <= pair.input < len(program.inputs):
        raise ISAError(f"input {pair.input} is not among the {len(program.inputs)} inputs")
    if not 0 <= pair.output < len(program.outputs):
        raise ISAError(f"output {pair.output} is not among the {len(program.outputs)} outputs")
    if any(p.input == pair.input for p in earlier):
        raise ISAError(f"input {pair.input} is the state input of an earlier pair")
    if any(p.output == pair.output for p in earlier):
        raise ISAError(f"output {pair.output} is the state output of an earlier pair")
    source, result = program.inputs[pair.input], program.outputs[pair.output]
    for what, a, b in (
        ("shape", shape_text(source.tensor.shape), shape_text(result.tensor.shape)),
        ("element type", source.tensor.dtype, result.tensor.dtype),
        ("scale", source.scale, result.scale),
        ("zero point", source.zero_point, result.zero_point),
    ):
        if a != b:
            raise ISAError(
                f"input {pair.input} '{source.name}' has {what} {a}, output {pair.output} "
                f"'{result.name}' {b}: a state's input and output must have one type"
            )
    size = source.tensor.numel * source.tensor.itemsize
    if len(pair.initial) != size:
        raise ISAError(
            f"initial value of {len(pair.initial)} bytes, expected {size} (input {pair.input} "
            f"'{source.name}', {shape_text(source.tensor.shape)} {source.tensor.dtype})"
        )
    if source.tensor.dtype == "b8" and pair.initial.count(0) + pair.initial.count(1) != size:
        raise ISAError("the initial value of a b8 state holds bytes other than 0 and 1")


def check_state(program: Program) -> None:
    for i, pair in enumerate(program.state):
        try:
            check_state_pair(program, pair, program.state[:i])
        except ISAError as e:
            raise ISAError(f"state {i}: {e}") from None


def check_tables(program: Program, inst: Instruction) -> None:
    """bias_scale rows in the constants region: multiplier, shift and weight zero point ranges.

    Only rows within the constants data can break a rule (the rest of the region is zero),
    so the work is bounded by the file. A table elsewhere is filled at run time, so the
    executor checks it there.
    """
    if inst.op not in ("conv2d", "matmul") or inst.operand("bias_scale").region != "constants":
        return
    t = inst.operand("bias_scale")
    data = program.constants[t.offset : t.end]
    data += bytes(-len(data) % 16)
    table = np.frombuffer(data, "<i4").reshape(-1, 4)
    weights = inst.operand("weights" if inst.op == "conv2d" else "rhs")
    lo, hi = dtype_range(weights.dtype)
    for column, name, (a, b) in (
        (1, "multiplier", MULTIPLIER),
        (2, "shift", SHIFT),
        (3, "weight zero point", (lo, hi)),
    ):
        bad = np.flatnonzero((table[:, column] < a) | (table[:, column] > b))
        if bad.size:
            raise ISAError(
                f"bias_scale row {bad[0]}: {name} {table[bad[0], column]} is outside [{a}, {b}]"
            )


def check_program(program: Program) -> None:
    """Whole-program rules: regions, placement, I/O, state, layers, token order, constant
    tables."""
    check_regions(program)
    check_streams(program)
    check_debug(program)
    check_io_names(program)
    for kind, descs in (("input", program.inputs), ("output", program.outputs)):
        for desc in descs:
            try:
                check_io(program, desc)
            except ISAError as e:
                raise ISAError(f"{kind} '{desc.name}': {e}") from None
    check_state(program)
    for index, inst in enumerate(program.instructions):
        try:
            check_in_program(program, index, inst)
        except ISAError as e:
            raise InstructionError(index, f"instruction {index} ({inst.op}): {e}") from None


def check_in_program(program: Program, index: int, inst: Instruction) -> None:
    """The rules that tie one (locally valid) instruction to its program."""
    if inst.layer is not None and not 0 <= inst.layer < len(program.layers):
        raise ISAError(f"layer {inst.layer} is not among the {len(program.layers)} layers")
    if len(set(inst.deps)) != len(inst.deps) or any(not 0 <= d < index for d in inst.deps):
        raise ISAError(f"deps {list(inst.deps)} must be distinct earlier instructions")
    for role, t in zip(inst.roles(), inst.operands, strict=True):
        try:
            check_placement(program, t)
        except ISAError as e:
            raise ISAError(f"{role}: {e}") from None
    check_tables(program, inst)


# --------------------------------------------------------------------------- hazards

MAX_RUNS = 1 << 16  # contiguous runs of a view: beyond, overlapping byte ranges conflict


@lru_cache(maxsize=1 << 14)
def runs(t: TensorRef) -> tuple[np.ndarray, int] | None:
    """The view's bytes as equal-length contiguous runs: (sorted starts, length), or None when
    there are too many. Broadcast dimensions (stride 0) add no bytes."""
    dims = sorted(
        (s * t.itemsize, d) for d, s in zip(t.shape, t.strides, strict=True) if d > 1 and s > 0
    )
    length = t.itemsize
    while dims and dims[0][0] == length:
        length *= dims.pop(0)[1]
    count = 1
    for _, d in dims:
        count *= d
    if count > MAX_RUNS:
        return None
    starts = np.full((), t.offset, np.int64)
    for step, d in dims:
        starts = starts[..., None] + np.arange(d, dtype=np.int64) * step
    return np.sort(starts.ravel()), length


def overlaps(a: TensorRef, b: TensorRef) -> bool:
    """Whether two views share a byte: exact, unless a view has more than MAX_RUNS runs.

    The lowering's token placement (passes/npu_lowering/deps.py) uses this same test, so
    the hazard check and the tokens agree on what conflicts.
    """
    if a.apart_from(b):
        return False
    if a == b or (a.is_contiguous() and b.is_contiguous()):
        return True
    ra, rb = runs(a), runs(b)
    if ra is None or rb is None:
        return True
    (sa, la), (sb, lb) = ra, rb
    # For each run of a, the last run of b starting before it ends must end after it starts.
    index = np.searchsorted(sb, sa + la, "left") - 1
    valid = index >= 0
    return bool(np.any(sb[index[valid]] + lb > sa[valid]))


def check_hazards(program: Program) -> None:
    """Every conflicting access on another engine is ordered by tokens.

    Instruction A happens before B if B waits for A's token, or A comes first on
    B's engine (each engine runs its instructions in program order), or through a
    chain of those. When A and B run on different engines, A comes first in the
    program, and one writes bytes the other reads or writes, A must happen before
    B. Each instruction carries a vector clock: per engine, how many of that
    engine's instructions happen before it.
    """
    engines = {e: i for i, e in enumerate(ENGINES)}
    clocks: list[tuple[int, ...]] = []
    seq: list[int] = []  # position of each instruction on its engine
    issued = [0] * len(ENGINES)
    per_engine: list[list[int]] = [[] for _ in ENGINES]
    for index, inst in enumerate(program.instructions):
        e = engines[inst.engine]
        clock = [0] * len(ENGINES)
        if per_engine[e]:
            clock = list(clocks[per_engine[e][-1]])
        for d in inst.deps:
            clock = [max(x, y) for x, y in zip(clock, clocks[d], strict=True)]
        seq.append(issued[e])
        issued[e] += 1
        clock[e] = issued[e]
        writes = [t for t in inst.written() if t.region != "constants"]
        reads = [t for t in inst.read() if t.region != "constants"]
        for other in range(len(ENGINES)):
            if other == e:
                continue
            for a in per_engine[other][clock[other] :]:
                _conflict(program, a, index, writes, reads)
        clocks.append(tuple(clock))
        per_engine[e].append(index)


_HAZARDS = (
    ("reads", "written", "reads bytes written by"),
    ("writes", "written", "writes bytes written by"),
    ("writes", "read", "overwrites bytes read by"),
)


def _conflict(
    program: Program, a: int, b: int, writes: list[TensorRef], reads: list[TensorRef]
) -> None:
    earlier = program.instructions[a]
    accesses = {
        "reads": reads,
        "writes": writes,
        "read": earlier.read(),
        "written": earlier.written(),
    }
    for mine, theirs, what in _HAZARDS:
        for x in accesses[mine]:
            for y in accesses[theirs]:
                if overlaps(x, y):
                    raise InstructionError(
                        b,
                        f"instruction {b} ({program.instructions[b].op}) {what} instruction "
                        f"{a} ({earlier.op}, {earlier.engine} engine) in region '{x.region}' "
                        f"(bytes [{max(x.offset, y.offset)}, {min(x.end, y.end)})) without "
                        f"waiting for its token",
                    )
