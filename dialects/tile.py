"""The `tile` dialect: regions of tensors, DMA between memories, and assembling tiles.

After the `tile` pass a tiled layer is a sequence of ordinary `nn`/`qnn` ops on
tile-sized tensors joined by these ops (value semantics throughout):

- `tile.slice %x {offsets}`: a view of a region of `%x` (no copy, same memory);
- `tile.load %x {offsets, from, to}`: a DMA of a region of `%x` into memory `to`;
- `tile.empty`: an uninitialised buffer that `tile.insert`/`tile.store` fill;
- `tile.insert %t into %d {offsets}`: `%d` with a region replaced by `%t`;
- `tile.store %t into %d {offsets, from, to}`: the same, as a DMA into memory `to`.

A region's size is the shape of the smaller tensor (the slice's result, the
inserted tile), so offsets are the only index data. Memory contract: an op
result that lives in a memory other than the target's activation arena carries
a `to` string naming that memory; results without it live in the arena.
A per-axis quantized tensor keeps its element type under slicing except along
its quantized axis, where the scales and zero points are sliced with the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .arrays import I64Array
from .quant_types import UniformQuantizedType

LAYER_ATTR = "tile.layer"
PART_ATTR = "tile.part"


def region_element_type(
    element: Attribute, offsets: Sequence[int], sizes: Sequence[int]
) -> Attribute:
    """The element type of the region [offsets, offsets + sizes) of a tensor of `element`s.

    Only a per-axis quantized type changes: its scales and zero points are sliced along
    its axis.
    """
    if not isinstance(element, UniformQuantizedType) or not element.per_axis:
        return element
    axis = element.axis.data
    lo, hi = offsets[axis], offsets[axis] + sizes[axis]
    if (lo, hi) == (0, len(element.scales)):
        return element
    key = (id(element), lo, hi)
    known = _SLICED.get(key)
    if known is not None and known[0] is element:
        return known[1]
    sliced = element.sliced(lo, hi)
    if len(_SLICED) >= 4096:
        _SLICED.clear()
    _SLICED[key] = (element, sliced)  # the tile verifiers and materialise ask again and again
    return sliced


_SLICED: dict[tuple[int, int, int], tuple[UniformQuantizedType, UniformQuantizedType]] = {}


def region_type(ty: TensorType, offsets: Sequence[int], sizes: Sequence[int]) -> TensorType:
    """The tensor type of a region of a tensor of type `ty`."""
    return TensorType(region_element_type(ty.element_type, offsets, sizes), list(sizes))


def _check_region(
    op_name: str, whole: Attribute, part: Attribute, offsets: Sequence[int], what: str
) -> None:
    """`part` must fit inside `whole` at `offsets`, with the region's element type."""
    assert isinstance(whole, TensorType) and isinstance(part, TensorType)
    big, small = tuple(whole.get_shape()), tuple(part.get_shape())
    if not len(offsets) == len(big) == len(small):
        raise VerifyException(
            f"'{op_name}': offsets ({len(offsets)}), the {what} (rank {len(big)}) and the tile "
            f"(rank {len(small)}) must have one rank"
        )
    for axis, (o, s, n) in enumerate(zip(offsets, small, big, strict=True)):
        if s < 1 or o < 0 or o + s > n:
            raise VerifyException(
                f"'{op_name}': region [{o}, {o + s}) of axis {axis} is outside the {what}'s "
                f"size {n}"
            )
    want = region_element_type(whole.element_type, offsets, small)
    if part.element_type != want:
        raise VerifyException(
            f"'{op_name}': the tile's element type {part.element_type} must be the {what}'s "
            f"region type {want}"
        )


def _check_memories(op_name: str, source: StringAttr, dest: StringAttr) -> None:
    if not source.data or not dest.data:
        raise VerifyException(f"'{op_name}': memory names must not be empty")
    if source == dest:
        raise VerifyException(f"'{op_name}': a DMA needs two different memories")


class TileOperation(IRDLOperation):
    """Base of the `tile` ops: pure, with properties written in the attribute dictionary."""

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)


@irdl_op_definition
class SliceOp(TileOperation):
    """A view of the region [offsets, offsets + result shape) of `source` (no copy)."""

    name = "tile.slice"
    source = operand_def(TensorType)
    offsets = prop_def(I64Array)
    result = result_def(TensorType)
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def verify_(self) -> None:
        offsets = self.offsets.get_values()
        _check_region(self.name, self.source.type, self.result.type, offsets, "source")


@irdl_op_definition
class LoadOp(TileOperation):
    """A DMA of the region [offsets, offsets + result shape) of `source` (in memory `from`)
    into a new buffer in memory `to`."""

    name = "tile.load"
    source = operand_def(TensorType)
    offsets = prop_def(I64Array)
    from_memory = prop_def(StringAttr, prop_name="from")
    to_memory = prop_def(StringAttr, prop_name="to")
    result = result_def(TensorType)
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def verify_(self) -> None:
        offsets = self.offsets.get_values()
        _check_region(self.name, self.source.type, self.result.type, offsets, "source")
        _check_memories(self.name, self.from_memory, self.to_memory)


@irdl_op_definition
class EmptyOp(TileOperation):
    """A buffer to assemble tiles into (in memory `to` if given, else in the arena).

    Its contents are unspecified until written; the interpreter fills it with zeros.
    """

    name = "tile.empty"
    to_memory = opt_prop_def(StringAttr, prop_name="to")
    result = result_def(TensorType)
    assembly_format = "attr-dict `:` type($result)"

    def verify_(self) -> None:
        if self.to_memory is not None and not self.to_memory.data:
            raise VerifyException("'tile.empty': memory names must not be empty")


class _Assembling(TileOperation):
    """`dest` with the region [offsets, offsets + shape of `source`) replaced by `source`."""

    DEST: ClassVar = VarConstraint("DEST", base(TensorType))
    source = operand_def(TensorType)
    dest = operand_def(DEST)
    offsets = prop_def(I64Array)
    result = result_def(DEST)
    assembly_format = "$source `into` $dest attr-dict `:` type($source) `into` type($dest)"

    def verify_(self) -> None:
        offsets = self.offsets.get_values()
        _check_region(self.name, self.dest.type, self.source.type, offsets, "destination")


@irdl_op_definition
class InsertOp(_Assembling):
    """`dest` with a region replaced by `source` (same memory: the producer writes in place)."""

    name = "tile.insert"


@irdl_op_definition
class StoreOp(_Assembling):
    """`dest` (in memory `to`) with a region replaced by `source` (in memory `from`) by DMA."""

    name = "tile.store"
    from_memory = prop_def(StringAttr, prop_name="from")
    to_memory = prop_def(StringAttr, prop_name="to")

    def verify_(self) -> None:
        super().verify_()
        _check_memories(self.name, self.from_memory, self.to_memory)


def memory_of(value: SSAValue) -> str | None:
    """The memory named by the `to` property of `value`'s producer (None: not a tile op's)."""
    owner = value.owner
    attr = getattr(owner, "properties", {}).get("to")
    return attr.data if isinstance(attr, StringAttr) else None


TILE = Dialect("tile", [SliceOp, LoadOp, EmptyOp, InsertOp, StoreOp])
