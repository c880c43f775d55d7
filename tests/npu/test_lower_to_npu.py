"""`lower-to-npu`: planned modules become npu programs that verify, encode, load, and run on the
executor bit for bit like the qnn interpreter on the module before lowering."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from compile_helpers import assert_same, lower_and_run
from shared_models import MBV2
from xdsl.dialects.builtin import ModuleOp

import npuc
from npuc.api import load_model
from npuc.diagnostics import NpucError
from npuc.dialects.npu_isa import TensorRef, row_major
from npuc.passes.lower_to_npu import program_of
from npuc.passes.npu_lowering.views import permuted, reshaped, sliced
from npuc.registry import DEFAULT_PIPELINE

REPO = Path(__file__).resolve().parents[2]
LENET = REPO / "examples" / "lenet5.onnx"
PLAN = "plan-memory{target=mcu-64}"


def lowered(module: ModuleOp, host: str = "all"):
    """(reference outputs of the planned module, executor outputs, program)."""
    return lower_and_run(module, host, seed=3)


@pytest.fixture(scope="module")
def lenet_int8() -> ModuleOp:
    module = load_model(LENET)
    npuc.apply_pipeline(module, DEFAULT_PIPELINE + ",quantize{samples=8}")
    return module


@pytest.mark.parametrize("tile", ["", "tile{target=mcu-64},"])
def test_lenet5_runs_bit_exact(lenet_int8, tile):
    module = lenet_int8.clone()
    npuc.apply_pipeline(module, tile + PLAN)
    reference, outputs, program = lowered(module)
    assert_same(reference, outputs)
    ops = [inst.op for inst in program.instructions]
    # Float I/O: the input's quantize and the output's dequantize run on the host.
    assert ops.count("host") == 2 and ops.count("conv2d") >= 2 and ops.count("softmax") == 1
    assert program.layers == ("conv1", "pool1", "conv2", "pool2", "fc1", "fc2", "softmax")
    if tile:
        # Weight slices are DMAed to SRAM; bias slices are not (the bias_scale tables hold them).
        assert ops.count("dma") == ops.count("conv2d") + ops.count("matmul")
        assert all(
            inst.operands[2].region == "constants"
            for inst in program.instructions
            if inst.op in ("conv2d", "matmul")
        )


def test_tiled_tokens_let_dma_overlap_compute(lenet_int8):
    """With double-buffered loads (the plan keeps each load's bytes apart from the compute
    op before it), the tokens let the DMA engine run ahead of the MAC array."""
    module = lenet_int8.clone()
    plan = "plan-memory{target=mcu-64 double_buffer=true}"
    npuc.apply_pipeline(module, "tile{target=mcu-64}," + plan + ",lower-to-npu")
    program = program_of(module)
    insts = program.instructions
    computes = [i for i, inst in enumerate(insts) if inst.engine == "compute"]
    # A DMA issued after a compute instruction without waiting for any compute token: the
    # load of the next weights overlaps the current convolution.
    overlapped = [
        k
        for k, inst in enumerate(insts)
        if inst.op == "dma"
        and any(c < k for c in computes)
        and not any(insts[d].engine == "compute" for d in inst.deps)
    ]
    assert overlapped
    # And every compute instruction reading DMAed weights waits for that DMA (directly or
    # through the DMA engine's order).
    for k, inst in enumerate(insts):
        if inst.op == "conv2d" and inst.operands[1].region != "constants":
            assert any(insts[d].engine == "dma" for d in inst.deps), k


@pytest.mark.parametrize("tile", ["", "tile{target=mid-256},"])
def test_mobilenet_v2_runs_bit_exact(tile):
    module = load_model(MBV2)
    npuc.apply_pipeline(module, tile + ("plan-memory{target=mid-256}" if tile else PLAN))
    reference, outputs, program = lowered(module)
    assert_same(reference, outputs)
    ops = [inst.op for inst in program.instructions]
    assert "host" not in ops and ops.count("softmax") == 1
    if not tile:  # the NHWC <-> NCHW transposes are strided views, not moves
        assert "move" not in ops
    assert len(program.layers) == len(set(program.layers)) > 60


# Q10, Q2: quantized [1, 10] and [1, 2] tensor types.
UNSUPPORTED = """
func.func @main(%x: Q10 {nn.name = "x"})
    -> (tensor<1xi64> {nn.name = "class"}, Q10 {nn.name = "y"}) {
  %m = qnn.maximum %x, %x {name = "max"} : (Q10, Q10) -> Q10
  %c = qnn.argmax %m {axis = 1 : i64, keepdims = false, name = "argmax"} : (Q10) -> tensor<1xi64>
  %i = qnn.constant {value = dense<[0, 2]> : tensor<2xi64>} : tensor<2xi64>
  %g = qnn.gather %m, %i {axis = 1 : i64, name = "gather"} : (Q10, tensor<2xi64>) -> Q2
  %p = qnn.pad %g {pads = array<i64: 0, 4, 0, 4>} : (Q2) -> Q10
  func.return %c, %p : tensor<1xi64>, Q10
}
""".replace("Q10", "tensor<1x10x!qnn.uniform<i8:f32, 0.1:-3>>").replace(
    "Q2", "tensor<1x2x!qnn.uniform<i8:f32, 0.1:-3>>"
)

# Every qnn rule at once: each result is an output ($X: 1x2x4x4 tensors of scale 0.05:-3).
EVERY_OP = """
func.func @main(%x: $X {nn.name = "x"}, %v: $V {nn.name = "v"}) -> ($X, $X, $X, $R, $X, $P, $G,
    $X, $X, $H, $D, $P, $X, $S, $X, $X, $E) {
  %sd = qnn.squared_difference %x, %v {multiplier = array<i64: 2078764118>,
    shift = array<i64: 40>, rounding = "tflite", left_shift = 7 : i64,
    lhs_multiplier = 1952257901 : i64, lhs_shift = 33 : i64, rhs_multiplier = 1073741824 : i64,
    rhs_shift = 31 : i64} : ($X, $V) -> $X
  %alpha = qnn.constant {value = dense<[[[[20]], [[-7]]]]> : tensor<1x2x1x1xi8>}
    : tensor<1x2x1x1x!qnn.uniform<i8:f32, 0.004:3>>
  %pr = qnn.prelu %x, %alpha {multiplier = array<i64: 1342177280>, shift = array<i64: 30>,
    alpha_multiplier = 1374389632 : i64, alpha_shift = 38 : i64}
    : ($X, tensor<1x2x1x1x!qnn.uniform<i8:f32, 0.004:3>>) -> $X
  %den = qnn.constant {value = dense<[7, -9, 3, 12]> : tensor<4xi8>}
    : tensor<4x!qnn.uniform<i8:f32, 0.02:0>>
  %dv = qnn.div %x, %den {multiplier = array<i64: 1677721600>, shift = array<i64: 26>,
    rounding = "tflite", overshift = "x86"} : ($X, tensor<4x!qnn.uniform<i8:f32, 0.02:0>>) -> $X
  %rs = qnn.reduce_sum %x {multiplier = array<i64: 1717986918>, shift = array<i64: 34>,
    axes = array<i64: 1, 3>, keepdims = false} : ($X) -> $R
  %mx = qnn.maximum %x, %x : ($X, $X) -> $X
  %ap = qnn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>,
    pads = array<i64: 0, 0, 0, 0>, multiplier = array<i64: 1073741824>, shift = array<i64: 30>}
    : ($X) -> $P
  %gp = qnn.global_avg_pool %x {multiplier = array<i64: 1073741824>, shift = array<i64: 30>}
    : ($X) -> $G
  %lut = qnn.lut %x {table = $TABLE} : ($X) -> $X
  %mn = qnn.minimum %x, %lut : ($X, $X) -> $X
  %cc = qnn.concat %mn, %mx {axis = 1 : i64} : ($X, $X) -> $C
  %s0, %s1 = qnn.split %cc {axis = 2 : i64} : ($C) -> ($H, $H)
  %pd = qnn.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>} : ($X) -> $D
  %sl = qnn.slice %x {starts = array<i64: 0, 0, 1, 0>, ends = array<i64: 1, 2, 4, 4>,
    steps = array<i64: 1, 1, 2, 2>} : ($X) -> $P
  %mm = qnn.matmul %x, %lut {multiplier = array<i64: 1073741824>, shift = array<i64: 36>}
    : ($X, $X) -> $X
  %r = qnn.reshape %mm : ($X) -> $F
  %sm = qnn.softmax %r {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64,
    diff_min = -496 : i64} : ($F) -> $S
  %t = qnn.transpose %x {perm = array<i64: 0, 1, 3, 2>} : ($X) -> $X
  %m2 = qnn.mul %t, %v {multiplier = array<i64: 1073741824>, shift = array<i64: 33>}
    : ($X, $V) -> $X
  %rq = qnn.requantize %m2 {multiplier = array<i64: 1500000000>, shift = array<i64: 31>,
    clamp_min = -3 : i64} : ($X) -> $X
  %s2 = tile.slice %rq {offsets = array<i64: 0, 0, 0, 2>} : $X -> $E
  func.return %sd, %pr, %dv, %rs, %mx, %ap, %gp, %lut, %mn, %s1, %pd, %sl, %mm, %sm, %t, %rq, %s2
    : $X, $X, $X, $R, $X, $P, $G, $X, $X, $H, $D, $P, $X, $S, $X, $X, $E
}
"""
TYPES = {
    "$TABLE": "dense<[" + ", ".join(str(i * 37 % 256 - 128) for i in range(256)) + "]>"
    " : tensor<256xi8>",
    "$X": "1x2x4x4",
    "$V": "1x2x4x4:0.1:5",
    "$R": "1x4:0.2:1",
    "$P": "1x2x2x2",
    "$G": "1x2x1x1",
    "$C": "1x4x4x4",
    "$H": "1x4x2x4",
    "$D": "1x2x6x6",
    "$F": "2x16",
    "$S": "2x16:0.00390625:-128",
    "$E": "1x2x4x2",
}


def every_op_text() -> str:
    text = EVERY_OP
    for key, value in TYPES.items():
        if key != "$TABLE":
            shape, _, quant = value.partition(":")
            value = f"tensor<{shape}x!qnn.uniform<i8:f32, {quant or '0.05:-3'}>>"
        text = text.replace(key, value)
    return text


def test_every_rule_runs_bit_exact(parse):
    module = parse(every_op_text())
    npuc.apply_pipeline(module, PLAN)
    reference, outputs, program = lowered(module, host="none")
    assert_same(reference, outputs)
    ops = {inst.op for inst in program.instructions}
    assert ops == {"eltwise", "pool", "lut", "move", "matmul", "softmax", "dma"}


# Q4, Q2: quantized [1, 2, 4, 4] and [1, 2, 2, 4] tensor types.
OVERWRITTEN_SLICE = """
func.func @main(%x: Q4 {nn.name = "x"}) -> (Q2 {nn.name = "y"}) {
  %y = qnn.requantize %x {multiplier = array<i64: 1073741824>, shift = array<i64: 29>} : (Q4) -> Q4
  %s = tile.slice %y {offsets = array<i64: 0, 0, 0, 0>} : Q4 -> Q2
  %z = qnn.requantize %y {multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (Q4) -> Q4
  %t = tile.slice %z {offsets = array<i64: 0, 0, 2, 0>} : Q4 -> Q2
  %a = qnn.add %s, %t {left_shift = 20 : i64, lhs_multiplier = 1073741824 : i64,
    lhs_shift = 31 : i64, rhs_multiplier = 1073741824 : i64, rhs_shift = 31 : i64,
    multiplier = array<i64: 1073741824>, shift = array<i64: 50>} : (Q2, Q2) -> Q2
  func.return %a : Q2
}
""".replace("Q4", "tensor<1x2x4x4x!qnn.uniform<i8:f32, 0.1>>").replace(
    "Q2", "tensor<1x2x2x4x!qnn.uniform<i8:f32, 0.1>>"
)


def test_slice_view_becomes_a_copy_when_its_source_is_overwritten(parse):
    # The plan copies %s and then requantizes %y in place: reading %s as a strided view of %y
    # after that would see the new values, so the lowering copies it (an npu.move) first.
    # %t's source is not overwritten: it stays a view.
    module = parse(OVERWRITTEN_SLICE)
    npuc.apply_pipeline(module, "plan-memory{target=mcu-64 schedule=false}")
    reference, outputs, program = lowered(module)
    assert_same(reference, outputs)
    assert [inst.op for inst in program.instructions] == ["pool", "move", "pool", "eltwise"]
    assert not program.instructions[3].operands[1].is_contiguous()


def late_overwritten_slice(before: int, after: int) -> str:
    """OVERWRITTEN_SLICE between two chains of requantizes: the broken view comes midway."""

    def chain(name: str, count: int, ty: str) -> str:
        return "".join(
            f"  %{name}{k + 1} = qnn.requantize %{name}{k} {{multiplier = array<i64: "
            f"1073741824>, shift = array<i64: 30>}} : ({ty}) -> {ty}\n"
            for k in range(count)
        )

    text = OVERWRITTEN_SLICE.replace("(%x: ", "(%c0: ")
    text = text.replace("requantize %x", f"requantize %c{before}")
    text = text.replace("{\n  %y", "{\n" + chain("c", before, Q4) + "  %y", 1)
    text = text.replace("%a = ", "%d0 = ").replace("func.return %a", f"func.return %d{after}")
    return text.replace("  func.return", chain("d", after, Q2) + "  func.return")


Q4 = "tensor<1x2x4x4x!qnn.uniform<i8:f32, 0.1>>"
Q2 = "tensor<1x2x2x4x!qnn.uniform<i8:f32, 0.1>>"


def test_a_copied_view_relowers_from_the_first_rounds_saved_builder(parse, monkeypatch):
    from npuc.passes import lower_to_npu

    rounds = []
    real = lower_to_npu._lower_once

    def spy(*args):
        rounds.append(args[-1])
        return real(*args)

    monkeypatch.setattr(lower_to_npu, "_lower_once", spy)
    programs = []
    for least in (lower_to_npu.CHECKPOINT_MIN, 10**9):  # 10**9: nothing saved, all again
        monkeypatch.setattr(lower_to_npu, "CHECKPOINT_MIN", least)
        module = parse(late_overwritten_slice(80, 80))
        npuc.apply_pipeline(module, "plan-memory{target=mcu-64 schedule=false}")
        reference, outputs, program = lowered(module)
        assert_same(reference, outputs)
        programs.append(program)
    # resumed at a saved builder well past the start, then everything from the start
    assert len(rounds) == 4 and rounds[0] == rounds[2] == rounds[3] == 0
    assert 32 <= rounds[1] <= 85
    assert programs[0] == programs[1]
    ops = [inst.op for inst in programs[0].instructions]
    assert ops.count("move") == 1 and ops.index("move") == 81


def test_ops_without_instruction_are_listed_together(parse):
    module = parse(UNSUPPORTED)
    npuc.apply_pipeline(module, PLAN)
    with pytest.raises(NpucError) as e:
        npuc.apply_pipeline(module, "lower-to-npu{host=float}")
    assert e.value.message == (
        "lower-to-npu: 2 op(s) cannot be lowered:\n"
        "  'qnn.argmax' (layer 'argmax'): no NPU instruction (host=all runs it on the host)\n"
        "  'qnn.gather' (layer 'gather'): no NPU instruction (host=all runs it on the host)"
    )


def test_host_all_runs_them_on_the_host_by_default(parse):
    module = parse(UNSUPPORTED)
    npuc.apply_pipeline(module, PLAN)
    reference, outputs, program = lowered(module)
    assert_same(reference, outputs)
    assert [inst.op for inst in program.instructions] == ["eltwise", "host", "host", "move"]


def test_float_ops_refused_without_host(lenet_int8):
    module = lenet_int8.clone()
    npuc.apply_pipeline(module, PLAN)
    with pytest.raises(
        NpucError,
        match=r"2 op\(s\) cannot be lowered:\n  'qnn.quantize'.*\n  'qnn.dequantize'.*: float",
    ):
        npuc.apply_pipeline(module, "lower-to-npu{host=none}")


def test_unplanned_module_is_refused(lenet_int8):
    with pytest.raises(NpucError, match=r"needs a memory-planned module .* run plan-memory"):
        npuc.apply_pipeline(lenet_int8.clone(), "lower-to-npu")


def test_strided_reshape_views_match_numpy():
    # A view's element addresses, reshaped row-major, are those of the reshaped view.
    rng = np.random.default_rng(0)
    found = 0
    for _ in range(300):
        shape = tuple(int(d) for d in rng.integers(1, 5, rng.integers(1, 5)))
        perm = tuple(int(p) for p in rng.permutation(len(shape)))
        base = TensorRef("sram", 0, shape, row_major(shape), "i8")
        start = [int(rng.integers(0, d)) for d in shape]
        view = sliced(
            permuted(base, perm), [start[p] for p in perm], [shape[p] - start[p] for p in perm]
        )
        addresses = view.byte_offsets().reshape(view.shape)
        flat = addresses.ravel()
        sizes = [d for d in rng.permutation(flat.size + 1)[:3] if d and flat.size % d == 0]
        for d in sizes:
            target = (d, flat.size // d)
            got = reshaped(view, target)
            if got is not None:
                found += 1
                np.testing.assert_array_equal(
                    got.byte_offsets().reshape(target), flat.reshape(target)
                )
    assert found > 100
