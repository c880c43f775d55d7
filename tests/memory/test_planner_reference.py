# ruff: noqa: E501  (IR in strings keeps its one-op-per-line form)

"""The planning core against a reference written from docs/memory-planning.md.

Nothing here calls the planner's helpers: alias folding, aligned sizes, the lower bound,
the best-fit gap rule, the five classic orders, the re-placement in offset order that
starts the improvement, the stacked fallback, placement verification and the report
line are re-implemented from the documentation (and the tie rules the docstrings state)
and compared exactly on seeded random problems. The optimality tests elsewhere
(test_memory_plan.py) only see arena sizes; these see every offset and order.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import numpy as np
import pytest

from npuc.passes.memory.plan import (
    Buffer,
    Placement,
    PlacementError,
    greedy_by_conflicts,
    lower_bound,
    naive_size,
    plan,
    resolve_aliases,
)
from npuc.passes.memory.report import plan_with_report, verify_placement
from npuc.passes.memory.rules import region_offset
from npuc.passes.memory.schedule import Node, live_ranges, peak_bytes, schedule

ALIGNMENTS = (1, 16, 64)


def eff_align(b: Buffer, alignment: int) -> int:
    return max(alignment, b.alignment or 1)


def asize(b: Buffer, alignment: int) -> int:
    a = eff_align(b, alignment)
    return -(-b.size // a) * a


def live_together(x: Buffer, y: Buffer) -> bool:
    return x.start <= y.end and y.start <= x.end


def random_roots(rng: random.Random, n: int, *, mixed: bool = True) -> list[Buffer]:
    bufs = []
    for i in range(n):
        start = rng.randrange(10)
        end = rng.randrange(start, 10)
        size = rng.choice([rng.randint(1, 700), 32 * rng.randint(1, 12)])
        align = rng.choice([None, None, None, 128, 256]) if mixed else None
        bufs.append(Buffer(f"b{i}", size, start, end, align))
    return bufs


# --------------------------------------------------------------------------- reference


@dataclass
class Root:
    name: str
    size: int
    start: int
    end: int
    alignment: int | None


def ref_resolve(bufs: list[Buffer]) -> tuple[list[Buffer], dict[str, tuple[str, int]]]:
    """Views folded into roots: offsets add up along a chain; a root's life covers its
    views' lives; its alignment rises to a view's explicit one."""
    by_name = {b.name: b for b in bufs}
    views: dict[str, tuple[str, int]] = {}
    for b in bufs:
        if b.aliases_of is None:
            continue
        offset, cur, seen = 0, b, set()
        while cur.aliases_of is not None:
            if cur.name in seen:
                raise PlacementError("cycle")
            seen.add(cur.name)
            if cur.aliases_of not in by_name:
                raise PlacementError("unknown parent")
            parent = by_name[cur.aliases_of]
            if cur.offset_in_parent + cur.size > parent.size:
                raise PlacementError("does not fit")
            offset += cur.offset_in_parent
            cur = parent
        if b.alignment is not None and offset % b.alignment:
            raise PlacementError("misaligned view")
        views[b.name] = (cur.name, offset)
    roots = {
        b.name: Root(b.name, b.size, b.start, b.end, b.alignment)
        for b in bufs
        if b.aliases_of is None
    }
    for name, (root, _) in views.items():
        v, r = by_name[name], roots[root]
        r.start, r.end = min(r.start, v.start), max(r.end, v.end)
        if v.alignment is not None:
            r.alignment = max(r.alignment or 1, v.alignment)
    folded = [
        Buffer(r.name, r.size, r.start, r.end, r.alignment)
        for b in bufs
        if (r := roots.get(b.name)) is not None
    ]
    return folded, views


def ref_peak(roots: list[Buffer], alignment: int) -> int:
    steps = {s for b in roots for s in (b.start, b.end)}
    return max(
        (sum(asize(b, alignment) for b in roots if b.start <= s <= b.end) for s in steps),
        default=0,
    )


def ref_place(
    roots: list[Buffer], order: list[int], alignment: int, best_fit: bool = True
) -> tuple[dict[str, int], int]:
    """Each root in turn: the placed roots live with it, by offset; of the gaps between
    them that hold it once aligned, the smallest (first fit: the lowest), lowest first on
    ties; else the aligned top of them."""
    offsets: dict[str, int] = {}
    for k in order:
        b, a = roots[k], eff_align(roots[k], alignment)
        busy = sorted(
            (offsets[o.name], offsets[o.name] + asize(o, alignment))
            for o in roots
            if o.name in offsets and live_together(o, b)
        )
        fits, top = [], 0
        for lo, hi in busy:
            start = -(-top // a) * a
            if start + asize(b, alignment) <= lo:
                fits.append((lo - start if best_fit else 0, start))
            top = max(top, hi)
        offsets[b.name] = min(fits)[1] if fits else -(-top // a) * a
    total = max((offsets[b.name] + asize(b, alignment) for b in roots), default=0)
    return offsets, total


def classic_orders(roots: list[Buffer], alignment: int) -> dict[str, list[int]]:
    """The five orders of `plan`, with the ties the placer's docstrings give."""

    def s(i: int) -> int:
        return asize(roots[i], alignment)

    def conflicts(i: int) -> int:
        return sum(live_together(roots[i], o) for j, o in enumerate(roots) if j != i)

    def life(i: int) -> int:
        return roots[i].end - roots[i].start

    idx = range(len(roots))
    return {
        "size": sorted(idx, key=lambda i: (-s(i), roots[i].start, i)),
        "conflicts": sorted(idx, key=lambda i: (-conflicts(i), -s(i), i)),
        "area": sorted(idx, key=lambda i: (-s(i) * (life(i) + 1), i)),
        "start": sorted(idx, key=lambda i: (roots[i].start, -s(i), i)),
        "duration": sorted(idx, key=lambda i: (-life(i), -s(i), i)),
    }


def ref_plan_without_search(bufs: list[Buffer], alignment: int) -> Placement:
    """`plan` with no improvement moves: the best classic order (the first of equals), then
    one re-placement in offset order unless at the lower bound, then the stacked fallback
    if padding put it above the naive sum of the roots."""
    roots, views = ref_resolve(bufs)
    names = [b.name for b in roots]
    lb = ref_peak(roots, alignment)
    best = None
    for name, order in classic_orders(roots, alignment).items():
        offsets, total = ref_place(roots, order, alignment)
        if best is None or total < best[2]:
            best = (name, order, total, offsets)
    assert best is not None
    name, order, total, offsets = best
    method = f"best-fit/{name}"
    if len(roots) > 1 and total > lb:
        again = sorted(range(len(roots)), key=lambda i: (offsets[names[i]], i))
        offsets2, total2 = ref_place(roots, again, alignment)
        if total2 <= total:
            order, offsets, total = again, offsets2, total2
        method += "+improve"
    stack = sum(asize(b, alignment) for b in roots)
    if total > stack:
        order = sorted(range(len(roots)), key=lambda i: (-eff_align(roots[i], alignment), i))
        top, offsets = 0, {}
        for i in order:
            offsets[names[i]], top = top, top + asize(roots[i], alignment)
        total, method = stack, "stacked"
    for view, (root, off) in views.items():
        offsets[view] = offsets[root] + off
    return Placement(offsets, total, tuple(names[i] for i in order), method)


def ref_sound(bufs: list[Buffer], placement: Placement, alignment: int) -> bool:
    """The checks docs/memory-planning.md lists for `verify_placement`."""
    try:
        roots, views = ref_resolve(bufs)
    except PlacementError:
        return False
    offs = placement.offsets
    if any(b.name not in offs for b in bufs):
        return False
    by_name = {b.name: b for b in bufs}
    root_of = {b.name: b for b in roots}
    for b in roots:
        o = offs[b.name]
        if o < 0 or o % eff_align(b, alignment) or o + asize(b, alignment) > placement.total_size:
            return False
    for view, (root, off) in views.items():
        o, r = offs[view], offs[root]
        if o != r + off or o + by_name[view].size > r + root_of[root].size:
            return False
    for i, x in enumerate(roots):
        for y in roots[i + 1 :]:
            if live_together(x, y) and asize(x, alignment) and asize(y, alignment):
                ox, oy = offs[x.name], offs[y.name]
                if ox < oy + asize(y, alignment) and oy < ox + asize(x, alignment):
                    return False
    return True


def random_views(rng: random.Random, roots: list[Buffer], count: int) -> list[Buffer]:
    """Views (and views of views) that fit their parents, aligned where they say so."""
    bufs = list(roots)
    in_root = {b.name: 0 for b in roots}
    for v in range(count):
        parent = rng.choice(bufs)
        size = rng.randint(1, parent.size)
        offset = rng.randint(0, parent.size - size)
        align = None
        if rng.random() < 0.3 and (in_root[parent.name] + offset) % 16 == 0:
            align = 16
        in_root[f"v{v}"] = in_root[parent.name] + offset
        start = rng.randrange(12)
        end = rng.randrange(start, 12)
        bufs.append(Buffer(f"v{v}", size, start, end, align, parent.name, offset))
    return bufs


# --------------------------------------------------------------------------- placement


@pytest.mark.parametrize("best_fit", [True, False])
def test_greedy_by_conflicts_places_and_orders_as_the_reference(best_fit):
    rng = random.Random(5 + best_fit)
    for _ in range(150):
        a = rng.choice(ALIGNMENTS)
        roots = random_roots(rng, rng.randint(1, 12))
        got = greedy_by_conflicts(roots, a, best_fit=best_fit)
        order = classic_orders(roots, a)["conflicts"]
        offsets, total = ref_place(roots, order, a, best_fit)
        assert got.offsets == offsets, roots
        assert got.total_size == total
        assert got.order == tuple(roots[i].name for i in order)
        assert got.method == f"conflicts/{'best' if best_fit else 'first'}-fit"


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_plan_without_search_is_the_best_classic_order_replaced_by_offset(alignment):
    rng = random.Random(alignment)
    for _ in range(200):
        bufs = random_roots(rng, rng.randint(1, 14))
        got = plan(bufs, alignment, max_iterations=0, exhaustive_limit=0)
        assert got == ref_plan_without_search(bufs, alignment), bufs


def test_plan_falls_back_to_stacking_by_decreasing_alignment():
    # Two short-lived 1-byte buffers and a 256-aligned one live with both: any greedy
    # layout pads a 1-byte buffer up to 256 below or beside the big one.
    rng = random.Random(11)
    stacked = 0
    for _ in range(400):
        bufs = random_roots(rng, rng.randint(2, 9))
        got = plan(bufs, 1, max_iterations=0, exhaustive_limit=0)
        want = ref_plan_without_search(bufs, 1)
        assert got == want, bufs
        stacked += want.method == "stacked"
    assert stacked >= 5  # the fallback was exercised


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_every_plan_is_reproduced_by_placing_its_order(alignment):
    """Whatever the search did, the order it reports placed by the best-fit rule gives its
    offsets and arena; the arena lies between the lower bound and the start it improved."""
    rng = random.Random(100 + alignment)
    for _ in range(40):
        roots = random_roots(rng, rng.randint(2, 16), mixed=False)
        bufs = random_views(rng, roots, rng.randint(0, 4))
        folded, views = ref_resolve(bufs)
        got = plan(bufs, alignment, max_iterations=300, seed=rng.randrange(100))
        assert ref_sound(bufs, got, alignment)
        names = [b.name for b in folded]
        assert sorted(got.order) == sorted(names)
        offsets, total = ref_place(folded, [names.index(n) for n in got.order], alignment)
        for view, (root, off) in views.items():
            offsets[view] = offsets[root] + off
        assert (got.offsets, got.total_size) == (offsets, total)
        start = ref_plan_without_search(bufs, alignment)
        assert ref_peak(folded, alignment) <= got.total_size <= start.total_size


# --------------------------------------------------------------------------- aliases, bounds


def test_alias_folding_bounds_and_naive_size_match_the_reference():
    rng = random.Random(3)
    for _ in range(300):
        a = rng.choice(ALIGNMENTS)
        roots = random_roots(rng, rng.randint(1, 8))
        bufs = random_views(rng, roots, rng.randint(0, 6))
        res = resolve_aliases(bufs)
        folded, views = ref_resolve(bufs)
        assert res.roots == folded
        assert res.views == views
        assert lower_bound(bufs, a) == ref_peak(folded, a)
        assert naive_size(bufs, a) == sum(asize(b, a) for b in bufs)


@pytest.mark.parametrize(
    "bufs",
    [
        # a view of a view whose accumulated offset (8 + 8) breaks its 32-byte alignment
        [
            Buffer("r", 64, 0, 1),
            Buffer("v", 32, 0, 1, None, "r", 8),
            Buffer("w", 8, 0, 1, 32, "v", 8),
        ],
        # the second link of a chain does not fit its parent
        [
            Buffer("r", 64, 0, 1),
            Buffer("v", 32, 0, 1, None, "r", 32),
            Buffer("w", 8, 0, 1, None, "v", 25),
        ],
        [Buffer("v", 8, 0, 1, None, "w"), Buffer("w", 8, 0, 1, None, "v")],
        [Buffer("v", 8, 0, 1, None, "nowhere")],
    ],
)
def test_alias_errors_as_the_reference(bufs):
    with pytest.raises(PlacementError):
        ref_resolve(bufs)
    with pytest.raises(PlacementError):
        resolve_aliases(bufs)


def test_a_view_at_a_chain_offset_that_keeps_its_alignment_resolves():
    bufs = [
        Buffer("r", 128, 2, 3),
        Buffer("v", 64, 0, 2, None, "r", 16),
        Buffer("w", 32, 4, 6, 32, "v", 16),
    ]
    res = resolve_aliases(bufs)
    assert res.views == {"v": ("r", 16), "w": ("r", 32)}
    assert res.roots == [Buffer("r", 128, 0, 6, 32)]


# --------------------------------------------------------------------------- verification


def perturbed(rng: random.Random, bufs: list[Buffer], placement: Placement) -> Placement:
    offsets = dict(placement.offsets)
    name = rng.choice(sorted(offsets))
    change = rng.choice(["shift", "to_other", "total", "drop"])
    if change == "shift":
        offsets[name] += rng.choice([-64, -16, -1, 1, 16, 64])
    elif change == "to_other":
        offsets[name] = offsets[rng.choice(sorted(offsets))]
    elif change == "drop":
        del offsets[name]
    total = placement.total_size - (rng.choice([1, 16]) if change == "total" else 0)
    return Placement(offsets, total)


def test_verify_placement_refuses_exactly_what_the_reference_refuses():
    rng = random.Random(8)
    refused = 0
    for _ in range(400):
        a = rng.choice(ALIGNMENTS)
        bufs = random_views(rng, random_roots(rng, rng.randint(2, 8)), rng.randint(0, 3))
        good = plan(bufs, a, max_iterations=50)
        verify_placement(bufs, good, a)
        bad = perturbed(rng, bufs, good)
        if ref_sound(bufs, bad, a):
            verify_placement(bufs, bad, a)
        else:
            refused += 1
            with pytest.raises(PlacementError):
                verify_placement(bufs, bad, a)
    assert refused >= 200


# --------------------------------------------------------------------------- report


def test_report_figures_are_recomputed_from_the_buffers():
    rng = random.Random(21)
    for _ in range(60):
        a = rng.choice(ALIGNMENTS)
        bufs = random_views(rng, random_roots(rng, rng.randint(1, 10)), rng.randint(0, 4))
        placement, report = plan_with_report(bufs, a, region="sram")
        folded, views = ref_resolve(bufs)
        lb = ref_peak(folded, a)
        naive = sum(asize(b, a) for b in bufs)
        assert (report.region, report.planned, report.lower_bound, report.naive) == (
            "sram",
            placement.total_size,
            lb,
            naive,
        )
        assert (report.buffers, report.views, report.method) == (
            len(folded),
            len(views),
            placement.method,
        )
        gap = 100.0 * (placement.total_size - lb) / lb if lb else 0.0
        assert report.format() == (
            f"sram: planned {placement.total_size / 1024:.1f} KiB (lower bound "
            f"{lb / 1024:.1f} KiB, +{gap:.1f}%; naive {naive / 1024:.1f} KiB); "
            f"{len(folded)} buffers, {len(views)} views; {placement.method}, "
            f"{report.seconds * 1000:.1f} ms"
        )


# --------------------------------------------------------------------------- schedule


def random_dag(rng: random.Random) -> tuple[list[Node], dict[str, int], list[str]]:
    nodes, sizes, tensors = [], {"in": rng.randint(1, 500)}, ["in"]
    for i in range(rng.randint(1, 12)):
        inputs = tuple(rng.sample(tensors, rng.randint(1, min(3, len(tensors)))))
        outputs = tuple(f"t{i}_{j}" for j in range(rng.randint(1, 2)))
        for t in outputs:
            if rng.random() < 0.9:  # some tensors live elsewhere (weights): no size
                sizes[t] = rng.randint(1, 500)
        nodes.append(Node(f"n{i}", inputs, outputs))
        tensors += outputs
    return nodes, sizes, rng.sample(tensors[1:], rng.randint(0, min(2, len(tensors) - 1)))


def ref_live(nodes, order, sizes, outputs) -> dict[str, tuple[int, int]]:
    """A tensor lives from its producer's step (graph inputs: 0) to its last reader's;
    graph outputs to the last step."""
    step = {i: s for s, i in enumerate(order)}
    produced = {t: step[i] for i, n in enumerate(nodes) for t in n.outputs}
    live = {}
    for t in sizes:
        readers = [step[i] for i, n in enumerate(nodes) if t in n.inputs]
        if t not in produced and not readers:
            continue
        first = produced.get(t, 0)
        last = max([first, *readers])
        if t in outputs:
            last = len(order) - 1
        live[t] = (first, last)
    return live


def ref_order_peak(nodes, order, sizes, outs, alignment) -> int:
    live = ref_live(nodes, order, sizes, outs)
    return ref_peak([Buffer(t, sizes[t], s, e) for t, (s, e) in live.items()], alignment)


def test_live_ranges_peak_and_schedule_against_the_reference():
    rng = random.Random(13)
    for _ in range(200):
        nodes, sizes, outs = random_dag(rng)
        a = rng.choice([1, 16, 64])
        given = list(range(len(nodes)))
        live = ref_live(nodes, given, sizes, outs)
        got = {b.name: (b.start, b.end) for b in live_ranges(nodes, given, sizes, outs)}
        assert got == live
        assert all(b.size == sizes[b.name] for b in live_ranges(nodes, given, sizes, outs))

        assert peak_bytes(nodes, given, sizes, outs, a) == ref_order_peak(
            nodes, given, sizes, outs, a
        )
        order = schedule(nodes, sizes, outs, a)
        assert sorted(order) == given
        assert ref_order_peak(nodes, order, sizes, outs, a) <= ref_order_peak(
            nodes, given, sizes, outs, a
        )
        assert peak_bytes(nodes, order, sizes, outs, a) == ref_order_peak(
            nodes, order, sizes, outs, a
        )


# --------------------------------------------------------------------------- real graphs
# The in-place rule of docs/memory-planning.md, checked on planned models from the IR
# alone (conftest.py's readers): an elementwise result reuses an operand's bytes when it
# can, i.e. the operand has the result's shape, element size and region, no other operand
# shares its bytes, and no value holding any of those bytes is read after the op.

LIGHT_PLANNED = ["densenet121", "resnet50", "shufflenet"]  # the ones with elementwise ops


def shares(a, b) -> bool:
    """Two (region, offset, size) places have a byte in common."""
    return a[0] == b[0] and a[1] < b[1] + b[2] and b[1] < a[1] + a[2] and min(a[2], b[2]) > 0


def byte_groups(func, where):
    """Values linked by sharing bytes through an op (view, in place, slice, insert)."""
    parent = {v: v for v in where}

    def find(v):
        while parent[v] is not v:
            v = parent[v]
        return v

    for op in func.body.block.ops:
        for r in op.results:
            for x in op.operands:
                if x in where and r in where and shares(where[x], where[r]):
                    parent[find(r)] = find(x)
    return find


def missed_in_place(arena, module) -> list[str]:
    func, where = arena.buffers(module)
    ops = [op for op in func.body.block.ops if op.name not in arena.CONSTANT_OPS]
    ops = ops[:-1]  # the return
    step = {op: i for i, op in enumerate(ops)}
    first = {r: step[op] for op in ops for r in op.results}
    last = dict(first)
    for op in ops:
        for x in op.operands:
            if x in last:
                last[x] = max(last[x], step[op])
    for v in func.body.block.last_op.operands:
        if v in last:
            last[v] = len(ops)
    strided = arena.strided_views(func, where)
    for r, (x, _) in reversed(list(strided.items())):
        last[x] = max(last[x], last[r])
    find = byte_groups(func, where)
    members: dict = {}
    for v in first:
        members.setdefault(find(v), []).append(v)
    written_into = {
        x
        for op in ops
        if op.name in arena.VIEW_OPS | arena.ASSEMBLING
        for x in op.operands
        if x in where and shares(where[x], where[op.results[0]])
    }
    missed = []
    for op in ops:
        if op.name not in arena.ELEMENTWISE or len(op.results) != 1:
            continue
        r, at = op.results[0], step[op]
        if r in written_into or any(shares(where[r], where[x]) for x in op.operands if x in where):
            continue  # written straight into a concat or insert, or in place already
        for x in dict.fromkeys(op.operands):
            if x not in first or x in strided or where[x][0] != where[r][0]:
                continue
            if where[x][2] != where[r][2] or arena.shape_of(x.type) != arena.shape_of(r.type):
                continue
            group = members[find(x)]
            others = [y for y in op.operands if y is not x and y in first]
            if any(find(y) is find(x) for y in others):
                continue
            if all(last[v] <= at for v in group if first[v] <= at):
                missed.append(f"{op.name} at step {at}")
                break
    return missed


@pytest.mark.parametrize("name", LIGHT_PLANNED)
def test_elementwise_and_reshape_results_take_an_operands_bytes_where_they_may(arena, name):
    """Besides in place reuse: a reshape in its operand's region is that operand's bytes."""
    from onnx_models import LIGHT_DIR

    import npuc.api as api
    from npuc.frontends.onnx import import_onnx
    from npuc.registry import DEFAULT_PIPELINE

    module = import_onnx(str(LIGHT_DIR / f"light_{name}.onnx"))
    api.apply_pipeline(module, DEFAULT_PIPELINE + ",plan-memory{target=mcu-64 alignment=16}")
    func, where = arena.buffers(module)
    elementwise = [op for op in func.body.block.ops if op.name in arena.ELEMENTWISE]
    shared = [
        op
        for op in elementwise
        if any(x in where and shares(where[x], where[op.results[0]]) for x in op.operands)
    ]
    assert shared  # the rule has ops to apply to
    assert missed_in_place(arena, module) == []
    reshapes = [
        op
        for op in func.body.block.ops
        if op.name in ("nn.reshape", "qnn.reshape")
        and where[op.operands[0]][0] == where[op.results[0]][0]
    ]
    assert reshapes or name == "densenet121"  # it has none
    assert all(where[op.results[0]] == where[op.operands[0]] for op in reshapes)


# An operand of the result's size but another shape (a broadcast adds a unit dimension) is
# not reused in place: the rule asks for the same shape (checked by check_layout).
BROADCAST = """
func.func @main(%x: tensor<2x8xf32> {nn.name = "x"}, %b: tensor<1x2x8xf32> {nn.name = "b"}) -> (tensor<1x2x8xf32> {nn.name = "y"}) {
  %e = nn.exp %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %s = nn.add %e, %b : (tensor<2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %y = nn.neg %s : (tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  func.return %y : tensor<1x2x8xf32>
}
"""


def test_an_operand_of_another_shape_is_not_reused_in_place(arena):
    import npuc.api as api

    module = api.apply_pipeline(
        api.parse_mlir(BROADCAST), "plan-memory{target=mcu-64 alignment=16 io=arena}"
    )
    func, where = arena.buffers(module)
    e, s, y = (op.results[0] for op in list(func.body.block.ops)[:3])
    assert not shares(where[e], where[s])
    assert where[y] == where[s]  # the same shape: in place
    arena.check_against_interpreter(module)


# --------------------------------------------------------------------------- aliasing rules


def test_region_offset_is_the_first_element_of_a_contiguous_region_only():
    """A region of a row-major tensor is a view when its elements are consecutive: the
    reference lists their flat indices."""
    rng = np.random.default_rng(2)
    contiguous = 0
    for _ in range(600):
        shape = tuple(int(n) for n in rng.integers(1, 5, rng.integers(1, 5)))
        offsets = tuple(int(rng.integers(0, n)) for n in shape)
        sizes = tuple(int(rng.integers(1, n - o + 1)) for n, o in zip(shape, offsets, strict=True))
        grid = np.indices(sizes).reshape(len(shape), -1) + np.array(offsets)[:, None]
        flat = np.sort(np.ravel_multi_index(tuple(grid), shape))
        consecutive = bool((np.diff(flat) == 1).all())
        want = int(flat[0]) if consecutive else None
        assert region_offset(shape, offsets, sizes) == want, (shape, offsets, sizes)
        contiguous += consecutive
    assert 100 < contiguous < 500  # both kinds drawn
    assert region_offset((2, 3), (0,), (1, 3)) is None  # ranks disagree


# --------------------------------------------------------------------------- report contents
# What the reports say a planned module holds, recomputed from its IR: the `mem.buffer`
# attributes (place and reserved steps), the op kinds and the signature's names.

CONTENTS = """
func.func @main(%x: tensor<2x8xf32> {nn.name = "x"}, %z: tensor<2x8xf32> {nn.name = "z"}) -> (tensor<1x8xf32> {nn.name = "y"}, tensor<2x8xf32> {nn.name = "e"}) {
  %k = nn.constant dense<0.5> : tensor<2x8xf32>
  %j = nn.constant dense<1.5> : tensor<2x8xf32>
  %e = nn.exp %x {name = "exp"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %s = nn.add %e, %k {name = "add"} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %m = nn.mul %s, %z {name = "mul"} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %n = nn.sub %m, %j : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %l = tile.load %n {offsets = array<i64: 1, 0>, from = "sram", to = "dram"} : tensor<2x8xf32> -> tensor<1x8xf32>
  %y = nn.neg %l : (tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %y, %e : tensor<1x8xf32>, tensor<2x8xf32>
}
"""


def reference_contents(arena, module, lowered_constants: int | None = None) -> dict[str, str]:
    """What each region holds, from the IR; `lowered_constants` bytes of lowered constants
    add their excess over the constants region (tables, LUTs) to that region alone."""
    func, where = arena.buffers(module)
    regions = arena.regions(module)
    ops = list(func.body.block.ops)[:-1]
    constants = [op.results[0] for op in ops if op.name in arena.CONSTANT_OPS]
    results = [r for op in ops if op.name not in arena.CONSTANT_OPS for r in op.results]
    names = dict(zip(func.body.block.args, ("x", "z"), strict=True))
    outputs = dict(zip(func.body.block.last_op.operands, ("y", "e"), strict=True))
    contents = {}
    for region, (size, _) in regions.items():
        parts = []
        held = [c for c in constants if where[c][0] == region]
        if held:
            total = size if region == "constants" else sum(where[c][2] for c in held)
            parts.append(f"planned weights and other constants: {len(held)} tensors, {total} bytes")
        if region == "constants" and lowered_constants and lowered_constants > size:
            added = lowered_constants - size
            parts.append(f"bias/scale tables and LUTs added by lowering: {added} bytes")
        inputs = [n for v, n in names.items() if where[v][0] == region]
        outs = [n for v, n in outputs.items() if where[v][0] == region]
        if inputs:
            parts.append("inputs " + ", ".join(inputs))
        if outs:
            parts.append("outputs " + ", ".join(outs))
        places = {where[v] for v in outputs}
        scratch = [r for r in results if where[r][0] == region and where[r] not in places]
        if scratch:
            what = "intermediate tensors" if region == "activations" else "tiles and buffers"
            parts.append(f"{len(scratch)} {what}, reusing memory as their lives end")
        contents[region] = "; ".join(parts) or "nothing"
    return contents


def reference_profiles(module) -> dict[str, list[int]]:
    """Bytes reserved per step in each liveness region: a set of bytes per step."""
    from npuc.graph_io import entry_function

    func = entry_function(module)
    align = {
        op.sym_name.data: op.alignment.value.data for op in module.ops if op.name == "mem.region"
    }
    steps = sum(op.name not in ("nn.constant", "func.return") for op in func.body.block.ops)
    attrs = [e.data["mem.buffer"] for e in func.arg_attrs.data]
    for op in func.body.block.ops:
        if "mem.buffer" in op.attributes:
            attr = op.attributes["mem.buffer"]
            attrs += (
                list(attr.data)
                if hasattr(attr, "data") and isinstance(attr.data, tuple)
                else [attr]
            )
    profiles = {}
    for region in align:
        if region in ("constants", "mutable"):
            continue
        used = [set() for _ in range(steps)]
        for b in attrs:
            if b.region.data != region or b.live is None:
                continue
            a = align[region]
            top = b.offset.data + -(-b.size.data // a) * a
            for s in range(b.live[0], min(b.live[1], steps - 1) + 1):
                used[s].update(range(b.offset.data, top))
        profiles[region] = [len(u) for u in used]
    return profiles


@pytest.mark.parametrize("io", ["separate", "arena"])
def test_report_contents_profiles_and_memory_use_are_recomputed_from_the_ir(arena, io):
    import npuc.api as api
    from npuc.passes.memory.ir import read_plan
    from npuc.passes.memory.report import memory_json
    from npuc.passes.memory.usage import layer_peaks, memory_in_use, region_contents
    from npuc.target import load_target

    module = api.apply_pipeline(api.parse_mlir(CONTENTS), f"plan-memory{{target=mid-256 io={io}}}")
    planned = read_plan(module)
    want = reference_contents(arena, module)
    assert region_contents(planned) == want
    assert len(set(want.values())) == len(want)
    constants = planned.regions["constants"].size
    for lowered in (constants, constants + 96):  # tables only in the excess, only there
        assert region_contents(planned, lowered) == reference_contents(arena, module, lowered)
    assert "added by lowering: 96 bytes" in region_contents(planned, constants + 96)["constants"]
    profiles = reference_profiles(module)
    assert set(profiles) == {"activations", "dram"}
    data = memory_json(planned, load_target("mid-256"))
    for region, profile in profiles.items():
        assert [s["live_bytes"][region] for s in data["profile"]] == profile
        assert max(profile) == {r["name"]: r for r in data["regions"]}[region]["lower_bound"]
    sizes = arena.regions(module)
    memory = {op.sym_name.data: op.memory.data for op in module.ops if op.name == "mem.region"}
    layers = [s.layer for s in planned.steps]
    for name in set(memory.values()):
        fixed = sum(sizes[r][0] for r in ("constants", "mutable") if memory[r] == name)
        use = [
            fixed + sum(p[s] for r, p in profiles.items() if memory[r] == name)
            for s in range(len(layers))
        ]
        assert memory_in_use(planned, name) == use
        peaks: dict[str, int] = {}
        pending, last = 0, ""
        for layer, n in zip(layers, use, strict=True):
            if not layer:  # a step without a layer counts towards the next one ...
                pending = max(pending, n)
                continue
            last = layer
            peaks[layer] = max(peaks.get(layer, 0), n, pending)
            pending = 0
        if pending:  # ... trailing ones towards the last
            peaks[last] = max(peaks[last], pending)
        assert layer_peaks(planned, name) == peaks


# --------------------------------------------------------------------------- strided slices
# docs/memory-planning.md: a stripe read after its source's last reader becomes a view when
# holding the source that long "raises no step of the region's live bytes above their
# peak". Worked by hand (io=arena, 16-byte alignment, bytes): x 1024, y 1024, s 512, z 1024,
# u 512. As copies: step 0 x+y 2048, 1 y+s 1536, 2 y+s+z 2560 (the peak), 3 s+z 1536 (w in
# place of z), 4 s+w+u 2048. Holding y (rise 1024 - 512) to step 4 gives 2048 at step 3
# and 2560 at step 4: exactly the peak, not above it, so s is a view.

T = "tensor<1x4x8x8xf32>"
HALF = "tensor<1x4x4x8xf32>"
POOL = "{kernel = array<i64: 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>}"
AT_THE_PEAK = f"""
func.func @main(%x: {T}) -> ({T}, {HALF}) {{
  %y = nn.exp %x : ({T}) -> {T}
  %s = tile.slice %y {{offsets = array<i64: 0, 0, 4, 0>}} : {T} -> {HALF}
  %z = nn.max_pool2d %y {POOL} : ({T}) -> {T}
  %w = nn.neg %z : ({T}) -> {T}
  %u = nn.max_pool2d %s {POOL} : ({HALF}) -> {HALF}
  func.return %w, %u : {T}, {HALF}
}}
"""


def test_a_stripe_held_to_exactly_the_peak_is_a_view(arena):
    import npuc.api as api

    module = api.parse_mlir(AT_THE_PEAK)
    api.apply_pipeline(module, "plan-memory{target=mcu-64 alignment=16 io=arena schedule=false}")
    func, where = arena.buffers(module)
    ops = {op.results[0].name_hint: op for op in func.body.block.ops if op.results}
    y, s = ops["y"].results[0], ops["s"].results[0]
    assert where[s][0] == where[y][0] and where[y][1] <= where[s][1] < where[y][1] + 1024
    assert arena.regions(module)["activations"][0] == 2560
    arena.check_against_interpreter(module)


@pytest.mark.parametrize("io", ["separate", "arena"])
@pytest.mark.parametrize("with_target", [True, False])
def test_the_fast_json_writer_writes_what_json_dumps_writes(io, with_target):
    """`memory_json_text` promises exactly `json.dumps(memory_json(...), indent=1) + "\\n"`:
    strings to escape, nulls, booleans, nested lists and empty containers included."""
    import json

    import npuc.api as api
    from npuc.passes.memory.ir import read_plan
    from npuc.passes.memory.report import memory_json, memory_json_text
    from npuc.target import load_target

    module = api.apply_pipeline(api.parse_mlir(CONTENTS), f"plan-memory{{target=mid-256 io={io}}}")
    planned = read_plan(module)
    target = load_target("mid-256") if with_target else None
    contents = {"activations": 'a "quoted" \\ name, é\n\t', "dram": ""}
    for given in ({}, contents):
        want = json.dumps(memory_json(planned, target, given), indent=1) + "\n"
        assert memory_json_text(planned, target, given) == want
    data = json.loads(memory_json_text(planned, target))
    assert any(b["live"] is None for b in data["buffers"])  # constants: no live range
    assert any(b["name"] == "mul" for b in data["buffers"])


def test_an_exhaustive_search_finds_the_least_arena_of_every_order():
    """docs/memory-planning.md: up to `exhaustive_limit` roots, every order is placed, so
    the arena is the least over all orders (best-fit) and the start the search improves."""
    rng = random.Random(23)
    improved = 0
    for _ in range(150):
        alignment = rng.choice(ALIGNMENTS)
        roots = random_roots(rng, rng.randint(4, 6), mixed=rng.random() < 0.5)
        start = ref_plan_without_search(roots, alignment).total_size
        best = min(
            ref_place(roots, list(order), alignment)[1]
            for order in itertools.permutations(range(len(roots)))
        )
        got = plan(roots, alignment, max_iterations=0, exhaustive_limit=7)
        assert got.total_size == min(start, best), roots
        improved += best < start
    assert improved >= 5  # the classic orders missed the best one: the search had work


def test_the_report_plans_up_to_seven_roots_exhaustively():
    """docs/memory-planning.md: with at most 7 root buffers every order is tried; the pass
    plans through `plan_with_report`, which must keep that limit."""
    rng = random.Random(17)
    searched = 0
    for _ in range(600):
        bufs = random_roots(rng, 7, mixed=False)
        placement, report = plan_with_report(bufs, 16)
        assert placement == plan(bufs, 16)
        if "+improve" in report.method:  # the best classic order missed the lower bound
            searched += 1
            assert report.method.endswith("+improve(exhaustive)")
    assert searched >= 5


def test_eight_roots_are_searched_by_hill_climbing():
    """The limit is 7 (docs/memory-planning.md): with 8 roots the search climbs instead of
    trying all 40320 orders."""
    rng = random.Random(18)
    searched = 0
    for _ in range(300):
        bufs = random_roots(rng, 8, mixed=False)
        placement = plan(bufs, 16, max_iterations=50)
        if "+improve" in placement.method:
            searched += 1
            assert not placement.method.endswith("(exhaustive)"), placement.method
    assert searched >= 5
