"""TFLite 16x8 LOGISTIC, TANH and SOFTMAX (int16 in, int16 out) as `qnn` table ops.

What LiteRT's reference op resolver runs for int16 (activations.cc, kReference):

- LOGISTIC, TANH: reference_integer_ops::Logistic/Tanh, an interpolated 256-entry table of
  the sigmoid (TFLite's `sigmoid_table_uint16`: sigmoid(i / 24) in 0.16) on |v| with
  v = (q * input_multiplier + round) >> input_left_shift. Prepare (Sigmoid/TanhPrepare):
  when the input scale is a power of two (CheckedLog2, within 1e-3 in log2) with
  input_left_shift = 12 + log2(scale) equal to 0 (LOGISTIC) or 0 or 1 (TANH), the
  multiplier is left 0 and the kernel uses 3 << input_left_shift with no shift; otherwise
  multiplier = scale * 4096 * 3 (double) doubled until above 32767 / 2 (at most 31 times),
  truncated to int32, with input_left_shift the number of doublings. The output must be
  Q0.15: zero point 0 and CheckedLog2(scale) = -15 (LOGISTIC: scale exactly 2^-15).
  The importer emits the resolved (multiplier, shift) in `qnn.sigmoid_lut`.
- SOFTMAX: reference_ops::SoftmaxInt16 with two 513-entry tables LUTPopulate<int16_t>
  builds in double (exp on [-10, 0], 1 / (1 + x) on [0, 1]) and
  QuantizeMultiplier(float(scale * beta) / (10 / 65535)): `qnn.softmax_lut`.

"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i32, i64
from xdsl.ir import SSAValue

from npuc.dialects import qnn_int16 as q16
from npuc.tensors import to_dense

from .tflite_context import Converter, OpContext, Unsupported, tensor_type
from .tflite_quant import check_int16, pot_exponent, tflite_multiplier

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1
LUT_STEPS = 512

# TFLite's sigmoid_table_uint16: round-ish 65536 * sigmoid(i / 24), i = 0..255, as the
# kernel ships it (not a closed formula: 44 entries are one above the nearest integer).
# Every entry was read back from LiteRT's reference TANH and matches TFLite's source.
# The values are data from TensorFlow Lite (Copyright The TensorFlow Authors, Apache-2.0,
# the same licence as npuc's).
SIGMOID_TABLE_U16 = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794,
    41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443,
    48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374,
    54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544,
    58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279,
    61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990,
    63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030,
    64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652,
    64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019,
    65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234,
    65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360,
    65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476,
    65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516,
    65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529,
    65529, 65530, 65530, 65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532,
    65532, 65532, 65532, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534,
    65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
], np.int64)  # fmt: skip


def _round(x: float) -> float:
    """TfLiteRound (std::round): half away from zero."""
    return math.copysign(math.floor(abs(x) + 0.5), x)


def lut_populate_int16(
    transform: Callable[[float], float],
    input_scale: float,
    input_zero_point: int,
    output_scale: float,
    output_zero_point: int,
) -> np.ndarray:
    """LUTPopulate<int16_t> with FloatT = double: 512 samples, each biased by half the
    interpolation error at its interval's midpoint, and the end point (513 entries)."""
    input_min = input_scale * (INT16_MIN - input_zero_point)
    input_max = input_scale * (INT16_MAX - input_zero_point)
    output_min = output_scale * (INT16_MIN - output_zero_point)
    output_max = output_scale * (INT16_MAX - output_zero_point)
    step = (input_max - input_min) / LUT_STEPS
    half_step = step / 2
    inverse = float(INT16_MAX - INT16_MIN + 1) / (output_max - output_min)

    def clamp(v: float) -> int:
        return int(min(max(v, float(INT16_MIN)), float(INT16_MAX)))

    table = []
    for i in range(LUT_STEPS):
        val = transform(input_min + i * step)
        val_mid = transform(input_min + i * step + half_step)
        val_next = transform(input_min + (i + 1) * step)
        sample = _round(val * inverse)
        interpolated = _round((val_next * inverse + _round(val * inverse)) / 2)
        bias = _round((interpolated - _round(val_mid * inverse)) / 2)
        table.append(clamp(sample - bias))
    table.append(clamp(_round(transform(input_max) * inverse)))
    return np.array(table, np.int64)


def softmax_tables() -> tuple[np.ndarray, np.ndarray]:
    """SoftmaxPrepare's int16 tables: exp on [-10, 0] and 1 / (1 + x) on [0, 1]."""
    span = INT16_MAX - INT16_MIN
    exp_table = lut_populate_int16(math.exp, 10.0 / span, INT16_MAX, 2.0 / span, 0)
    recip_table = lut_populate_int16(
        lambda v: 1.0 / (1.0 + v), 1.0 / span, INT16_MIN, 2.0 / span, 0
    )
    return exp_table, recip_table


def softmax_multiplier(input_scale: float, beta: float) -> tuple[int, int]:
    """npuc (m0, shift) of QuantizeMultiplier(float(scale * beta) / (10 / 65535))."""
    product = float(np.float32(input_scale) * np.float32(beta))  # a float * float in C++
    m0, shift = tflite_multiplier(product / (10.0 / 65535.0))
    if m0 == 0:
        return 0, 31
    if shift < q16.SoftmaxLutOp.MIN_SHIFT:
        raise Unsupported(
            f"16-bit SOFTMAX: input scale * beta = {product} scales differences "
            "beyond int32 (TFLite's left shift overflows)"
        )
    return m0, shift


def sigmoid_params(input_scale: float, function: str) -> tuple[int, int]:
    """(multiplier, shift) of reference_integer_ops::Logistic/Tanh after Prepare, with the
    power-of-two case resolved (multiplier 3 << shift, shift 0)."""
    exponent = pot_exponent(input_scale)
    allowed = (0,) if function == "logistic" else (0, 1)
    if exponent is not None and 12 + exponent in allowed:
        return 3 << (12 + exponent), 0
    multiplier = float(np.float32(input_scale)) * 4096.0 * 3.0
    shift = 0
    while multiplier <= 32767.0 / 2.0 and shift <= 30:
        shift += 1
        multiplier *= 2.0
    m = int(multiplier)
    if not q16.SigmoidLutOp.fits_int32(m, shift):
        raise Unsupported(
            f"16-bit {function.upper()}: input scale {input_scale} gives "
            f"multiplier {m}, outside TFLite's int32 arithmetic"
        )
    return m, shift


def _sigmoid(function: str) -> Callable[[OpContext], SSAValue]:
    def convert(ctx: OpContext) -> SSAValue:
        x_t, out = ctx.tensor(0), ctx.out()
        check_int16(x_t, out)
        s_out = float(out.quant.scales[0])
        exact = function == "logistic" and np.float32(s_out) != np.float32(2.0**-15)
        if pot_exponent(s_out) != -15 or exact:
            raise Unsupported(f"16-bit {ctx.op.op_type} output must have scale 2^-15")
        multiplier, shift = sigmoid_params(float(x_t.quant.scales[0]), function)
        props = {
            "function": StringAttr(function),
            "input_multiplier": IntegerAttr(multiplier, i64),
            "input_shift": IntegerAttr(shift, i64),
            "table": to_dense(SIGMOID_TABLE_U16.astype(np.int32), i32),
        }
        return ctx.emit(
            q16.SigmoidLutOp, [ctx.value(0)], props, result_types=[tensor_type(out, ctx.shape(0))]
        )

    return convert


def _softmax(ctx: OpContext) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    check_int16(x_t, out)
    if abs(np.float32(out.quant.scales[0]) - np.float32(2.0**-15)) > np.float32(0.001 / 32768):
        raise Unsupported("16-bit SOFTMAX output must have scale 1/32768")
    shape = ctx.shape(0)
    if not shape:
        raise Unsupported("16-bit SOFTMAX of a scalar")
    multiplier, shift = softmax_multiplier(float(x_t.quant.scales[0]), float(ctx.opt("Beta", 1.0)))
    exp_table, recip_table = softmax_tables()
    props = {
        "input_multiplier": IntegerAttr(multiplier, i64),
        "input_shift": IntegerAttr(shift, i64),
        "exp_table": to_dense(exp_table.astype(np.int16), q16.I16),
        "reciprocal_table": to_dense(recip_table.astype(np.int16), q16.I16),
    }
    return ctx.emit(q16.SoftmaxLutOp, [ctx.value(0)], props, result_types=[tensor_type(out, shape)])


INT16X8: dict[str, Converter] = {
    "LOGISTIC": _sigmoid("logistic"),
    "TANH": _sigmoid("tanh"),
    "SOFTMAX": _softmax,
}
