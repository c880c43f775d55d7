"""`lower-to-npu`: a memory-planned module (`mem` level) becomes one `npu.program`.

Every value already has its bytes (`mem.buffer`); each `qnn` compute op becomes an
instruction on strided views of those bytes (passes/npu_lowering/compute.py), data
movement becomes views where possible and moves or DMAs otherwise (movement.py),
conv/matmul parameters become `bias_scale` tables appended to the constants region,
and tokens order the instructions by the bytes they touch (deps.py). Ops with no
instruction run on the host CPU as `npu.host` (`host=all`, the default, like Vela's CPU
fallback); `host=float` keeps only float ops there and `host=none` none, refusing the
others all at once. Binary format of the result: docs/binary-format.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, Float32Type, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.passes import ModulePass

from npuc import graph_io
from npuc.diagnostics import InternalError, NpucError, note_context
from npuc.dialects import npu_isa as isa
from npuc.dialects.mem import BUFFER_ATTR, BufferAttr, RegionOp, buffer_list
from npuc.dialects.npu import ProgramOp, YieldOp, host_body_text, program_op
from npuc.dialects.npu_rules import check_hazards, check_instruction, check_program
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.dialects.tile import LAYER_ATTR, InsertOp
from npuc.passes.memory.ir import constant_bytes, is_constant, is_planned

from .npu_lowering.builder import Builder, Constants, LoweringError
from .npu_lowering.deps import with_deps
from .npu_lowering.rules import COMPUTE, lowerable, rule_for
from .npu_lowering.views import ViewError, contiguous, same_place, shape_of, sliced

HOST_MODES = ("none", "float", "all")
MAX_ROUNDS = 32
# the first round saves its builder every len(ops) / CHECKPOINTS ops (at least
# CHECKPOINT_MIN apart) so that a round that copies a view resumes near the view
CHECKPOINTS = 16
CHECKPOINT_MIN = 32


@dataclass(frozen=True)
class LowerToNpuPass(ModulePass):
    """Lower a planned module to one `npu.program` (see the module docstring).

    `host`: `all` (default) runs every op without an instruction on the host; `float`
    only float ops (nn ops, quantize/dequantize at float inputs and outputs), refusing
    quantized ops without an instruction; `none` refuses every such op.
    """

    name = "lower-to-npu"

    host: str = "all"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        install_program(op, *lower_program(op, self.host))


def install_program(module: ModuleOp, program: isa.Program, host_bodies: dict[int, Region]) -> None:
    """Replace the module's ops by the one `npu.program` stating `program`."""
    lowered = ProgramOp.from_program(program, host_bodies)
    for o in list(module.body.block.ops):
        module.body.block.erase_op(o, safe_erase=False)
    module.body.block.add_op(lowered)


def program_of(module: ModuleOp) -> isa.Program:
    """The program of a lowered module (the one npu.program), as plain data; a stateful
    model's state pairs and initial values came in with the lowering (`_state`)."""
    return program_op(module).program()


# --------------------------------------------------------------------------- the lowering


def _is_float(op: Operation) -> bool:
    types = [v.type for v in (*op.operands, *op.results)]
    return op.name.startswith("nn.") or any(
        isinstance(t, TensorType) and isinstance(t.element_type, Float32Type) for t in types
    )


def _describe(op: Operation) -> str:
    attr = op.properties.get("name") or op.attributes.get("name")
    name = getattr(attr, "data", None)
    return f"'{op.name}'" + (f" (layer '{name}')" if name else "")


def _regions(module: ModuleOp) -> dict[str, tuple[str, RegionOp]]:
    """Planned region name -> (NPU region kind, region), as `isa.region_kinds` maps them."""
    regions = {r.region_name: r for r in module.ops if isinstance(r, RegionOp)}
    kinds = isa.region_kinds(regions)
    extra = sorted(set(regions) - set(kinds))
    if extra:
        raise NpucError(
            f"lower-to-npu: region(s) {', '.join(extra)} have no NPU region kind "
            f"(known: {', '.join(isa.REGION_KINDS)})"
        )
    return {name: (kinds[name], r) for name, r in regions.items()}


def _constants(func: FuncOp, regions: dict[str, tuple[str, RegionOp]]) -> Constants:
    region = regions["constants"][1] if "constants" in regions else None
    data = bytearray(region.size.value.data if region else 0)
    for op in func.body.block.ops:
        buffers = buffer_list(op.attributes.get(BUFFER_ATTR))
        if is_constant(op) and buffers and buffers[0].region.data == "constants":
            blob, offset = constant_bytes(op), buffers[0].offset.data
            data[offset : offset + len(blob)] = blob
    alignment = region.alignment.value.data if region else 64
    return Constants(data, alignment)


def _layer_names(func: FuncOp) -> dict[int, str]:
    names: dict[int, str] = {}
    for op in func.body.block.ops:
        index, attr = op.attributes.get(LAYER_ATTR), op.properties.get("name")
        if index is not None and attr is not None:
            names.setdefault(index.value.data, attr.data)
    return names


def _io_buffer(
    func: FuncOp, attrs: ArrayAttr[DictionaryAttr] | None, i: int, kind: str, name: str
) -> BufferAttr:
    b = attrs.data[i].data.get(BUFFER_ATTR) if attrs is not None else None
    if not isinstance(b, BufferAttr):
        raise NpucError(f"lower-to-npu: {kind} '{name}' has no mem.buffer: run plan-memory")
    return b


def _quantization(ty: Attribute) -> tuple[float, int]:
    q = ty.element_type if isinstance(ty, TensorType) else None
    if isinstance(q, UniformQuantizedType) and not q.per_axis:
        return q.scale, q.zero_point
    return 0.0, 0


def host_body(op: Operation) -> Region:
    """A body running `op` on the host: block arguments in, npu.yield out."""
    block = Block(arg_types=[v.type for v in op.operands])
    clone = op.clone(value_mapper=dict(zip(op.operands, block.args, strict=True)))
    for key in [k for k in clone.attributes if k.startswith(("mem.", "tile."))]:
        del clone.attributes[key]
    block.add_ops([clone, YieldOp.create(operands=list(clone.results))])
    return Region(block)


def _lower_host(b: Builder, op: Operation) -> None:
    ins = [b.ref(v) for v in op.operands]
    outs = [b.out(r) for r in op.results]
    body = host_body(op)
    index = b.emit("host", (*ins, *outs), op.operands, body=host_body_text(body), inputs=len(ins))
    b.host_bodies[index] = body


def _bias_load(op: Operation) -> bool:
    """A load whose result only feeds NPU biases: they go to bias_scale tables instead."""
    return op.name in ("tile.load", "tile.slice") and all(
        use.index == 2
        and use.operation.name in ("qnn.conv2d", "qnn.fully_connected", "qnn.conv_transpose2d")
        and lowerable(use.operation)
        for use in op.results[0].uses
    )


def _plan_ops(func: FuncOp, host: str) -> dict[Operation, str]:
    """How each op is lowered ("rule", "host", "constant"); refuses the others all at once."""
    how: dict[Operation, str] = {}
    refused = []
    for op in func.body.block.ops:
        if isinstance(op, ReturnOp):
            continue
        if is_constant(op):
            how[op] = "constant"
        elif _bias_load(op):
            how[op] = "skip"
        elif lowerable(op) and not _is_float(op):
            how[op] = "rule"
        elif host == "all" or (host == "float" and _is_float(op)):
            how[op] = "host"
        elif _is_float(op):
            refused.append(f"{_describe(op)}: float ops run on the host (host=float)")
        else:
            refused.append(f"{_describe(op)}: no NPU instruction (host=all runs it on the host)")
    if refused:
        raise NpucError(
            f"lower-to-npu: {len(refused)} op(s) cannot be lowered:\n  " + "\n  ".join(refused)
        )
    return how


def _redirect(b: Builder, op: Operation) -> None:
    """A compute op whose result only fills an in-place insert writes its slice directly;
    so does any op whose result plan-memory placed inside the insert's destination."""
    if len(op.results) != 1:
        return
    uses = list(op.results[0].uses)
    if len(uses) != 1 or uses[0].index != 0 or not isinstance(uses[0].operation, InsertOp):
        return
    insert = uses[0].operation
    planned = b.planned_inside(op.results[0], insert.dest)
    if not planned and (op.name not in COMPUTE or op in b.copies):
        return
    in_place = insert.dest in b.refs and same_place(b.ref(insert.dest), b.planned(insert.result))
    if planned and not in_place:
        raise InternalError(
            "lower-to-npu: plan-memory placed a tile inside its insert's destination, "
            "which the lowering does not assemble in place"
        )
    if not in_place:
        return
    if planned:
        b.pinned.add(op)
    target = sliced(
        b.ref(insert.dest),
        [int(v) for v in insert.offsets.get_values()],
        shape_of(insert.source.type),
    )
    b.redirect(op, op.results[0], target)


def _lower_once(
    func: FuncOp,
    how: dict[Operation, str],
    regions: dict[str, tuple[str, RegionOp]],
    layer_names: dict[int, str],
    copies: set[Operation],
    saved: dict[int, Builder],
    resume: int = 0,
) -> Builder:
    """Lower every op of `func` in order, the ops in `copies` as real copies. The first
    round (`resume` 0) also saves its builder into `saved` every len(ops) / CHECKPOINTS
    ops, by op position; a later round resumes from the one saved at `resume`."""
    kinds = {name: kind for name, (kind, _) in regions.items()}
    block = func.body.block
    ops = list(block.ops)
    if resume:
        b = saved[resume].resumed(copies)
    else:
        b = Builder(_constants(func, regions), layer_names, copies, kinds)
        for i, arg in enumerate(block.args):
            name = graph_io.input_names(func)[i]
            buf = _io_buffer(func, func.arg_attrs, i, "input", name)
            b.bind(arg, contiguous(kinds[buf.region.data], buf.offset.data, arg.type))
    every = max(CHECKPOINT_MIN, len(ops) // CHECKPOINTS)
    errors: list[str] = []
    for position in range(resume, len(ops)):
        op = ops[position]
        if not resume and position and position % every == 0 and not errors:
            saved[position] = b.saved()
        b.op = op
        if errors and any(v not in b.refs for v in op.operands):
            continue  # it reads a value whose op failed: that error is already reported
        try:
            if isinstance(op, ReturnOp):
                for i, value in enumerate(op.operands):
                    name = graph_io.output_names(func)[i]
                    buf = _io_buffer(func, func.res_attrs, i, "output", name)
                    out = contiguous(kinds[buf.region.data], buf.offset.data, value.type)
                    if not same_place(b.ref(value), out):
                        b.emit("dma", (b.ref(value), out), (value,))
            elif how[op] == "skip":
                continue
            elif how[op] == "constant":
                ref = b.planned(op.results[0])
                if ref.region != "constants":
                    raise LoweringError("a constant outside the constants region")
                b.bind(op.results[0], ref)
            elif how[op] == "host":
                _redirect(b, op)
                _lower_host(b, op)
            else:
                _redirect(b, op)
                rule = rule_for(op)
                assert rule is not None  # _plan_ops chose "rule" for it
                rule(b, op)
        except (LoweringError, ViewError) as e:
            errors.append(f"{_describe(op)}: {e}")
        except Exception as e:
            note_context(e, "op", op)
            raise
    if errors:
        raise NpucError(
            f"lower-to-npu: {len(errors)} op(s) cannot be lowered:\n  " + "\n  ".join(errors)
        )
    return b


def lower_program(module: ModuleOp, host: str = "all") -> tuple[isa.Program, dict[int, Region]]:
    """The program of a module planned by plan-memory, and the bodies of its host
    instructions by index (NpucError if it cannot be lowered)."""
    if host not in HOST_MODES:
        raise NpucError(f"lower-to-npu: host must be one of {', '.join(HOST_MODES)}, got {host!r}")
    if not is_planned(module):
        raise NpucError(
            "lower-to-npu needs a memory-planned module (no mem.region): run "
            "plan-memory{target=NAME} first"
        )
    try:
        func = graph_io.entry_function(module)
    except ValueError as e:
        raise NpucError(f"lower-to-npu: {e}") from None
    regions = _regions(module)
    how = _plan_ops(func, host)
    layer_names = _layer_names(func)
    copies: set[Operation] = set()
    saved: dict[int, Builder] = {}
    positions = {op: k for k, op in enumerate(func.body.block.ops)}
    resume = 0
    for _ in range(MAX_ROUNDS):
        b = _lower_once(func, how, regions, layer_names, copies, saved, resume)
        found = set(b.broken_views()) - copies
        # A tile the plan placed inside its destination has no other place: the views
        # around it are copied instead.
        broken = found - b.pinned
        if not broken:
            if found:
                raise InternalError(
                    "lower-to-npu: plan-memory placed a tile inside its insert's "
                    "destination, but the destination's bytes are in use before the insert"
                )
            break
        copies |= broken
        # the ops before the first copied op lower as in the first round: resume after them
        first = min(positions[op] for op in copies)
        resume = max((k for k in saved if k <= first), default=0)
    else:
        raise InternalError("lower-to-npu: views kept breaking")
    return _program(func, b, regions), b.host_bodies


def _state(func: FuncOp, inputs: list[isa.IODesc]) -> tuple[isa.StatePair, ...]:
    """The state pairs of `@main` (graph_io.state_names) with their initial stored values."""
    try:
        pairs = graph_io.state_names(func)
    except ValueError as e:
        raise NpucError(f"lower-to-npu: {e}") from None
    if not pairs:
        return ()
    module = func.parent_op()
    assert isinstance(module, ModuleOp)
    initial = graph_io.initial_state(module)
    state = []
    for arg, res, name in pairs:
        t = inputs[arg].tensor
        value = np.ascontiguousarray(initial[name], isa.DTYPES[t.dtype][1])
        state.append(isa.StatePair(arg, res, value.tobytes()))
    return tuple(state)


def _program(func: FuncOp, b: Builder, regions: dict[str, tuple[str, RegionOp]]) -> isa.Program:
    data = bytes(b.constants.data)
    data = data.rstrip(b"\0")
    isa_regions = []
    for kind, r in sorted(regions.values(), key=lambda kr: isa.REGION_KINDS.index(kr[0])):
        size = r.size.value.data
        if kind == "constants":
            align = r.alignment.value.data
            size = max(size, -(-len(b.constants.data) // align) * align)
        isa_regions.append(isa.Region(kind, size, r.memory.data))
    block = func.body.block
    inputs = []
    for i, (arg, name) in enumerate(zip(block.args, graph_io.input_names(func), strict=True)):
        buf = _io_buffer(func, func.arg_attrs, i, "input", name)
        ref = contiguous(regions[buf.region.data][0], buf.offset.data, arg.type)
        inputs.append(isa.IODesc(name, ref, *_quantization(arg.type)))
    outputs = []
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    for i, (value, name) in enumerate(zip(ret.operands, graph_io.output_names(func), strict=True)):
        buf = _io_buffer(func, func.res_attrs, i, "output", name)
        ref = contiguous(regions[buf.region.data][0], buf.offset.data, value.type)
        outputs.append(isa.IODesc(name, ref, *_quantization(value.type)))
    program = isa.Program(
        func.sym_name.data,
        tuple(isa_regions),
        tuple(inputs),
        tuple(outputs),
        tuple(b.layers),
        tuple(with_deps(b.instructions)),
        data,
        state=_state(func, inputs),
    )
    try:
        for index, inst in enumerate(program.instructions):
            try:
                check_instruction(inst)
            except isa.ISAError as e:
                raise isa.ISAError(f"instruction {index} ({inst.op}): {e}") from None
        check_program(program)
        check_hazards(program)
    except isa.ISAError as e:
        raise InternalError(f"lower-to-npu produced an invalid program: {e}") from e
    return program
