"""What npuc's tools can load: dialects and passes, imported lazily by name.

Keeping these as name -> factory maps lets `npu-opt --version` start without
importing every dialect and pass.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass

from . import xdsl_patches  # noqa: F401  (user input must not hang xDSL's lexer)


def _lazy(module: str, attr: str) -> Callable[[], object]:
    def load():
        return getattr(importlib.import_module(module), attr)

    return load


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "builtin": _lazy("xdsl.dialects.builtin", "Builtin"),
    "func": _lazy("xdsl.dialects.func", "Func"),
    "arith": _lazy("xdsl.dialects.arith", "Arith"),
    "nn": _lazy("npuc.dialects.nn", "NN"),
    "qnn": _lazy("npuc.dialects.qnn", "QNN"),
    "npu": _lazy("npuc.dialects.npu", "NPU"),
    "tile": _lazy("npuc.dialects.tile", "TILE"),
    "mem": _lazy("npuc.dialects.mem", "MEM"),
}

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
}

DEFAULT_PIPELINE = (
    "canonicalize,eliminate-identity,fold-constants,fold-batchnorm,fuse-activation,"
    "canonicalize,cse,dce"
)
