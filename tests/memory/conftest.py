"""Independent checks of planned modules, reached through the `arena` fixture (this module).

Nothing here uses the planner's data structures: buffers are read from the IR's
`mem.buffer` attributes, liveness is recomputed from the op order, and which ops may
share bytes with an operand is decided from the op semantics below.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, TensorType
from xdsl.dialects.func import ReturnOp

from npuc.dialects.quant_types import UniformQuantizedType
from npuc.graph_io import entry_function, input_names, output_names
from npuc.runtime.qnn_interpreter import evaluate
from npuc.tensors import from_dense, numpy_dtype

CONSTANT_OPS = {"nn.constant", "qnn.constant", "arith.constant"}
# Ops whose result may be the very bytes of an operand (no data moves).
VIEW_OPS = {
    "nn.reshape",
    "qnn.reshape",
    "nn.split",
    "qnn.split",
    "nn.concat",
    "qnn.concat",
    "tile.slice",
}
# Ops whose result is operand 1 with a region (at `offsets`) replaced by operand 0.
ASSEMBLING = {"tile.insert", "tile.store"}
# Ops computing out[i] from operand elements i only (a result may overwrite such an operand).
_NN_ELEMENTWISE = """relu clip add sub mul div maximum minimum sigmoid tanh exp neg abs leaky_relu
    hard_swish prelu pow sqrt log erf reciprocal floor ceil softplus gelu elu hard_sigmoid"""
_QNN_ELEMENTWISE = """add sub mul lut requantize quantize dequantize maximum minimum prelu
    squared_difference div"""
ELEMENTWISE = {f"nn.{n}" for n in _NN_ELEMENTWISE.split()} | {
    f"qnn.{n}" for n in _QNN_ELEMENTWISE.split()
}


def dtype_of(ty) -> np.dtype:
    element = ty.get_element_type() if isinstance(ty, TensorType) else ty
    if isinstance(element, UniformQuantizedType):
        return element.storage_dtype()
    return numpy_dtype(element)


def shape_of(ty) -> tuple[int, ...]:
    return tuple(ty.get_shape()) if isinstance(ty, TensorType) else ()


def nbytes(ty) -> int:
    return math.prod(shape_of(ty)) * dtype_of(ty).itemsize


def regions(module: ModuleOp) -> dict[str, tuple[int, int]]:
    """Region name -> (size, alignment), from the mem.region ops."""
    return {
        op.sym_name.data: (op.size.value.data, op.alignment.value.data)
        for op in module.ops
        if op.name == "mem.region"
    }


def buffers(module: ModuleOp):
    """(func, value -> (region, offset, size)) for every argument and op result of @main."""
    func = entry_function(module)
    where = {}
    for arg, entry in zip(func.body.block.args, func.arg_attrs.data, strict=True):
        b = entry.data["mem.buffer"]
        where[arg] = (b.region.data, b.offset.data, b.size.data)
    for op in func.body.block.ops:
        attr = op.attributes.get("mem.buffer")
        if attr is None:
            assert not op.results, op.name
            continue
        attrs = attr.data if isinstance(attr, ArrayAttr) else (attr,)
        for r, b in zip(op.results, attrs, strict=True):
            where[r] = (b.region.data, b.offset.data, b.size.data)
    ret = func.body.block.last_op
    for v, entry in zip(ret.operands, func.res_attrs.data, strict=True):
        b = entry.data["mem.buffer"]
        assert where[v] == (b.region.data, b.offset.data, b.size.data), "result attr mismatch"
    return func, where


def strided_views(func, where) -> dict:
    """`tile.slice` results planned inside their source although their region is not a
    contiguous run of its bytes: the consumers read the elements where the source has
    them (a strided view). Result -> (source, index)."""
    views = {}
    for op in func.body.block.ops:
        if op.name != "tile.slice":
            continue
        x, r = op.operands[0], op.results[0]
        if where[x][0] != where[r][0] or not _overlap(where[x], where[r]):
            continue
        offsets = [int(o) for o in op.properties["offsets"].get_values()]
        full, part = shape_of(x.type), shape_of(r.type)
        first = next((d for d, n in enumerate(part) if n != 1), len(part))
        if all(part[d] == full[d] for d in range(first + 1, len(full))):
            continue  # one contiguous run: an ordinary view
        views[r] = (x, tuple(slice(o, o + n) for o, n in zip(offsets, part, strict=True)))
    return views


def strided_tiles(func, where) -> dict:
    """Tiles that their producer writes straight into their `tile.insert`'s destination,
    planned inside it but not at their region's own bytes (a region that is not one
    contiguous run of the destination's bytes, or one at an unaligned offset: the plan
    records those at the destination's first byte). Tile -> (destination, index)."""
    tiles = {}
    for op in func.body.block.ops:
        if op.name != "tile.insert":
            continue
        t, dest = op.operands
        if where[t][0] != where[dest][0] or not _overlap(where[t], where[dest]):
            continue
        offsets = [int(o) for o in op.properties["offsets"].get_values()]
        full, part = shape_of(dest.type), shape_of(t.type)
        first = next((d for d, n in enumerate(part) if n != 1), len(part))
        if all(part[d] == full[d] for d in range(first + 1, len(full))):
            start = int(np.ravel_multi_index(offsets, full)) * dtype_of(t.type).itemsize
            if where[t][1] == where[dest][1] + start:
                continue  # one contiguous run, at its own bytes
        tiles[t] = (dest, tuple(slice(o, o + n) for o, n in zip(offsets, part, strict=True)))
    return tiles


def check_layout(module: ModuleOp) -> dict[str, int]:
    """Regions, alignment, sizes and overlaps checked from the IR alone; returns the steps count.

    Two values of one region may share bytes while both are live only if a chain of
    view or elementwise ops links them (where the arena run checks the data). A strided
    slice view keeps its source's bytes in use until its own last reader.
    """
    regs = regions(module)
    func, where = buffers(module)
    strided = strided_views(func, where)
    for v, (region, off, size) in where.items():
        assert region in regs, region
        assert size == nbytes(v.type), (v, size)
        assert off % regs[region][1] == 0 and off + size <= regs[region][0], (region, off, size)
    for r, (size, align) in regs.items():
        assert size % align == 0, r
    # Liveness from the op order: a value is live from its producer to its last reader.
    ops = [op for op in func.body.block.ops if not isinstance(op, ReturnOp)]
    step = {op: i for i, op in enumerate(ops) if op.name not in CONSTANT_OPS}
    live = {}
    for op in ops:
        if op in step:
            for r in op.results:
                live[r] = [step[op], step[op]]
    for arg in func.body.block.args:  # the caller writes inputs before the first step
        live[arg] = [-1, -1]
    for op in ops:
        if op in step:
            for x in op.operands:
                if x in live:
                    live[x][1] = max(live[x][1], step[op])
    end = max(step.values(), default=0) + 1
    for v in func.body.block.last_op.operands:  # ... and reads outputs after the last one
        if v in live:
            live[v][1] = end
    for r, (x, _) in reversed(list(strided.items())):  # later views first: chains propagate
        if x in live and r in live:
            live[x][1] = max(live[x][1], live[r][1])
    for t, (dest, _) in strided_tiles(func, where).items():  # written into dest's bytes
        if dest in live and t in live:
            live[dest][0] = min(live[dest][0], live[t][0])
    parent = {v: v for v in where}

    def find(v):
        while parent[v] is not v:
            v = parent[v]
        return v

    for op in ops:
        for r in op.results:
            for x in op.operands:
                if where[x][0] == where[r][0] and _overlap(where[x], where[r]):
                    if op.name in ASSEMBLING and x is op.operands[1]:
                        assert where[x][1:] == where[r][1:], f"{op.name}: partial in place"
                        assert live[x][1] == step[op], f"{op.name} overwrites a live operand"
                    elif op.name in ELEMENTWISE:
                        assert where[x][1:] == where[r][1:], f"{op.name}: partial in-place"
                        assert shape_of(x.type) == shape_of(r.type), op.name
                        assert live[x][1] == step[op], f"{op.name} overwrites a live operand"
                    else:
                        assert op.name in VIEW_OPS | ASSEMBLING, f"{op.name} overwrites an operand"
                    parent[find(r)] = find(x)
    by_region: dict[str, list] = {}
    for v, (region, _, _) in where.items():
        if v in live:
            by_region.setdefault(region, []).append(v)
    for values in by_region.values():
        values.sort(key=lambda v: where[v][1])
        for i, a in enumerate(values):
            for b in values[i + 1 :]:
                if where[b][1] >= where[a][1] + where[a][2]:
                    break
                both = live[a][0] <= live[b][1] and live[b][0] <= live[a][1]
                if both and where[a][2] and where[b][2]:
                    assert find(a) is find(b), f"live buffers overlap: {where[a]} {where[b]}"
    return {"steps": len(step)}


def _overlap(a, b) -> bool:
    return a[1] < b[1] + b[2] and b[1] < a[1] + a[2] and a[2] > 0 and b[2] > 0


def run_through_arena(module: ModuleOp, inputs: dict[str, np.ndarray], seed: int = 0):
    """Execute @main with every tensor stored at its planned bytes of one arena per region.

    Arenas start as random garbage. Operands are read back from the arena, so a value
    clobbered before its last use, or a view not holding its data, changes the outputs.
    View ops do not write: their result must already be in place (checked).
    """
    rng = np.random.default_rng(seed)
    func, where = buffers(module)
    strided = strided_views(func, where) | strided_tiles(func, where)
    tiles = strided_tiles(func, where)
    arenas = {
        r: rng.integers(0, 256, size, dtype=np.uint8) for r, (size, _) in regions(module).items()
    }

    def read(v):
        if v in strided:  # read where the source holds the elements, when they are used
            x, index = strided[v]
            return read(x)[index].copy()
        region, off, size = where[v]
        raw = arenas[region][off : off + size].tobytes()
        return (
            np.frombuffer(raw, dtype_of(v.type).newbyteorder("<")).reshape(shape_of(v.type)).copy()
        )

    def put(region, off, data: bytes):
        arenas[region][off : off + len(data)] = np.frombuffer(data, np.uint8)

    def write(v, array):
        region, off, size = where[v]
        data = np.ascontiguousarray(np.asarray(array).astype(dtype_of(v.type))).tobytes()
        assert len(data) == size
        put(region, off, data)

    for name, arg in zip(input_names(func), func.body.block.args, strict=True):
        assert inputs[name].dtype == dtype_of(arg.type), (
            "feed stored values (integers if quantized)"
        )
        write(arg, inputs[name])
    for op in func.body.block.ops:
        if op.name in CONSTANT_OPS:
            write(op.results[0], from_dense(op.properties.get("value") or op.attributes["value"]))
    for op in func.body.block.ops:
        if isinstance(op, ReturnOp) or op.name in CONSTANT_OPS:
            continue
        results = evaluate(op, [read(x) for x in op.operands])
        for r, array in zip(op.results, results, strict=True):
            in_place = [
                x
                for x in op.operands
                if where[x][0] == where[r][0] and _overlap(where[x], where[r])
            ]
            if in_place and op.name in ASSEMBLING:
                # In place of the destination: only the region is written.
                src, dest = op.operands
                if where[dest] == where[r]:
                    region = read(r)
                    offsets = op.properties["offsets"].get_values()
                    shape = shape_of(src.type)
                    index = tuple(slice(o, o + n) for o, n in zip(offsets, shape, strict=True))
                    region[index] = read(src)
                    write(r, region)
                np.testing.assert_array_equal(read(r), np.asarray(array), err_msg=op.name)
            elif r in tiles:  # the producer writes its tile's elements where dest has them
                dest, index = tiles[r]
                whole = read(dest)
                whole[index] = np.asarray(array)
                write(dest, whole)
            elif r in strided:
                np.testing.assert_array_equal(read(r), np.asarray(array), err_msg=op.name)
            elif in_place and op.name in VIEW_OPS:
                if op.name.endswith("concat"):
                    # Operands not already at their slice are copied there.
                    region, base, _ = where[r]
                    offset = 0
                    for x in op.operands:
                        if where[x] != (region, base + offset, nbytes(x.type)):
                            put(region, base + offset, read(x).tobytes())
                        offset += nbytes(x.type)
                expect = np.asarray(array).astype(dtype_of(r.type))
                np.testing.assert_array_equal(read(r), expect, err_msg=f"view {op.name}")
            else:
                write(r, array)
    ret = func.body.block.last_op
    return {n: read(v).copy() for n, v in zip(output_names(func), ret.operands, strict=True)}


def check_against_interpreter(module: ModuleOp, seed: int = 4) -> None:
    """The layout checks, then every op run on its planned bytes gives the interpreter's
    outputs on seeded inputs."""
    from npuc import api

    feeds = api.random_inputs(module, seed=seed)
    expected = api.run(api.parse_mlir(str(module)), feeds)
    check_layout(module)
    got = run_through_arena(module, feeds)
    for name, want in expected.items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)


@pytest.fixture(name="arena")
def _arena():
    """This module: layout checks and the arena executor."""
    return sys.modules[__name__]
