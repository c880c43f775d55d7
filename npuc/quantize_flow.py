"""The quantization workflow: calibrate, quantize, compare against float, search mixed precision.

This is what `npu-run --quantize` runs, as a Python API.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType

from .diagnostics import NpucError
from .graph_io import entry_function, input_names, output_names

Batch = Mapping[str, np.ndarray]


def calibrate(
    module: ModuleOp,
    batches: Iterable[Batch],
    *,
    progress: bool = True,
    outlier_policy=None,
    float_runs=None,
):
    """Per-tensor statistics of the float model over a data set (outliers optionally dropped;
    the float runs kept in `float_runs`, a FloatRuns, for `compare` on the same data)."""
    from npuc.passes.quantization.statistics import collect_statistics

    return collect_statistics(
        module, batches, progress=progress, outlier_policy=outlier_policy, float_runs=float_runs
    )


def quantize(float_module: ModuleOp, statistics: Mapping, config) -> tuple[ModuleOp, object]:
    """A quantized copy of `float_module` and the quantizer's per-layer report.

    State pairs keep one type across calls (quantize_module sees to it).
    """
    from npuc.passes.quantize import quantize_module, ranges_from_statistics

    quantized = float_module.clone()
    report = quantize_module(quantized, ranges_from_statistics(statistics), config)
    return quantized, report


def dequantized_values(
    module: ModuleOp,
    values: Mapping[str, np.ndarray],
    *,
    outputs: bool = False,
    types: Mapping[str, object] | None = None,
) -> dict[str, np.ndarray]:
    """Tensors of a run (intermediates, or outputs with `outputs=True`) as reals.

    Quantized tensors are dequantized with their IR type (`types`: by tensor name, when
    the caller has them); integer tensors that are not quantized (indices, argmax) are
    left out of comparisons.
    """
    from npuc.dialects.quant_types import UniformQuantizedType
    from npuc.integer import dequantize
    from npuc.runtime.nn_interpreter import FunctionRunner

    if types is None:
        func = entry_function(module)
        if outputs:
            types = dict(zip(output_names(func), func.function_type.outputs, strict=True))
        else:
            types = {key: value.type for value, key in FunctionRunner(func).keys.items()}
    real = {}
    for name, array in values.items():
        ty = types.get(name)
        element = ty.element_type if isinstance(ty, TensorType) else None
        if isinstance(element, UniformQuantizedType):
            scale, zp = element.broadcast_params(array.ndim)
            real[name] = dequantize(array, scale, zp)
        elif np.issubdtype(np.asarray(array).dtype, np.floating):
            real[name] = array
    return real


def compare(float_module: ModuleOp, quantized: ModuleOp, batches: Iterable[Batch], float_runs=None):
    """Tensor-by-tensor accuracy of `quantized` against `float_module` over a data set.

    A stateful model runs the batches as one stream, each model carrying its own state.
    Each model is prepared once for all batches (its constants converted once). A float
    run that calibration kept (`float_runs`, from `calibrate` on the same module) serves
    the batch it ran on instead of running the float model again.
    """
    from npuc.passes.quantization.state import StateCarrier
    from npuc.runtime.accuracy import Comparison
    from npuc.runtime.qnn_interpreter import QuantizedFunctionRunner

    float_run = QuantizedFunctionRunner(entry_function(float_module))
    q_run = QuantizedFunctionRunner(entry_function(quantized))
    outputs = output_names(float_run.func)
    q_types = {key: value.type for value, key in q_run.keys.items()}
    q_output_types = dict(
        zip(output_names(q_run.func), q_run.func.function_type.outputs, strict=True)
    )
    comparison = Comparison(outputs=outputs)
    ref_state, q_state = StateCarrier(float_module), StateCarrier(quantized)
    for index, batch in enumerate(batches):
        feeds = ref_state.named(batch)
        kept = None if float_runs is None else float_runs.run(index, _arguments(float_run, feeds))
        if kept is None:
            ref_out, ref_inter = _run_all(float_run, feeds)
        else:
            ref_out = dict(zip(outputs, kept.results, strict=True))
            ref_inter = kept.intermediates
        q_out, q_inter = _run_all(q_run, q_state.named(batch))
        ref_state.update(ref_out)
        q_state.update(q_out)
        reference = {**ref_inter, **ref_out}
        candidate = {
            **dequantized_values(quantized, q_inter, types=q_types),
            **dequantized_values(quantized, q_out, outputs=True, types=q_output_types),
        }
        comparison.update(reference, candidate)
    return comparison.reports()


def _run_all(runner, feeds: Batch) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Outputs by name and every intermediate of one run, as run_module with keep="all"
    (the batches come from a data set made for the model's inputs)."""
    results, intermediates = runner.run(_arguments(runner, feeds), "all")
    return dict(zip(output_names(runner.func), results, strict=True)), intermediates


def _arguments(runner, feeds: Batch) -> list[np.ndarray]:
    return [feeds[n] for n in input_names(runner.func)]


@dataclass(frozen=True)
class TargetCost:
    """What a quantized model costs on a target, compiled as npu-compile does by default."""

    cycles: int
    sram_bytes: int  # the activation arena


def target_cost(quantized: ModuleOp, target: str) -> TargetCost:
    """Estimated cycles and activation arena of `quantized` on `target` (performance tiling,
    unsupported ops on the host); `quantized` is left as it is."""
    import json

    from .passes.lower_to_npu import program_of
    from .passes.memory.ir import ACTIVATIONS, read_plan
    from .pipeline import apply_pipeline
    from .runtime.cycle_model import estimate
    from .target import load_target

    spec, loaded = json.dumps(target), load_target(target)
    io = "arena" if loaded.placement.io == loaded.placement.arena else "separate"
    module = quantized.clone()
    apply_pipeline(module, f"tile{{target={spec} optimise=performance}}", verify=False)
    apply_pipeline(module, f"plan-memory{{target={spec} io={io}}}")
    arena = read_plan(module).regions[ACTIVATIONS].size
    apply_pipeline(module, "lower-to-npu{host=all}", verify=False)  # checked as it lowers
    return TargetCost(estimate(program_of(module), loaded).total_cycles, arena)


@dataclass(frozen=True)
class SearchStep:
    """One quantization of the search: the promoted layers, its fidelity, whether the last
    promotion was kept (a promotion that lowers fidelity is undone), and its cost on the
    search's cost target if it has one."""

    promoted: tuple[str, ...]
    worst_cosine: float
    top1: float | None
    kept: bool = True
    cost: TargetCost | None = None


@dataclass
class SearchResult:
    module: ModuleOp
    report: object
    promoted: list[str] = field(default_factory=list)
    history: list[SearchStep] = field(default_factory=list)
    met: bool = True
    stopped: str = ""  # why the search ended without meeting the target
    limiting_output: str = ""  # the output furthest from the target


def meets(outputs, target_cosine: float | None, max_top1_drop: float | None) -> bool:
    """Every output reaches the cosine target; top-1 disagreement (in %) stays within the limit."""
    for out in outputs:
        if target_cosine is not None and out.cosine < target_cosine:
            return False
        agreement = out.top1_agreement
        if (
            max_top1_drop is not None
            and agreement is not None
            and 100 * (1 - agreement) > max_top1_drop
        ):
            return False
    return True


def _fidelity(outputs, by_top1: bool = True) -> tuple[float, float]:
    """(worst top-1 agreement, worst cosine) over the outputs, larger being better; the
    top-1 term only when the target limits it."""
    top1 = _top1(outputs) if by_top1 else None
    return 1.0 if top1 is None else top1, min(o.cosine for o in outputs)


def search_mixed_precision(
    float_module: ModuleOp,
    statistics: Mapping,
    config,
    batches: list[Batch],
    *,
    target_cosine: float | None = None,
    max_top1_drop: float | None = None,
    promote_to: str = "int16",
    max_promotions: int = 32,
    cost_target: str | None = None,
    float_runs=None,
) -> SearchResult:
    """Promote the most sensitive layers until the outputs meet the target.

    Each round quantizes, compares with float, and promotes the layer that
    loses the most similarity (see `most_sensitive_layer`) to `promote_to`
    ("int16" or "float"). A promotion that lowers the fidelity the target measures
    (worst top-1 agreement when it limits it, then worst output cosine) is undone
    and its layer not tried again.
    Top-1 drop is the percentage of samples whose quantized top-1 class differs
    from float's. The result says whether the target was met and, if not, why not.
    With `cost_target`, each step records its cycles and SRAM there (`target_cost`).
    `float_runs` (from `calibrate`) serve the float side of each comparison.
    """
    from npuc.passes.quantization.layer_config import LayerOverrides, LayerSetting

    if target_cosine is None and max_top1_drop is None:
        raise NpucError("the mixed-precision search needs --target-cosine or --max-top1-drop")
    setting = LayerSetting(bits=16) if promote_to == "int16" else LayerSetting(mode="float")

    if cost_target is not None:
        from .target import load_target

        load_target(cost_target)  # a bad name fails before any work

    def attempt(names: list[str]):
        overrides = LayerOverrides(layers={name: setting for name in names})
        quantized, report = quantize(float_module, statistics, replace(config, overrides=overrides))
        outputs, tensors = compare(float_module, quantized, batches, float_runs)
        cost = None if cost_target is None else target_cost(quantized, cost_target)
        return quantized, report, outputs, tensors, cost

    promoted: list[str] = []
    rejected: list[str] = []
    quantized, report, outputs, tensors, cost = attempt(promoted)
    by_top1 = max_top1_drop is not None
    history = [SearchStep((), _fidelity(outputs)[1], _top1(outputs), cost=cost)]
    while not meets(outputs, target_cosine, max_top1_drop):
        if len(promoted) >= max_promotions:
            stopped = f"it reached the limit of {max_promotions} promotions"
            break
        worst = most_sensitive_layer(report, tensors, exclude=[*promoted, *rejected])
        if worst is None:
            stopped = "no integer layer is left to promote"
            break
        trial = attempt([*promoted, worst])
        kept = _fidelity(trial[2], by_top1) >= _fidelity(outputs, by_top1)
        history.append(
            SearchStep((*promoted, worst), _fidelity(trial[2])[1], _top1(trial[2]), kept, trial[4])
        )
        if kept:
            promoted.append(worst)
            quantized, report, outputs, tensors, _ = trial
        else:
            rejected.append(worst)
    else:
        return SearchResult(quantized, report, promoted, history)
    limiting = min(outputs, key=lambda o: (o.top1_agreement or 1.0, o.cosine)).name
    return SearchResult(quantized, report, promoted, history, False, stopped, limiting)


def _top1(outputs) -> float | None:
    return min((o.top1_agreement for o in outputs if o.top1_agreement is not None), default=None)


# Lowerings that do arithmetic on quantized values, and so add quantization error.
COMPUTE_LOWERINGS = {
    "qnn.conv2d",
    "qnn.fully_connected",
    "qnn.matmul",
    "qnn.add",
    "qnn.sub",
    "qnn.mul",
    "qnn.avg_pool2d",
    "qnn.global_avg_pool",
    "qnn.lut",
    "qnn.requantize",
    "qnn.conv_transpose2d",
    "qnn.prelu",
    "qnn.reduce_sum",
    "qnn.softmax",
    "qnn.resize_bilinear",
}


def most_sensitive_layer(report, tensors, exclude=()) -> str | None:
    """The integer layer whose output loses the most cosine similarity relative to its inputs.

    Error accumulates along the network, so a layer's own cosine blames it for
    what its inputs already lost; the drop from its worst input to its output
    is the error it adds. Layers that only move data add none and are skipped.
    """
    cosine = {t.name: t.cosine for t in tensors}
    best, best_drop = None, -1.0
    for name, layer in report.layers.items():
        if name in exclude or layer.mode != "int" or layer.lowering not in COMPUTE_LOWERINGS:
            continue
        outputs = [cosine[t.tensor] for t in layer.outputs if t.tensor in cosine]
        if not outputs:
            continue
        inputs = [cosine.get(t.tensor, 1.0) for t in layer.inputs if t.tensor in cosine]
        drop = min(inputs, default=1.0) - min(outputs)
        if drop > best_drop:
            best, best_drop = name, drop
    return best
