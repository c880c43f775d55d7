"""SoftClip on the NPU: one `lut` instruction reading its table from the constants region."""

from __future__ import annotations

import numpy as np

from npuc.plugin_api import Builder, TensorRef, from_dense, qtype

from .dialect import QSoftClipOp


def lower_qsoft_clip(b: Builder, op: QSoftClipOp) -> None:
    out = b.out(op.output)
    table = np.asarray(from_dense(op.table)).astype(qtype(op.output).storage_dtype())
    offset = b.constants.add(table.astype(table.dtype.newbyteorder("<")))
    ref = TensorRef("constants", offset, (table.size,), (1,), out.dtype)
    b.emit("lut", (b.ref(op.input), ref, out), (op.input,), table_base=qtype(op.input).qmin)
