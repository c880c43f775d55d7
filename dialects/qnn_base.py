"""Shared base of the `qnn` dialect: the op base class and the requantization properties."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import I64, IntegerAttr, StringAttr, TensorType, i32
from xdsl.ir import SSAValue
from xdsl.irdl import opt_prop_def, prop_def
from xdsl.utils.exceptions import VerifyException

from npuc.element_types import type_shape_mismatch
from npuc.integer import ROUNDING_MODES

from .arrays import I64Array
from .nn_base import NNOperation, shape_of
from .nn_shapes import Props, Shape, Shapes
from .quant_types import UniformQuantizedType

QTensor = TensorType.constr(UniformQuantizedType)
I32Tensor = TensorType.constr(i32)


def qtype(value: SSAValue) -> UniformQuantizedType:
    ty = value.type
    assert isinstance(ty, TensorType) and isinstance(ty.element_type, UniformQuantizedType)
    return ty.element_type


class QNNOperation(NNOperation):
    """Base of every `qnn` op: quantized operands and results, optionally named.

    SHAPE_RULE names the `nn` op whose shape inference this op shares.
    """

    SHAPE_RULE: ClassVar[type[NNOperation] | None] = None

    @classmethod
    def infer_shapes(cls, operand_shapes: Shapes, props: Props) -> list[Shape] | None:
        return cls.SHAPE_RULE.infer_shapes(operand_shapes, props) if cls.SHAPE_RULE else None

    def verify_(self) -> None:
        super().verify_()
        for value in (*self.operands, *self.results):
            reason = type_shape_mismatch(value.type)
            if reason is not None:
                raise VerifyException(f"'{self.name}': {reason}")

    def verify_per_tensor(self) -> None:
        """Ops with one scalar multiplier need per-tensor activations."""
        for value in (*self.operands, *self.results):
            ty = value.type
            if (
                isinstance(ty, TensorType)
                and isinstance(ty.element_type, UniformQuantizedType)
                and ty.element_type.per_axis
            ):
                raise VerifyException(f"'{self.name}': operands must be quantized per tensor")

    def same_type_as_input(self, *values: SSAValue) -> None:
        """Ops that move data keep the quantization of their input."""
        want = self.operands[0].type
        assert isinstance(want, TensorType)
        for value in values:
            ty = value.type
            assert isinstance(ty, TensorType)
            if ty.element_type != want.element_type:
                raise VerifyException(
                    f"'{self.name}': result element type {ty.element_type} must equal the "
                    f"input's {want.element_type} (insert qnn.requantize to change it)"
                )


class Requantizing(QNNOperation):
    """An op whose i32/i64 accumulator is rescaled to the output type.

    out = saturate(zero_point_out + requantize(acc, multiplier, shift, rounding)),
    then clamped to [clamp_min, clamp_max] (the fused activation, in storage
    units). `multiplier`/`shift` hold one value, or one per output channel.
    """

    multiplier = prop_def(I64Array)
    shift = prop_def(I64Array)
    rounding = opt_prop_def(StringAttr, StringAttr("half_away_from_zero"))
    clamp_min = opt_prop_def(IntegerAttr[I64])
    clamp_max = opt_prop_def(IntegerAttr[I64])

    def output_channels(self) -> int:
        """How many per-channel multipliers the op accepts besides one."""
        return 1

    def channel_axis(self) -> int:
        """The result axis that per-channel multipliers index (1: NCHW channels, [N, O] columns)."""
        return 1

    def verify_(self) -> None:
        super().verify_()
        multipliers, shifts = self.multiplier.get_values(), self.shift.get_values()
        if len(multipliers) != len(shifts):
            raise VerifyException(f"'{self.name}': multiplier and shift must have one length")
        channels = self.output_channels()
        if len(multipliers) not in (1, channels):
            want = "1 multiplier" if channels == 1 else f"1 or {channels} multipliers"
            raise VerifyException(f"'{self.name}': needs {want}, got {len(multipliers)}")
        check_multipliers(self.name, multipliers, shifts)
        if self.rounding.data not in ROUNDING_MODES:
            raise VerifyException(
                f"'{self.name}': rounding must be one of {', '.join(ROUNDING_MODES)}"
            )
        out = qtype(self.results[0])
        lo = self.clamp_min.value.data if self.clamp_min is not None else out.qmin
        hi = self.clamp_max.value.data if self.clamp_max is not None else out.qmax
        if not out.qmin <= lo <= hi <= out.qmax:
            raise VerifyException(
                f"'{self.name}': clamp [{lo}, {hi}] must lie within the output storage range "
                f"[{out.qmin}, {out.qmax}]"
            )

    def clamp_bounds(self) -> tuple[int, int]:
        out = qtype(self.results[0])
        lo = self.clamp_min.value.data if self.clamp_min is not None else out.qmin
        hi = self.clamp_max.value.data if self.clamp_max is not None else out.qmax
        return lo, hi


class PerTensorRequantizing(Requantizing):
    """A requantizing op whose one multiplier needs per-tensor operands and result."""

    def verify_(self) -> None:
        super().verify_()
        self.verify_per_tensor()


def check_multipliers(op_name: str, multipliers: Sequence[int], shifts: Sequence[int]) -> None:
    if any(not 0 <= m < 2**31 for m in multipliers):
        raise VerifyException(f"'{op_name}': multipliers must be in [0, 2^31)")
    if any(not -31 <= s <= 62 for s in shifts):
        raise VerifyException(f"'{op_name}': shifts must be in [-31, 62]")


def output_channels_of(value: SSAValue, axis: int = 1) -> int:
    shape = shape_of(value)
    return shape[axis] if len(shape) > axis else 1
