"""The quantization a layer configuration file records: what is applied, what is refused.

`QuantizeReport.write_config` records each layer's settings and results. Read back:

- the settings (`bits`, `mode`, `strategy`, `weight_bits`, `weight_strategy`) apply
  (layer_config.py);
- each `outputs` entry's `scale` and `zero_point` fix that tensor's type (and so do
  the `inputs` entries of graph inputs, which no layer outputs), so a file
  read back reproduces the quantization it records, and an edited scale takes effect.
  When the layer's settings were edited (the `recorded` digest of them no longer
  matches) or its `storage` is not the layer's, the recorded outputs are left out and
  the layer is calibrated again;
- every other field is a result (`op`, `lowering`, `inputs`, `weights`, `reason`,
  `bias_saturated_channels`, and `storage`/`fractional_length` of a tensor). The file
  records a digest of each (`recorded`), so a value left behind by a changed setting is
  told from an edit. An edited result that the quantization does not give (an input's
  scale, a max pool's output scale, a lowering) refuses the file, naming the field and
  why. `similarity` is a measurement and is not read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from xdsl.ir import BlockArgument

from npuc.diagnostics import NpucError, named_file
from npuc.dialects.quant_types import UniformQuantizedType

from .layer_config import LayerOverrides, LayerReport, QuantizeReport, result_digests

if TYPE_CHECKING:
    from npuc.passes.quantize import Plan


def _where(overrides: LayerOverrides, name: str, field: str) -> str:
    return f"{overrides.source or 'layer configuration'}: layers.{name}.{field}"


def _tensor_entry(entry: Any, where: str) -> tuple[str, str, Any, Any]:
    """(tensor, storage, scale, zero point) of a recorded tensor, checked for shape."""
    if not isinstance(entry, Mapping):
        raise NpucError(f"{where}: expected an object with tensor, storage, scale, zero_point")
    values = [entry.get(k) for k in ("tensor", "storage", "scale", "zero_point")]
    if not isinstance(values[0], str) or not isinstance(values[1], str):
        raise NpucError(f"{where}: tensor and storage must be strings")
    return values[0], values[1], values[2], values[3]


def force_recorded_outputs(plan: Plan, overrides: LayerOverrides) -> None:
    """Fix the type of every recorded output whose storage is the layer's (in `plan.forced`)."""
    with named_file(overrides.source):
        _force_recorded_outputs(plan, overrides)


def _force_recorded_outputs(plan: Plan, overrides: LayerOverrides) -> None:
    by_name = {layer.name: layer for layer in plan.layers.values()}
    values = {name: value for value, name in plan.keys.items()}
    for name, entry in overrides.recorded.items():
        layer = by_name.get(name)
        outputs = entry.get("outputs", []) if isinstance(entry, Mapping) else []
        if layer is None or layer.kind == "float" or not isinstance(outputs, list):
            continue
        if _settings_edited(entry):
            continue  # a changed bits, mode or strategy: the layer is calibrated again
        scheme = plan.scheme.activation(layer.bits)
        inputs = entry.get("inputs", [])
        graph_inputs = [
            (f"inputs[{i}]", item)
            for i, item in enumerate(inputs if isinstance(inputs, list) else [])
            if isinstance(item, Mapping)
            and isinstance(item.get("tensor"), str)
            and isinstance(values.get(str(item.get("tensor"))), BlockArgument)
        ]
        for role, item in [*((f"outputs[{i}]", o) for i, o in enumerate(outputs)), *graph_inputs]:
            where = _where(overrides, name, role)
            tensor, storage, scale, zero_point = _tensor_entry(item, where)
            value = values.get(tensor)
            if storage != scheme.storage or value is None or value in plan.forced:
                continue  # another width now (recalibrated), or a tensor checked afterwards
            plan.forced[value] = _recorded_type(where, storage, scale, zero_point, scheme.bounds())


def _settings_edited(entry: Mapping[str, Any]) -> bool:
    digests = entry.get("recorded")
    return (
        isinstance(digests, Mapping)
        and digests.get("settings") != result_digests(entry)["settings"]
    )


def _recorded_type(
    where: str, storage: str, scale: Any, zero_point: Any, bounds: tuple[int, int]
) -> UniformQuantizedType:
    if isinstance(scale, list) or isinstance(zero_point, list):
        raise NpucError(
            f"{where}: an activation is quantized per tensor: one scale, one zero point"
        )
    if not _positive_finite(scale):
        raise NpucError(f"{where}.scale: must be a positive finite number, got {scale!r}")
    lo, hi = bounds
    if (
        isinstance(zero_point, bool)
        or not isinstance(zero_point, int)
        or not (lo <= zero_point <= hi)
    ):
        raise NpucError(
            f"{where}.zero_point: must be an integer in [{lo}, {hi}] for {storage}, "
            f"got {zero_point!r}"
        )
    return UniformQuantizedType(storage, float(scale), zero_point, storage_min=lo, storage_max=hi)


def _positive_finite(x: Any) -> bool:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return False
    try:
        return math.isfinite(x) and x > 0
    except OverflowError:  # an integer beyond the float range
        return False


def check_recorded(report: QuantizeReport, overrides: LayerOverrides) -> None:
    """Refuse a file with an edited result that the quantization does not take.

    A written entry carries a digest of each result field (`recorded`): a field that no
    longer matches it was edited. A hand-written entry without digests counts every
    result field it has as edited.
    """
    with named_file(overrides.source):
        _check_recorded(report, overrides)


def _check_recorded(report: QuantizeReport, overrides: LayerOverrides) -> None:
    for name, entry in overrides.recorded.items():
        layer = report.layers.get(name)
        if layer is None or not isinstance(entry, Mapping):
            continue
        digests = entry.get("recorded")
        current = result_digests(entry)
        if not isinstance(digests, Mapping):
            digests = {}
        edited = [k for k in current if k != "settings" and digests.get(k) != current[k]]
        actual = layer.to_json()
        for key in edited:
            if key in ("inputs", "outputs"):
                if layer.mode == "int" and isinstance(entry[key], list):
                    _check_tensors(overrides, name, layer, key, entry[key])
            elif entry[key] != actual.get(key):
                raise NpucError(
                    f"{_where(overrides, name, key)}: edited to {entry[key]!r}, but it is a "
                    f"result of quantization (here {actual.get(key)!r}), not a setting; change "
                    "bits, mode, strategy, weight_bits, weight_strategy or the outputs' scales"
                )


def _check_tensors(
    overrides: LayerOverrides, name: str, layer: LayerReport, role: str, items: list[Any]
) -> None:
    actual = {t.tensor: t for t in getattr(layer, role)}
    for i, item in enumerate(items):
        where = _where(overrides, name, f"{role}[{i}]")
        tensor, storage, scale, zero_point = _tensor_entry(item, where)
        got = actual.get(tensor)
        if got is None:
            raise NpucError(f"{where}: layer '{name}' has no {role[:-1]} '{tensor}'")
        if storage != got.storage:
            raise NpucError(
                f"{where}.storage: edited to {storage}, but the tensor is "
                f"{got.storage}: the storage follows the layer's bits"
            )
        if (scale, zero_point) != (got.scale, got.zero_point):
            raise NpucError(
                f"{where}: scale {scale!r}, zero point {zero_point!r} cannot be "
                f"applied (the quantization gives {got.scale!r}, "
                f"{got.zero_point!r}): {_why_fixed(layer, role)}"
            )
        recorded_fl = item.get("fractional_length")
        if recorded_fl is not None and recorded_fl != got.fractional_length:
            raise NpucError(
                f"{where}.fractional_length: it follows the scale (2^-fl); edit the scale"
            )


def _why_fixed(layer: LayerReport, role: str) -> str:
    """Why a layer's recorded tensor type cannot be set directly."""
    if role == "inputs":
        return (
            "an input takes the type its producer gives it: edit the producing layer's "
            "outputs, and update or delete this entry"
        )
    if layer.lowering == "qnn.softmax":
        return "qnn.softmax's result is fixed at scale 1/256, zero point -128"
    if layer.lowering == "qnn.concat":
        return "a concat's inputs and result share one type covering them all"
    if layer.lowering.startswith("folded into"):
        return f"this layer is {layer.lowering}: edit that layer's outputs"
    return f"{layer.lowering} keeps its input's type: edit the outputs of the layer feeding it"


__all__ = ["check_recorded", "force_recorded_outputs"]
