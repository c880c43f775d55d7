"""`qnn.conv_transpose2d`: the quantized transposed convolution (TFLite's int8 TRANSPOSE_CONV).

It joins the `qnn` dialect through dialects/qnn.py.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from . import nn
from .nn_base import I64Array, NNOperation, shape_of
from .qnn_base import I32Tensor, QTensor, Requantizing, qtype


@irdl_op_definition
class ConvTranspose2dOp(Requantizing):
    """Quantized 2-D transposed convolution: NCHW input, weight [C, O, kH, kW], i32 bias [O].

    Every centred input value scatters into an i32 accumulator at stride spacing:
    acc[n, o, y, x] = sum of (q_x[n, c, i, j] - zp_x) (q_w[c, o, ky, kx] - zp_w) over
    y = i * strides[0] + ky * dilations[0] - pads[0] (x likewise), + bias[o];
    `pads` = [top, left, bottom, right] crop the full result and `output_padding` extends
    its bottom/right edge with zeros (nn.conv_transpose2d's geometry, one group).
    out = clamp(zp_out + requantize(acc, multiplier[o], shift[o], rounding)).
    Per-channel weights are quantized on axis 1 (output channels).
    """

    name = "qnn.conv_transpose2d"
    SHAPE_RULE: ClassVar[type[NNOperation] | None] = nn.ConvTranspose2dOp
    input = operand_def(QTensor)
    weight = operand_def(QTensor)
    bias = opt_operand_def(I32Tensor)
    output = result_def(QTensor)
    strides = prop_def(I64Array)
    pads = prop_def(I64Array)
    dilations = prop_def(I64Array)
    output_padding = prop_def(I64Array)

    def output_channels(self) -> int:
        return shape_of(self.weight)[1]

    def verify_(self) -> None:
        super().verify_()
        w = qtype(self.weight)
        if w.per_axis and w.axis.data != 1:
            raise VerifyException(f"'{self.name}': per-channel weights must be quantized on axis 1")
        if qtype(self.input).per_axis or qtype(self.output).per_axis:
            raise VerifyException(f"'{self.name}': activations must be quantized per tensor")
