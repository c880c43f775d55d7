"""Attributes and types of the `npu` dialect: tensor operands, regions, I/O descriptors, state
pairs, tokens.

`#npu.tensor<"sram", 128, [1, 16, 8, 8], i8>` is a view of `shape` elements
at byte offset 128 of the `sram` region, row-major; a fifth field gives
element strides: `#npu.tensor<"sram", 128, [1, 16, 8, 8], [2048, 1, 256, 16], i8>`
(NHWC storage of an NCHW view), stride 0 broadcasts. Element types: i8, u8,
i16, u16, i32, i64, f32. Inside an instruction's custom form the prefix
`#npu.tensor` is dropped: `ifm <"sram", 128, [1, 16, 8, 8], i8>`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FloatData,
    IntAttr,
    StringAttr,
    TensorType,
    i8,
)
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from npuc.printing import string_literal

from .npu_isa import (
    DTYPES,
    ConstantStream,
    IODesc,
    ISAError,
    Region,
    StatePair,
    TensorRef,
    row_major,
)
from .quant_types import float_literal


@irdl_attr_definition
class TokenType(ParametrizedAttribute, TypeAttribute):
    """Completion of one instruction; an instruction waits for the tokens it takes."""

    name = "npu.token"


def _ints(values: Sequence[int]) -> ArrayAttr[IntAttr]:
    return ArrayAttr([IntAttr(int(v)) for v in values])


def _parse_ints(parser: AttrParser) -> list[int]:
    return parser.parse_comma_separated_list(AttrParser.Delimiter.SQUARE, parser.parse_integer)


@irdl_attr_definition
class TensorAttr(ParametrizedAttribute):
    """A strided view of a memory region: every data operand of every instruction."""

    name = "npu.tensor"

    region: StringAttr
    offset: IntAttr
    shape: ArrayAttr[IntAttr]
    strides: ArrayAttr[IntAttr]
    dtype: StringAttr

    @staticmethod
    def get(
        region: str,
        offset: int,
        shape: Sequence[int],
        dtype: str,
        strides: Sequence[int] | None = None,
    ) -> TensorAttr:
        """A view with row-major strides unless `strides` are given."""
        strides = row_major(shape) if strides is None else strides
        return TensorAttr(
            StringAttr(region), IntAttr(offset), _ints(shape), _ints(strides), StringAttr(dtype)
        )

    @staticmethod
    def from_ref(t: TensorRef) -> TensorAttr:
        return _tensor_attr(t)

    def ref(self) -> TensorRef:
        return TensorRef(
            self.region.data,
            self.offset.data,
            tuple(d.data for d in self.shape),
            tuple(s.data for s in self.strides),
            self.dtype.data,
        )

    def verify(self) -> None:
        try:
            self.ref().check()
        except ISAError as e:
            raise VerifyException(f"#npu.tensor: {e}") from None

    def parameters_text(self) -> str:
        """`<"region", offset, [shape], dtype>`, the strides before the dtype unless
        row-major: the attribute without its `#npu.tensor` (an instruction's operand)."""
        shape = [d.data for d in self.shape]
        strides = tuple(s.data for s in self.strides)
        text = f"<{string_literal(self.region.data)}, {self.offset.data}, "
        text += f"[{', '.join(map(str, shape))}], "
        if strides != row_major(shape):
            text += f"[{', '.join(map(str, strides))}], "
        return f"{text}{self.dtype.data}>"

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(self.parameters_text())

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            region = parser.parse_str_literal(" for the region name")
            parser.parse_punctuation(",")
            offset = parser.parse_integer(allow_negative=False)
            parser.parse_punctuation(",")
            shape = _parse_ints(parser)
            parser.parse_punctuation(",")
            strides: Sequence[int] | None = None
            if parser.parse_optional_punctuation("[") is not None:
                listed = [parser.parse_integer()]
                while parser.parse_optional_punctuation(",") is not None:
                    listed.append(parser.parse_integer())
                strides = listed
                parser.parse_punctuation("]")
                parser.parse_punctuation(",")
            start = parser.pos
            dtype = parser.parse_identifier(" for the element type")
            if dtype not in DTYPES:
                parser.raise_error(
                    f"expected an element type ({', '.join(DTYPES)})", start, parser.pos
                )
        if strides is None:
            strides = row_major(shape)
        return [
            StringAttr(region),
            IntAttr(offset),
            _ints(shape),
            _ints(strides),
            StringAttr(dtype),
        ]


# Attributes are immutable values: a program's instructions name few distinct views (MobileNetV2
# tiled for size: 12,348 operands, 1,913 views), so each is built and verified once.
@lru_cache(maxsize=4096)
def _tensor_attr(t: TensorRef) -> TensorAttr:
    return TensorAttr.get(t.region, t.offset, t.shape, t.dtype, t.strides)


@irdl_attr_definition
class RegionAttr(ParametrizedAttribute):
    """`#npu.region<"constants", 4096, "flash">`: a region's size in bytes and its memory."""

    name = "npu.region"

    kind: StringAttr
    size: IntAttr
    memory: StringAttr

    @staticmethod
    def from_region(r: Region) -> RegionAttr:
        return RegionAttr(StringAttr(r.kind), IntAttr(r.size), StringAttr(r.memory))

    def region(self) -> Region:
        return Region(self.kind.data, self.size.data, self.memory.data)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.kind.data)
            printer.print_string(f", {self.size.data}, ")
            printer.print_string_literal(self.memory.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            kind = parser.parse_str_literal(" for the region name")
            parser.parse_punctuation(",")
            size = parser.parse_integer(allow_negative=False)
            parser.parse_punctuation(",")
            memory = parser.parse_str_literal(" for the memory name")
        return [StringAttr(kind), IntAttr(size), StringAttr(memory)]


@irdl_attr_definition
class StreamAttr(ParametrizedAttribute):
    """`#npu.stream<"rice", 1024, 864, i8>`: bytes [1024, 1888) of the constants region hold
    i8 values, stored in the binary encoded with the codec named (dialects/constant_codec.py)."""

    name = "npu.stream"

    codec: StringAttr
    offset: IntAttr
    size: IntAttr
    dtype: StringAttr

    @staticmethod
    def from_stream(s: ConstantStream) -> StreamAttr:
        return StreamAttr(
            StringAttr(s.codec), IntAttr(s.offset), IntAttr(s.size), StringAttr(s.dtype)
        )

    def stream(self) -> ConstantStream:
        return ConstantStream(self.offset.data, self.size.data, self.dtype.data, self.codec.data)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.codec.data)
            printer.print_string(f", {self.offset.data}, {self.size.data}, {self.dtype.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            codec = parser.parse_str_literal(" for the codec")
            parser.parse_punctuation(",")
            offset = parser.parse_integer(allow_negative=False)
            parser.parse_punctuation(",")
            size = parser.parse_integer(allow_negative=False)
            parser.parse_punctuation(",")
            start = parser.pos
            dtype = parser.parse_identifier(" for the element type")
            if dtype not in DTYPES:
                parser.raise_error(
                    f"expected an element type ({', '.join(DTYPES)})", start, parser.pos
                )
        return [StringAttr(codec), IntAttr(offset), IntAttr(size), StringAttr(dtype)]


@irdl_attr_definition
class IOAttr(ParametrizedAttribute):
    """A model input or output: `#npu.io<"x", #npu.tensor<...>, 0.5:-3>` (no scale: unquantized)."""

    name = "npu.io"

    io_name: StringAttr
    tensor: TensorAttr
    scale: FloatData
    zero_point: IntAttr

    @staticmethod
    def from_desc(d: IODesc) -> IOAttr:
        return IOAttr(
            StringAttr(d.name),
            TensorAttr.from_ref(d.tensor),
            FloatData(d.scale),
            IntAttr(d.zero_point),
        )

    def desc(self) -> IODesc:
        return IODesc(self.io_name.data, self.tensor.ref(), self.scale.data, self.zero_point.data)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.io_name.data)
            printer.print_string(", ")
            printer.print_attribute(self.tensor)
            if self.scale.data or self.zero_point.data:
                printer.print_string(f", {float_literal(self.scale.data)}:{self.zero_point.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            name = parser.parse_str_literal(" for the name")
            parser.parse_punctuation(",")
            start = parser.pos
            tensor = parser.parse_attribute()
            if not isinstance(tensor, TensorAttr):
                parser.raise_error("expected an #npu.tensor", start, parser.pos)
            scale, zero_point = 0.0, 0
            if parser.parse_optional_punctuation(",") is not None:
                scale = float(parser.parse_number())
                parser.parse_punctuation(":")
                zero_point = parser.parse_integer()
        return [StringAttr(name), tensor, FloatData(scale), IntAttr(zero_point)]


@irdl_attr_definition
class StateAttr(ParametrizedAttribute):
    """A state pair: `#npu.state<1 -> 2, dense<-128> : tensor<1280xi8>>`: input 1 takes
    output 2 of the previous call, and on the first call the initial value, given as the
    input tensor's stored bytes (a rank-1 i8 tensor, like the program's constants)."""

    name = "npu.state"

    input: IntAttr
    output: IntAttr
    initial: DenseIntOrFPElementsAttr

    @staticmethod
    def from_pair(pair: StatePair) -> StateAttr:
        ty = TensorType(i8, [len(pair.initial)])
        return StateAttr(
            IntAttr(pair.input),
            IntAttr(pair.output),
            DenseIntOrFPElementsAttr(ty, BytesAttr(pair.initial)),
        )

    def pair(self) -> StatePair:
        from npuc.tensors import from_dense

        ty = self.initial.type
        if ty.get_element_type() != i8 or len(ty.get_shape()) != 1:
            raise VerifyException("#npu.state: the initial value must be a rank-1 i8 tensor")
        data = np.ascontiguousarray(from_dense(self.initial)).tobytes()
        return StatePair(self.input.data, self.output.data, data)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(f"{self.input.data} -> {self.output.data}, ")
            printer.print_attribute(self.initial)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            source = parser.parse_integer(allow_negative=False)
            parser.parse_punctuation("->")
            result = parser.parse_integer(allow_negative=False)
            parser.parse_punctuation(",")
            start = parser.pos
            initial = parser.parse_attribute()
            if not isinstance(initial, DenseIntOrFPElementsAttr):
                parser.raise_error("expected the initial value as dense<...>", start, parser.pos)
        return [IntAttr(source), IntAttr(result), initial]
