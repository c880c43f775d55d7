"""Which producers lower-to-npu lets write straight into their in-place insert's slice.

`_redirect` (passes/lower_to_npu.py): a compute op whose result only fills an in-place
`tile.insert` writes its slice of the destination directly; so does any op that
plan-memory placed inside the destination. Any other op writes its own bytes and the
insert copies them. A redirected output's bytes are guarded from the producer to the
insert (`Virtual` with an owner, extended by `assemble` in movement.py): if anything
reads them there, the redirect is broken and the producer is lowered again as a copy
(`Builder.copies`), which `_redirect` must then leave alone.
"""

from __future__ import annotations

from collections.abc import Callable

from compile_helpers import assert_same, lower_and_run
from xdsl.dialects.builtin import ModuleOp

import npuc
from npuc.dialects.npu_rules import overlaps

Q4 = "tensor<1x2x4x4x!qnn.uniform<i8:f32, 0.1>>"
Q2 = "tensor<1x2x2x4x!qnn.uniform<i8:f32, 0.1>>"
PLAN = "plan-memory{target=mcu-64 schedule=false}"


def requantize(source: str, ty: str, shift: int) -> str:
    """A requantize by 2^(30 - shift) (lowered as one `pool`)."""
    return (
        f"qnn.requantize {source} {{multiplier = array<i64: 1073741824>, "
        f"shift = array<i64: {shift}>}} : ({ty}) -> {ty}"
    )


# %t fills rows 1-2 of %d in place, but %q reads all of %d between %t and the insert: the
# plan gives %t bytes of its own (a read of the destination before the insert), and the
# lowering's redirect of %t into %d would let %q see %t's rows instead of %d's.
READ_BEFORE_INSERT = f"""
func.func @main(%x: Q4 {{nn.name = "x"}}, %y: Q2 {{nn.name = "y"}})
    -> (Q4 {{nn.name = "out"}}, Q4 {{nn.name = "early"}}) {{
  %d = {requantize("%x", "Q4", 29)}
  %t = {requantize("%y", "Q2", 31)}
  %q = {requantize("%d", "Q4", 31)}
  %r = tile.insert %t into %d {{offsets = array<i64: 0, 0, 1, 0>}} : Q2 into Q4
  %o = {requantize("%r", "Q4", 30)}
  func.return %o, %q : Q4, Q4
}}
""".replace("Q4", Q4).replace("Q2", Q2)

# Two halves of %x loaded from DRAM (mid-256's I/O memory) and assembled in SRAM.
LOADS_INTO_INSERTS = f"""
func.func @main(%x: Q4 {{nn.name = "x"}}) -> (Q4 {{nn.name = "out"}}) {{
  %e = tile.empty : Q4
  %t0 = tile.load %x {{offsets = array<i64: 0, 0, 0, 0>, from = "dram", to = "sram"}} : Q4 -> Q2
  %r0 = tile.insert %t0 into %e {{offsets = array<i64: 0, 0, 2, 0>}} : Q2 into Q4
  %t1 = tile.load %x {{offsets = array<i64: 0, 0, 2, 0>, from = "dram", to = "sram"}} : Q4 -> Q2
  %r1 = tile.insert %t1 into %r0 {{offsets = array<i64: 0, 0, 0, 0>}} : Q2 into Q4
  %o = {requantize("%r1", "Q4", 29)}
  func.return %o : Q4
}}
""".replace("Q4", Q4).replace("Q2", Q2)


def test_a_redirect_read_before_its_insert_is_relowered_as_a_copy(
    parse: Callable[[str], ModuleOp],
) -> None:
    """A compute op's output redirected into its insert's slice must not be read by
    anyone before the insert: here %q reads the destination there, so the redirect is
    broken, %t is lowered again into its own bytes and the insert moves them. Catches both
    a window that is never extended to the insert (nothing is found broken) and a copied
    producer redirected again (found broken, but redirected in the next round all the
    same): either way %q reads %t's rows and `early` differs from the interpreter."""
    module = parse(READ_BEFORE_INSERT)
    npuc.apply_pipeline(module, PLAN)
    reference, outputs, program = lower_and_run(module, host="none")
    assert_same(reference, outputs)
    made_d, made_t, made_q, insert, _ = program.instructions
    assert [i.op for i in program.instructions] == ["pool", "pool", "pool", "move", "pool"]
    (d_bytes,), (t_bytes,) = made_d.written(), made_t.written()
    assert not overlaps(t_bytes, d_bytes)
    assert overlaps(made_q.read()[0], d_bytes)
    assert insert.read() == (t_bytes,) and overlaps(insert.written()[0], d_bytes)


def test_a_load_into_an_in_place_insert_lands_in_its_own_bytes(
    parse: Callable[[str], ModuleOp],
) -> None:
    """A `tile.load` is neither a compute op nor placed inside the destination by the
    plan (plan-memory only places ops that write their own result there), so by
    `_redirect`'s rule its DMA writes the load's own bytes and each insert is a `move`.
    The outputs would be the same with the DMA aimed at the slice; this pins the rule, so
    that widening it (to every op that is not a copy) is a deliberate change."""
    module = parse(LOADS_INTO_INSERTS)
    npuc.apply_pipeline(module, "plan-memory{target=mid-256 schedule=false}")
    reference, outputs, program = lower_and_run(module, host="none")
    assert_same(reference, outputs)
    assert [i.op for i in program.instructions] == ["dma", "move", "dma", "move", "pool"]
    assembled = program.instructions[4].read()[0]
    for load, insert in (program.instructions[0:2], program.instructions[2:4]):
        assert not overlaps(load.written()[0], assembled)
        assert insert.read() == load.written() and overlaps(insert.written()[0], assembled)
