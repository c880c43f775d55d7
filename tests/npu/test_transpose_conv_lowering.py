"""Transposed convolution on the NPU: `qnn.conv_transpose2d` lowered to one stride-1 conv2d
per output phase (passes/npu_lowering/transpose_conv.py), planned (and tiled) and lowered,
then run by the runtime bit for bit like the qnn interpreter."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from compile_helpers import assert_same, lower_and_run

import npuc
from npuc.backend.npubin import encode_program
from npuc.diagnostics import NpucError
from npuc.dialects.nn_shapes import conv_transpose2d as output_shape
from npuc.integer import quantize_multiplier
from npuc.passes.lower_to_npu import program_of
from npuc.passes.npu_lowering.transpose_conv import Phase, axis_phases
from npuc.runtime.executor import Executor
from npuc.runtime.kernels.qnn_arith import conv_transpose2d_acc
from npuc.runtime.loader import load
from npuc.runtime.qnn_interpreter import random_inputs, run_module

REPO = Path(__file__).resolve().parents[2]
TARGETS = sorted(p.stem for p in (REPO / "targets").glob("*.toml"))
PLAN = "plan-memory{target=mcu-64}"


@dataclass(frozen=True)
class Case:
    x: tuple[int, int, int, int] = (1, 3, 5, 6)  # NCHW input
    out_channels: int = 4
    kernel: tuple[int, int] = (3, 3)
    strides: tuple[int, int] = (2, 2)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    output_padding: tuple[int, int] = (0, 0)
    per_channel: bool = False
    bias: bool = True
    storage: str = "i8"
    x_zp: int = -3
    y_zp: int = 7
    w_zp: int = 0  # per-tensor; per-channel zero points are 0, 2, -1, ...
    clamp: tuple[int, int] | None = None
    rounding: str = "tflite"
    seed: int = 0

    @property
    def y(self) -> tuple[int, ...]:
        w = (self.x[1], self.out_channels, *self.kernel)
        return output_shape(
            self.x, w, self.strides, self.pads, self.dilations, self.output_padding, 1
        )

    def weight_zps(self) -> list[int]:
        if self.per_channel:
            return [(2, 0, -1, 3, -2)[o % 5] for o in range(self.out_channels)]
        return [self.w_zp] * self.out_channels


def _tensor(shape, element: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{element}>"


def _array(values) -> str:
    return f"array<i64: {', '.join(str(int(v)) for v in values)}>"


def module_text(case: Case, weight_arg: bool = False, bias_arg: bool = False) -> str:
    """One qnn.conv_transpose2d with random weights (constants, or function arguments)."""
    rng = np.random.default_rng(case.seed)
    c, o = case.x[1], case.out_channels
    w_shape = (c, o, *case.kernel)
    zps = case.weight_zps()
    weights = rng.integers(-127, 128, w_shape)
    weights = np.clip(weights + np.array(zps).reshape(1, -1, 1, 1), -128, 127)
    if case.per_channel:
        scales = ", ".join(f"{0.01 * (1 + o % 3)}:{z}" for o, z in enumerate(zps))
        w_type = _tensor(w_shape, f"!qnn.uniform<i8:f32:1, {{{scales}}}>")
    else:
        w_type = _tensor(w_shape, f"!qnn.uniform<i8:f32, 0.01:{case.w_zp}>")
    x_type = _tensor(case.x, f"!qnn.uniform<{case.storage}:f32, 0.03:{case.x_zp}>")
    y_type = _tensor(case.y, f"!qnn.uniform<{case.storage}:f32, 0.1:{case.y_zp}>")
    b_type = _tensor((o,), "i32")
    # a requantization scale that spreads the accumulators over the output range
    spread = np.sqrt(c * np.prod(case.kernel) / np.prod(case.strides)) * 40 * 70
    reals = [40 / spread * (1 + 0.3 * (i % 3)) for i in range(o if case.per_channel else 1)]
    multipliers, shifts = zip(*map(quantize_multiplier, reals), strict=True)
    args, body = [f'%x: {x_type} {{nn.name = "x"}}'], []
    if weight_arg:
        args.append(f'%w: {w_type} {{nn.name = "w"}}')
    else:
        body.append(
            f"%w = qnn.constant {{value = dense<{weights.tolist()}> : "
            f"{_tensor(w_shape, 'i8')}}} : {w_type}"
        )
    operands, types = "%x, %w", f"{x_type}, {w_type}"
    if case.bias:
        if bias_arg:
            args.append(f'%b: {b_type} {{nn.name = "b"}}')
        else:
            bias = rng.integers(-3000, 3000, o).tolist()
            body.append(f"%b = qnn.constant {{value = dense<{bias}> : {b_type}}} : {b_type}")
        operands, types = operands + ", %b", types + f", {b_type}"
    props = [
        f"strides = {_array(case.strides)}",
        f"pads = {_array(case.pads)}",
        f"dilations = {_array(case.dilations)}",
        f"output_padding = {_array(case.output_padding)}",
        f"multiplier = {_array(multipliers)}",
        f"shift = {_array(shifts)}",
        f'rounding = "{case.rounding}"',
        'name = "tconv"',
    ]
    if case.clamp is not None:
        props += [f"clamp_min = {case.clamp[0]} : i64", f"clamp_max = {case.clamp[1]} : i64"]
    body.append(
        f"%y = qnn.conv_transpose2d {operands} {{{', '.join(props)}}} : ({types}) -> {y_type}"
    )
    body.append(f"func.return %y : {y_type}")
    lines = "\n  ".join(body)
    return f'func.func @main({", ".join(args)}) -> ({y_type} {{nn.name = "y"}}) {{\n  {lines}\n}}'


def pieces(case: Case) -> int:
    """conv2d instructions of the case: one per (row phase, column phase) with outputs."""
    return math.prod(min(s, o) for s, o in zip(case.strides, case.y[2:], strict=True))


def run_case(parse, case: Case, pipeline: str = PLAN, host: str = "none", **kwargs):
    module = parse(module_text(case, **kwargs))
    npuc.apply_pipeline(module, pipeline)
    if kwargs:  # weights or bias as arguments: fed as stored integers
        reference, outputs, program = _run_stored(module, case, host)
    else:
        reference, outputs, program = lower_and_run(module, host, seed=case.seed + 1)
    assert_same(reference, outputs)
    return reference, program


def _run_stored(module, case: Case, host: str):
    """compile_helpers.lower_and_run, with the w and b arguments given as stored integers."""
    rng = np.random.default_rng(case.seed + 1)
    inputs = random_inputs(module, seed=case.seed + 1)
    for name, value in list(inputs.items()):
        if name == "w":
            inputs[name] = rng.integers(-128, 128, value.shape).astype(np.int8)
        elif name == "b":
            inputs[name] = rng.integers(-3000, 3000, value.shape).astype(np.int32)
    reference = run_module(module, inputs)
    npuc.apply_pipeline(module, f"lower-to-npu{{host={host}}}")
    module.verify()
    program = program_of(module)
    loaded = load(encode_program(program))
    assert loaded == program
    return reference, Executor(loaded).run(inputs), program


def _check_lowered(reference, program, case: Case) -> None:
    ops = [inst.op for inst in program.instructions if inst.op != "dma"]  # DMAs: tile loads
    assert ops == ["conv2d"] * pieces(case)
    assert np.unique(reference["y"]).size > 10  # not a saturated or constant output


# --------------------------------------------------------------------------- the grid

GRID = [
    Case(
        strides=(s, s),
        kernel=(k, k),
        pads=pads,
        output_padding=(op, op),
        per_channel=pc,
        bias=bias,
        seed=i,
    )
    for i, (s, k, pads, op, pc, bias) in enumerate(
        itertools.product(
            (1, 2, 3),
            (1, 2, 3, 4),
            ((0, 0, 0, 0), (1, 1, 1, 1), (1, 0, 0, 2)),
            (0, 1),
            (False, True),
            (True, False),
        )
    )
    if op < s  # output_padding must be smaller than the stride
]


@pytest.mark.parametrize(
    "case",
    GRID,
    ids=lambda c: (
        f"s{c.strides[0]}-k{c.kernel[0]}-p{''.join(map(str, c.pads))}-op{c.output_padding[0]}"
        f"-{'pc' if c.per_channel else 'pt'}{'-bias' if c.bias else ''}"
    ),
)
def test_grid_runs_bit_exact_on_the_npu(parse, case):
    reference, program = run_case(parse, case)
    _check_lowered(reference, program, case)


SPECIAL = {
    "rect-kernel-strides": Case(x=(1, 4, 4, 5), kernel=(2, 4), strides=(2, 3), pads=(0, 1, 1, 0)),
    "kernel-below-stride": Case(kernel=(1, 2), strides=(3, 3), output_padding=(2, 1)),
    "big-pads": Case(x=(1, 2, 4, 4), kernel=(4, 4), strides=(2, 2), pads=(3, 2, 4, 3)),
    "relu": Case(clamp=(7, 127), per_channel=True),
    "relu6-coarse": Case(clamp=(-100, -40), y_zp=-100, pads=(1, 1, 0, 0)),
    "weight-zp": Case(w_zp=-5, pads=(1, 1, 1, 1), output_padding=(1, 1)),
    "half-away": Case(rounding="half_away_from_zero", per_channel=True, pads=(1, 1, 1, 1)),
    "half-even": Case(rounding="half_to_even", output_padding=(1, 0)),
    "batch": Case(x=(3, 2, 3, 4), strides=(2, 2), kernel=(4, 4), pads=(1, 1, 1, 1)),
    "u8": Case(storage="u8", x_zp=128, y_zp=120, pads=(1, 1, 1, 1), per_channel=True),
    "i16": Case(storage="i16", x_zp=0, y_zp=0, kernel=(2, 3), pads=(0, 1, 0, 1)),
    "dilated": Case(dilations=(2, 2), strides=(2, 2), kernel=(3, 3), pads=(1, 1, 1, 1)),
    "dilated-coprime": Case(dilations=(2, 3), strides=(3, 2), kernel=(3, 2), output_padding=(2, 1)),
    "dilated-s1": Case(dilations=(2, 2), strides=(1, 1), kernel=(3, 3), pads=(1, 2, 0, 1)),
    "stride4-k2": Case(x=(1, 3, 3, 4), kernel=(2, 2), strides=(4, 4), output_padding=(3, 2)),
    "corpus-k2s2": Case(x=(1, 8, 6, 8), out_channels=8, kernel=(2, 2), per_channel=True),
    "one-pixel": Case(x=(1, 3, 1, 1), kernel=(3, 3), pads=(0, 1, 1, 0)),
}  # fmt: skip


@pytest.mark.parametrize("case", SPECIAL.values(), ids=SPECIAL.keys())
def test_special_cases_run_bit_exact_on_the_npu(parse, case):
    reference, program = run_case(parse, case)
    ops = [inst.op for inst in program.instructions if inst.op != "dma"]
    assert set(ops) == {"conv2d"} and len(ops) <= math.prod(case.strides)
    if case.clamp is None:
        assert np.unique(reference["y"]).size > min(10, reference["y"].size // 3)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "case",
    [
        Case(x=(1, 16, 12, 12), out_channels=16, kernel=(2, 2), per_channel=True),
        Case(
            x=(1, 8, 10, 9), out_channels=6, kernel=(3, 3), pads=(1, 1, 0, 0), output_padding=(1, 1)
        ),
    ],
    ids=["k2s2", "k3s2"],
)
def test_tiled_and_planned_for_every_target(parse, case, target):
    pipeline = f"tile{{target={target}}},plan-memory{{target={target}}}"
    reference, program = run_case(parse, case, pipeline)
    _check_lowered(reference, program, case)


# --------------------------------------------------------------------------- the weights


def test_single_tap_phases_read_the_planned_weight_view(parse):
    # kernel == stride: each phase is a 1x1 conv2d on a transposed view of the weight,
    # so nothing but the table is appended to the constants region.
    case = Case(x=(1, 3, 4, 5), kernel=(2, 2), strides=(2, 2))
    _, program = run_case(parse, case)
    weights = {inst.operands[1] for inst in program.instructions}
    c, o = case.x[1], case.out_channels
    assert {(w.shape, w.strides) for w in weights} == {((o, c, 1, 1), (4, o * 4, 2, 1))}
    offsets = sorted(w.offset for w in weights)
    assert offsets == [offsets[0] + tap for tap in range(4)]  # taps (0, 0), (0, 1), (1, 0), (1, 1)


def test_weights_from_an_argument_need_single_taps(parse):
    case = Case(x=(1, 3, 4, 5), kernel=(2, 2), strides=(2, 2), per_channel=True)
    reference, program = run_case(parse, case, weight_arg=True)
    _check_lowered(reference, program, case)


# --------------------------------------------------------------------------- host fallback


@pytest.mark.parametrize(
    "kwargs", [{"weight_arg": True}, {"bias_arg": True}], ids=["weights", "bias"]
)
def test_declined_instances_run_on_the_host(parse, kwargs):
    # Three taps per phase from weights that are not constants, or a bias that is not one:
    # the predicate declines, the op runs on the host, still exactly.
    case = Case(kernel=(3, 3), strides=(2, 2), per_channel=True, pads=(1, 1, 1, 1))
    _, program = run_case(parse, case, host="all", **kwargs)
    assert [inst.op for inst in program.instructions] == ["host"]
    module = parse(module_text(case, **kwargs))
    npuc.apply_pipeline(module, PLAN)
    with pytest.raises(NpucError, match=r"'qnn\.conv_transpose2d' .*no NPU instruction"):
        npuc.apply_pipeline(module, "lower-to-npu{host=none}")


def test_large_strides_run_on_the_host(parse):
    case = Case(x=(1, 2, 2, 2), kernel=(9, 9), strides=(9, 9), bias=False)
    _, program = run_case(parse, case, host="all")
    assert [inst.op for inst in program.instructions] == ["host"]


# --------------------------------------------------------------------------- the geometry


def test_axis_phases():
    # kernel 3, stride 2, pad 1: even outputs take tap 1, odd ones taps 2 and 0
    assert axis_phases(4, 7, 3, 2, 1, 1) == [
        Phase(0, 4, (1,), 0, 4, (0, 0)),
        Phase(1, 3, (2, 0), 0, 4, (0, 0)),
    ]
    # kernel 1, stride 3, output_padding 2: phases 1 and 2 hold the bias alone
    assert axis_phases(3, 9, 1, 3, 1, 0) == [
        Phase(0, 3, (0,), 0, 3, (0, 0)),
        Phase(1, 3, ()),
        Phase(2, 3, ()),
    ]
    # stride 1 is one correlation with the kernel reversed and padded by K - 1 - pad
    assert axis_phases(5, 6, 3, 1, 1, 1) == [Phase(0, 6, (2, 1, 0), 0, 5, (1, 2))]


def _scatter_reference(xc, wc, strides, pads, dilations, output_padding):
    """conv_transpose2d's accumulators straight from the qnn docstring, one tap at a time."""
    h, w = xc.shape[2:]
    kh, kw = wc.shape[2:]
    shape = output_shape(xc.shape, wc.shape, strides, pads, dilations, output_padding, 1)
    acc = np.zeros(shape, np.int64)
    for i, j, ky, kx in itertools.product(range(h), range(w), range(kh), range(kw)):
        y = i * strides[0] + ky * dilations[0] - pads[0]
        x = j * strides[1] + kx * dilations[1] - pads[1]
        if 0 <= y < shape[2] and 0 <= x < shape[3]:
            acc[:, :, y, x] += np.einsum("nc,co->no", xc[:, :, i, j], wc[:, :, ky, kx])
    return acc


@pytest.mark.parametrize("case", [*list(SPECIAL.values()), *GRID[::7]])
def test_interpreter_kernel_matches_the_docstring(case):
    rng = np.random.default_rng(case.seed)
    xc = rng.integers(-128, 128, case.x)
    wc = rng.integers(-128, 128, (case.x[1], case.out_channels, *case.kernel))
    geometry = dict(
        strides=case.strides,
        pads=case.pads,
        dilations=case.dilations,
        output_padding=case.output_padding,
    )
    want = _scatter_reference(xc, wc, **geometry)
    np.testing.assert_array_equal(conv_transpose2d_acc(xc, wc, **geometry), want)


def test_grid_covers_the_brief():
    kinds = {(c.strides[0], c.kernel[0], c.pads, c.output_padding[0]) for c in GRID}
    assert {s for s, *_ in kinds} == {1, 2, 3} and {k for _, k, *_ in kinds} == {1, 2, 3, 4}
    assert any(k < s for s, k, *_ in kinds) and any(op for *_, op in kinds)
