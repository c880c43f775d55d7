"""The `qnn` dialect: the `nn` graph on quantized integer tensors.

Element types are `!qnn.uniform<...>` (dialects/quant_types.py); accumulators
are i32 and biases are i32 tensors at scale `scale_in * scale_w`. Every
rescaling is explicit (multiplier, shift, rounding), so the integer program is
fully determined by the IR. The arithmetic is specified in docs/quantization.md
and implemented once in `npuc.runtime.kernels.integer`.
"""

from xdsl.ir import Dialect

from .qnn_base import QNNOperation, Requantizing, qtype
from .qnn_ops import (
    AddOp,
    AvgPool2dOp,
    ConcatOp,
    ConstantOp,
    Conv2dOp,
    DepthToSpaceOp,
    DequantizeOp,
    FullyConnectedOp,
    GlobalAvgPoolOp,
    GlobalMaxPoolOp,
    LutOp,
    MatMulOp,
    MaxPool2dOp,
    MulOp,
    PadOp,
    QuantizeOp,
    RequantizeOp,
    ReshapeOp,
    ResizeOp,
    SliceOp,
    SoftmaxOp,
    SpaceToDepthOp,
    SplitOp,
    SubOp,
    TransposeOp,
)
from .quant_types import UniformQuantizedType

QNN = Dialect(
    "qnn",
    [
        ConstantOp,
        QuantizeOp,
        DequantizeOp,
        RequantizeOp,
        LutOp,
        SoftmaxOp,
        Conv2dOp,
        FullyConnectedOp,
        MatMulOp,
        AddOp,
        MulOp,
        AvgPool2dOp,
        GlobalAvgPoolOp,
        MaxPool2dOp,
        GlobalMaxPoolOp,
        ReshapeOp,
        TransposeOp,
        ConcatOp,
        SplitOp,
        SubOp,
        SliceOp,
        PadOp,
        ResizeOp,
        DepthToSpaceOp,
        SpaceToDepthOp,
    ],
    [UniformQuantizedType],
)

__all__ = [
    "QNN",
    "AddOp",
    "AvgPool2dOp",
    "ConcatOp",
    "ConstantOp",
    "Conv2dOp",
    "DepthToSpaceOp",
    "DequantizeOp",
    "FullyConnectedOp",
    "GlobalAvgPoolOp",
    "GlobalMaxPoolOp",
    "LutOp",
    "MatMulOp",
    "MaxPool2dOp",
    "MulOp",
    "PadOp",
    "QNNOperation",
    "QuantizeOp",
    "RequantizeOp",
    "Requantizing",
    "ReshapeOp",
    "ResizeOp",
    "SliceOp",
    "SoftmaxOp",
    "SpaceToDepthOp",
    "SplitOp",
    "SubOp",
    "TransposeOp",
    "UniformQuantizedType",
    "qtype",
]
