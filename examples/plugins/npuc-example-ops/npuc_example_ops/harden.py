"""`example-harden-soft-clip{min_limit=L}`: SoftClip with limit >= L becomes nn.clip to
[-limit, limit], which the NPU applies in its requantization for free."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, ModuleOp, f32
from xdsl.ir import Attribute
from xdsl.rewriter import Rewriter

from npuc.plugin_api import ModulePass, nn

from .dialect import SoftClipOp


@dataclass(frozen=True)
class HardenSoftClipPass(ModulePass):
    """Replace each example.soft_clip whose limit is at least `min_limit` by nn.clip."""

    name = "example-harden-soft-clip"

    min_limit: float = 0.0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for soft in [o for o in op.walk() if isinstance(o, SoftClipOp)]:
            limit = soft.limit.value.data
            if limit < self.min_limit:
                continue
            props: dict[str, Attribute] = {"min": FloatAttr(-limit, f32), "max": soft.limit}
            if soft.layer_name is not None:
                props["name"] = soft.layer_name
            hard = nn.ClipOp.create(
                operands=[soft.input], properties=props, result_types=[soft.output.type]
            )
            Rewriter.replace_op(soft, hard)
