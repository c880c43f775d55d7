"""The nn interpreter: every op through evaluate_op/run_module against onnxruntime, plus
graph execution (names, liveness, intermediates) and input checking."""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from npuc.diagnostics import NpucError
from npuc.dialects import nn
from npuc.dialects.nn_base import ActivationFusable
from npuc.graph_io import name_attrs
from npuc.runtime import nn_interpreter as interp
from npuc.runtime.nn_kernels import constant_array
from npuc.tensors import numpy_dtype, to_dense, xdsl_type

R = np.random.default_rng(7)
F32 = np.float32


def randn(*shape: int) -> np.ndarray:
    return R.standard_normal(shape, dtype=np.float32)


def fl(v: float) -> FloatAttr:
    return FloatAttr(v, f32)


def i(v: int) -> IntegerAttr:
    return IntegerAttr(v, i64)


def b(v: bool) -> IntegerAttr:
    return BoolAttr.from_bool(v)


def const(array: np.ndarray, name: str | None = None) -> nn.ConstantOp:
    return nn.ConstantOp(to_dense(array), name)


def make_module(
    inputs: list[np.ndarray],
    body,
    input_names: list[str] | None = None,
    output_names: list[str] | None = None,
) -> ModuleOp:
    """A module whose @main takes `inputs`' types; body(block, args) returns (ops, results)."""
    types = [
        TensorType(f32 if a.dtype == np.float32 else xdsl_type(a.dtype), a.shape) for a in inputs
    ]
    block = Block(arg_types=types)
    ops, results = body(list(block.args))
    block.add_ops([*ops, ReturnOp(*results)])
    func = FuncOp("main", (types, [r.type for r in results]), Region(block))
    func.arg_attrs = name_attrs(input_names or [f"x{k}" for k in range(len(inputs))])
    func.res_attrs = name_attrs(output_names or [f"y{k}" for k in range(len(results))])
    return ModuleOp([func])


# --------------------------------------------------------------------------- every op


@dataclass
class Case:
    """One nn op and the ONNX node that must compute the same thing."""

    op: type[nn.NNOperation]
    operands: list[np.ndarray]
    props: dict[str, Any]
    onnx: str
    onnx_attrs: dict[str, Any] = field(default_factory=dict)
    onnx_inputs: list[np.ndarray | None] | None = None
    feeds: int = 1  # operands passed as function arguments; the rest become nn.constant
    opset: int = 18
    result_shapes: list[tuple[int, ...]] | None = None
    element: Attribute | None = None  # the results' element type; default: the first operand's

    @property
    def id(self) -> str:
        return self.op.name


def _i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


X4 = randn(2, 4, 6, 5)
POS = np.abs(randn(2, 3, 4)) + np.float32(0.1)
SMALL = randn(2, 3, 4)
COL = randn(3, 1)

UNARY_CASES = [
    Case(op, [x], {}, onnx, opset=opset)
    for op, onnx, x, opset in [
        (nn.ReluOp, "Relu", SMALL, 14),
        (nn.SigmoidOp, "Sigmoid", SMALL, 13),
        (nn.TanhOp, "Tanh", SMALL, 13),
        (nn.ExpOp, "Exp", SMALL, 13),
        (nn.LogOp, "Log", POS, 13),
        (nn.SqrtOp, "Sqrt", POS, 13),
        (nn.ErfOp, "Erf", SMALL, 13),
        (nn.AbsOp, "Abs", SMALL, 13),
        (nn.NegOp, "Neg", SMALL, 13),
        (nn.ReciprocalOp, "Reciprocal", POS, 13),
        (nn.FloorOp, "Floor", SMALL * 3, 13),
        (nn.CeilOp, "Ceil", SMALL * 3, 13),
        (nn.SoftplusOp, "Softplus", SMALL, 18),
        (nn.HardSwishOp, "HardSwish", SMALL * 4, 14),
        (nn.GlobalAvgPoolOp, "GlobalAveragePool", X4, 18),
        (nn.GlobalMaxPoolOp, "GlobalMaxPool", X4, 18),
    ]
]

BINARY_CASES = [
    Case(op, [SMALL, rhs], {}, onnx, feeds=2)
    for op, onnx, rhs in [
        (nn.AddOp, "Add", randn(3, 1)),
        (nn.SubOp, "Sub", randn(2, 3, 4)),
        (nn.MulOp, "Mul", randn(4)),
        (nn.DivOp, "Div", POS),
        (nn.MaximumOp, "Max", randn(1, 3, 4)),
        (nn.MinimumOp, "Min", randn(2, 3, 4)),
    ]
] + [Case(nn.PowOp, [POS, randn(4)], {}, "Pow", feeds=2)]

INTS = R.integers(-50, 50, (2, 3, 4)).astype(np.int32)
ROW = R.integers(-50, 50, (4,)).astype(np.int32)
NONZERO = (R.integers(1, 9, (4,)) * R.choice([-1, 1], 4)).astype(np.int32)
FLAGS, MASK = INTS > 0, ROW > 0
WILD = np.array([-2.7, -0.5, 0.5, 2.7, 1e10, -1e10, np.nan, 3.0], np.float32)
INTEGER_CASES = [
    *(Case(op, [INTS, rhs], {}, onnx, feeds=2) for op, onnx, rhs in [
        (nn.AddOp, "Add", ROW), (nn.SubOp, "Sub", ROW), (nn.MulOp, "Mul", ROW),
        (nn.DivOp, "Div", NONZERO), (nn.MaximumOp, "Max", ROW), (nn.MinimumOp, "Min", ROW)]),
    Case(nn.DivOp, [INTS.astype(np.uint8), np.abs(NONZERO).astype(np.uint8)], {}, "Div", feeds=2),
    Case(nn.AbsOp, [INTS], {}, "Abs"),
    Case(nn.NegOp, [INTS.astype(np.int64)], {}, "Neg"),
    *(Case(op, [INTS, ROW], {}, onnx, feeds=2, element=i1) for op, onnx in [
        (nn.EqualOp, "Equal"), (nn.LessOp, "Less"), (nn.LessEqualOp, "LessOrEqual"),
        (nn.GreaterOp, "Greater"), (nn.GreaterEqualOp, "GreaterOrEqual")]),
    Case(nn.EqualOp, [FLAGS, MASK], {}, "Equal", feeds=2, element=i1),
    Case(nn.NotOp, [FLAGS], {}, "Not", element=i1),
    *(Case(op, [FLAGS, MASK], {}, onnx, feeds=2, element=i1) for op, onnx in [
        (nn.AndOp, "And"), (nn.OrOp, "Or"), (nn.XorOp, "Xor")]),
    Case(nn.WhereOp, [FLAGS, INTS, ROW], {}, "Where", feeds=3, element=i32),
    Case(nn.WhereOp, [MASK, SMALL, randn(4)], {}, "Where", feeds=2, element=f32),
    Case(nn.CastOp, [FLAGS], {}, "Cast", {"to": onnx.TensorProto.FLOAT}, element=f32),
    Case(nn.CastOp, [WILD[:4]], {}, "Cast", {"to": onnx.TensorProto.INT32}, element=i32),
    Case(nn.CastOp, [WILD], {}, "Cast", {"to": onnx.TensorProto.BOOL}, element=i1),
    Case(nn.CastOp, [INTS], {}, "Cast", {"to": onnx.TensorProto.INT8}, element=i8),
    Case(nn.CastOp, [INTS], {}, "Cast", {"to": onnx.TensorProto.FLOAT}, element=f32),
    Case(nn.ReduceSumOp, [INTS], {"axes": nn.ints([1])}, "ReduceSum",
         onnx_inputs=[INTS, _i64(1)]),
    Case(nn.ReduceMaxOp, [FLAGS], {"axes": nn.ints([0]), "keepdims": b(False)}, "ReduceMax",
         {"keepdims": 0}, onnx_inputs=[FLAGS, _i64(0)], opset=20),
    Case(nn.ArgMaxOp, [INTS], {"axis": i(2)}, "ArgMax", {"axis": 2}, opset=13),
    Case(nn.ReshapeOp, [FLAGS], {}, "Reshape", onnx_inputs=[FLAGS, _i64(4, 6)],
         result_shapes=[(4, 6)]),
    Case(nn.ConcatOp, [INTS, INTS[:, :1]], {"axis": i(1)}, "Concat", {"axis": 1}, feeds=2),
    Case(nn.GatherOp, [INTS, _i64(2, 0).astype(np.int32)], {"axis": i(1)}, "Gather", {"axis": 1},
         feeds=2),
    Case(nn.MaxPool2dOp, [(X4 * 40 + 100).astype(np.uint8)],
         {"kernel": nn.ints([3, 2]), "strides": nn.ints([2, 1]), "pads": nn.ints([1, 0, 1, 1]),
          "dilations": nn.ints([1, 1])},
         "MaxPool", {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}),
    Case(nn.PadOp, [INTS], {"pads": nn.ints([0, 1, 0, 0, 0, 2]), "mode": StringAttr("edge")},
         "Pad", {"mode": "edge"}, onnx_inputs=[INTS, _i64(0, 1, 0, 0, 0, 2)]),
]  # fmt: skip

CASES = [
    *UNARY_CASES,
    *BINARY_CASES,
    Case(nn.PReluOp, [SMALL, randn(3, 1)], {}, "PRelu", opset=16),
    Case(nn.GeluOp, [SMALL], {"approximate": StringAttr("tanh")}, "Gelu",
         {"approximate": "tanh"}, opset=20),
    Case(nn.LeakyReluOp, [SMALL], {"alpha": fl(0.2)}, "LeakyRelu", {"alpha": 0.2}),
    Case(nn.EluOp, [SMALL], {"alpha": fl(0.5)}, "Elu", {"alpha": 0.5}),
    Case(nn.HardSigmoidOp, [SMALL], {"alpha": fl(0.3), "beta": fl(0.6)}, "HardSigmoid",
         {"alpha": 0.3, "beta": 0.6}),
    Case(nn.ClipOp, [SMALL], {"min": fl(-0.5)}, "Clip",
         onnx_inputs=[SMALL, np.array(-0.5, np.float32)], opset=13),
    Case(nn.SoftmaxOp, [SMALL], {"axis": i(1)}, "Softmax", {"axis": 1}, opset=13),
    Case(nn.LogSoftmaxOp, [SMALL], {"axis": i(-1)}, "LogSoftmax", {"axis": -1}, opset=13),
    Case(nn.Conv2dOp, [X4, randn(6, 2, 3, 2), randn(6)],
         {"strides": nn.ints([2, 1]), "pads": nn.ints([1, 0, 2, 1]),
          "dilations": nn.ints([1, 2]), "groups": i(2)},
         "Conv", {"strides": [2, 1], "pads": [1, 0, 2, 1], "dilations": [1, 2], "group": 2}),
    Case(nn.ConvTranspose2dOp, [X4, randn(4, 3, 3, 3)],
         {"strides": nn.ints([2, 2]), "pads": nn.ints([1, 0, 0, 1]),
          "dilations": nn.ints([1, 1]), "output_padding": nn.ints([1, 0]), "groups": i(1)},
         "ConvTranspose", {"strides": [2, 2], "pads": [1, 0, 0, 1], "output_padding": [1, 0]}),
    Case(nn.FullyConnectedOp, [randn(3, 8), randn(5, 8), randn(5)], {}, "Gemm",
         {"transB": 1}),
    Case(nn.MatMulOp, [randn(2, 3, 4), randn(4, 5)], {}, "MatMul", feeds=2),
    Case(nn.MaxPool2dOp, [X4],
         {"kernel": nn.ints([3, 2]), "strides": nn.ints([2, 2]), "pads": nn.ints([1, 0, 1, 1]),
          "dilations": nn.ints([1, 2]), "ceil_mode": b(True)},
         "MaxPool", {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1],
                     "dilations": [1, 2], "ceil_mode": 1}),
    Case(nn.AvgPool2dOp, [X4],
         {"kernel": nn.ints([3, 3]), "strides": nn.ints([2, 2]), "pads": nn.ints([1, 1, 1, 1]),
          "ceil_mode": b(True), "count_include_pad": b(True)},
         "AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                         "ceil_mode": 1, "count_include_pad": 1}),
    Case(nn.AvgPool2dOp, [X4],
         {"kernel": nn.ints([2, 2]), "strides": nn.ints([1, 2]), "pads": nn.ints([1, 0, 0, 1]),
          "dilations": nn.ints([2, 2]), "ceil_mode": b(True)},
         "AveragePool", {"kernel_shape": [2, 2], "strides": [1, 2], "pads": [1, 0, 0, 1],
                         "dilations": [2, 2], "ceil_mode": 1}, opset=19),
    Case(nn.BatchNormOp, [X4, randn(4), randn(4), randn(4), np.abs(randn(4)) + 0.5],
         {"epsilon": fl(1e-3)}, "BatchNormalization", {"epsilon": 1e-3}, opset=15),
    Case(nn.InstanceNormOp, [X4, randn(4), randn(4)], {"epsilon": fl(1e-4)},
         "InstanceNormalization", {"epsilon": 1e-4}),
    Case(nn.LayerNormOp, [X4, randn(6, 5)], {"axis": i(2), "epsilon": fl(1e-4)},
         "LayerNormalization", {"axis": 2, "epsilon": 1e-4}, opset=17),
    Case(nn.LrnOp, [X4], {"size": i(3), "alpha": fl(0.1), "beta": fl(0.6), "bias": fl(2.0)},
         "LRN", {"size": 3, "alpha": 0.1, "beta": 0.6, "bias": 2.0}, opset=13),
    Case(nn.ReduceMeanOp, [SMALL], {"axes": nn.ints([1, 2])}, "ReduceMean",
         onnx_inputs=[SMALL, _i64(1, 2)]),
    Case(nn.ReduceSumOp, [SMALL], {"axes": nn.ints([0]), "keepdims": b(False)}, "ReduceSum",
         {"keepdims": 0}, onnx_inputs=[SMALL, _i64(0)]),
    Case(nn.ReduceMaxOp, [SMALL], {"axes": nn.ints([])}, "ReduceMax"),
    Case(nn.ReduceMinOp, [SMALL], {"axes": nn.ints([-1]), "keepdims": b(False)}, "ReduceMin",
         {"keepdims": 0}, onnx_inputs=[SMALL, _i64(-1)]),
    Case(nn.ReduceProdOp, [POS], {"axes": nn.ints([1])}, "ReduceProd",
         onnx_inputs=[POS, _i64(1)]),
    Case(nn.ArgMaxOp, [np.round(SMALL)], {"axis": i(1), "select_last_index": b(True)},
         "ArgMax", {"axis": 1, "select_last_index": 1}, opset=13),
    Case(nn.ArgMinOp, [np.round(SMALL)], {"axis": i(2), "keepdims": b(False)},
         "ArgMin", {"axis": 2, "keepdims": 0}, opset=13),
    Case(nn.ReshapeOp, [SMALL], {}, "Reshape", onnx_inputs=[SMALL, _i64(4, 6)],
         result_shapes=[(4, 6)]),
    Case(nn.BroadcastOp, [COL], {}, "Expand", result_shapes=[(2, 3, 4)],
         onnx_inputs=[COL, _i64(2, 3, 4)]),
    Case(nn.TransposeOp, [X4], {"perm": nn.ints([0, 2, 3, 1])}, "Transpose",
         {"perm": [0, 2, 3, 1]}),
    Case(nn.ConcatOp, [SMALL, randn(2, 1, 4), randn(2, 2, 4)], {"axis": i(1)}, "Concat",
         {"axis": 1}, feeds=3),
    Case(nn.SplitOp, [X4], {"axis": i(-1)}, "Split", {"axis": -1},
         onnx_inputs=[X4, _i64(2, 3)], result_shapes=[(2, 4, 6, 2), (2, 4, 6, 3)]),
    Case(nn.SliceOp, [X4],
         {"starts": nn.ints([1, 3, 5, 0]), "ends": nn.ints([2, -1, 0, 5]),
          "steps": nn.ints([1, -2, -2, 2])}, "Slice",
         onnx_inputs=[X4, _i64(1, 3, 5, 0), _i64(2, -(2**62), 0, 5), _i64(0, 1, 2, 3),
                      _i64(1, -2, -2, 2)]),
    Case(nn.PadOp, [X4],
         {"pads": nn.ints([0, 1, -1, 2, 0, -1, 2, 1]), "mode": StringAttr("reflect")}, "Pad",
         {"mode": "reflect"}, onnx_inputs=[X4, _i64(0, 1, -1, 2, 0, -1, 2, 1)]),
    Case(nn.PadOp, [X4], {"pads": nn.ints([0, 0, 1, 1, 0, 0, 2, 0]), "value": fl(2.5)}, "Pad",
         onnx_inputs=[X4, _i64(0, 0, 1, 1, 0, 0, 2, 0), np.array(2.5, np.float32)]),
    Case(nn.ResizeOp, [X4],
         {"scales": DenseArrayBase.from_list(f32, [1.0, 1.0, 1.5, 0.8]),
          "mode": StringAttr("cubic"), "coordinate_mode": StringAttr("align_corners"),
          "cubic_coeff_a": fl(-0.5), "exclude_outside": b(True)},
         "Resize", {"mode": "cubic", "coordinate_transformation_mode": "align_corners",
                    "cubic_coeff_a": -0.5, "exclude_outside": 1},
         onnx_inputs=[X4, None, np.array([1, 1, 1.5, 0.8], np.float32)],
         result_shapes=[(2, 4, 9, 4)], opset=19),
    Case(nn.ResizeOp, [X4],
         {"scales": DenseArrayBase.from_list(f32, [1.0, 1.0, 2.0, 0.6]),
          "mode": StringAttr("nearest"), "coordinate_mode": StringAttr("asymmetric"),
          "nearest_mode": StringAttr("ceil")},
         "Resize", {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                    "nearest_mode": "ceil"},
         onnx_inputs=[X4, None, np.array([1, 1, 2.0, 0.6], np.float32)],
         result_shapes=[(2, 4, 12, 3)], opset=19),
    Case(nn.GatherOp, [X4, _i64(-1, 0, 2)], {"axis": i(2)}, "Gather", {"axis": 2}),
    Case(nn.DepthToSpaceOp, [X4], {"block_size": i(2), "mode": StringAttr("CRD")},
         "DepthToSpace", {"blocksize": 2, "mode": "CRD"}),
    Case(nn.DepthToSpaceOp, [X4], {"block_size": i(2)}, "DepthToSpace", {"blocksize": 2}),
    Case(nn.SpaceToDepthOp, [randn(1, 2, 4, 6)], {"block_size": i(2)}, "SpaceToDepth",
         {"blocksize": 2}),
    *INTEGER_CASES,
]  # fmt: skip


def _module_for(case: Case) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    feeds = case.operands[: case.feeds]

    def body(args: list[SSAValue]):
        consts = [const(a) for a in case.operands[case.feeds :]]
        values = [*args, *(c.results[0] for c in consts)]
        element = case.element or xdsl_type(case.operands[0].dtype)
        if case.op in (nn.ArgMaxOp, nn.ArgMinOp):
            element = i64
        elif element == xdsl_type(np.dtype(np.float64)):
            element = f32
        types = [TensorType(element, s) for s in case.result_shapes] if case.result_shapes else None
        op = nn.build(
            case.op, values, case.props, name="layer", result_types=types, element_type=element
        )
        return [*consts, op], list(op.results)

    module = make_module(feeds, body)
    return module, {f"x{k}": a for k, a in enumerate(feeds)}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_op_matches_onnxruntime(onnx_ort, close, case: Case):
    module, feeds = _module_for(case)
    module.verify()
    outputs = interp.run_module(module, feeds)
    onnx_inputs = case.onnx_inputs or list(case.operands)
    n_out = len(case.result_shapes or [None])
    expected = onnx_ort(
        case.onnx,
        onnx_inputs,
        case.onnx_attrs,
        n_outputs=n_out,
        opset=case.opset,
        feeds=case.feeds,
    )
    assert list(outputs) == [f"y{k}" for k in range(n_out)]
    for got, want in zip(outputs.values(), expected, strict=True):
        if want.dtype.kind in "iub":
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
        else:
            close(got, want)


def test_every_nn_op_has_a_kernel():
    missing = [op.name for op in nn.NN.operations if interp.kernel_for(op) is None]
    assert missing == []
    tested = {case.op for case in CASES} | {nn.ConstantOp}
    assert set(nn.NN.operations) <= tested


# --------------------------------------------------------------------------- fused activations

FUSABLE = [c for c in CASES if issubclass(c.op, ActivationFusable) and c.operands[0].dtype == F32]


@pytest.mark.parametrize("case", FUSABLE, ids=lambda c: c.id)
@pytest.mark.parametrize(
    ("activation", "reference"),
    [
        ({"activation": StringAttr("clip"), "activation_min": fl(0.0)}, lambda y: np.maximum(y, 0)),
        (
            {
                "activation": StringAttr("clip"),
                "activation_min": fl(-0.5),
                "activation_max": fl(0.25),
            },
            lambda y: np.clip(y, -0.5, 0.25),
        ),
        (
            {"activation": StringAttr("leaky_relu"), "activation_alpha": fl(0.125)},
            lambda y: np.where(y >= 0, y, y * np.float32(0.125)),
        ),
    ],
)
def test_fused_activation_is_applied(case: Case, activation, reference):
    values = [SSAValue.get(const(a)) for a in case.operands]
    plain = nn.build(case.op, values, case.props)
    fused = nn.build(case.op, values, {**case.props, **activation})
    fused.verify()
    args = [a.copy() for a in case.operands]
    for a in args:
        a.flags.writeable = False
    (unfused,) = interp.evaluate_op(plain, args)
    (got,) = interp.evaluate_op(fused, args)
    np.testing.assert_array_equal(got, reference(unfused))
    for a, original in zip(args, case.operands, strict=True):
        np.testing.assert_array_equal(a, original)


def test_fused_activation_never_writes_into_an_operand():
    x = np.array([[-1.0, 2.0]], dtype=np.float32)
    op = nn.build(
        nn.AddOp,
        [const(x), const(np.zeros(1, np.float32))],
        {"activation": StringAttr("clip"), "activation_max": fl(1.0)},
    )
    (y,) = interp.evaluate_op(op, [x, np.zeros(1, np.float32)])
    np.testing.assert_array_equal(y, [[-1.0, 1.0]])
    np.testing.assert_array_equal(x, [[-1.0, 2.0]])


# --------------------------------------------------------------------------- evaluate_op


def test_evaluate_op_constants_and_unknown_ops():
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    (got,) = interp.evaluate_op(const(value), [])
    np.testing.assert_array_equal(got, value)
    (scalar,) = interp.evaluate_op(arith.ConstantOp(FloatAttr(2.5, f32)), [])
    assert scalar.dtype == np.float32 and scalar == 2.5
    (index,) = interp.evaluate_op(arith.ConstantOp(IntegerAttr(3, i64)), [])
    assert index.dtype == np.int64 and index == 3
    with pytest.raises(NotImplementedError, match=r"no reference kernel for 'arith\.addf'"):
        interp.evaluate_op(arith.AddfOp(const(value), const(value)), [value, value])


def test_constants_are_converted_to_float32():
    wide = to_dense(np.array([1.5, 2.25], dtype=np.float64))
    half = to_dense(np.array([0.5], dtype=np.float16))
    assert constant_array(wide).dtype == np.float32
    assert constant_array(half).dtype == np.float32
    narrow = to_dense(np.array([7], dtype=np.int32))
    assert constant_array(narrow).dtype == np.int64


def test_register_kernel_for_a_plugin_op(monkeypatch):
    monkeypatch.setattr(interp, "KERNELS", dict(interp.KERNELS))

    @interp.register_kernel(arith.AddfOp)
    def _addf(op: Operation, args: list[np.ndarray]) -> list[np.ndarray]:
        return [args[0] + args[1]]

    value = np.ones(2, dtype=np.float32)
    (got,) = interp.evaluate_op(arith.AddfOp(const(value), const(value)), [value, value])
    np.testing.assert_array_equal(got, [2.0, 2.0])


# --------------------------------------------------------------------------- run_module


def _chain_module() -> ModuleOp:
    """y = relu(x * w) + x, z = argmax(y); with named and unnamed ops."""

    def body(args):
        w = const(np.full((1, 4), 2.0, np.float32), name="w")
        mul = nn.build(nn.MulOp, [args[0], w], name="scale")
        relu = nn.build(nn.ReluOp, [mul])
        add = nn.build(nn.AddOp, [relu, args[0]], name="residual")
        arg = nn.build(nn.ArgMaxOp, [add], {"axis": i(1), "keepdims": b(False)}, element_type=i64)
        return [w, mul, relu, add, arg], [add.results[0], arg.results[0]]

    return make_module([np.zeros((3, 4), np.float32)], body, ["x"], ["y", "z"])


def test_run_module_names_and_dtypes():
    x = np.array([[1, -2, 3, -4], [0.5, 0, -1, 2], [-3, -1, -2, -5]], dtype=np.float32)
    out = interp.run_module(_chain_module(), {"x": x})
    y = np.maximum(x * 2, 0) + x
    assert set(out) == {"y", "z"}
    assert out["y"].dtype == np.float32 and out["z"].dtype == np.int64
    np.testing.assert_array_equal(out["y"], y)
    np.testing.assert_array_equal(out["z"], y.argmax(axis=1))


def test_keep_all_returns_intermediates_by_name_or_ssa_number():
    module = _chain_module()
    x = R.standard_normal((3, 4), dtype=np.float32)
    out, inter = interp.run_module(module, {"x": x}, keep="all")
    func = module.ops.first
    assert isinstance(func, FuncOp)
    relu = next(op for op in func.body.block.ops if isinstance(op, nn.ReluOp))
    relu_key = interp.value_names(func)[relu.results[0]]
    argmax_key = interp.value_names(func)[func.body.block.ops.last.prev_op.results[0]]
    assert set(inter) == {"scale", relu_key, "residual", argmax_key}
    np.testing.assert_array_equal(inter["scale"], x * 2)
    np.testing.assert_array_equal(inter[relu_key], np.maximum(x * 2, 0))
    np.testing.assert_array_equal(inter["residual"], out["y"])


def test_ssa_fallback_names_match_the_printed_ir():
    module = _chain_module()
    func = module.ops.first
    printed = str(module)
    names = interp.value_names(func)
    for op in func.body.block.ops:
        for r in op.results:
            line = next(ln for ln in printed.splitlines() if f" {op.name} " in ln)
            assert re.match(rf"\s*{re.escape(names[r])} = ", line), (names[r], line)
    assert [names[a] for a in func.body.block.args] == ["%0"]


def test_keep_selected_layers_and_unknown_names():
    module = _chain_module()
    x = R.standard_normal((3, 4), dtype=np.float32)
    _, inter = interp.run_module(module, {"x": x}, keep={"scale"})
    assert list(inter) == ["scale"]
    _, inter = interp.run_module(module, {"x": x}, keep={"w"})  # constants only when asked
    np.testing.assert_array_equal(inter["w"], np.full((1, 4), 2.0, np.float32))
    with pytest.raises(NpucError, match="no layer named nope"):
        interp.run_module(module, {"x": x}, keep={"scale", "nope"})


def test_keys_for_multi_result_and_repeated_names():
    def body(args):
        t1 = nn.build(nn.TransposeOp, [args[0]], {"perm": nn.ints([1, 0])}, name="node")
        t2 = nn.build(nn.NegOp, [t1], name="node")
        split = nn.build(
            nn.SplitOp,
            [t2],
            {"axis": i(0)},
            name="cut",
            result_types=[TensorType(f32, (1, 2)), TensorType(f32, (2, 2))],
        )
        return [t1, t2, split], list(split.results)

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out, inter = interp.run_module(make_module([x], body), {"x0": x}, keep="all")
    assert set(inter) == {"node#0", "node", "cut:0", "cut:1"}
    np.testing.assert_array_equal(inter["node#0"], x.T)
    np.testing.assert_array_equal(inter["node"], -x.T)
    np.testing.assert_array_equal(out["y1"], -x.T[1:])
    _, only = interp.run_module(make_module([x], body), {"x0": x}, keep={"node"})
    assert set(only) == {"node#0", "node"}  # a bare name selects every op carrying it


def test_intermediates_are_freed_after_their_last_use(monkeypatch):
    monkeypatch.setattr(interp, "KERNELS", dict(interp.KERNELS))
    refs: dict[str, weakref.ref] = {}
    alive_at_abs: dict[str, bool] = {}
    relu_kernel, abs_kernel = interp.KERNELS[nn.ReluOp], interp.KERNELS[nn.AbsOp]

    def tracking_relu(op, args):
        (y,) = relu_kernel(op, args)
        refs["relu"] = weakref.ref(y)
        return [y]

    def checking_abs(op, args):
        alive_at_abs["relu"] = refs["relu"]() is not None
        return abs_kernel(op, args)

    interp.register_kernel(nn.ReluOp)(tracking_relu)
    interp.register_kernel(nn.AbsOp)(checking_abs)

    def body(args):
        relu = nn.build(nn.ReluOp, [args[0]], name="r")
        neg = nn.build(nn.NegOp, [relu])
        ab = nn.build(nn.AbsOp, [neg])
        return [relu, neg, ab], [ab.results[0]]

    x = R.standard_normal((4, 4), dtype=np.float32)
    module = make_module([x], body)
    out = interp.run_module(module, {"x0": x})
    np.testing.assert_array_equal(out["y0"], np.maximum(x, 0))
    assert alive_at_abs == {"relu": False}
    _, inter = interp.run_module(module, {"x0": x}, keep={"r"})
    assert alive_at_abs == {"relu": True}
    np.testing.assert_array_equal(inter["r"], np.maximum(x, 0))


def test_run_function_positional_and_reusable_runner():
    module = _chain_module()
    func = module.ops.first
    runner = interp.FunctionRunner(func)
    for scale in (1.0, -3.0):
        x = np.full((3, 4), scale, np.float32)
        outputs, inter = runner.run([x])
        assert inter == {}
        np.testing.assert_array_equal(outputs[0], np.maximum(2 * x, 0) + x)
    y, _ = interp.run_function(func, [np.ones((3, 4), np.float32)])
    np.testing.assert_array_equal(y, np.full((3, 4), 3.0, np.float32))


def test_outputs_are_fresh_contiguous_arrays_even_for_inputs_and_constants():
    def body(args):
        c = const(np.array([1.0, 2.0], np.float32))
        t = nn.build(nn.TransposeOp, [args[0]], {"perm": nn.ints([1, 0])})
        return [c, t], [args[0], c.results[0], t.results[0]]

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    module = make_module([x], body)
    out = interp.run_module(module, {"x0": x})
    np.testing.assert_array_equal(out["y0"], x)
    np.testing.assert_array_equal(out["y1"], [1.0, 2.0])
    np.testing.assert_array_equal(out["y2"], x.T)
    for y in out.values():
        assert y.flags.c_contiguous and y.flags.writeable
        assert not np.shares_memory(y, x)
    out["y1"][0] = 5.0  # the constant inside the module is untouched
    np.testing.assert_array_equal(interp.run_module(module, {"x0": x})["y1"], [1.0, 2.0])


def test_results_have_their_types_dtype_and_no_float64_leaks():
    for case in CASES:
        module, feeds = _module_for(case)
        outputs, inter = interp.run_module(module, feeds, keep="all")
        func = module.ops.first
        for got, ty in zip(outputs.values(), func.function_type.outputs, strict=True):
            assert got.dtype == numpy_dtype(ty.element_type), case.id
        for got in inter.values():
            assert got.dtype != np.float64, case.id


# --------------------------------------------------------------------------- input checking


def _two_input_module() -> ModuleOp:
    def body(args):
        add = nn.build(nn.AddOp, args)
        return [add], [add.results[0]]

    return make_module([np.zeros((1, 3, 8, 8), np.float32)] * 2, body, ["image", "bias"], ["out"])


def test_shape_mismatch_is_a_diagnostic():
    x = np.zeros((1, 3, 8, 8), np.float32)
    with pytest.raises(NpucError) as err:
        interp.run_module(_two_input_module(), {"image": x, "bias": x[:, :, :4]})
    assert str(err.value) == (
        "error: input 'bias' has shape (1, 3, 4, 8) but the model expects (1, 3, 8, 8)"
    )


def test_dtype_mismatch_is_a_diagnostic():
    x = np.zeros((1, 3, 8, 8), np.float32)
    with pytest.raises(NpucError, match="input 'image' has dtype float64 but the model expects"):
        interp.run_module(_two_input_module(), {"image": x.astype(np.float64), "bias": x})


def test_missing_and_unknown_inputs_are_diagnostics():
    x = np.zeros((1, 3, 8, 8), np.float32)
    with pytest.raises(NpucError, match=r"missing input\(s\) 'bias'.*inputs are 'image', 'bias'"):
        interp.run_module(_two_input_module(), {"image": x})
    with pytest.raises(NpucError, match=r"unknown input\(s\) 'extra'"):
        interp.run_module(_two_input_module(), {"image": x, "bias": x, "extra": x})
    with pytest.raises(NpucError, match="takes 2 input"):
        interp.run_function(_two_input_module().ops.first, [x])


def test_unsupported_op_in_a_graph_is_a_diagnostic():
    def body(args):
        bad = arith.AddfOp(args[0], args[0])
        return [bad], [bad.results[0]]

    x = np.zeros((2,), np.float32)
    with pytest.raises(NpucError, match=r"no reference kernel for 'arith\.addf'"):
        interp.run_module(make_module([x], body), {"x0": x})


def test_kernel_failure_names_the_layer():
    def body(args):
        g = nn.build(nn.GatherOp, [args[0], args[1]], {"axis": i(0)}, name="lookup")
        return [g], [g.results[0]]

    x = np.zeros((3, 2), np.float32)
    idx = np.array([5], np.int64)
    with pytest.raises(NpucError, match=r"layer 'lookup' \(nn.gather\): gather index"):
        interp.run_module(make_module([x, idx], body), {"x0": x, "x1": idx})


def test_module_without_entry_function_is_a_diagnostic():
    with pytest.raises(NpucError, match="no entry function"):
        interp.run_module(ModuleOp([]), {})


ARITH_CONSTANT_MODULE = """
func.func @main(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %c = arith.constant dense<1.5> : tensor<1x2x4x4xf32>
  %y = nn.mul %x, %c {name = "scale"}
      : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %z = nn.add %y, %c {name = "shift"}
      : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %z : tensor<1x2x4x4xf32>
}
"""


def test_arith_constants_run_as_constants_and_are_tiled_as_constants():
    """`arith.constant` is recognised by its name (the interpreter and the tiling search do
    not import xDSL's arith dialect): a whole run, a replay of a kept run and the tile pass
    treat it as a constant, not as a layer or an input."""
    from npuc.pipeline import apply_pipeline, parse_mlir

    module = parse_mlir(ARITH_CONSTANT_MODULE.encode(), "arith.mlir")
    x = randn(1, 2, 4, 4)
    want = x * np.float32(1.5) + np.float32(1.5)
    out, kept = interp.run_module(module, {"input_0": x}, keep="all")
    np.testing.assert_allclose(out["output_0"], want)
    assert set(kept) == {"scale", "shift"}  # the constant is not an intermediate
    runner = interp.FunctionRunner(next(iter(module.ops)))
    replayed = [op.name for op, _ in runner.steps([x], kept)]
    assert replayed == ["arith.constant", "nn.mul", "nn.add"]
    apply_pipeline(module, 'tile{target="mcu-64"}')
    tiled = interp.run_module(module, {"input_0": x})
    np.testing.assert_allclose(tiled["output_0"], want)
    layers = [op.name for op in module.walk() if op.name.startswith("tile.")]
    assert layers and "arith.constant" in {op.name for op in module.walk()}
