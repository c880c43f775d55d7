"""The NPU runtime's two kernel paths (runtime/npu_jit.py): the compiled kernels and the
numpy calls give the same bytes on the same programs, and both equal a reference outside
the runtime (the qnn interpreter on the shared MobileNetV2, itself bit-exact with LiteRT's
reference kernels; `qnn.conv2d` on hand-built programs, tests/npu_programs.py).
NPUC_KERNELS selects the path.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
import pytest
from npu_programs import (
    Builder,
    arr,
    clamp_attrs,
    inst,
    nhwc,
    qnn,
    qnn_conv,
    qt,
    qt_axis,
    random_table,
)
from shared_models import MBV2

from npuc.api import apply_pipeline, load_model
from npuc.diagnostics import NpucError
from npuc.dialects import npu_isa as isa
from npuc.passes.lower_to_npu import program_of
from npuc.runtime import jit_kernels, npu_jit, npu_requant
from npuc.runtime.executor import Executor
from npuc.runtime.qnn_interpreter import run_module

COMPILED = (
    jit_kernels.depthwise,
    jit_kernels.depthwise_3x3_same,
    jit_kernels.depthwise_3x3_s2,
    jit_kernels.depthwise_channels_last,
    jit_kernels.requantize_rows,
    jit_kernels.lookup_pairs,
    jit_kernels.average_whole,
    jit_kernels.vector_matrix,
    jit_kernels.to_float32,
)


def run_both(
    program: isa.Program, feeds: dict[str, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, np.ndarray], list[object]]:
    """The outputs, asserted equal on both paths, and the compiled kernels called."""
    outputs, compiled = {}, {}
    for path in ("numba", "numpy"):
        monkeypatch.setenv("NPUC_KERNELS", path)
        executor = Executor(program)
        calls = executor.timed_run(feeds)
        kernels = [getattr(call, "func", None) for _, call, _ in calls]
        for _, call, _ in calls:  # the calls planned behind a measurement of accumulators
            if getattr(call, "func", None) is npu_requant._measured:
                kernels += [getattr(action, "func", None) for action in call.args[2]]
        compiled[path] = [kernel for kernel in kernels if kernel in COMPILED]
        outputs[path] = executor.run(feeds)
    assert compiled["numpy"] == []
    for name, values in outputs["numpy"].items():
        np.testing.assert_array_equal(outputs["numba"][name], values, err_msg=name)
    return outputs["numba"], compiled["numba"]


@dataclass(frozen=True)
class Case:
    """One conv2d: input and weight shapes (NCHW, OIHW), its geometry, the element types
    of input and output, and the clamp (the output zero point is 5: a low end of 5 is a
    fused ReLU)."""

    x: tuple[int, int, int, int]
    w: tuple[int, int, int, int]
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    groups: int = 1
    x_dtype: str = "i8"
    y_dtype: str = "i8"
    clamp: tuple[int, int] = (-128, 127)


CASES = {
    "dw3x3_s1_relu": Case(
        (1, 16, 14, 14), (16, 1, 3, 3), pads=(1, 1, 1, 1), groups=16, clamp=(5, 127)
    ),
    "dw3x3_s2_signed": Case(
        (2, 12, 15, 16), (12, 1, 3, 3), strides=(2, 2), pads=(0, 0, 1, 1), groups=12
    ),
    "dw3x3_dilated_mult2_u8": Case(
        (1, 4, 11, 10),
        (8, 1, 3, 3),
        strides=(1, 2),
        pads=(2, 2, 2, 2),
        dilations=(2, 2),
        groups=4,
        x_dtype="u8",
        clamp=(-100, 120),
    ),
    "dw5x5_s3_generic": Case(
        (1, 6, 17, 19), (6, 1, 5, 5), strides=(3, 3), pads=(2, 1, 0, 3), dilations=(2, 2), groups=6
    ),
    "dw3x4_s2x3": Case(
        (1, 6, 17, 19),
        (6, 1, 3, 4),
        strides=(2, 3),
        pads=(1, 0, 2, 2),
        dilations=(3, 1),
        groups=6,
        clamp=(5, 127),
    ),
    "dw3x3_i16_output_floor": Case(
        (1, 8, 9, 9),
        (8, 1, 3, 3),
        pads=(1, 1, 1, 1),
        groups=8,
        y_dtype="i16",
        clamp=(-32768, 32767),
    ),
    "dw3x3_channels_last": Case(
        (2, 64, 7, 8), (64, 1, 3, 3), pads=(1, 1, 1, 1), groups=64, clamp=(5, 127)
    ),
    "dw3x3_channels_last_s2_signed": Case(
        (1, 96, 14, 13), (96, 1, 3, 3), strides=(2, 2), pads=(0, 0, 1, 1), groups=96, x_dtype="u8"
    ),
    "pw_small_k": Case((1, 16, 24, 24), (40, 16, 1, 1), clamp=(5, 127)),
    "pw_long_k_signed": Case((1, 96, 7, 7), (24, 96, 1, 1)),
    "full3x3_s2": Case(
        (1, 3, 20, 20), (16, 3, 3, 3), strides=(2, 2), pads=(0, 0, 1, 1), clamp=(5, 127)
    ),
    # contiguous inputs: a 3x3 kernel, unit strides and one pixel of padding run as
    # `depthwise_3x3_same`, whose first and last columns are summed again
    "dw3x3_same_signed": Case((2, 8, 9, 10), (8, 1, 3, 3), pads=(1, 1, 1, 1), groups=8),
    "dw3x3_same_one_column_relu": Case(
        (1, 16, 5, 1), (16, 1, 3, 3), pads=(1, 1, 1, 1), groups=16, clamp=(5, 127)
    ),
    "dw3x3_same_one_row_u8": Case(
        (1, 16, 1, 7), (16, 1, 3, 3), pads=(1, 1, 1, 1), groups=16, x_dtype="u8", clamp=(-100, 120)
    ),
    "dw3x3_same_i16_output": Case(
        (1, 8, 6, 6),
        (8, 1, 3, 3),
        pads=(1, 1, 1, 1),
        groups=8,
        y_dtype="i16",
        clamp=(-32768, 32767),
    ),
    # contiguous, even sizes: strides of 2 and padding below and right run as
    # `depthwise_3x3_s2`, whose last column is summed again
    "dw3x3_halved_signed": Case(
        (2, 8, 10, 12), (8, 1, 3, 3), strides=(2, 2), pads=(0, 0, 1, 1), groups=8
    ),
    "dw3x3_halved_u8_relu": Case(
        (1, 16, 6, 2),
        (16, 1, 3, 3),
        strides=(2, 2),
        pads=(0, 0, 1, 1),
        groups=16,
        x_dtype="u8",
        clamp=(5, 127),
    ),
}
# cases with contiguous inputs, by the kernel that runs them
CONTIGUOUS = {
    case: jit_kernels.depthwise_3x3_same if "same" in case else jit_kernels.depthwise_3x3_s2
    for case in CASES
    if case.startswith(("dw3x3_same", "dw3x3_halved"))
}


def case_program(case: str) -> tuple[isa.Program, dict[str, np.ndarray], np.ndarray]:
    """(the program of one conv2d, its feeds, qnn.conv2d's output) for a case of CASES."""
    c = CASES[case]
    xs, ws, strides, pads, dilations, groups = c.x, c.w, c.strides, c.pads, c.dilations, c.groups
    xd, yd, clamp = c.x_dtype, c.y_dtype, c.clamp
    rng = np.random.default_rng(len(case))
    info = np.iinfo({"i8": np.int8, "u8": np.uint8}[xd])
    x = rng.integers(info.min, int(info.max) + 1, xs)
    w = rng.integers(-128, 128, ws)
    wzp = rng.integers(-20, 20, ws[0])
    table = random_table(rng, ws[0], (38, 42) if yd == "i8" else (31, 34), wzp)
    p = dict(
        strides=strides,
        pads=pads,
        dilations=dilations,
        groups=groups,
        ifm_zero_point=-7 if xd == "i8" else 131,
        ofm_zero_point=5,
        clamp_min=clamp[0],
        clamp_max=clamp[1],
        rounding="tflite",
    )
    oh = (xs[2] + pads[0] + pads[2] - dilations[0] * (ws[2] - 1) - 1) // strides[0] + 1
    ow = (xs[3] + pads[1] + pads[3] - dilations[1] * (ws[3] - 1) - 1) // strides[1] + 1
    out_shape = (xs[0], ws[0], oh, ow)
    b = Builder()
    # strided views, as the arenas hold them, unless the case wants contiguous ones
    xt = b.input("x", x, xd, None if case in CONTIGUOUS else nhwc(xs))
    yt = b.output("y", out_shape, yd)
    body = [inst("conv2d", (xt, b.const(w, "i8"), b.const(table, "i32"), yt), **p)]
    want = qnn_conv(x, xd, w, wzp, table, p, out_shape, out_dtype=yd)
    return b.program(body, sram=1 << 18), b.feeds, want


@pytest.mark.parametrize("case", CASES)
def test_paths_agree_with_each_other_and_qnn(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    program, feeds, want = case_program(case)
    got, compiled = run_both(program, feeds, monkeypatch)
    assert compiled
    for kernel in (jit_kernels.depthwise_3x3_same, jit_kernels.depthwise_3x3_s2):
        assert (kernel in compiled) == (CONTIGUOUS.get(case) is kernel)
    np.testing.assert_array_equal(got["y"], want)
    assert len(np.unique(got["y"])) > 10  # not a saturated output


@pytest.mark.parametrize(
    ("dtype", "hw", "zero_points", "clamp"),
    [
        ("i8", (7, 7), (-128, -128), (-128, 127)),  # MobileNetV2's
        ("i8", (4, 6), (3, -5), (-100, 90)),  # an even count: ties
        ("u8", (5, 4), (128, 120), (10, 250)),
    ],
)
def test_whole_average_pool_paths_equal_tflite(
    dtype: str,
    hw: tuple[int, int],
    zero_points: tuple[int, int],
    clamp: tuple[int, int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An average pool over the whole image with TFLite's rounding on both paths, against
    TFLite's reference kernel written out: (sum +- count / 2) / count in C integer
    division, on the stored values, then the zero points and the clamp."""
    rng = np.random.default_rng(hw[0])
    info = np.iinfo({"i8": np.int8, "u8": np.uint8}[dtype])
    x = rng.integers(info.min, int(info.max) + 1, (2, 40, *hw))
    x[0, 0] = info.max  # a clamped channel
    b = Builder()
    xt = b.input("x", x, dtype)
    yt = b.output("y", (2, 40, 1, 1), dtype)
    body = [
        inst("pool", (xt, yt), mode="avg", kernel=hw, rounding="tflite",
             ifm_zero_point=zero_points[0], ofm_zero_point=zero_points[1],
             clamp_min=clamp[0], clamp_max=clamp[1])
    ]  # fmt: skip
    got, compiled = run_both(b.program(body), b.feeds, monkeypatch)
    assert compiled == [jit_kernels.average_whole]
    total = x.sum(axis=(2, 3), keepdims=True)
    count = hw[0] * hw[1]
    half = np.where(total > 0, count // 2, -(count // 2))
    mean = np.trunc((total + half) / count).astype(np.int64)  # C division: toward zero
    want = np.clip(mean - zero_points[0] + zero_points[1], *clamp)
    np.testing.assert_array_equal(got["y"], want)
    assert len(np.unique(got["y"])) > 5


@pytest.mark.parametrize("weight_zero_points", [False, True])
def test_one_row_matmul_paths_equal_qnn(
    weight_zero_points: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fully connected layer on one row (MobileNetV2's classifier) multiplies the 8- or
    16-bit centred weights as it reads them (`vector_matrix`) and requantizes its row of
    channels as a column (`requantize_rows`): both paths give qnn.fully_connected's
    bytes."""
    rng = np.random.default_rng(40 + weight_zero_points)
    k, n = 700, 300
    x = rng.integers(-128, 128, (1, 1, k))
    w = rng.integers(-127, 128, (n, k))
    wzp = rng.integers(-4, 4, n) if weight_zero_points else np.zeros(n, np.int64)
    table = random_table(rng, n, (40, 43), wzp)
    b = Builder()
    xt, yt = b.input("x", x, "i8"), b.output("y", (1, 1, n))
    wt = b.const(w, "i8", strides=(0, 1, k), shape=(1, k, n))
    p = dict(lhs_zero_point=-9, ofm_zero_point=4, rounding="tflite", clamp_min=-128, clamp_max=127)
    body = [inst("matmul", (xt, wt, b.const(table, "i32"), yt), **p)]
    got, compiled = run_both(b.program(body), b.feeds, monkeypatch)
    assert {jit_kernels.vector_matrix, jit_kernels.requantize_rows} <= {*compiled}
    want = qnn(
        "qnn.fully_connected",
        [x.reshape(1, k).astype(np.int8), w.astype(np.int8), table[:, 0].copy()],
        [qt((1, k), "i8", -9), qt_axis((n, k), wzp), f"tensor<{n}xi32>"],
        qt((1, n), "i8", 4),
        f"multiplier = {arr(table[:, 1])}, shift = {arr(table[:, 2])}, " + clamp_attrs(p),
    )
    np.testing.assert_array_equal(got["y"], want.reshape(1, 1, n))
    assert len(np.unique(got["y"])) > 10


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4, 5), (2, 1, 3, 4, 5), (1, 2, 2, 3, 2, 3)])
def test_eltwise_lookup_paths_equal_qnn_at_every_rank(
    shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An 8-bit multiply runs as a 256x256 table lookup: compiled (`lookup_pairs`, which
    takes rank 4) up to rank 4, and through numpy beyond, with qnn.mul's bytes either way."""
    rng = np.random.default_rng(len(shape))
    a = rng.integers(-128, 128, shape)
    c = rng.integers(-128, 128, shape)
    b = Builder()
    at, ct, yt = b.input("a", a, "i8"), b.input("c", c, "i8"), b.output("y", shape, "i8")
    p = dict(
        kind="mul",
        lhs_zero_point=-3,
        rhs_zero_point=7,
        ofm_zero_point=2,
        multiplier=1234567890,
        shift=38,
        rounding="half_up",
        clamp_min=-100,
        clamp_max=110,
    )
    got, compiled = run_both(b.program([inst("eltwise", (at, ct, yt), **p)]), b.feeds, monkeypatch)
    assert compiled == ([jit_kernels.lookup_pairs] if len(shape) <= 4 else [])
    attrs = f"multiplier = {arr([1234567890])}, shift = {arr([38])}, " + clamp_attrs(p)
    args = [a.astype(np.int8), c.astype(np.int8)]
    want = qnn(
        "qnn.mul", args, [qt(shape, "i8", -3), qt(shape, "i8", 7)], qt(shape, "i8", 2), attrs
    )
    np.testing.assert_array_equal(got["y"], want)
    assert len(np.unique(want)) > 3


def test_mobilenet_v2_paths_equal_the_qnn_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared MobileNetV2, tiled for ethos-u55-256-hee as npu-compile does: both paths
    give the qnn interpreter's softmax bytes (which are LiteRT's reference kernels':
    tests/frontends/test_tflite_model.py)."""
    module = load_model(MBV2)
    target = "ethos-u55-256-hee"
    apply_pipeline(
        module,
        f"tile{{target={target} optimise=performance}},plan-memory{{target={target} io=arena}},"
        "lower-to-npu",
    )
    program = program_of(module)
    x = np.random.default_rng(5).integers(-128, 128, (1, 224, 224, 3)).astype(np.int8)
    got, compiled = run_both(program, {program.inputs[0].name: x}, monkeypatch)
    # every depthwise convolution of it has a kernel of its own shape
    generic = {jit_kernels.depthwise, jit_kernels.depthwise_channels_last}
    assert {*COMPILED} - {*compiled} == generic
    want = run_module(load_model(MBV2), {"input": x})["softmax"]
    np.testing.assert_array_equal(next(iter(got.values())), want)


def test_unknown_kernel_choice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NPUC_KERNELS", "cuda")
    with pytest.raises(NpucError, match="NPUC_KERNELS=cuda: expected one of numba, numpy"):
        npu_jit.enabled()


def test_without_numba_the_numpy_path_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """An environment without numba plans the numpy calls (the import fails)."""
    monkeypatch.delenv("NPUC_KERNELS", raising=False)
    monkeypatch.setitem(sys.modules, "npuc.runtime.jit_kernels", None)
    npu_jit.kernels.cache_clear()
    try:
        assert not npu_jit.enabled()
        program, feeds, want = case_program("dw3x3_s1_relu")
        executor = Executor(program)
        calls = executor.timed_run(feeds)
        assert not any(getattr(call, "func", None) in COMPILED for _, call, _ in calls)
        np.testing.assert_array_equal(executor.run(feeds)["y"], want)
    finally:
        npu_jit.kernels.cache_clear()
