"""The `npu` dialect's verifiers: placement in regions, tokens between engines (checked
against a brute-force happens-before closure), strided views against numpy."""

from __future__ import annotations

import dataclasses
import itertools
import random
import re

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

from npuc.dialects import npu
from npuc.dialects.npu_isa import SPECS, ISAError, Program, Region, TensorRef, row_major
from npuc.dialects.npu_rules import check_hazards, overlaps

HEAD = (
    'npu.program @p regions [#npu.region<"constants", 256, "flash">, '
    '#npu.region<"activations", 1024, "sram">, #npu.region<"sram", 512, "sram">] '
    'inputs [] outputs [] layers ["l"] {\n'
)


def program(*lines: str) -> str:
    return HEAD + "\n".join(f"  {line}" for line in lines) + "\n}\n"


def verify(parse, text: str) -> None:
    parse(text).verify()


def test_ops_state_every_field_of_their_spec():
    for name, spec in SPECS.items():
        op = npu.INSTRUCTIONS[name]
        props = set(op.get_irdl_definition().properties)
        if name == "host":
            assert props == {"ins", "outs", "layer"}
            continue
        assert props == {*spec.operands, *(f.name for f in spec.fields), "layer"}, name


def test_a_valid_program_verifies(parse, tiny_text):
    module = parse(tiny_text)
    module.verify()
    engines = [op.spec.engine for op in module.walk() if isinstance(op, npu.NPUInstruction)]
    assert set(engines) == {"dma", "compute", "host"}


@pytest.mark.parametrize(
    "line, message",
    [
        (
            '%0 = npu.dma <"constants", 250, [8], i8> -> <"sram", 0, [8], i8>',
            r"src: bytes \[250, 258\) lie outside region 'constants' of 256 bytes",
        ),
        (
            '%0 = npu.dma <"constants", 0, [2, 8], [512, 1], i8> -> <"sram", 0, [2, 8], i8>',
            r"src: bytes \[0, 520\) lie outside region 'constants'",
        ),
        (
            '%0 = npu.dma <"constants", 0, [8], i8> -> <"mutable", 0, [8], i8>',
            r"dst: region 'mutable' is not declared",
        ),
        (
            '%0 = npu.dma <"sram", 0, [8], i8> -> <"constants", 0, [8], i8>',
            r"dst: the constants region is read-only",
        ),
        (
            '%0 = npu.dma <"sram", 0, [8], i16> -> <"activations", 1016, [8], i16>',
            r"dst: bytes \[1016, 1032\) lie outside region 'activations' of 1024 bytes",
        ),
        (
            '%0 = npu.dma <"sram", 0, [8], i8> -> <"sram", 64, [8], i8> {layer = 1 : i64}',
            r"layer 1 is not among the 1 layers",
        ),
    ],
)
def test_operands_lie_inside_declared_regions(parse, line, message):
    with pytest.raises(VerifyException, match=message):
        verify(parse, program(line))


CONV = (
    '%1 = npu.conv2d ifm <"activations", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 4, 1, 1], '
    'i8> bias_scale <"constants", 0, [4, 4], i32> ofm <"activations", 64, [1, 4, 4, 4], i8>'
)
LOAD_WEIGHTS = '%0 = npu.dma <"constants", 64, [4, 4, 1, 1], i8> -> <"sram", 0, [4, 4, 1, 1], i8>'


def test_compute_waits_for_the_dma_that_fills_its_weights(parse):
    message = (
        r"instruction 1 \(conv2d\) reads bytes written by instruction 0 \(dma, dma engine\) "
        r"in region 'sram' \(bytes \[0, 16\)\) without waiting for its token"
    )
    with pytest.raises(VerifyException, match=message):
        verify(parse, program(LOAD_WEIGHTS, CONV))
    verify(parse, program(LOAD_WEIGHTS, CONV + " after %0"))


def test_a_dma_waits_before_overwriting_or_reading_compute_data(parse):
    refill = '%2 = npu.dma <"constants", 80, [16], i8> -> <"sram", 0, [16], i8>'
    with pytest.raises(
        VerifyException,
        match=r"instruction 2 \(dma\) overwrites bytes read by "
        r"instruction 1 \(conv2d",
    ):
        verify(parse, program(LOAD_WEIGHTS, CONV + " after %0", refill))
    verify(parse, program(LOAD_WEIGHTS, CONV + " after %0", refill + " after %1"))
    store = '%2 = npu.dma <"activations", 64, [64], i8> -> <"sram", 64, [64], i8>'
    with pytest.raises(VerifyException, match=r"\(dma\) reads bytes written by instruction 1"):
        verify(parse, program(LOAD_WEIGHTS, CONV + " after %0", store))
    overwrite = '%2 = npu.dma <"constants", 0, [8], i8> -> <"activations", 120, [8], i8>'
    with pytest.raises(VerifyException, match=r"\(dma\) writes bytes written by instruction 1"):
        verify(parse, program(LOAD_WEIGHTS, CONV + " after %0", overwrite))


def test_order_on_one_engine_needs_no_token(parse):
    # The second conv reads the first one's result: both on the compute engine.
    second = CONV.replace("%1 =", "%2 =").replace(
        'ifm <"activations", 0,', 'ifm <"activations", 64,'
    )
    second = second.replace('ofm <"activations", 64,', 'ofm <"activations", 128,')
    verify(parse, program(LOAD_WEIGHTS, CONV + " after %0", second))
    # ... and it may read the DMA's weights without a token: the first conv waited for them.
    verify(parse, program(LOAD_WEIGHTS, CONV + " after %0", second))


def test_disjoint_strided_slices_do_not_conflict(parse):
    # Two DMAs fill the two channel halves of one NHWC buffer; each conv input half needs
    # only its own DMA. Their byte ranges interleave but share no byte.
    lines = [
        '%0 = npu.dma <"constants", 0, [1, 2, 4, 4], i8> -> <"activations", 0, [1, 2, 4, 4], '
        "[64, 1, 16, 4], i8>",
        '%1 = npu.dma <"constants", 32, [1, 2, 4, 4], i8> -> <"activations", 2, [1, 2, 4, 4], '
        "[64, 1, 16, 4], i8>",
        '%2 = npu.pool ifm <"activations", 0, [1, 2, 4, 4], [64, 1, 16, 4], i8> ofm <"sram", 0, '
        '[1, 2, 4, 4], i8> after %0 {mode = "max"}',
    ]
    verify(parse, program(*lines))
    lines[2] = lines[2].replace(
        '"activations", 0, [1, 2, 4, 4], [64, 1, 16, 4]',
        '"activations", 1, [1, 2, 4, 4], [64, 1, 16, 4]',
    )
    with pytest.raises(VerifyException, match=r"reads bytes written by instruction 1"):
        verify(parse, program(*lines))


@pytest.mark.parametrize(
    "text, message",
    [
        (
            'npu.program @p regions [#npu.region<"sram", 16, "sram">, #npu.region<"sram", 8, "x">] '
            "inputs [] outputs [] layers [] {\n}",
            "region 'sram' is declared twice",
        ),
        (
            'npu.program @p regions [#npu.region<"mutable", 16, "sram">] inputs [] outputs [] '
            "layers [] attributes {constants = dense<1> : tensor<4xi8>} {\n}",
            r"4 bytes of constants exceed the constants region \(0 bytes\)",
        ),
        (
            'npu.program @p regions [#npu.region<"mutable", 16, "sram">] inputs [#npu.io<"x", '
            '#npu.tensor<"mutable", 12, [2], i32>, 0.5:0>] outputs [] layers [] {\n}',
            r"input 'x': bytes \[12, 20\) lie outside region 'mutable'",
        ),
        (
            'npu.program @p regions [#npu.region<"mutable", 16, "sram">] inputs [#npu.io<"x", '
            '#npu.tensor<"mutable", 0, [2], i8>, 0.5:300>] outputs [] layers [] {\n}',
            r"input 'x': zero point 300 is outside \[-128, 127\]",
        ),
        (
            'npu.program @p regions [#npu.region<"mutable", 16, "sram">] inputs [] outputs '
            '[#npu.io<"y", #npu.tensor<"mutable", 0, [2], f32>, 0.5:0>] layers [] {\n}',
            "a float tensor has no quantization",
        ),
        (
            'npu.program @p regions [#npu.region<"mutable", 16, "sram">] inputs [#npu.io<"x", '
            '#npu.tensor<"mutable", 0, [2], i8>>, '
            '#npu.io<"x", #npu.tensor<"mutable", 2, [2], i8>>] '
            "outputs [] layers [] {\n}",
            "input names must be unique",
        ),
    ],
)
def test_program_level_rules(parse, text, message):
    with pytest.raises(VerifyException, match=message):
        verify(parse, text)


# --------------------------------------------------------------------------- strided views


def random_view(rng: random.Random, region: str = "sram") -> TensorRef:
    rank = rng.randint(1, 3)
    shape = tuple(rng.randint(1, 4) for _ in range(rank))
    strides = tuple(rng.choice((0, 1, 2, 3, 5, 8)) for _ in range(rank))
    dtype = rng.choice(("i8", "i16", "i32"))
    size = {"i8": 1, "i16": 2, "i32": 4}[dtype]
    return TensorRef(region, size * rng.randint(0, 12), shape, strides, dtype)


def byte_set(t: TensorRef) -> set[int]:
    """Every byte a view touches, element by element (numpy's own index enumeration)."""
    out = set()
    for index in np.ndindex(*t.shape):
        start = t.offset + t.itemsize * sum(i * s for i, s in zip(index, t.strides, strict=True))
        out.update(range(start, start + t.itemsize))
    return out


def test_view_geometry_against_brute_force():
    rng = random.Random(1)
    nested = 0
    for _ in range(300):
        a, b = random_view(rng), random_view(rng)
        bytes_a, bytes_b = byte_set(a), byte_set(b)
        assert a.end == max(bytes_a) + 1 and a.offset == min(bytes_a)
        assert overlaps(a, b) == bool(bytes_a & bytes_b)
        if a.is_nested():  # sufficient for distinct bytes, and true of every permuted slice
            assert len(bytes_a) == a.numel * a.itemsize
        nested += a.is_nested()
        for perm in itertools.permutations(range(len(a.shape))):
            dense = TensorRef("sram", 0, a.shape, row_major(a.shape), a.dtype)
            sliced = TensorRef(
                "sram", 0, tuple(max(1, d - 1) for d in a.shape), dense.strides, a.dtype
            )
            for t in (dense, sliced):
                view = TensorRef(
                    "sram",
                    0,
                    tuple(t.shape[p] for p in perm),
                    tuple(t.strides[p] for p in perm),
                    a.dtype,
                )
                assert view.is_nested()
    assert 50 < nested < 250
    assert not overlaps(
        TensorRef("sram", 0, (4,), (1,), "i8"), TensorRef("activations", 0, (4,), (1,), "i8")
    )


# --------------------------------------------------------------------------- hazards


def happens_before(engines: list[str], deps: list[tuple[int, ...]]) -> set[tuple[int, int]]:
    """All (a, b) with a before b: a dependency, the same engine earlier, or a chain of those."""
    edges = {(d, b) for b, ds in enumerate(deps) for d in ds}
    for a, b in itertools.combinations(range(len(engines)), 2):
        if engines[a] == engines[b]:
            edges.add((a, b))
    closure = set(edges)
    for k in range(len(engines)):  # Floyd-Warshall on a DAG in index order
        for a in range(k):
            if (a, k) in closure:
                closure |= {(a, b) for b in range(k + 1, len(engines)) if (k, b) in closure}
    return closure


def brute_force_ok(prog: Program) -> bool:
    insts = prog.instructions
    before = happens_before([i.engine for i in insts], [i.deps for i in insts])
    for a, b in itertools.combinations(range(len(insts)), 2):
        if insts[a].engine == insts[b].engine:
            continue
        wa, ra = insts[a].written(), insts[a].read()
        wb, rb = insts[b].written(), insts[b].read()
        conflict = any(byte_set(x) & byte_set(y) for x in wb for y in (*wa, *ra)) or any(
            byte_set(x) & byte_set(y) for x in rb for y in wa
        )
        if conflict and (a, b) not in before:
            return False
    return True


def test_hazard_check_matches_brute_force(build):
    tensor, inst = build
    rng = random.Random(7)
    verdicts = []
    for _ in range(250):
        insts = []
        for index in range(rng.randint(2, 7)):
            src = tensor("sram", 4 * rng.randint(0, 12), (4,))
            dst = tensor("sram", 4 * rng.randint(0, 12), (4,))
            deps = tuple(sorted(rng.sample(range(index), rng.randint(0, min(index, 2)))))
            kind = rng.random()
            if kind < 0.5:
                insts.append(inst("dma", (src, dst), deps))
            elif kind < 0.9:
                insts.append(inst("move", (src, dst), deps))
            else:
                insts.append(inst("host", (src, dst), deps, body="x", inputs=1))
        prog = Program("p", (Region("sram", 64, "sram"),), (), (), (), tuple(insts))
        want = brute_force_ok(prog)
        try:
            check_hazards(prog)
            got = True
        except ISAError:
            got = False
        assert got == want, prog.instructions
        verdicts.append(got)
    assert 0.2 < sum(verdicts) / len(verdicts) < 0.8  # both outcomes are exercised


def test_hazards_ignore_the_read_only_constants(build):
    tensor, inst = build
    weights = tensor("constants", 0, (16,))
    prog = Program(
        "p",
        (Region("constants", 16, "flash"), Region("sram", 64, "sram")),
        (),
        (),
        (),
        (
            inst("dma", (weights, tensor("sram", 0, (16,)))),
            inst("move", (weights, tensor("sram", 16, (16,)))),
        ),
    )
    check_hazards(prog)
    clash = dataclasses.replace(prog.instructions[1], operands=(weights, tensor("sram", 8, (16,))))
    with pytest.raises(ISAError, match="writes bytes written by"):
        check_hazards(dataclasses.replace(prog, instructions=(prog.instructions[0], clash)))


@pytest.mark.parametrize(
    "lines, line, message",
    [
        (  # a hazard: the conv does not wait for the dma filling its weights
            [LOAD_WEIGHTS, CONV],
            3,
            r"'npu.program': instruction 1 \(conv2d\) reads bytes written by instruction 0",
        ),
        (  # a rule tying one instruction to its program
            [
                LOAD_WEIGHTS,
                '%1 = npu.dma <"sram", 0, [8], i8> -> <"sram", 64, [8], i8> {layer = 3 : i64}',
            ],
            3,
            r"'npu.program': instruction 1 \(dma\): layer 3 is not among the 1 layers",
        ),
    ],
    ids=["hazard", "layer"],
)
def test_an_instruction_error_is_reported_at_the_instruction(tmp_path, lines, line, message):
    from tool_runner import run_tool

    src = tmp_path / "bad.mlir"
    src.write_text(program(*lines))
    proc = run_tool("npu-opt", src, "-o", tmp_path / "out.mlir")
    assert proc.returncode == 1, proc.stderr
    assert re.search(rf"bad\.mlir:{line}:\d+: error: {message}", proc.stderr), proc.stderr
    assert "in: " not in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out.mlir").exists()


def test_a_program_wide_error_stays_at_the_program(tmp_path):
    from tool_runner import run_tool

    src = tmp_path / "bad.mlir"
    src.write_text(
        program(LOAD_WEIGHTS).replace(
            "outputs []", 'outputs [#npu.io<"y", #npu.tensor<"activations", 2000, [8], i8>, 1.0:0>]'
        )
    )
    proc = run_tool("npu-opt", src, "-o", tmp_path / "out.mlir")
    assert proc.returncode == 1, proc.stderr
    assert re.search(r"bad\.mlir:1:1: error: 'npu.program': output 'y'", proc.stderr), proc.stderr
