"""The `mem` dialect: where every buffer lives once memory is planned.

`#mem.buffer<"activations", 1024, 3136, live [4, 9]>` says a value's bytes are
`[1024, 1024 + 3136)` of region `@activations`, reserved over schedule steps 4
to 9 (steps number the entry function's non-constant ops; the range is absent
for regions whose buffers live for the whole call). It is attached to each
value-producing op as the discardable attribute `mem.buffer` (an array for
multi-result ops) and to function arguments and results (arg/res attrs).

`mem.region @activations {memory = "sram", size = ..., alignment = ...}` is a
module-level symbol per region, with the bounds the planner computed. See
docs/memory-planning.md.
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolNameConstraint,
    i64,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    traits_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from npuc.element_types import OpVerifyException

BUFFER_ATTR = "mem.buffer"

I64Attr = IntegerAttr.constr(type=i64)


@irdl_attr_definition
class BufferAttr(ParametrizedAttribute):
    """A value's bytes: `size` bytes at `offset` in `region`, reserved over steps [start, end].

    `start = end = -1` means no live range (the buffer lives for the whole call).
    """

    name = "mem.buffer"

    region: StringAttr
    offset: IntAttr
    size: IntAttr
    start: IntAttr
    end: IntAttr

    def __init__(self, region: str, offset: int, size: int, live: tuple[int, int] | None = None):
        start, end = live if live is not None else (-1, -1)
        super().__init__(
            StringAttr(region), IntAttr(offset), IntAttr(size), IntAttr(start), IntAttr(end)
        )

    @property
    def live(self) -> tuple[int, int] | None:
        if self.start.data < 0:
            return None
        return self.start.data, self.end.data

    def verify(self) -> None:
        if self.offset.data < 0 or self.size.data < 0:
            raise VerifyException("mem.buffer offset and size must be non-negative")
        start, end = self.start.data, self.end.data
        if (start < 0) != (end < 0) or (start >= 0 and start > end) or min(start, end) < -1:
            raise VerifyException(f"mem.buffer live range [{start}, {end}] is not a valid range")

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.region.data)
            printer.print_string(f", {self.offset.data}, {self.size.data}")
            if self.live is not None:
                printer.print_string(f", live [{self.start.data}, {self.end.data}]")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            region = parser.parse_str_literal()
            parser.parse_punctuation(",")
            offset = parser.parse_integer(allow_boolean=False)
            parser.parse_punctuation(",")
            size = parser.parse_integer(allow_boolean=False)
            start = end = -1
            if parser.parse_optional_punctuation(","):
                parser.parse_keyword("live")
                parser.parse_punctuation("[")
                start = parser.parse_integer(allow_boolean=False)
                parser.parse_punctuation(",")
                end = parser.parse_integer(allow_boolean=False)
                parser.parse_punctuation("]")
        return [StringAttr(region), IntAttr(offset), IntAttr(size), IntAttr(start), IntAttr(end)]


@irdl_op_definition
class RegionOp(IRDLOperation):
    """A memory region: `size` bytes in target memory `memory`, every offset `alignment`-aligned.

    `lower_bound` (the peak of live bytes in the planned order) and `naive` (the sum of
    every buffer, no reuse) are the planner's bounds, kept for reports. The first region
    of a module also checks every `mem.buffer` of the module against the regions.
    """

    name = "mem.region"

    sym_name = prop_def(SymbolNameConstraint())
    memory = prop_def(StringAttr)
    size = prop_def(I64Attr)
    alignment = prop_def(I64Attr)
    lower_bound = opt_prop_def(I64Attr)
    naive = opt_prop_def(I64Attr)

    traits = traits_def(SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name attr-dict"

    def __init__(
        self,
        name: str,
        memory: str,
        size: int,
        alignment: int,
        lower_bound: int | None = None,
        naive: int | None = None,
    ):
        props: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "memory": StringAttr(memory),
            "size": IntegerAttr(size, i64),
            "alignment": IntegerAttr(alignment, i64),
        }
        if lower_bound is not None:
            props["lower_bound"] = IntegerAttr(lower_bound, i64)
        if naive is not None:
            props["naive"] = IntegerAttr(naive, i64)
        super().__init__(properties=props)

    @property
    def region_name(self) -> str:
        return self.sym_name.data

    def verify_(self) -> None:
        name, size, align = self.region_name, self.size.value.data, self.alignment.value.data
        if size < 0:
            raise VerifyException(f"region @{name}: size must be non-negative, got {size}")
        if align < 1 or align & (align - 1):
            raise VerifyException(f"region @{name}: alignment must be a power of two, got {align}")
        if size % align:
            raise VerifyException(f"region @{name}: size {size} is not a multiple of {align}")
        if self.lower_bound is not None and self.lower_bound.value.data > size:
            raise VerifyException(
                f"region @{name}: lower bound {self.lower_bound.value.data} exceeds size {size}"
            )
        if self.naive is not None and self.naive.value.data < size:
            raise VerifyException(
                f"region @{name}: naive size {self.naive.value.data} is below size {size}"
            )
        module = self.parent_op()
        if isinstance(module, ModuleOp):
            regions = [op for op in module.ops if isinstance(op, RegionOp)]
            if regions[0] is self:
                named = [r for r in regions if isinstance(r.properties.get("sym_name"), StringAttr)]
                verify_buffers(module, {r.region_name: r for r in named})


def buffer_list(attr: Attribute | None) -> list[BufferAttr] | None:
    """The buffers an op's `mem.buffer` attribute holds (one per result), None if malformed."""
    if isinstance(attr, BufferAttr):
        return [attr]
    if isinstance(attr, ArrayAttr) and all(isinstance(a, BufferAttr) for a in attr.data):
        return list(attr.data)
    return None


def _entry_buffers(attrs: ArrayAttr[DictionaryAttr] | None) -> Iterator[Attribute | None]:
    for entry in attrs.data if attrs is not None else ():
        yield entry.data.get(BUFFER_ATTR)


def module_buffers(module: ModuleOp) -> Iterator[tuple[Operation, str, BufferAttr]]:
    """(owner op, what, buffer) for every planned value of the module; raises on malformed ones."""
    for op in module.walk():
        if isinstance(op, FuncOp):
            for kind, attrs in (("argument", op.arg_attrs), ("result", op.res_attrs)):
                for i, attr in enumerate(_entry_buffers(attrs)):
                    if attr is None:
                        continue
                    if not isinstance(attr, BufferAttr):
                        raise OpVerifyException(
                            op,
                            f"{kind} {i} of @{op.sym_name.data}: mem.buffer must be a #mem.buffer",
                        )
                    yield op, f"{kind} {i} of @{op.sym_name.data}", attr
        attr = op.attributes.get(BUFFER_ATTR)
        if attr is None:
            continue
        buffers = buffer_list(attr)
        if buffers is None or len(buffers) != len(op.results):
            raise OpVerifyException(
                op,
                f"'{op.name}': mem.buffer must be a #mem.buffer per result "
                f"({len(op.results)}), an array for several results",
            )
        for i, b in enumerate(buffers):
            yield op, f"result {i} of '{op.name}'", b


def verify_buffers(module: ModuleOp, regions: dict[str, RegionOp]) -> None:
    """Every buffer names an existing region, lies inside it and is aligned."""
    for op, what, b in module_buffers(module):
        region = regions.get(b.region.data)
        if region is None:
            raise OpVerifyException(op, f"{what}: no mem.region @{b.region.data}")
        try:  # a later region is verified after this check: it may lack a property
            size, align = region.size.value.data, region.alignment.value.data
        except (KeyError, AttributeError):
            raise VerifyException(
                f"region @{b.region.data}: needs an integer size and alignment"
            ) from None
        off, n = b.offset.data, b.size.data
        if off + n > size:
            raise OpVerifyException(
                op,
                f"{what}: bytes [{off}, {off + n}) exceed region @{b.region.data} of {size} bytes",
            )
        if off % align:
            raise OpVerifyException(
                op, f"{what}: offset {off} in @{b.region.data} is not {align}-aligned"
            )


MEM = Dialect("mem", [RegionOp], [BufferAttr])
