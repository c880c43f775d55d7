"""What a plugin's quantization rule sees of the layer it quantizes (`QuantizeRequest`).

The rule (a `QuantizationRule` of the plugin) gets one request per layer and returns the
integer op, not yet inserted; op_lowering.lower_plugin inserts it and records its results
as the layer's quantized values.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from npuc.dialects.qnn import UniformQuantizedType, qtype
from npuc.tensors import to_dense

from .lowering import Emitter, Layer, layer_name_of, lut_table, storage_element, tensor_of


class QuantizeRequest:
    """One float layer of a plugin's op, to be replaced by the plugin's integer op."""

    def __init__(self, emitter: Emitter, layer: Layer):
        self._em = emitter
        self._layer = layer

    @property
    def op(self) -> Operation:
        """The float op (its operands and properties)."""
        return self._layer.op

    @property
    def bits(self) -> int:
        """The activation width the layer is quantized to (one of the rule's `bits`)."""
        return self._layer.bits

    def name_property(self) -> dict[str, StringAttr]:
        """{"name": the layer's name}, for the integer op's properties ({} if unnamed)."""
        name = layer_name_of(self.op)
        return {"name": StringAttr(name)} if name else {}

    def input(self, index: int = 0) -> SSAValue:
        """Operand `index` quantized at the layer's width (conversions inserted as needed)."""
        return self._em.as_bits(self.op.operands[index], self.bits)

    def output_type(self) -> UniformQuantizedType:
        """The quantized type calibration chose for the layer's (first) result."""
        return self._em.out_type(self._layer)

    def result_type(self, index: int = 0) -> TensorType[Attribute]:
        """Result `index`'s tensor type with the calibrated quantized element type."""
        return tensor_of(self.op.results[index], self.output_type())

    def lut(self, x: SSAValue, fn: Callable[[np.ndarray], np.ndarray]) -> DenseIntOrFPElementsAttr:
        """The look-up table of `fn` (reals to reals) from `x`'s type to the output type:
        one entry per storage value of `x`, quantize(fn(dequantize(q))), from its qmin."""
        q_out = self.output_type()
        return to_dense(lut_table(qtype(x), q_out, fn), storage_element(q_out))
