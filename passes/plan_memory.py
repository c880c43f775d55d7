"""`plan-memory`: give every value of the entry function a region and an offset.

Regions: `constants` (weights, in the target's constants memory), `mutable`
(inputs, outputs, state: the host's side of the call), `activations` (every other
tensor, reused by liveness in the arena), plus one region per other memory that
ops name with `to` (e.g. `sram`, for tiles loaded there). With `schedule=true` the
ops are first reordered to lower peak memory. The result is written as `mem`
attributes (dialects/mem.py) and verified; an unsound plan raises (a compiler bug).
Algorithms and figures: docs/memory-planning.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from npuc import graph_io
from npuc.diagnostics import NpucError
from npuc.dialects.mem import BUFFER_ATTR, BufferAttr, RegionOp
from npuc.passes.memory.assign import FunctionPlan, PlannedBuffer, plan_function
from npuc.target import load_target


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    """Plan memory for `target` (a shipped target's name or a path to a TOML file).

    `alignment=0` takes the target's; `budget_seconds` bounds the placement search
    per region (the plan is deterministic when the search ends before the budget).
    `io="separate"` stacks inputs and outputs in the mutable region; `io="arena"` plans
    them in the activations region by liveness, so their bytes are reused (the peak
    memory is then the activations size alone; persistent state stays mutable).
    `double_buffer=true` reserves each `tile.load`'s bytes from the compute op before it,
    so the DMA runs while that op does, at the cost of the SRAM both buffers take.
    """

    name = "plan-memory"

    target: str = ""
    alignment: int = 0
    schedule: bool = True
    budget_seconds: float = 2.0
    io: str = "separate"
    double_buffer: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.target:
            raise NpucError('plan-memory needs a target: plan-memory{target=NAME or "PATH"}')
        target = load_target(self.target)
        alignment = self.alignment or target.alignment
        if alignment < 1 or alignment & (alignment - 1):
            raise NpucError(f"plan-memory: alignment must be a power of two, got {alignment}")
        if self.io not in ("separate", "arena"):
            raise NpucError(f'plan-memory: io must be "separate" or "arena", got "{self.io}"')
        if not self.budget_seconds > 0:
            raise NpucError(
                f"plan-memory: budget_seconds must be positive, got {self.budget_seconds}"
            )
        try:
            func = graph_io.entry_function(op)
        except ValueError as e:
            raise NpucError(f"plan-memory: {e}") from None
        clear_plan(op)
        plan = plan_function(
            func,
            target,
            alignment,
            reorder=self.schedule,
            budget_seconds=self.budget_seconds,
            io_in_arena=self.io == "arena",
            double_buffer=self.double_buffer,
        )
        write_plan(op, func, plan, alignment)


def clear_plan(module: ModuleOp) -> None:
    """Remove an earlier plan (regions and buffer attributes), so planning can run again."""
    for region in [o for o in module.ops if isinstance(o, RegionOp)]:
        module.body.block.erase_op(region)
    for o in module.walk():
        o.attributes.pop(BUFFER_ATTR, None)
        if isinstance(o, FuncOp):
            o.arg_attrs = _without_buffers(o.arg_attrs)
            o.res_attrs = _without_buffers(o.res_attrs)


def _without_buffers(attrs: ArrayAttr[DictionaryAttr] | None) -> ArrayAttr[DictionaryAttr] | None:
    if attrs is None:
        return None
    return ArrayAttr(
        [DictionaryAttr({k: v for k, v in d.data.items() if k != BUFFER_ATTR}) for d in attrs.data]
    )


def _attr(b: PlannedBuffer) -> BufferAttr:
    return BufferAttr(b.region, b.offset, b.size, b.live)


def _with_buffers(
    attrs: ArrayAttr[DictionaryAttr] | None, buffers: list[BufferAttr]
) -> ArrayAttr[DictionaryAttr]:
    entries = attrs.data if attrs is not None else [DictionaryAttr({})] * len(buffers)
    return ArrayAttr(
        [DictionaryAttr({**d.data, BUFFER_ATTR: b}) for d, b in zip(entries, buffers, strict=True)]
    )


def write_plan(module: ModuleOp, func: FuncOp, plan: FunctionPlan, alignment: int) -> None:
    """Reorder the body as planned, attach `mem.buffer`s and add the `mem.region` ops."""
    block = func.body.block
    if plan.sequence is not None:
        ret = block.last_op
        assert ret is not None
        for o in plan.sequence:
            block.detach_op(o)
        for o in plan.sequence:
            block.insert_op_before(o, ret)
    for o in block.ops:
        if not o.results:
            continue
        attrs = [_attr(plan.buffers[r]) for r in o.results]
        o.attributes[BUFFER_ATTR] = attrs[0] if len(attrs) == 1 else ArrayAttr(attrs)
    func.arg_attrs = _with_buffers(func.arg_attrs, [_attr(plan.buffers[a]) for a in block.args])
    ret = block.last_op
    assert ret is not None
    func.res_attrs = _with_buffers(func.res_attrs, [_attr(plan.buffers[v]) for v in ret.operands])
    regions = [
        RegionOp(r.name, r.memory, r.size, alignment, r.lower_bound, r.naive) for r in plan.regions
    ]
    top = module.body.block
    if top.first_op is None:
        top.add_ops(regions)
    else:
        top.insert_ops_before(regions, top.first_op)
