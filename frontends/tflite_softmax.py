"""int8 TFLite SOFTMAX as `qnn.softmax`, bit-exact with TFLite's reference kernel.

LiteRT's BUILTIN_REF SoftmaxPrepare (kReference, int8 -> int8) computes the
fixed-point parameters of reference_ops::Softmax:

- PreprocessSoftmaxScaling(beta, scale_in, kScaledDiffIntegerBits = 5):
  real = min(double(beta) * double(scale_in) * 2^26, 2^31 - 1), encoded with
  QuantizeMultiplierGreaterThanOne -> (input_multiplier, input_left_shift >= 0);
- diff_min = -CalculateInputRadius(5, input_left_shift, 31)
  = -floor((2^5 - 1) * 2^26 / 2^input_left_shift).

The optimized kernels use a float exp table instead and can differ by one.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import SSAValue

from npuc.dialects import qnn

from .tflite_context import OpContext, Unsupported, quantized_type, tensor_type
from .tflite_quant import tflite_multiplier

SCALED_DIFF_INTEGER_BITS = 5
TOTAL_SIGNED_BITS = 31


def softmax_params(beta: float, input_scale: float) -> tuple[int, int, int]:
    """(input_multiplier, input_left_shift, diff_min) as TFLite's SoftmaxPrepare computes them.

    `beta` and `input_scale` are the float32 values of the model (widened to double).
    """
    bits = SCALED_DIFF_INTEGER_BITS
    real = min(beta * input_scale * (1 << (TOTAL_SIGNED_BITS - bits)), (1 << 31) - 1.0)
    if not real >= 1.0:
        # QuantizeMultiplierGreaterThanOne requires left_shift >= 0 (TFLite aborts).
        raise Unsupported(f"softmax beta * input scale * 2^26 = {real} is below 1")
    multiplier, shift = tflite_multiplier(real)
    left_shift = 31 - shift
    radius = math.floor(
        1.0 * ((1 << bits) - 1) * (1 << (TOTAL_SIGNED_BITS - bits)) / (1 << left_shift)
    )
    return multiplier, left_shift, -radius


def softmax_converter(ctx: OpContext) -> SSAValue:
    """SOFTMAX on int8 tensors: one qnn.softmax over the last axis."""
    x_t, out = ctx.tensor(0), ctx.out()
    for t in (x_t, out):
        if t.dtype != np.int8 or t.quant is None or len(t.quant.scales) != 1:
            raise Unsupported(f"tensor '{t.name}' must be int8 quantized per tensor")
        if quantized_type(t).qmin != -128:
            raise Unsupported(f"int8 tensor '{t.name}' with a narrowed storage range")
    shape = ctx.shape(0)
    if not shape:
        raise Unsupported("softmax of a scalar")
    zp_out, s_out = int(out.quant.zero_points[0]), float(out.quant.scales[0])
    if zp_out != qnn.SoftmaxOp.OUTPUT_ZERO_POINT or abs(s_out - 1 / 256) > 0.001 / 256:
        raise Unsupported("SOFTMAX int8 output must have scale 1/256 and zero point -128")
    beta = float(ctx.opt("Beta", 1.0))
    multiplier, left_shift, diff_min = softmax_params(beta, float(x_t.quant.scales[0]))
    props = {
        "input_multiplier": IntegerAttr(multiplier, i64),
        "input_left_shift": IntegerAttr(left_shift, i64),
        "diff_min": IntegerAttr(diff_min, i64),
    }
    return ctx.emit(qnn.SoftmaxOp, [ctx.value(0)], props, result_types=[tensor_type(out, shape)])
