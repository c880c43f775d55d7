"""`dce`: remove `nn` (and other) ops whose results are unused.

All `nn` ops are `Pure`, so xDSL's dead-code elimination applies unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.transforms.dead_code_elimination import DeadCodeElimination


@dataclass(frozen=True)
class DCEPass(DeadCodeElimination):
    """xDSL's region DCE: erase side-effect-free ops with no live users."""

    name = "dce"
