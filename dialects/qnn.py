"""The `qnn` dialect: the `nn` graph on quantized integer tensors.

Element types are `!qnn.uniform<...>` (dialects/quant_types.py); accumulators
are i32 and biases are i32 tensors at scale `scale_in * scale_w`. Every
rescaling is explicit (multiplier, shift, rounding), so the integer program is
fully determined by the IR. The arithmetic is specified in docs/quantization.md
and implemented once in `npuc.integer`.
"""

from xdsl.ir import Dialect

from .qnn_base import QNNOperation, Requantizing, qtype
from .qnn_int16 import INT16_OPS
from .qnn_more import MORE_OPS
from .qnn_movement import (
    ArgMaxOp,
    ArgMinOp,
    ConcatOp,
    DepthToSpaceOp,
    GatherOp,
    GlobalMaxPoolOp,
    MaximumOp,
    MaxPool2dOp,
    MinimumOp,
    PadOp,
    ReduceMaxOp,
    ReshapeOp,
    ResizeOp,
    SliceOp,
    SpaceToDepthOp,
    SplitOp,
    TransposeOp,
)
from .qnn_ops import (
    AddOp,
    AvgPool2dOp,
    ConstantOp,
    Conv2dOp,
    DequantizeOp,
    FullyConnectedOp,
    GlobalAvgPoolOp,
    LutOp,
    MatMulOp,
    MulOp,
    QuantizeOp,
    RequantizeOp,
    SoftmaxOp,
    SubOp,
)
from .qnn_transpose import ConvTranspose2dOp
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
        ConvTranspose2dOp,
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
        MaximumOp,
        MinimumOp,
        GatherOp,
        ReduceMaxOp,
        ArgMaxOp,
        ArgMinOp,
        *MORE_OPS,
        *INT16_OPS,
    ],
    [UniformQuantizedType],
)

__all__ = [
    "QNN",
    "AddOp",
    "ArgMaxOp",
    "ArgMinOp",
    "AvgPool2dOp",
    "ConcatOp",
    "ConstantOp",
    "Conv2dOp",
    "ConvTranspose2dOp",
    "DepthToSpaceOp",
    "DequantizeOp",
    "FullyConnectedOp",
    "GatherOp",
    "GlobalAvgPoolOp",
    "GlobalMaxPoolOp",
    "LutOp",
    "MatMulOp",
    "MaxPool2dOp",
    "MaximumOp",
    "MinimumOp",
    "MulOp",
    "PadOp",
    "QNNOperation",
    "QuantizeOp",
    "ReduceMaxOp",
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
