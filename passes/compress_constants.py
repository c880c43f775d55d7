"""`compress-constants`: store the constants of a lowered program encoded where that pays.

Runs after lower-to-npu, on the `npu.program`, for a target with a weight decoder
(npu-compile runs it when the target has `[weight_decoder]`; docs/targets.md). Each run
of the constants region that instructions read as one element type (a weight tensor, a
bias/scale table, a LUT: overlapping operands merged) becomes a stream
(`#npu.stream`, dialects/constant_codec.py) when its payload and stream-table entry
take fewer bytes than the run itself; the rest stays raw. The region's decoded bytes,
and so every instruction, are unchanged: only the binary's CONSTANTS section (and the
flash the target needs for it) shrinks. Format: docs/binary-format.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp
from xdsl.passes import ModulePass

from npuc.dialects import constant_codec
from npuc.dialects import npu_isa as isa
from npuc.dialects.npu import ProgramOp, program_op
from npuc.dialects.npu_attrs import StreamAttr
from npuc.dialects.npubin_format import STREAM_ENTRY


def constant_runs(program: isa.Program) -> list[tuple[int, int, str | None]]:
    """Byte ranges [start, end) of the constants region that instructions read, overlapping
    operands merged, with their one element type (None when operands disagree)."""
    spans = sorted(
        (t.offset, t.end, t.dtype)
        for inst in program.instructions
        for t in inst.operands
        if t.region == "constants"
    )
    runs: list[tuple[int, int, str | None]] = []
    for start, end, dtype in spans:
        if runs and start < runs[-1][1]:
            first, last, kind = runs[-1]
            runs[-1] = (first, max(last, end), kind if kind == dtype else None)
        else:
            runs.append((start, end, dtype))
    return runs


def choose_streams(program: isa.Program) -> tuple[isa.ConstantStream, ...]:
    """The runs worth storing encoded: whole elements of an encodable type, inside the
    program's constants, smaller encoded (with their table entry) than raw."""
    runs = []
    for start, end, dtype in constant_runs(program):
        if dtype not in constant_codec.ELEMENT_TYPES or end > len(program.constants):
            continue
        item = isa.DTYPES[dtype][0]
        if start % item or (end - start) % item:
            continue
        runs.append((program.constants[start:end], start, dtype))
    plans = constant_codec.plan_streams([(data, dtype) for data, _, dtype in runs])
    return tuple(
        isa.ConstantStream(start, len(data), dtype)
        for (data, start, dtype), plan in zip(runs, plans, strict=True)
        if constant_codec.payload_size(plan) + STREAM_ENTRY.size < len(data)
    )


@dataclass(frozen=True)
class CompressConstantsPass(ModulePass):
    """Mark the constants runs that pay as encoded streams of the module's `npu.program`."""

    name = "compress-constants"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        program = program_op(op)
        mark_streams(program, choose_streams(program.program()))


def mark_streams(program: ProgramOp, streams: tuple[isa.ConstantStream, ...]) -> None:
    """State `streams` (the runs stored encoded) on the program op."""
    if streams:
        program.properties["streams"] = ArrayAttr([StreamAttr.from_stream(s) for s in streams])
    else:
        program.properties.pop("streams", None)
