"""npu instructions print in one piece (dialects/npu_text.py) exactly as their declarative
formats print them: the formats, run through xDSL's format printer, are the reference."""

from __future__ import annotations

import io

import pytest
from shared_models import MBV2
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i32, i64
from xdsl.printer import Printer

import npuc
from npuc.backend.npubin import program_op
from npuc.dialects.npu import INSTRUCTIONS, HostOp, NPUInstruction, ProgramOp
from npuc.dialects.npu_text import print_with_format
from npuc.printing import print_module

FAST = [cls for cls in INSTRUCTIONS.values() if cls is not HostOp]


def text(op, formats: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    """`op` printed by xDSL's printer, its instructions through the formats or not."""
    with monkeypatch.context() as patch:
        if formats:
            for cls in FAST:
                patch.setattr(cls, "print", print_with_format)
        stream = io.StringIO()
        Printer(stream=stream).print_op(op)
        return stream.getvalue()


def assert_same_text(op, monkeypatch: pytest.MonkeyPatch) -> str:
    fast = text(op, False, monkeypatch)
    assert fast == text(op, True, monkeypatch)
    return fast


def module_of(program) -> ModuleOp:
    return ModuleOp([ProgramOp.from_program(program, {})])


def test_every_instruction_kind_prints_as_its_format(parse, tiny_text, monkeypatch):
    module = parse(tiny_text)
    printed = assert_same_text(module, monkeypatch)
    kinds = {op.name for op in program_op(module).body.block.ops}
    assert kinds >= {cls.name for cls in FAST}  # every kind written in one piece
    assert " after %" in printed and "[512, 1, 64, 8]" in printed  # tokens, strided views
    assert parse(printed).is_structurally_equivalent(module)


@pytest.mark.parametrize("name", ["eltwise", "conv_pool"])
def test_built_programs_print_as_their_formats(parse, programs, name, monkeypatch):
    module = module_of(programs[name])
    printed = assert_same_text(module, monkeypatch)
    assert program_op(parse(printed)).program() == programs[name]


def test_a_compiled_model_prints_as_its_formats(monkeypatch):
    module = npuc.load_model(MBV2)
    npuc.apply_pipeline(
        module, "tile{target=ethos-u55-256-hee},plan-memory{target=ethos-u55-256-hee}"
    )
    npuc.apply_pipeline(module, "lower-to-npu{host=float}")
    ops = list(program_op(module).body.block.ops)
    assert len(ops) > 500
    assert_same_text(program_op(module), monkeypatch)
    # npuc's own printer (npu.mlir) writes the instructions the same way
    assert print_module(module).count("npu.conv2d ifm <") == sum(
        op.name == "npu.conv2d" for op in ops
    )


def first(module: ModuleOp, name: str) -> NPUInstruction:
    return next(op for op in program_op(module).body.block.ops if op.name == name)


def test_what_the_one_piece_text_does_not_write_goes_through_the_format(
    parse, tiny_text, monkeypatch
):
    module = parse(tiny_text)
    conv = first(module, "npu.conv2d")
    conv.attributes["note"] = StringAttr("kept")  # a discardable attribute
    pool = first(module, "npu.pool")
    pool.properties["layer"] = IntegerAttr(4, i32)  # an integer of a type not written here
    lut = first(module, "npu.lut")
    lut.properties["unlisted"] = IntegerAttr(1, i64)  # not a property of the op's definition
    printed = assert_same_text(module, monkeypatch)
    assert 'note = "kept"' in printed and "layer = 4 : i32" in printed


def test_string_properties_are_escaped_as_xdsl_escapes_them(parse, tiny_text, monkeypatch):
    module = parse(tiny_text)
    first(module, "npu.pool").properties["mode"] = StringAttr('a "b" \\ é\n')
    first(module, "npu.eltwise").properties["layer"] = IntegerAttr(-7, i64)
    printed = assert_same_text(module, monkeypatch)
    assert 'mode = "a \\22b\\22 \\\\ \\C3\\A9\\0A"' in printed
