"""Which op results may share bytes with their operands: one rule per op name.

- VIEW: the result is operand 0's bytes (reshape: same elements, same order).
- SPLIT: each result is a contiguous piece of operand 0 (split along an axis with
  only unit dimensions before it).
- CONCAT: each operand may be written by its producer straight into its slice of
  the result (same condition on the axis).
- INPLACE: an elementwise op whose result may reuse an operand of the same shape and
  element size, if that operand's bytes are read by nobody after this op.
- SLICE: `tile.slice`: the result is a region of operand 0; a view when the region is
  contiguous in row-major order, else a copy.
- INSERT: `tile.insert`/`tile.store %t into %dest`: the result reuses `%dest` in place
  when `%dest` is read by nobody after it.
- TILE (not an op's rule: a decision of the planner): the tile `%t` of an in-place
  `tile.insert` is written by its producer straight into its region of `%dest`.

Views never cross regions, never start at a misaligned offset, and never make a graph
output share bytes with anything (outputs need their own place in the mutable region).
"""

from __future__ import annotations

import math
from enum import Enum

from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import Operation, SSAValue


class Rule(Enum):
    VIEW = "view"
    SPLIT = "split"
    CONCAT = "concat"
    INPLACE = "inplace"
    INSERT = "insert"
    SLICE = "slice"
    TILE = "tile"


#: Rules whose result takes no bytes of its own (a view of operand 0).
VIEW_RULES = (Rule.VIEW, Rule.SPLIT, Rule.SLICE)


_ELEMENTWISE_NN = (
    "relu sigmoid tanh exp log sqrt erf abs neg reciprocal floor ceil softplus hard_swish gelu "
    "leaky_relu elu hard_sigmoid clip add sub mul div pow maximum minimum prelu"
)
_ELEMENTWISE_QNN = (
    "add sub mul lut requantize quantize dequantize maximum minimum prelu squared_difference div"
)

RULES: dict[str, Rule] = {
    "nn.reshape": Rule.VIEW,
    "qnn.reshape": Rule.VIEW,
    "nn.split": Rule.SPLIT,
    "qnn.split": Rule.SPLIT,
    "nn.concat": Rule.CONCAT,
    "qnn.concat": Rule.CONCAT,
    "tile.slice": Rule.SLICE,
    "tile.insert": Rule.INSERT,
    "tile.store": Rule.INSERT,
    **{f"nn.{n}": Rule.INPLACE for n in _ELEMENTWISE_NN.split()},
    **{f"qnn.{n}": Rule.INPLACE for n in _ELEMENTWISE_QNN.split()},
}


def rule_for(op: Operation) -> Rule | None:
    return RULES.get(op.name)


def same_element_type(a: SSAValue, b: SSAValue) -> bool:
    ta, tb = a.type, b.type
    return (
        isinstance(ta, TensorType)
        and isinstance(tb, TensorType)
        and ta.get_element_type() == tb.get_element_type()
    )


def contiguous_axis(op: Operation, shape: tuple[int, ...]) -> bool:
    """True if pieces along the op's `axis` are contiguous in row-major order."""
    attr = op.properties.get("axis") or op.attributes.get("axis")
    if not isinstance(attr, IntegerAttr) or not shape:
        return False
    axis = attr.value.data % len(shape)
    return math.prod(shape[:axis]) == 1


def region_offset(
    shape: tuple[int, ...], offsets: tuple[int, ...], sizes: tuple[int, ...]
) -> int | None:
    """Element offset of the region [offsets, offsets + sizes) of a row-major `shape`
    tensor if the region is contiguous, else None."""
    if not len(shape) == len(offsets) == len(sizes):
        return None
    k = next((j for j, n in enumerate(sizes) if n != 1), len(sizes))
    if any(sizes[j] != shape[j] for j in range(k + 1, len(shape))):
        return None
    index = 0
    for o, n in zip(offsets, shape, strict=True):
        index = index * n + o
    return index
