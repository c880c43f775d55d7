"""What npuc's tools can run: passes, imported lazily by name (dialects:
dialects/context.py), and the passes plugins give.

Keeping these as name -> factory maps lets `npu-opt --version` start without
importing every pass.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from . import plugin_registry
from .diagnostics import InternalError, working_on
from .plugins import plugin_code


def _lazy(module: str, attr: str) -> Callable[[], object]:
    def load():
        return getattr(importlib.import_module(module), attr)

    return load


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "canonicalize": _lazy("npuc.passes.canonicalize", "CanonicalizePass"),
    "fold-constants": _lazy("npuc.passes.fold_constants", "FoldConstantsPass"),
    "fold-batchnorm": _lazy("npuc.passes.fold_batchnorm", "FoldBatchNormPass"),
    "fold-affine": _lazy("npuc.passes.fold_affine", "FoldAffinePass"),
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
    "canonicalize,eliminate-identity,fold-constants,fold-batchnorm,fold-affine,fuse-activation,"
    "canonicalize,cse,dce"
)


def pass_factories(pipeline: str) -> dict[str, Callable[[], type[ModulePass]]]:
    """The passes a pipeline may name: PASSES, plus the plugins' passes it names."""
    from xdsl.utils.arg_spec import parse_pipeline
    from xdsl.utils.exceptions import ArgSpecParseError

    factories = dict(PASSES)
    try:
        names = [spec.name for spec in parse_pipeline(pipeline)]
    except ArgSpecParseError:  # reported when the pipeline itself is parsed
        return factories
    for name in names:
        if name not in factories and (factory := plugin_registry.pass_factory(name)):
            factories[name] = factory
    return factories


def verify_after(p: ModulePass | str, module: ModuleOp) -> None:
    """Verify the IR that pass `p` (or a pipeline, by its text) left: its input verified,
    so a failure is a bug in the pass, an internal error (a plugin's pass: its plugin's)."""
    from xdsl.utils.exceptions import VerifyException

    what = f"pipeline '{p}'" if isinstance(p, str) else f"pass '{p.name}'"
    try:
        module.verify()
    except VerifyException as e:
        error = InternalError(f"the IR does not verify after {what}: {e}")
        if isinstance(p, str):
            raise error from e
        with applying(p):
            raise error from e


@contextmanager
def applying(p: ModulePass) -> Iterator[None]:
    """Run pass `p`: named in an internal error's context; a plugin's pass failing
    names its plugin."""
    with working_on("pass", p):
        owner = plugin_registry.pass_owner(p.name) if p.name not in PASSES else None
        if owner is None:
            yield
        else:
            with plugin_code(owner.name, f"pass '{p.name}'", owner.home):
                yield
