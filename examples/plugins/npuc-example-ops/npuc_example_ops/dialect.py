"""The `example` dialect: SoftClip in float (`example.soft_clip`) and as a table
(`example.qsoft_clip`)."""

from __future__ import annotations

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, IntegerType, f32
from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from npuc.plugin_api import QNNOperation, QTensor, UnaryOperation, from_dense, qtype


@irdl_op_definition
class SoftClipOp(UnaryOperation):
    """limit * tanh(x / limit): a smooth clip to (-limit, limit)."""

    name = "example.soft_clip"
    limit = prop_def(FloatAttr.constr(type=f32))

    def verify_(self) -> None:
        super().verify_()
        if not self.limit.value.data > 0:
            raise VerifyException("'example.soft_clip': limit must be positive")


@irdl_op_definition
class QSoftClipOp(QNNOperation):
    """SoftClip on quantized tensors: y = table[q - qmin(input)], one entry per input value."""

    name = "example.qsoft_clip"
    input = operand_def(QTensor)
    output = result_def(QTensor)
    table = prop_def(DenseIntOrFPElementsAttr)

    def verify_(self) -> None:
        super().verify_()
        q_in, q_out = qtype(self.input), qtype(self.output)
        if self.input.type.get_shape() != self.output.type.get_shape():
            raise VerifyException("'example.qsoft_clip': input and result shapes differ")
        if q_in.storage_bits.data != 8 or not isinstance(
            self.table.get_element_type(), IntegerType
        ):
            raise VerifyException("'example.qsoft_clip': needs an 8-bit input and integer table")
        if tuple(self.table.get_shape()) != (256,):
            raise VerifyException("'example.qsoft_clip': the table must have 256 entries")
        values = from_dense(self.table)
        if values.min() < q_out.qmin or values.max() > q_out.qmax:
            raise VerifyException("'example.qsoft_clip': table entries outside the output range")


Example = Dialect("example", [SoftClipOp, QSoftClipOp], [])
