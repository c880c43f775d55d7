"""What npuc's tools can run: passes, imported lazily by name (dialects:
dialects/context.py).

Keeping these as name -> factory maps lets `npu-opt --version` start without
importing every pass.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.passes import ModulePass


def _lazy(module: str, attr: str) -> Callable[[], object]:
    def load():
        return getattr(importlib.import_module(module), attr)

    return load


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "canonicalize": _lazy("npuc.passes.canonicalize", "CanonicalizePass"),
    "fold-constants": _lazy("npuc.passes.fold_constants", "FoldConstantsPass"),
    "fold-batchnorm": _lazy("npuc.passes.fold_batchnorm", "FoldBatchNormPass"),
    "fuse-activation": _lazy("npuc.passes.fuse_activation", "FuseActivationPass"),
    "equalize-layers": _lazy("npuc.passes.equalize_layers", "EqualizeLayersPass"),
    "eliminate-identity": _lazy("npuc.passes.eliminate_identity", "EliminateIdentityPass"),
    "cse": _lazy("npuc.passes.cse", "CSEPass"),
    "dce": _lazy("npuc.passes.dce", "DCEPass"),
    "quantize": _lazy("npuc.passes.quantize", "QuantizePass"),
    "preprocess": _lazy("npuc.passes.preprocess", "PreprocessPass"),
    "tile": _lazy("npuc.passes.tile", "TilePass"),
    "plan-memory": _lazy("npuc.passes.plan_memory", "PlanMemoryPass"),
    "lower-to-npu": _lazy("npuc.passes.lower_to_npu", "LowerToNpuPass"),
    "compress-constants": _lazy("npuc.passes.compress_constants", "CompressConstantsPass"),
}

DEFAULT_PIPELINE = (
    "canonicalize,eliminate-identity,fold-constants,fold-batchnorm,fuse-activation,"
    "canonicalize,cse,dce"
)
