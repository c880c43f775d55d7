"""Every lowering rule, by op name: which ops have NPU instructions and how they lower
(compute.py: arithmetic, pools, tables; movement.py: data movement and tiles; resize.py;
transpose_conv.py)."""

from __future__ import annotations

from xdsl.ir import Operation

from . import compute, movement, resize, transpose_conv
from .builder import Rule, Support

RULES: dict[str, Rule] = {
    **compute.RULES,
    **movement.RULES,
    **resize.RULES,
    **transpose_conv.RULES,
}
#: Ops whose rule covers only some instances: the others run on the host.
SUPPORTS: dict[str, Support] = {**compute.SUPPORTS, **resize.SUPPORTS, **transpose_conv.SUPPORTS}
#: The compute rules (their outputs may be written straight into an insert's slice).
COMPUTE = frozenset(compute.RULES)


def lowerable(op: Operation) -> bool:
    """Whether a rule lowers `op` (the op has one and it covers this instance)."""
    support = SUPPORTS.get(op.name)
    return op.name in RULES and (support is None or support(op))
