"""`qnn` ops for TFLite's 16-bit table activations: interpolated look-up tables, i16 -> i16.

TFLite computes int16 LOGISTIC, TANH and SOFTMAX with small tables and linear
interpolation instead of one entry per input value; these ops carry the tables and the
index arithmetic explicitly (docs/quantization.md, "16-bit LOGISTIC, TANH and SOFTMAX").
Kernels: runtime/kernels/qnn_int16_lut.py.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
)
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from npuc.tensors import from_dense

from .nn_base import shape_of
from .nn_shapes import Props, Shape, Shapes
from .qnn_base import QNNOperation, QTensor, qtype

I16 = IntegerType(16)
Q15_SCALE = 2.0**-15


def _table(
    op_name: str, attr: DenseIntOrFPElementsAttr, what: str, entries: int, lo: int, hi: int
) -> np.ndarray:
    """The table's values after checking its type, size and range."""
    if not isinstance(attr.get_element_type(), IntegerType):
        raise VerifyException(f"'{op_name}': {what} must hold integers")
    if tuple(attr.get_shape()) != (entries,):
        raise VerifyException(f"'{op_name}': {what} must have {entries} entries")
    values = from_dense(attr)
    if values.min() < lo or values.max() > hi:
        raise VerifyException(f"'{op_name}': {what} entries must lie in [{lo}, {hi}]")
    return values


class Int16LutOperation(QNNOperation):
    """An elementwise-shaped op from a symmetric i16 tensor to a Q0.15 i16 tensor."""

    input = operand_def(QTensor)
    output = result_def(QTensor)

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return [tuple(operand_shapes[0])]

    def check_io(self, rank_min: int = 0) -> None:
        self.verify_per_tensor()
        for what, value in (("input", self.input), ("result", self.output)):
            q = qtype(value)
            if (q.storage, q.qmin, q.qmax, q.zero_point) != ("i16", -32768, 32767, 0):
                raise VerifyException(
                    f"'{self.name}': the {what} must be full-range i16 with zero point 0"
                )
        if abs(qtype(self.output).scale / Q15_SCALE - 1) > 1e-3:
            raise VerifyException(f"'{self.name}': the result scale must be 2^-15")
        if len(shape_of(self.input)) < rank_min:
            raise VerifyException(f"'{self.name}': the input must have rank >= {rank_min}")


@irdl_op_definition
class SigmoidLutOp(Int16LutOperation):
    """Logistic or tanh (Q0.15) of i16 values through an interpolated sigmoid table.

    TFLite's 16-bit LOGISTIC/TANH (reference_integer_ops). With T = `table` (256 entries,
    sigmoid(i / 24) in 0.16, nondecreasing) and, for logistic / tanh, k = 9 / 8:
    v = (q * input_multiplier + 2^(input_shift - 1)) >> input_shift (no rounding term for
    shift 0), a = |v|, h = a >> k;
    s = T[h] * 2^k + (a mod 2^k) * (T[h + 1] - T[h]) for h < 255, else 32767 * 2^10
    (logistic) / 65535 * 2^8 (tanh);
    logistic: out = (s + 2^9) >> 10 for v >= 0, (2^25 + 2^9 - 1 - s) >> 10 for v < 0;
    tanh: out = (s - 2^23 + 2^7) >> 8 for v >= 0, (2^23 + 2^7 - 1 - s) >> 8 for v < 0
    (shifts floor). The input has zero point 0; the result is Q0.15 (scale 2^-15).
    """

    name = "qnn.sigmoid_lut"
    function = prop_def(StringAttr)
    input_multiplier = prop_def(IntegerAttr[I64])
    input_shift = prop_def(IntegerAttr[I64])
    table = prop_def(DenseIntOrFPElementsAttr)

    FUNCTIONS: ClassVar[tuple[str, ...]] = ("logistic", "tanh")

    @staticmethod
    def fits_int32(multiplier: int, shift: int) -> bool:
        """Whether q * multiplier + rounding stays within int32 for every i16 q (TFLite's
        kernel computes it in int32)."""
        return multiplier >= 1 and 2**15 * multiplier + ((1 << shift) >> 1) < 2**31

    def verify_(self) -> None:
        super().verify_()
        self.check_io()
        if self.function.data not in self.FUNCTIONS:
            raise VerifyException(f"'{self.name}': function must be logistic or tanh")
        multiplier, shift = self.input_multiplier.value.data, self.input_shift.value.data
        if not 0 <= shift <= 31:
            raise VerifyException(f"'{self.name}': input_shift must be in [0, 31]")
        if not self.fits_int32(multiplier, shift):
            raise VerifyException(
                f"'{self.name}': input_multiplier must be >= 1 with "
                "2^15 * input_multiplier + 2^(input_shift - 1) < 2^31"
            )
        table = _table(self.name, self.table, "the table", 256, 0, 65535)
        if (table[1:] < table[:-1]).any():
            raise VerifyException(f"'{self.name}': the table must be nondecreasing")


@irdl_op_definition
class SoftmaxLutOp(Int16LutOperation):
    """i16 softmax over the last axis through interpolated exp and 1 / (1 + x) tables.

    TFLite's reference SoftmaxInt16. L(x, T) is TFLite's 513-entry lookup: i = 256 + (x >> 7),
    L = T[i] + (((T[i + 1] - T[i]) * (x & 127) + 64) >> 7), wrapped to int16. Per row:
    d = q - max(row); z = requantize(d, input_multiplier, input_shift, "tflite");
    e = L(clamp(z + 32767, -32768, 32767), exp_table); S = sum(e) (in [2, 2^31));
    c = 32 - bit_length(S); n = ((S << (c - 1)) + 2^13) >> 14;
    r = L(clamp(n - 3 * 2^15, -32768, 32767), reciprocal_table);
    out = clamp((e * r + 2^(30 - c)) >> (31 - c), 0, 32767). Input zero point 0, Q0.15 result.
    """

    name = "qnn.softmax_lut"
    input_multiplier = prop_def(IntegerAttr[I64])
    input_shift = prop_def(IntegerAttr[I64])
    exp_table = prop_def(DenseIntOrFPElementsAttr)
    reciprocal_table = prop_def(DenseIntOrFPElementsAttr)

    # 65535 * 2^(31 - shift) must fit in int32: TFLite left-shifts the difference unchecked.
    MIN_SHIFT: ClassVar[int] = 16

    def verify_(self) -> None:
        super().verify_()
        self.check_io(rank_min=1)
        if not 0 <= self.input_multiplier.value.data < 2**31:
            raise VerifyException(f"'{self.name}': input_multiplier must be in [0, 2^31)")
        if not self.MIN_SHIFT <= self.input_shift.value.data <= 62:
            raise VerifyException(f"'{self.name}': input_shift must be in [16, 62]")
        for what, attr in (
            ("exp_table", self.exp_table),
            ("reciprocal_table", self.reciprocal_table),
        ):
            _table(self.name, attr, what, 513, -32768, 32767)
