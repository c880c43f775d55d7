"""TFLite 16x8 operators (int16 activations, int8 weights, int64 biases) as `qnn` ops.

TFLite's 16x8 scheme: int16 activations are symmetric (zero point 0, checked here as
TFLite's Prepare checks it), weights int8 symmetric, biases int64. The integer
arithmetic reproduced, kernel by kernel (reference kernels):

- CONV_2D, DEPTHWISE_CONV_2D (int64 bias required, as LiteRT requires a bias) accumulate
  in int64 and rescale with the *64-bit* MultiplyByQuantizedMultiplier overload, not the
  int32 one: it reduces the Q31 multiplier to 15 bits, `(m + 2^15) >> 16` (0x7FFF from
  0x7FFF0000 on), and rounds once, `(x * reduced + 2^(total - 1)) >> total` with
  `total = 15 - shift_tflite`: `requantize(acc, reduced, shift - 16, "half_up")`
  (`tflite64_multiplier`).
- FULLY_CONNECTED (int64 bias or none, per tensor or per channel): LiteRT's reference
  16x8 kernel rounds once on the *unreduced* Q31 multiplier,
  `(x * m + 2^(total - 1)) >> total` with `total = 31 - shift_tflite`: `half_up` with
  conv's (m0, shift), the scales multiplied in double even per tensor (the int8 kernel
  multiplies them in float32). Measured against LiteRT: the reduced form differs at ~10%
  of outputs, the int32 double rounding at ~0.1%, the float32 product at ~0.02%; this one
  at none.
- An int64 bias is imported as i32 when every entry fits (exactly), otherwise the op is
  unsupported; int32 biases in 16x8 layers are refused (LiteRT's reference kernels do not
  give them the int64 arithmetic). The accumulator bound `sum |w| * 2^15 + |bias|` must
  stay below TFLite's 2^47 contract (and, for FULLY_CONNECTED, times m0 below 2^62).
- ADD/SUB: with `pot_scale_int16` false, or any scale not a power of two, int8's general
  scheme with left_shift 15. With power-of-two scales and `pot_scale_int16` (the schema's
  default), TFLite's POT kernel: `saturate16(a +- RoundingDivideByPOT(b, r))` for the
  input whose scale is 2^r times finer than the output's, expressed as qnn.add/qnn.sub
  with left_shift 1 and multipliers 1/2 (so the high multiply is exact) and 2^-r / 2.
  Operands broadcast (numpy rules): SUB is bit-exact with LiteRT's BroadcastSub16POTSlow;
  LiteRT 2.3 aborts on a broadcasting POT ADD in every resolver (its elementwise kernel
  checks matching sizes), so there npuc applies the same per-element rule.
- MUL: the int32 MultiplyByQuantizedMultiplier on `a * b`: `tflite`.
- AVERAGE_POOL_2D, MAX_POOL_2D, RESHAPE, CONCATENATION and the other data movement:
  the int8 converters (same parameters in and out; zero point 0 leaves no tie issue).
- QUANTIZE (float -> int16, or int8/int16 requantization) and DEQUANTIZE: as int8.

LOGISTIC, TANH, SOFTMAX: tflite_int16_luts; TRANSPOSE_CONV, BATCH_MATMUL, MEAN, DIV, the
activations, the stored-value ops and LiteRT's 16-bit refusals: tflite_int16_more.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType, i32, i64
from xdsl.ir import SSAValue

from npuc.dialects import qnn
from npuc.dialects.nn_base import shape_of
from npuc.tensors import to_dense

from . import tflite_ops as fops
from . import tflite_qops as qops
from .tflite import OpContext, Tensor, Unsupported, check_bias

LEFT_SHIFT_16BIT = 15
ACC_LIMIT = 1 << 47  # MultiplyByQuantizedMultiplier(int64_t, ...) assumes |x| < 2^47
REDUCED_CAP = 0x7FFF0000


def tflite64_multiplier(pair: tuple[int, int]) -> tuple[int, int]:
    """npuc (m0, shift) of TFLite's 64-bit MultiplyByQuantizedMultiplier for a Q31 (m0, shift).

    reduced = (m0 + 2^15) >> 16 (0x7FFF when m0 >= 0x7FFF0000); total_shift =
    15 - shift_tflite = shift - 16; the result is `half_up` rounding of acc * reduced / 2^total.
    """
    m0, shift = pair
    if m0 == 0:
        return 0, 0
    reduced = (m0 + (1 << 15)) >> 16 if m0 < REDUCED_CAP else 0x7FFF
    total = shift - 16
    if total < 1:
        raise Unsupported(f"16x8 requantization multiplier {m0} * 2^-{shift} is too large")
    return reduced, total


def is_16x8(ctx: OpContext) -> bool:
    """Whether the op's data input or output is an int16 tensor."""
    tensors = [ctx.out()]
    if ctx.op.inputs and ctx.has(0):
        tensors.append(ctx.tensor(0))
    return any(t.dtype == np.int16 for t in tensors)


def _check_int16(*tensors: Tensor) -> None:
    for t in tensors:
        if t.dtype != np.int16 or t.quant is None:
            raise Unsupported(f"tensor '{t.name}' is {t.type_name}; 16x8 kernels need int16")
        if t.quant.axis is not None and len(t.quant.scales) > 1:
            raise Unsupported(f"activation '{t.name}' is quantized per channel")
        if int(t.quant.zero_points[0]) != 0:
            raise Unsupported(f"int16 tensor '{t.name}' has zero point "
                              f"{int(t.quant.zero_points[0])}; TFLite needs 0")  # fmt: skip


def _bias(ctx: OpContext, index: int, required: bool) -> tuple[SSAValue | None, np.ndarray]:
    """The int64 bias as an i32 constant (exact), and its values (zeros when absent)."""
    if not ctx.has(index):
        if required:  # LiteRT's 16x8 conv Prepare checks has_bias too
            raise Unsupported(f"16x8 {ctx.op.op_type} without a bias")
        return None, np.zeros(1, np.int64)
    data = ctx.need_const(index, "the bias")
    name = ctx.tensor(index).name
    check_bias(ctx.tensor(index))
    if data.dtype != np.int64:
        # LiteRT's reference 16x8 kernels do not give int32 biases the int64 kernels'
        # results (measured); unverified arithmetic is not imported.
        raise Unsupported(f"16x8 bias '{name}' of type {ctx.tensor(index).type_name} "
                          "(int64 expected)")  # fmt: skip
    if np.any(np.abs(data) > np.iinfo(np.int32).max):
        raise Unsupported(f"int64 bias '{name}' has entries beyond int32 (qnn biases are i32)")
    op = qnn.ConstantOp.create(
        properties={"value": to_dense(data.astype(np.int32), i32), "name": StringAttr(name)},
        result_types=[TensorType(i32, list(data.shape))],
    )
    ctx.importer.block.add_op(op)
    return op.results[0], np.asarray(data, np.int64)


def _weight(ctx: OpContext, w: np.ndarray, source_axis: int) -> SSAValue:
    t = ctx.tensor(1)
    if t.quant is not None and np.any(np.asarray(t.quant.zero_points) != 0):
        raise Unsupported(f"16x8 weights '{t.name}' must be symmetric (zero point 0)")
    return qops._weight(ctx, w, source_axis)


def _rescale(
    ctx: OpContext,
    pairs: list[tuple[int, int]],
    w: np.ndarray,
    bias: np.ndarray,
    reduce: bool,
) -> dict:
    """Requantization properties of TFLite's 64-bit rescaling: `half_up` on the 15-bit
    reduced multiplier (`reduce`: conv) or on the Q31 one (fully connected)."""
    clamp = qops.activation_range(ctx, ctx.out())
    per_channel = np.abs(w.astype(np.int64)).reshape(w.shape[0], -1).sum(axis=1)
    bound = int((per_channel * (1 << 15) + np.abs(np.broadcast_to(bias, per_channel.shape))).max())
    if bound >= ACC_LIMIT:
        raise Unsupported(f"16x8 accumulator bound {bound} exceeds TFLite's 2^47")
    if reduce:
        pairs = [tflite64_multiplier(p) for p in pairs]
    elif bound * max(m for m, _ in pairs) >= 1 << 62:
        # npuc's wide requantization narrows larger products by magnitude, which is
        # exact for the odd-symmetric rules only.
        raise Unsupported(f"16x8 fully connected accumulator bound {bound} needs products "
                          "beyond 2^62 in half_up rescaling")  # fmt: skip
    props = qops.requant_props(pairs, clamp)
    props["rounding"] = StringAttr("half_up")
    return props


def _conv(ctx: OpContext, depthwise: bool) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    _check_int16(x_t, out)
    w, groups = fops.conv_weight(ctx, depthwise)
    weight = _weight(ctx, w, 3 if depthwise else 0)
    bias, wide = _bias(ctx, 2, required=True)
    pairs = qops.conv_multipliers(ctx, w.shape[0])
    props = fops.conv_props(ctx, w.shape[2:]) | {"groups": IntegerAttr(groups, i64)}
    props |= _rescale(ctx, pairs, w, wide, reduce=True)
    n, h, wd, c = out.shape
    y = ctx.emit(qnn.Conv2dOp, [ctx.nchw(ctx.value(0)), weight, bias], props,
                 result_types=[qops._out_type(ctx, [n, c, h, wd])])  # fmt: skip
    return ctx.nhwc(y)


def _fully_connected(ctx: OpContext) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    _check_int16(x_t, out)
    w = ctx.need_const(1, "the weights")
    weight = _weight(ctx, w, 0)
    bias, wide = _bias(ctx, 2, required=False)
    # LiteRT's 16x8 kernel multiplies the scales in double, per tensor too (conv's rule),
    # not in float32 as the int8 kernel's GetQuantizedConvolutionMultipler does.
    per_tensor = len(ctx.tensor(1).quant.scales) == 1
    pairs = qops.conv_multipliers(ctx, 1 if per_tensor else w.shape[0])
    k = w.shape[1]
    x = ctx.reshape(ctx.value(0), [int(np.prod(ctx.shape(0))) // k, k])
    rows = shape_of(x)[0]
    props = _rescale(ctx, pairs, w, wide, reduce=False)
    y = ctx.emit(qnn.FullyConnectedOp, [x, weight, bias], props,
                 result_types=[qops._out_type(ctx, [rows, w.shape[0]])])  # fmt: skip
    return ctx.reshape(y, out.shape)


def _pot_exponent(scale: float) -> int | None:
    """TFLite's CheckedLog2 in float32: round(log2(scale)) when within 1e-3 of an integer."""
    log2 = np.float32(np.log(np.float32(scale))) * (np.float32(1) / np.float32(np.log(2.0)))
    rounded = np.floor(np.abs(log2) + np.float32(0.5)) * np.sign(log2)
    return int(rounded) if abs(np.float32(log2 - rounded)) < np.float32(1e-3) else None


def _aligned(op_type: type) -> Callable[[OpContext], SSAValue]:
    def convert(ctx: OpContext) -> SSAValue:
        a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
        _check_int16(a_t, b_t, out)
        s_a, s_b, s_out = qops._scale(a_t), qops._scale(b_t), qops._scale(out)
        exps = [_pot_exponent(s) for s in (s_a, s_b, s_out)]
        pot = bool(ctx.opt("PotScaleInt16", True)) and all(e is not None for e in exps)
        clamp = qops.activation_range(ctx, out)
        if pot:
            lhs_r, rhs_r = exps[2] - exps[0], exps[2] - exps[1]  # right shifts, TFLite's -shift
            if lhs_r < 0 or rhs_r < 0 or (lhs_r and rhs_r):
                raise Unsupported(f"16-bit {ctx.op.op_type} with power-of-two scales needs "
                                  "one input at the output's scale, one no coarser")  # fmt: skip
            left, pair = 1, (1 << 30, 30)  # exact: (x << 1) * 2^30 / 2^31 = x
            lhs, rhs = (1 << 30, 31 + lhs_r), (1 << 30, 31 + rhs_r)
        else:
            twice_max = 2 * max(s_a, s_b)
            lhs = qops.tflite_multiplier(s_a / twice_max)
            rhs = qops.tflite_multiplier(s_b / twice_max)
            pair = qops.tflite_multiplier(twice_max / ((1 << LEFT_SHIFT_16BIT) * s_out))
            left = LEFT_SHIFT_16BIT
        props = qops.requant_props([pair], clamp) | {
            "left_shift": IntegerAttr(left, i64),
            "lhs_multiplier": IntegerAttr(lhs[0], i64), "lhs_shift": IntegerAttr(lhs[1], i64),
            "rhs_multiplier": IntegerAttr(rhs[0], i64), "rhs_shift": IntegerAttr(rhs[1], i64),
        }  # fmt: skip
        return qops._elementwise(ctx, op_type, props)

    return convert


def _mul(ctx: OpContext) -> SSAValue:
    a_t, b_t, out = ctx.tensor(0), ctx.tensor(1), ctx.out()
    _check_int16(a_t, b_t, out)
    pair = qops.tflite_multiplier(qops._scale(a_t) * qops._scale(b_t) / qops._scale(out))
    props = qops.requant_props([pair], qops.activation_range(ctx, out))
    return qops._elementwise(ctx, qnn.MulOp, props)


def _quantize(ctx: OpContext) -> SSAValue:
    x_t, out = ctx.tensor(0), ctx.out()
    if x_t.dtype == np.float32:
        return ctx.emit(qnn.QuantizeOp, [ctx.value(0)], result_types=[qops._out_type(ctx)])
    for t in (x_t, out):
        if t.dtype not in (np.int8, np.int16) or t.quant is None or len(t.quant.scales) > 1:
            raise Unsupported(f"QUANTIZE of '{t.name}' ({t.type_name}) not supported")
    pair = qops.tflite_multiplier(qops._scale(x_t) / qops._scale(out))
    q = qops.quantized_type(out)
    return ctx.emit(qnn.RequantizeOp, [ctx.value(0)], qops.requant_props([pair], (q.qmin, q.qmax)),
                    result_types=[qops._out_type(ctx)])  # fmt: skip


def _zero_point_free(convert: Callable) -> Callable[[OpContext], SSAValue]:
    """An int8 converter reused at 16 bits after TFLite's int16 checks."""

    def wrapped(ctx: OpContext) -> SSAValue:
        _check_int16(ctx.tensor(0), ctx.out())
        return convert(ctx)

    return wrapped


CONVERTERS: dict[str, Callable] = {
    "CONV_2D": lambda ctx: _conv(ctx, depthwise=False),
    "DEPTHWISE_CONV_2D": lambda ctx: _conv(ctx, depthwise=True),
    "FULLY_CONNECTED": _fully_connected,
    "ADD": _aligned(qnn.AddOp),
    "SUB": _aligned(qnn.SubOp),
    "MUL": _mul,
    "AVERAGE_POOL_2D": _zero_point_free(qops._pool(average=True)),
    "MAX_POOL_2D": _zero_point_free(qops._pool(average=False)),
    "QUANTIZE": _quantize,
}


def install(converters: dict[str, Callable]) -> None:
    """Route 16x8 operators of `converters` (the int8 table) to the converters here."""
    for name, convert16 in CONVERTERS.items():
        convert8 = converters[name]

        def dispatch(ctx: OpContext, convert8=convert8, convert16=convert16) -> SSAValue:
            return convert16(ctx) if is_16x8(ctx) else convert8(ctx)

        converters[name] = dispatch


install(qops.CONVERTERS)

# LOGISTIC, TANH, SOFTMAX; TRANSPOSE_CONV, BATCH_MATMUL and the rest (each installs itself)
from . import tflite_int16_luts, tflite_int16_more  # noqa: E402, F401
