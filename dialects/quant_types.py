"""Quantized element types, shared by every integer IR level (qnn, tile, mem, npu).

`!qnn.uniform<i8:f32, 0.25:-3>` stores integers q in i8 that stand for the
reals `0.25 * (q - (-3))`. Per-axis types carry one scale and zero point per
index of one dimension: `!qnn.uniform<i8:f32:0, {0.1, 0.2:1}>` (an omitted
zero point is 0). A narrow storage range is written `i8<-127:127>`, as in
MLIR's quant dialect. Storage types: i4, i8, u8, i16, u16, i32.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, Float32Type, FloatData, IntAttr, f32
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from npuc.element_types import ShapedElementType

STORAGE_TYPES = {"i4": (4, True), "i8": (8, True), "u8": (8, False), "i16": (16, True)}
STORAGE_TYPES |= {"u16": (16, False), "i32": (32, True)}


def float_literal(value: float) -> str:
    """Shortest text that parses back to exactly `value` and is an MLIR float literal."""
    text = repr(float(value))
    mantissa, e, exponent = text.partition("e")
    return f"{mantissa}.0{e}{exponent}" if e and "." not in mantissa else text


def storage_range(bits: int, signed: bool) -> tuple[int, int]:
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def _int_attrs(values: Sequence[int]) -> list[IntAttr]:
    """One IntAttr per value, each distinct value built once (per-axis zero points are
    mostly one value repeated)."""
    made: dict[int, IntAttr] = {}
    for v in values:
        if v not in made:
            made[v] = IntAttr(v)
    return [made[v] for v in values]


@irdl_attr_definition
class UniformQuantizedType(ParametrizedAttribute, TypeAttribute, ShapedElementType):
    """An integer storage type with an affine map to f32: real = scale * (q - zero_point)."""

    name = "qnn.uniform"

    storage_bits: IntAttr
    storage_signed: IntAttr
    storage_min: IntAttr
    storage_max: IntAttr
    expressed_type: Attribute
    axis: IntAttr
    scales: ArrayAttr[FloatData]
    zero_points: ArrayAttr[IntAttr]

    def __init__(
        self,
        storage: str,
        scales: float | Sequence[float],
        zero_points: int | Sequence[int] = 0,
        *,
        axis: int | None = None,
        storage_min: int | None = None,
        storage_max: int | None = None,
        expressed_type: Attribute = f32,
    ):
        if storage not in STORAGE_TYPES:
            raise ValueError(f"storage type must be one of {', '.join(STORAGE_TYPES)}")
        bits, signed = STORAGE_TYPES[storage]
        lo, hi = storage_range(bits, signed)
        scale_list = (
            [float(scales)] if isinstance(scales, int | float) else [float(s) for s in scales]
        )
        if isinstance(zero_points, int | np.integer):
            zp_list = [int(zero_points)] * len(scale_list)
        else:
            zp_list = [int(z) for z in zero_points]
        super().__init__(
            IntAttr(bits),
            IntAttr(int(signed)),
            IntAttr(lo if storage_min is None else storage_min),
            IntAttr(hi if storage_max is None else storage_max),
            expressed_type,
            IntAttr(-1 if axis is None else axis),
            ArrayAttr([FloatData(s) for s in scale_list]),
            ArrayAttr(_int_attrs(zp_list)),
        )

    def sliced(self, lo: int, hi: int) -> UniformQuantizedType:
        """This per-axis type with the scales and zero points of indices lo..hi-1 along its
        axis (the parameter attributes shared, not built again: a tile's type is made often)."""
        assert self.per_axis and 0 <= lo < hi <= len(self.scales)
        return UniformQuantizedType.new(
            [
                self.storage_bits,
                self.storage_signed,
                self.storage_min,
                self.storage_max,
                self.expressed_type,
                self.axis,
                ArrayAttr(self.scales.data[lo:hi]),
                ArrayAttr(self.zero_points.data[lo:hi]),
            ]
        )

    # ------------------------------------------------------------------ queries

    @property
    def storage(self) -> str:
        return f"{'i' if self.storage_signed.data else 'u'}{self.storage_bits.data}"

    @property
    def per_axis(self) -> bool:
        return self.axis.data >= 0

    @property
    def qmin(self) -> int:
        return self.storage_min.data

    @property
    def qmax(self) -> int:
        return self.storage_max.data

    def scale_values(self) -> tuple[float, ...]:
        return tuple(s.data for s in self.scales.data)

    def zero_point_values(self) -> tuple[int, ...]:
        return tuple(z.data for z in self.zero_points.data)

    @property
    def scale(self) -> float:
        """The scale of a per-tensor type."""
        assert not self.per_axis
        return self.scales.data[0].data

    @property
    def zero_point(self) -> int:
        """The zero point of a per-tensor type."""
        assert not self.per_axis
        return self.zero_points.data[0].data

    def storage_dtype(self) -> np.dtype:
        """The numpy dtype that holds values of this type (i4 lives in int8)."""
        bits = max(8, self.storage_bits.data)
        return np.dtype(f"{'i' if self.storage_signed.data else 'u'}{bits // 8}")

    def broadcast_params(self, rank: int) -> tuple[np.ndarray, np.ndarray]:
        """Scales (f64) and zero points (i64) shaped to broadcast against a rank-`rank` tensor."""
        scales = np.array(self.scale_values(), np.float64)
        zps = np.array(self.zero_point_values(), np.int64)
        if self.per_axis:
            shape = [1] * rank
            shape[self.axis.data] = -1
            return scales.reshape(shape), zps.reshape(shape)
        return scales.reshape(()), zps.reshape(())

    # ------------------------------------------------------------------ verification

    def shape_mismatch(self, shape: Sequence[int] | None) -> str | None:
        if not self.per_axis:
            return None
        axis = self.axis.data
        if shape is None:
            return f"a per-axis type (axis {axis}) must be the element type of a tensor"
        if axis >= len(shape):
            return f"quantization axis {axis} is out of range for a tensor of rank {len(shape)}"
        size = shape[axis]
        if size >= 0 and len(self.scales) != size:
            return f"{len(self.scales)} scales do not match dimension {axis} of size {size}"
        return None

    def verify(self) -> None:
        bits, signed = self.storage_bits.data, bool(self.storage_signed.data)
        if (bits, signed) not in STORAGE_TYPES.values():
            raise VerifyException(f"unsupported storage type {self.storage}")
        lo, hi = storage_range(bits, signed)
        if not lo <= self.qmin < self.qmax <= hi:
            raise VerifyException(
                f"storage range [{self.qmin}, {self.qmax}] must lie within {self.storage}'s "
                f"[{lo}, {hi}] and be non-empty"
            )
        if not isinstance(self.expressed_type, Float32Type):
            raise VerifyException("the expressed type must be f32")
        scales, zps = self.scale_values(), self.zero_point_values()
        if not scales or len(scales) != len(zps):
            raise VerifyException("needs one zero point per scale, and at least one scale")
        if not self.per_axis and (len(scales) != 1 or self.axis.data != -1):
            raise VerifyException("a per-tensor type has exactly one scale")
        for s in scales:
            if not (s > 0 and math.isfinite(s)):
                raise VerifyException(f"scale must be positive and finite, got {s}")
        for z in zps:
            if not self.qmin <= z <= self.qmax:
                raise VerifyException(
                    f"zero point {z} is outside the storage range [{self.qmin}, {self.qmax}]"
                )

    # ------------------------------------------------------------------ syntax

    def print_parameters(self, printer: Printer) -> None:
        bits, signed = self.storage_bits.data, bool(self.storage_signed.data)
        storage = self.storage
        if (self.qmin, self.qmax) != storage_range(bits, signed):
            storage += f"<{self.qmin}:{self.qmax}>"
        pairs = [
            float_literal(s) if z == 0 else f"{float_literal(s)}:{z}"
            for s, z in zip(self.scale_values(), self.zero_point_values(), strict=True)
        ]
        with printer.in_angle_brackets():
            printer.print_string(f"{storage}:")
            printer.print_attribute(self.expressed_type)
            if self.per_axis:
                printer.print_string(f":{self.axis.data}, {{{', '.join(pairs)}}}")
            else:
                printer.print_string(f", {pairs[0]}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            start = parser.pos
            storage = parser.parse_identifier()
            if storage not in STORAGE_TYPES:
                parser.raise_error(
                    f"expected a storage type ({', '.join(STORAGE_TYPES)})", start, parser.pos
                )
            bits, signed = STORAGE_TYPES[storage]
            lo, hi = storage_range(bits, signed)
            if parser.parse_optional_punctuation("<"):
                lo = parser.parse_integer()
                parser.parse_punctuation(":")
                hi = parser.parse_integer()
                parser.parse_punctuation(">")
            parser.parse_punctuation(":")
            expressed = parser.parse_type()
            axis = -1
            if parser.parse_optional_punctuation(":"):
                axis = parser.parse_integer(allow_negative=False)
            parser.parse_punctuation(",")

            def scale_and_zero_point() -> tuple[float, int]:
                scale = float(parser.parse_number())
                zp = parser.parse_integer() if parser.parse_optional_punctuation(":") else 0
                return scale, zp

            if axis >= 0:
                pairs = parser.parse_comma_separated_list(
                    AttrParser.Delimiter.BRACES, scale_and_zero_point
                )
            else:
                pairs = [scale_and_zero_point()]
        return [
            IntAttr(bits),
            IntAttr(int(signed)),
            IntAttr(lo),
            IntAttr(hi),
            expressed,
            IntAttr(axis),
            ArrayAttr([FloatData(s) for s, _ in pairs]),
            ArrayAttr([IntAttr(z) for _, z in pairs]),
        ]
