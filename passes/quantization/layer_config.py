"""The per-layer quantization configuration: overrides, the report, and its JSON file.

The file is JSON (written with `QuantizeReport.write_config`, read with
`read_layer_config`):

    {"format": "npuc-quantize-layers", "version": 1, "scheme": "int8-per-channel",
     "op_types": {"nn.softmax": {"mode": "float"}},
     "layers": {"conv1": {"op": "nn.conv2d", "bits": 8, "mode": "int",
                          "strategy": "extrema", "weight_bits": 8, ...}}}

`bits` (8 or 16), `mode` ("int" or "float"), `strategy`, `weight_bits` and
`weight_strategy` are settings; a layer entry overrides its op type's entry, which
overrides the pass options. The outputs' scales and zero points are applied too, and the
other recorded fields are checked against the result (recorded.py).
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from npuc.diagnostics import NpucError, named_file

FORMAT = "npuc-quantize-layers"
MODES = ("int", "float")


@dataclass(frozen=True)
class LayerSetting:
    """A (partial) per-layer choice; None fields fall through to the next level."""

    bits: int | None = None
    mode: str | None = None
    strategy: str | None = None
    weight_bits: int | None = None
    weight_strategy: str | None = None

    def over(self, base: LayerSetting) -> LayerSetting:
        """This setting with its unset fields taken from `base`."""
        return LayerSetting(
            *(
                getattr(self, f.name)
                if getattr(self, f.name) is not None
                else getattr(base, f.name)
                for f in fields(self)
            )
        )

    @classmethod
    def from_json(cls, entry: Mapping[str, Any], where: str) -> LayerSetting:
        if not isinstance(entry, Mapping):
            raise NpucError(f"{where}: expected an object with bits/mode/strategy")
        bits, mode = entry.get("bits"), entry.get("mode")
        strategy, weight_bits = entry.get("strategy"), entry.get("weight_bits")
        weight_strategy = entry.get("weight_strategy")
        if bits is not None and bits not in (8, 16):
            raise NpucError(f"{where}: bits must be 8 or 16, got {bits!r}")
        if mode is not None and mode not in MODES:
            raise NpucError(f"{where}: mode must be 'int' or 'float', got {mode!r}")
        if weight_bits is not None and weight_bits not in (4, 8, 16):
            raise NpucError(f"{where}: weight_bits must be 4, 8 or 16, got {weight_bits!r}")
        for key, value in (("strategy", strategy), ("weight_strategy", weight_strategy)):
            if value is not None and not isinstance(value, str):
                raise NpucError(f"{where}: {key} must be a string")
            if value is not None:
                from .ranges import check_strategy

                try:
                    check_strategy(value, weights=key == "weight_strategy")
                except NpucError as e:
                    raise NpucError(f"{where}: {key}: {e.message}") from None
        return cls(bits, mode, strategy, weight_bits, weight_strategy)


@dataclass(frozen=True)
class LayerOverrides:
    """Settings by layer name and by op type (`nn.conv2d`)."""

    layers: Mapping[str, LayerSetting] = field(default_factory=dict)
    op_types: Mapping[str, LayerSetting] = field(default_factory=dict)
    #: The file's layer entries as written (recorded.py applies or checks their results).
    recorded: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    source: str = ""

    def setting(self, layer: str, op_type: str, default: LayerSetting) -> LayerSetting:
        by_type = self.op_types.get(op_type, LayerSetting())
        return self.layers.get(layer, LayerSetting()).over(by_type.over(default))

    def merged(self, other: LayerOverrides) -> LayerOverrides:
        """`other`'s entries win over this one's."""
        return LayerOverrides(
            {**self.layers, **other.layers},
            {**self.op_types, **other.op_types},
            {**self.recorded, **other.recorded},
            other.source or self.source,
        )


def parse_layers_option(text: str) -> LayerOverrides:
    """`NAME:SPEC,...` with SPEC 8, 16, int or float; a NAME starting with `nn.` is an op type."""
    layers: dict[str, LayerSetting] = {}
    op_types: dict[str, LayerSetting] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, spec = item.rpartition(":")
        if not sep or not name:
            raise NpucError(f"layers: expected NAME:SPEC, got '{item}'")
        if spec in ("8", "16"):
            setting = LayerSetting(bits=int(spec), mode="int")
        elif spec in MODES:
            setting = LayerSetting(mode=spec)
        else:
            raise NpucError(f"layers: SPEC must be 8, 16, int or float, got '{spec}'")
        (op_types if name.startswith("nn.") else layers)[name] = setting
    return LayerOverrides(layers, op_types)


def read_layer_config(path: str | os.PathLike[str]) -> LayerOverrides:
    from npuc.input_files import read_json

    data = read_json(path, "a JSON layer configuration")
    with named_file(str(path)):
        return layer_config_from_json(data, str(path))


def layer_config_from_json(data: Any, where: str = "layer configuration") -> LayerOverrides:
    if not isinstance(data, Mapping):
        raise NpucError(f"{where}: expected a JSON object")
    if data.get("format", FORMAT) != FORMAT:
        raise NpucError(f"{where}: format must be '{FORMAT}'")
    sections = []
    for key in ("layers", "op_types"):
        section = data.get(key, {})
        if not isinstance(section, Mapping):
            raise NpucError(f"{where}: '{key}' must be an object keyed by name")
        sections.append(
            {
                name: LayerSetting.from_json(e, f"{where}: {key}.{name}")
                for name, e in section.items()
            }
        )
    layers, op_types = sections
    return LayerOverrides(layers, op_types, recorded=dict(data.get("layers", {})), source=where)


# --------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class TensorParams:
    """A quantized tensor as the report shows it."""

    tensor: str
    storage: str
    scale: float | list[float]
    zero_point: int | list[int]
    fractional_length: int | None = None  # power-of-two scales: -log2(scale)
    strategy: str | None = None  # what the `auto` range strategy chose for the tensor

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "tensor": self.tensor,
            "storage": self.storage,
            "scale": self.scale,
            "zero_point": self.zero_point,
        }
        if self.fractional_length is not None:
            entry["fractional_length"] = self.fractional_length
        if self.strategy is not None:
            entry["strategy"] = self.strategy
        return entry


@dataclass
class LayerReport:
    """What the quantizer did with one layer."""

    name: str
    op: str
    lowering: str  # the qnn op, "float", or "folded into LAYER"
    bits: int
    mode: str
    strategy: str
    weight_bits: int | None = None
    weight_strategy: str | None = None
    inputs: list[TensorParams] = field(default_factory=list)
    outputs: list[TensorParams] = field(default_factory=list)
    weight: dict[str, Any] | None = None
    bias_saturated: int = 0
    reason: str | None = None  # why the layer stayed float

    def to_json(self, similarity: float | None = None) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "op": self.op,
            "bits": self.bits,
            "mode": self.mode,
            "strategy": self.strategy,
        }
        if self.weight_bits is not None:
            entry["weight_bits"] = self.weight_bits
            entry["weight_strategy"] = self.weight_strategy
        entry["lowering"] = self.lowering
        if self.reason:
            entry["reason"] = self.reason
        entry["inputs"] = [t.to_json() for t in self.inputs]
        entry["outputs"] = [t.to_json() for t in self.outputs]
        if self.weight is not None:
            entry["weights"] = self.weight
        if self.bias_saturated:
            entry["bias_saturated_channels"] = self.bias_saturated
        entry["recorded"] = result_digests(entry)
        if similarity is not None:
            entry["similarity"] = similarity
        return entry


#: The recorded results of a layer entry (recorded.py says what happens to each on input).
RESULT_FIELDS = (
    "op",
    "lowering",
    "reason",
    "inputs",
    "outputs",
    "weights",
    "bias_saturated_channels",
)


SETTING_FIELDS = ("bits", "mode", "strategy", "weight_bits", "weight_strategy")


def _crc(value: Any) -> str:
    return f"{zlib.crc32(json.dumps(value, sort_keys=True).encode()):08x}"


def result_digests(entry: Mapping[str, Any]) -> dict[str, str]:
    """A CRC-32 of each recorded result field of `entry`, and one of its settings
    ("settings"), so that an edit can be told from a value left behind by a changed
    setting."""
    digests = {key: _crc(entry[key]) for key in RESULT_FIELDS if key in entry}
    digests["settings"] = _crc({key: entry.get(key) for key in SETTING_FIELDS})
    return digests


@dataclass
class QuantizeReport:
    """Per-layer results of `quantize_module`, in program order."""

    scheme: str
    layers: dict[str, LayerReport] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    fractional_lengths: dict[str, int] = field(default_factory=dict)

    @property
    def float_layers(self) -> list[LayerReport]:
        """Layers left in float (hybrid), with the reason in `reason`."""
        return [r for r in self.layers.values() if r.mode == "float"]

    @property
    def bias_saturation(self) -> dict[str, int]:
        """Saturated bias channels by layer (only layers with any)."""
        return {n: r.bias_saturated for n, r in self.layers.items() if r.bias_saturated}

    def to_config(self, similarity: Mapping[str, float] | None = None) -> dict[str, Any]:
        similarity = similarity or {}
        return {
            "format": FORMAT,
            "version": 1,
            "scheme": self.scheme,
            "layers": {n: r.to_json(similarity.get(n)) for n, r in self.layers.items()},
        }

    def write_config(
        self, path: str | os.PathLike[str], similarity: Mapping[str, float] | None = None
    ) -> None:
        """Write the per-layer configuration file (optionally with similarity per layer)."""
        from npuc.output_files import write_file

        write_file(path, json.dumps(self.to_config(similarity), indent=2) + "\n")
