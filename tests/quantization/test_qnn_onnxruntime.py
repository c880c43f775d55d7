"""qnn kernels against onnxruntime's QLinearConv, QLinearMatMul, QuantizeLinear, DequantizeLinear.

onnxruntime requantizes with a float32 multiply and round-half-to-even, npuc
with an integer multiplier (m0, shift) and the same rounding rule, so outputs
may differ by one unit where the scaled accumulator is within float error of a
tie. The tests allow |diff| <= 1 on at most 1% of the elements and print the
counts (pytest -s).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper
from onnxruntime_reference import reference_session
from xdsl.dialects.builtin import FunctionType, IntegerAttr, StringAttr, TensorType, f32, i32, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Region

from npuc.dialects import qnn
from npuc.dialects.arrays import ints
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.integer import quantize_multipliers
from npuc.runtime.qnn_interpreter import run_function


def run_onnx(op_type: str, inputs: dict[str, np.ndarray], attrs: dict | None = None):
    """One node; every input is an initializer except `x` (the fed tensor)."""
    names = list(inputs)
    node = helper.make_node(op_type, names, ["y"], **(attrs or {}))
    x = inputs[names[0]]
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info(
                names[0], helper.np_dtype_to_tensor_dtype(x.dtype), x.shape
            )
        ],
        [helper.make_empty_tensor_value_info("y")],
        initializer=[
            numpy_helper.from_array(np.asarray(v), k) for k, v in list(inputs.items())[1:]
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    session = reference_session(model)
    return session.run(None, {names[0]: x})[0]


def run_op(op_type, args: list[tuple[np.ndarray, Attribute]], result: Attribute, props):
    types = [t for _, t in args]
    block = Block(arg_types=types)
    op = op_type.create(operands=list(block.args), properties=props, result_types=[result])
    block.add_ops([op, ReturnOp(op.results[0])])
    func = FuncOp("main", FunctionType.from_lists(types, [result]), Region(block))
    func.verify()
    return run_function(func, [a for a, _ in args])[0]


def compare(name: str, ours: np.ndarray, theirs: np.ndarray) -> None:
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    diff = np.abs(ours.astype(np.int64) - theirs.astype(np.int64))
    off = int(np.count_nonzero(diff))
    print(f"{name}: {off} of {diff.size} elements differ from onnxruntime (max {diff.max()})")
    assert diff.max() <= 1
    assert off <= diff.size // 100


def requant_props(real: np.ndarray) -> dict[str, Attribute]:
    m, s = quantize_multipliers(np.atleast_1d(real))
    return {
        "multiplier": ints(m.tolist()),
        "shift": ints(s.tolist()),
        "rounding": StringAttr("half_to_even"),
    }


CASES = [
    # x dtype, x zp, w dtype, per-channel weights
    (np.uint8, 128, np.uint8, False),
    (np.uint8, 131, np.int8, False),
    (np.int8, -5, np.int8, False),
    (np.uint8, 120, np.int8, True),
    (np.int8, 3, np.int8, True),
]


@pytest.mark.parametrize(("x_dtype", "zx", "w_dtype", "per_channel"), CASES)
@pytest.mark.parametrize("groups", [1, 2])
def test_qlinearconv(x_dtype, zx, w_dtype, per_channel, groups):
    rng = np.random.default_rng(groups * 7 + zx)
    c, o, k = 8, 6, 3
    info_x, info_w = np.iinfo(x_dtype), np.iinfo(w_dtype)
    x = rng.integers(info_x.min, info_x.max + 1, (2, c, 11, 9)).astype(x_dtype)
    w = rng.integers(info_w.min, info_w.max + 1, (o, c // groups, k, k)).astype(w_dtype)
    b = rng.integers(-20000, 20000, o).astype(np.int32)
    sx, sy, zy = np.float32(0.02), np.float32(0.35), int(np.iinfo(x_dtype).min + 100)
    if per_channel:
        sw = rng.uniform(0.002, 0.01, o).astype(np.float32)
        zw = np.zeros(o, w_dtype)
    else:
        sw = np.float32(0.006)
        zw = np.asarray(7 if w_dtype == np.uint8 else -2, w_dtype)
    attrs = {"strides": [2, 1], "pads": [1, 0, 1, 2], "dilations": [1, 2], "group": groups}
    theirs = run_onnx(
        "QLinearConv",
        {
            "x": x,
            "sx": sx,
            "zx": np.asarray(zx, x_dtype),
            "w": w,
            "sw": sw,
            "zw": zw,
            "sy": sy,
            "zy": np.asarray(zy, x_dtype),
            "b": b,
        },
        attrs,
    )
    storage = {np.dtype(np.uint8): "u8", np.dtype(np.int8): "i8"}
    x_type = UniformQuantizedType(storage[np.dtype(x_dtype)], float(sx), zx)
    w_type = (
        UniformQuantizedType("i8", sw.astype(float).tolist(), zw.tolist(), axis=0)
        if per_channel
        else UniformQuantizedType(storage[np.dtype(w_dtype)], float(sw), int(zw))
    )
    y_type = UniformQuantizedType(storage[np.dtype(x_dtype)], float(sy), zy)
    real = np.float64(sx) * np.asarray(sw, np.float64) / np.float64(sy)
    props = requant_props(real) | {
        "strides": ints([2, 1]),
        "pads": ints([1, 0, 1, 2]),
        "dilations": ints([1, 2]),
        "groups": IntegerAttr(groups, i64),
    }
    ours = run_op(
        qnn.Conv2dOp,
        [
            (x, TensorType(x_type, x.shape)),
            (w, TensorType(w_type, w.shape)),
            (b, TensorType(i32, b.shape)),
        ],
        TensorType(y_type, theirs.shape),
        props,
    )
    compare(
        f"QLinearConv {np.dtype(x_dtype)}/{np.dtype(w_dtype)} {per_channel=} {groups=}",
        ours,
        theirs,
    )


@pytest.mark.parametrize(
    ("a_dtype", "za", "b_dtype", "zb"),
    [(np.uint8, 128, np.uint8, 100), (np.int8, -3, np.int8, 4), (np.uint8, 7, np.int8, 0)],
)
def test_qlinearmatmul(a_dtype, za, b_dtype, zb):
    rng = np.random.default_rng(za + zb + 1000)
    ia, ib = np.iinfo(a_dtype), np.iinfo(b_dtype)
    a = rng.integers(ia.min, ia.max + 1, (3, 5, 64)).astype(a_dtype)
    b = rng.integers(ib.min, ib.max + 1, (64, 12)).astype(b_dtype)
    sa, sb, sy, zy = np.float32(0.03), np.float32(0.011), np.float32(1.7), int(ia.min + 60)
    theirs = run_onnx(
        "QLinearMatMul",
        {
            "a": a,
            "sa": sa,
            "za": np.asarray(za, a_dtype),
            "b": b,
            "sb": sb,
            "zb": np.asarray(zb, b_dtype),
            "sy": sy,
            "zy": np.asarray(zy, a_dtype),
        },
    )
    storage = {np.dtype(np.uint8): "u8", np.dtype(np.int8): "i8"}
    a_type = UniformQuantizedType(storage[np.dtype(a_dtype)], float(sa), za)
    b_type = UniformQuantizedType(storage[np.dtype(b_dtype)], float(sb), zb)
    y_type = UniformQuantizedType(storage[np.dtype(a_dtype)], float(sy), zy)
    real = np.float64(sa) * np.float64(sb) / np.float64(sy)
    ours = run_op(
        qnn.MatMulOp,
        [(a, TensorType(a_type, a.shape)), (b, TensorType(b_type, b.shape))],
        TensorType(y_type, theirs.shape),
        requant_props(real),
    )
    compare(f"QLinearMatMul {np.dtype(a_dtype)}/{np.dtype(b_dtype)}", ours, theirs)


@pytest.mark.parametrize("per_axis", [False, True])
@pytest.mark.parametrize(("dtype", "zp"), [(np.uint8, 128), (np.int8, -7)])
def test_quantize_and_dequantize_linear(dtype, zp, per_axis):
    rng = np.random.default_rng(zp + 500)
    x = rng.normal(0, 3, (4, 3, 50)).astype(np.float32)
    x[0, 0, :6] = [0.25, -0.25, 0.75, -0.75, 1.25, 2.5]  # ties at scale 0.5 / 0.25
    storage = "u8" if dtype == np.uint8 else "i8"
    if per_axis:
        scales = np.array([0.5, 0.05, 0.02], np.float32)
        zps = np.array([zp, zp + 3, zp - 2], dtype)
        attrs = {"axis": 1}
        q = UniformQuantizedType(storage, scales.astype(float).tolist(), zps.tolist(), axis=1)
    else:
        scales, zps, attrs = np.float32(0.5), np.asarray(zp, dtype), {}
        q = UniformQuantizedType(storage, 0.5, zp)
    theirs = run_onnx("QuantizeLinear", {"x": x, "s": scales, "z": zps}, attrs)
    ours = run_op(
        qnn.QuantizeOp,
        [(x, TensorType(f32, x.shape))],
        TensorType(q, x.shape),
        {"rounding": StringAttr("half_to_even")},
    )
    compare(f"QuantizeLinear {np.dtype(dtype)} {per_axis=}", ours, theirs)
    assert np.array_equal(ours, theirs)  # float32 scales divide exactly the same here
    back = run_onnx("DequantizeLinear", {"q": theirs, "s": scales, "z": zps}, attrs)
    ours_back = run_op(
        qnn.DequantizeOp, [(theirs, TensorType(q, x.shape))], TensorType(f32, x.shape), {}
    )
    # onnxruntime multiplies in float32, npuc in float64 then rounds: at most 1 ulp apart.
    ulps = np.abs(ours_back.view(np.int32).astype(np.int64) - back.view(np.int32).astype(np.int64))
    print(
        f"DequantizeLinear {np.dtype(dtype)} {per_axis=}: "
        f"{np.count_nonzero(ulps)} of {ulps.size} elements differ by 1 ulp"
    )
    assert ulps.max() <= 1
