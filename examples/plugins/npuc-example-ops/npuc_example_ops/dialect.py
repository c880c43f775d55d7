"""The `example` dialect: SoftClip in float (`example.soft_clip`) and as a table
(`example.qsoft_clip`)."""

from __future__ import annotations

from xdsl.dialects.builtin import FloatAttr, f32
from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition, prop_def
from xdsl.utils.exceptions import VerifyException

from npuc.plugin_api import TableOperation, UnaryOperation


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
class QSoftClipOp(TableOperation):
    """SoftClip on quantized tensors: y = table[q - qmin(input)], one entry per input value
    (operands, properties and checks of npuc's table ops)."""

    name = "example.qsoft_clip"


Example = Dialect("example", [SoftClipOp, QSoftClipOp], [])
