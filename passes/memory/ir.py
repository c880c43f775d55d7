"""Reading memory facts from IR: byte sizes, schedule steps, and a planned module's buffers.

Shared by the `plan-memory` pass, the reports and the bundle writer, so that all of
them number steps and size values the same way (docs/memory-planning.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IndexType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation
from xdsl.traits import ConstantLike

from npuc import graph_io
from npuc.diagnostics import NpucError
from npuc.dialects.mem import BUFFER_ATTR, BufferAttr, RegionOp, buffer_list
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.tensors import numpy_dtype

#: Ops whose results are compile-time data (placed in the constants region).
CONSTANT_OPS = frozenset({"nn.constant", "qnn.constant", "arith.constant"})

#: The three regions every planned module has; other regions are named after a memory.
CONSTANTS, MUTABLE, ACTIVATIONS = "constants", "mutable", "activations"
FIXED_REGIONS = (CONSTANTS, MUTABLE, ACTIVATIONS)


def is_constant(op: Operation) -> bool:
    # Traits belong to the op class, so the answer is remembered per (class, name).
    key = (type(op), op.name)
    found = _CONSTANT_KINDS.get(key)
    if found is None:
        found = _CONSTANT_KINDS[key] = op.name in CONSTANT_OPS or op.has_trait(ConstantLike)
    return found


_CONSTANT_KINDS: dict[tuple[type, str], bool] = {}


def element_dtype(element: Attribute) -> np.dtype:
    """The numpy dtype one element is stored in (quantized types: their storage integer)."""
    if isinstance(element, UniformQuantizedType):
        return element.storage_dtype()
    if isinstance(element, IndexType):
        return np.dtype(np.int64)
    return numpy_dtype(element)


def itemsize(ty: Attribute) -> int:
    return element_dtype(ty.get_element_type() if isinstance(ty, TensorType) else ty).itemsize


def byte_size(ty: Attribute) -> int:
    """Bytes of a value of type `ty`: elements x storage bytes (i4 takes a byte)."""
    try:
        if isinstance(ty, TensorType):
            return math.prod(ty.get_shape()) * itemsize(ty)
        return itemsize(ty)
    except TypeError:
        raise NpucError(f"cannot size a value of type {ty} for memory planning") from None


def layer_name(op: Operation) -> str:
    attr = op.properties.get("name") or op.attributes.get("name")
    return attr.data if isinstance(attr, StringAttr) else ""


def compute_ops(func: FuncOp) -> list[Operation]:
    """The ops that take a schedule step, in IR order: all but constants and the return."""
    return [
        op for op in func.body.block.ops if not is_constant(op) and not isinstance(op, ReturnOp)
    ]


def constant_bytes(op: Operation) -> bytes:
    """The bytes a constant op's result holds, as stored in memory (little-endian)."""
    value = op.properties.get("value") or op.attributes.get("value")
    ty = op.results[0].type
    dtype = element_dtype(ty.get_element_type() if isinstance(ty, TensorType) else ty)
    if isinstance(value, DenseIntOrFPElementsAttr):
        from npuc.tensors import from_dense

        array = np.asarray(from_dense(value))
    else:
        from npuc.runtime.nn_kernels import constant_array

        assert value is not None, f"{op.name} holds no constant value"
        array = np.asarray(constant_array(value))
    shape = tuple(ty.get_shape()) if isinstance(ty, TensorType) else ()
    array = np.broadcast_to(array, shape) if array.shape != shape else array
    return np.ascontiguousarray(array, dtype=dtype.newbyteorder("<")).tobytes()


# --------------------------------------------------------------------------- planned modules


@dataclass(frozen=True)
class Region:
    name: str
    memory: str
    size: int
    alignment: int
    lower_bound: int | None
    naive: int | None


@dataclass(frozen=True)
class PlannedValue:
    """One planned value: who produces it and where its bytes are."""

    label: str  # the tensor's name for people: layer name, graph I/O name, or %N
    kind: str  # input, output, constant or op
    op: str  # producing op name ("" for arguments)
    region: str
    offset: int
    size: int
    live: tuple[int, int] | None


@dataclass(frozen=True)
class Step:
    index: int
    op: str
    layer: str


@dataclass
class PlannedModule:
    """What a planned module says about memory, read back from its IR alone."""

    regions: dict[str, Region]
    values: list[PlannedValue]
    inputs: list[PlannedValue]
    outputs: list[PlannedValue]
    steps: list[Step]
    constant_ops: list[tuple[BufferAttr, Operation]] = field(default_factory=list)
    # live_profile per region: the text, JSON and plot reports each need it
    _profiles: dict[str, list[int]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def constants(self) -> Iterator[tuple[BufferAttr, bytes]]:
        """Each constant of the constants region with its bytes (computed on demand)."""
        for b, op in self.constant_ops:
            yield b, constant_bytes(op)

    def live_profile(self, region: str = ACTIVATIONS) -> list[int]:
        """Bytes of `region` reserved at each step: the union of the aligned buffers live there."""
        if region not in self._profiles:
            self._profiles[region] = self._live_profile(region)
        return list(self._profiles[region])

    def _live_profile(self, region: str) -> list[int]:
        align = self.regions[region].alignment if region in self.regions else 1
        last = len(self.steps) - 1
        spans = [
            (v.offset, v.offset + -(-v.size // align) * align, v.live[0], min(v.live[1], last))
            for v in self.values
            if v.region == region and v.live is not None
        ]
        return _union_per_step(np.array(spans, dtype=np.int64).reshape(-1, 4), last + 1)


def _union_per_step(spans: np.ndarray, steps: int) -> list[int]:
    """Length of the union of the byte spans [lo, hi) live at each step.

    `spans` rows are (lo, hi, first step, last step). Every (span, step) pair is one
    entry; sorted by step then lo, each entry adds the bytes it reaches past the
    highest end before it in its step (the running maximum restarts per step because
    entries are keyed by step * (top + 1), above any end of an earlier step).
    """
    lo, hi, first, last = spans.T
    counts = np.maximum(last - first + 1, 0)
    if steps <= 0 or not counts.any():
        return [0] * max(steps, 0)
    rows = np.repeat(np.arange(len(spans)), counts)
    step = first[rows] + np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    base = step * (int(hi.max()) + 1)
    key_lo, key_hi = lo[rows] + base, hi[rows] + base
    order = np.argsort(key_lo, kind="stable")
    key_lo, key_hi = key_lo[order], key_hi[order]
    reach = np.maximum.accumulate(key_hi)
    before = np.concatenate(([np.iinfo(np.int64).min], reach[:-1]))
    gain = np.maximum(key_hi - np.maximum(key_lo, before), 0)
    sums = np.concatenate(([0], np.cumsum(gain)))
    at = step[order]  # sorted, since the keys sort by step first
    firsts = np.searchsorted(at, np.arange(steps), side="left")
    lasts = np.searchsorted(at, np.arange(steps), side="right")
    return (sums[lasts] - sums[firsts]).tolist()


def _io(
    func: FuncOp, names: list[str], attrs: ArrayAttr[DictionaryAttr] | None, kind: str
) -> list[PlannedValue]:
    out = []
    for i, name in enumerate(names):
        entry = attrs.data[i].data if attrs is not None else {}
        b = entry.get(BUFFER_ATTR)
        if not isinstance(b, BufferAttr):
            raise NpucError(f"{kind} '{name}' of @{func.sym_name.data} has no mem.buffer")
        out.append(PlannedValue(name, kind, "", b.region.data, b.offset.data, b.size.data, b.live))
    return out


def is_planned(module: ModuleOp) -> bool:
    return any(isinstance(op, RegionOp) for op in module.ops)


def read_plan(module: ModuleOp) -> PlannedModule:
    """The regions, buffers and steps of a module that `plan-memory` has planned."""
    regions = {
        op.region_name: Region(
            op.region_name,
            op.memory.data,
            op.size.value.data,
            op.alignment.value.data,
            op.lower_bound.value.data if op.lower_bound is not None else None,
            op.naive.value.data if op.naive is not None else None,
        )
        for op in module.ops
        if isinstance(op, RegionOp)
    }
    if not regions:
        raise NpucError("the module is not memory-planned (no mem.region): run plan-memory first")
    try:
        func = graph_io.entry_function(module)
    except ValueError as e:
        raise NpucError(str(e)) from None
    from npuc.ir_text import op_location
    from npuc.runtime.nn_interpreter import value_names

    ssa = value_names(func)
    inputs = _io(func, graph_io.input_names(func), func.arg_attrs, "input")
    outputs = _io(func, graph_io.output_names(func), func.res_attrs, "output")
    values: list[PlannedValue] = list(inputs)
    constants: list[tuple[BufferAttr, Operation]] = []
    steps: list[Step] = []
    for op in func.body.block.ops:
        if isinstance(op, ReturnOp):
            continue
        constant = is_constant(op)
        if not constant:
            steps.append(Step(len(steps), op.name, layer_name(op)))
        buffers = buffer_list(op.attributes.get(BUFFER_ATTR))
        if buffers is None or len(buffers) != len(op.results):
            raise NpucError(
                f"'{op.name}' ({layer_name(op) or 'unnamed'}) has no mem.buffer, "
                "though the module is memory-planned",
                op_location(op),
            )
        for i, (r, b) in enumerate(zip(op.results, buffers, strict=True)):
            label = layer_name(op) or ssa[r]
            if len(op.results) > 1:
                label += f":{i}"
            kind = "constant" if constant else "op"
            values.append(
                PlannedValue(
                    label, kind, op.name, b.region.data, b.offset.data, b.size.data, b.live
                )
            )
            if constant and b.region.data == CONSTANTS:
                constants.append((b, op))
    return PlannedModule(regions, values, inputs, outputs, steps, constants)
