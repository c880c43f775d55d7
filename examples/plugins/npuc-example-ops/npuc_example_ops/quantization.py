"""How SoftClip is quantized: an 8-bit table of its values, from calibrated input and output
types (`quantize` pass)."""

from __future__ import annotations

from xdsl.ir import Operation

from npuc.plugin_api import QuantizeRequest

from .dialect import QSoftClipOp, SoftClipOp
from .semantics import soft_clip


def quantize_soft_clip(request: QuantizeRequest) -> Operation:
    op = request.op
    assert isinstance(op, SoftClipOp)
    x = request.input(0)
    limit = op.limit.value.data
    table = request.lut(x, lambda v: soft_clip(v, limit))
    return QSoftClipOp.create(
        operands=[x],
        properties={"table": table, **request.name_property()},
        result_types=[request.result_type()],
    )
