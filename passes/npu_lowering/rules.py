"""Every lowering rule, by op name: which ops have NPU instructions and how they lower
(compute.py: arithmetic, pools, tables; movement.py: data movement and tiles; resize.py;
transpose_conv.py); a plugin's ops lower by their plugin's rules (`rule_for`)."""

from __future__ import annotations

from xdsl.ir import Operation

from npuc.plugin_registry import op_function

from . import compute, movement, resize, transpose_conv
from .builder import LoweringError, Rule, Support

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


def rule_for(op: Operation) -> Rule | None:
    """The rule lowering `op`: npuc's, or for a plugin's op its plugin's."""
    return RULES.get(op.name) or op_function(
        "lowerings", op.name, f"the NPU lowering of '{op.name}'", (LoweringError,)
    )


def lowerable(op: Operation) -> bool:
    """Whether a rule lowers `op` (the op has one and it covers this instance)."""
    support = SUPPORTS.get(op.name) or op_function(
        "lowering_supports", op.name, f"the lowering support test of '{op.name}'"
    )
    return rule_for(op) is not None and (support is None or bool(support(op)))
