"""`quantize`: lower a float `nn` graph to quantized `qnn` with integer-only arithmetic.

Ranges per tensor come from a calibration statistics file (`stats=PATH`, with
`activation_strategy` and `weight_strategy`), a JSON file of ranges
(`ranges=PATH`: `{"tensor": [lo, hi], ...}`), `samples=N` seeded random
inputs (smoke tests), or, from Python, a mapping passed to `quantize_module`.
Tensor names are the reference interpreter's: graph inputs by name, op results
by their `name` property (`name:i` for multi-result ops) or printed `%N`.

Schemes, op coverage and the configuration file: docs/quantization.md
("Schemes", "The quantize pass"). Only the entry function is rewritten.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import ConstantLike

from npuc import graph_io
from npuc.diagnostics import NpucError, working_on
from npuc.dialects.nn import NN
from npuc.dialects.qnn import UniformQuantizedType
from npuc.integer import ROUNDING_MODES
from npuc.runtime.nn_interpreter import tensor_names

from .quantization.adaround import learn_roundings
from .quantization.auto_strategy import select_for_model
from .quantization.bias_correction import correct_biases, working_copy
from .quantization.layer_config import (
    LayerOverrides,
    LayerSetting,
    QuantizeReport,
    parse_layers_option,
    read_layer_config,
)
from .quantization.lowering import (
    FREE_OUTPUT,
    Emitter,
    Layer,
    classify,
    constant_data,
    fused_activation,
    is_constant,
    is_f32_tensor,
)
from .quantization.op_lowering import lower
from .quantization.ranges import activation_range, auto_choice
from .quantization.recorded import check_recorded, force_recorded_outputs
from .quantization.schemes import Scheme, TensorScheme, scheme_named
from .quantization.statistics import TensorStatistics

if TYPE_CHECKING:
    from .quantization.auto_strategy import StrategyProbe

GIVEN = "given"  # the strategy label of ranges passed in directly
IO_MODES = ("float", "quantized")

Range = tuple[float, float]
RangeSource = Callable[[str, str, int, bool], Range | None]


@dataclass(frozen=True)
class QuantizeConfig:
    """Options of `quantize_module` (the pass's options, minus where ranges come from)."""

    scheme: str = "int8-per-channel"
    io: str = "float"
    full_range: bool = False
    weight_bits: int = 8
    bias_bits: int = 32
    rounding: str = "half_away_from_zero"
    activation_strategy: str = "auto"
    weight_strategy: str = "extrema"
    overrides: LayerOverrides = field(default_factory=LayerOverrides)
    bias_correction: bool = False  # quantization/bias_correction.py
    adaround: bool = False  # quantization/adaround.py
    adaround_iterations: int = 1000

    def check(self) -> None:
        scheme_named(self.scheme)
        if self.io not in IO_MODES:
            raise NpucError(f"io must be 'float' or 'quantized', got '{self.io}'")
        if not 2 <= self.bias_bits <= 32:
            raise NpucError(f"bias_bits must be in [2, 32], got {self.bias_bits}")
        if self.rounding not in ROUNDING_MODES:
            raise NpucError(f"rounding must be one of {', '.join(ROUNDING_MODES)}")
        if self.weight_bits not in (4, 8, 16):
            raise NpucError(f"weight_bits must be 4, 8 or 16, got {self.weight_bits}")
        if not 1 <= self.adaround_iterations <= 100_000:
            raise NpucError(
                f"adaround_iterations must be in [1, 100000], got {self.adaround_iterations}"
            )


@dataclass(eq=False)
class Plan:
    """Layer kinds, tensor names and quantized types of one function.

    Decided before anything is emitted: which relu/clip ops fold into their
    producer's clamp (`fold_clamps`), and which values take a concat's shared
    type directly (`share_concat_scales`, recorded in `forced`).
    """

    scheme: Scheme
    keys: dict[SSAValue, str]  # tensor names (interpreter keys, input names)
    ranges: RangeSource
    weight_ranges: Callable[..., tuple[np.ndarray, np.ndarray]]
    full_range: bool
    bias_bits: int
    rounding: str
    report: QuantizeReport
    input_strategy: str
    layers: dict[Operation, Layer] = field(default_factory=dict)
    forced: dict[SSAValue, UniformQuantizedType] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    chosen: dict[SSAValue, str] = field(default_factory=dict)  # what `auto` stood for
    # Learned weight roundings (adaround.py): (weight value, its type) -> stored integers.
    learned: dict[tuple[SSAValue, UniformQuantizedType], np.ndarray] = field(default_factory=dict)
    _types: dict[tuple[SSAValue, int], UniformQuantizedType] = field(default_factory=dict)

    def strategy_of(self, value: SSAValue) -> str:
        layer = self.layers.get(value.owner) if isinstance(value.owner, Operation) else None
        if layer is not None and layer.setting.strategy is not None:
            return layer.setting.strategy
        return self.input_strategy

    def value_range(self, value: SSAValue, bits: int) -> tuple[float, float] | None:
        """The calibrated range of `value` (constants: their extrema)."""
        data = constant_data(value)
        if data is not None:
            return float(np.min(data, initial=0.0)), float(np.max(data, initial=0.0))
        key = self.keys.get(value)
        if key is None:
            return None
        symmetric = self.scheme.activation(bits).symmetric
        strategy = self.strategy_of(value)
        found = self.ranges(key, strategy, bits, symmetric)
        if found is not None and isinstance(self.ranges, StatisticsRanges) and strategy == "auto":
            self.chosen[value] = self.ranges.auto_choice(key, bits, symmetric)
        return found

    def act_type(self, value: SSAValue, bits: int) -> UniformQuantizedType:
        """The activation type of `value` at `bits` (a concat's shared type if forced)."""
        forced = self.forced.get(value)
        if forced is not None and forced.storage_bits.data == bits:
            return forced
        if (value, bits) not in self._types:
            found = self.value_range(value, bits)
            if found is None:
                self.missing.append(self.keys.get(value, str(value)))
                found = (-1.0, 1.0)
            self._types[value, bits] = self.scheme.activation(bits).qtype(*found)
        return self._types[value, bits]

    def weight_scheme(self, layer: Layer) -> TensorScheme:
        assert layer.setting.weight_bits is not None
        return self.scheme.weight(layer.setting.weight_bits, self.full_range)

    def weight_type(self, layer: Layer, data: np.ndarray, axis: int | None) -> UniformQuantizedType:
        """The type `layer` stores the constant weight `data` in (per index of `axis` if any)."""
        ts = self.weight_scheme(layer)
        lo, hi = self.weight_ranges(
            data, layer.setting.weight_strategy, axis=axis, bits=ts.bits, symmetric=ts.symmetric
        )
        return ts.qtype(lo, hi, axis)

    # ---------------------------------------------------------------- planning steps

    def fold_clamps(self) -> None:
        """relu/clip after a free-output producer (its only user, same bits) joins its clamp."""
        for layer in self.layers.values():
            if layer.kind != "clamp":
                continue
            source = layer.op.operands[0]
            producer = (
                self.layers.get(source.owner) if isinstance(source.owner, Operation) else None
            )
            if (
                producer is None
                or producer.kind not in ("weighted", "arithmetic", "pool")
                or producer.follower is not None
                or fused_activation(producer.op)[0] not in (None, "clip")
                or not source.has_one_use()
                or producer.bits != layer.bits
            ):
                continue
            producer.follower, layer.folded_into = layer, producer

    def share_concat_scales(self) -> None:
        """Give each concat one type covering its inputs; producers emit it directly."""
        for layer in self.layers.values():
            if layer.kind != "concat":
                continue
            bits = layer.bits
            found = [self.value_range(v, bits) for v in layer.op.operands]
            found.append(self.value_range(layer.op.results[0], bits))
            known = [r for r in found if r is not None]
            if not known:
                continue
            lo, hi = min(r[0] for r in known), max(r[1] for r in known)
            recorded = self.forced.get(layer.op.results[0])  # a configuration file's type
            if recorded is not None and recorded.storage_bits.data == bits:
                shared = recorded
            else:
                shared = self.scheme.activation(bits).qtype(lo, hi)
            self.forced[layer.op.results[0]] = shared
            for value in layer.op.operands:
                self._retarget(value, shared, bits)

    def _retarget(self, value: SSAValue, shared: UniformQuantizedType, bits: int) -> None:
        """Give `shared` to the value behind single-use movement ops when that costs nothing.

        That is when its producer chooses its output type freely (a requantizing op or
        a LUT at the concat's width), or when the value is converted anyway (a graph
        input, a float layer, another width): the conversion then targets `shared`.
        """
        while value.has_one_use() and value not in self.forced and not is_constant(value):
            owner = value.owner
            layer = self.layers.get(owner) if isinstance(owner, Operation) else None
            if layer is not None and layer.folded_into is not None:
                layer = layer.folded_into
            if layer is None or layer.kind == "float" or layer.bits != bits:
                self.forced[value] = shared
                return
            if layer.kind in FREE_OUTPUT and fused_activation(layer.op)[0] != "leaky_relu":
                self.forced[value] = shared
                return
            if layer.kind != "movement" or len(layer.op.results) != 1:
                return
            value = layer.op.operands[0]


def ranges_from_mapping(ranges: Mapping[str, Range]) -> RangeSource:
    def source(tensor: str, strategy: str, bits: int, symmetric: bool) -> Range | None:
        found = ranges.get(tensor)
        return None if found is None else (float(found[0]), float(found[1]))

    return source


class StatisticsRanges:
    """Ranges computed on demand from calibration statistics by the range strategies."""

    def __init__(self, stats: Mapping[str, TensorStatistics]):
        self.stats = stats

    def __call__(self, tensor: str, strategy: str, bits: int, symmetric: bool) -> Range | None:
        found = self.stats.get(tensor)
        if found is None:
            return None
        return activation_range(found, strategy, bits=bits, symmetric=symmetric)

    def auto_choice(self, tensor: str, bits: int, symmetric: bool) -> str:
        """The strategy `auto` stands for on `tensor` (which has statistics)."""
        return auto_choice(self.stats[tensor], bits, symmetric)

    @property
    def probe(self) -> StrategyProbe | None:
        """The calibration run's samples; None for statistics read from a file."""
        return next((s.probe for s in self.stats.values() if s.probe is not None), None)


def _quantize_from_statistics(
    module: ModuleOp, stats: Mapping[str, TensorStatistics], config: QuantizeConfig
) -> None:
    quantize_module(module, StatisticsRanges(stats), config)


def ranges_from_statistics(stats: Mapping[str, TensorStatistics]) -> RangeSource:
    """Ranges computed on demand by the calibration library's strategies."""
    return StatisticsRanges(stats)


def _check_overrides(func: FuncOp, names: set[str], overrides: LayerOverrides) -> None:
    unknown = sorted(set(overrides.layers) - names)
    if unknown:  # at the layer configuration file when it names them
        in_file = overrides.source and set(unknown) <= set(overrides.recorded)
        raise NpucError(
            f"no layer named {', '.join(unknown)} in @{func.sym_name.data}",
            overrides.source if in_file else None,
        )
    known_types = {op.name for op in NN.operations}
    bad_types = sorted(set(overrides.op_types) - known_types)
    if bad_types:
        raise NpucError(f"unknown op type(s) {', '.join(bad_types)} in the layer configuration")


def _layer_name(op_key: str, multi: bool) -> str:
    return op_key.rpartition(":")[0] if multi and op_key.endswith(":0") else op_key


def quantize_module(
    module: ModuleOp,
    ranges: Mapping[str, Range] | RangeSource,
    config: QuantizeConfig | None = None,
) -> QuantizeReport:
    """Quantize the entry function of `module` in place; returns the per-layer report.

    `ranges` maps tensor names to (lo, hi), or is a function
    `(tensor, strategy, bits, symmetric) -> (lo, hi) | None` (see `ranges_from_statistics`).
    With a mapping, layer strategies are reported as "given".
    """
    config = config or QuantizeConfig()
    config.check()
    scheme = scheme_named(config.scheme)
    try:
        func = graph_io.entry_function(module)
    except NpucError:  # ModelStructureError: a user error as it is
        raise
    except ValueError as e:
        raise NpucError(str(e)) from e
    from .quantization.ranges import weight_range
    from .quantization.state import quantize_state, shared_state_ranges

    probe = ranges.probe if isinstance(ranges, StatisticsRanges) else None
    for option in ("bias_correction", "adaround"):
        if getattr(config, option) and probe is None:
            raise NpucError(
                f"{option} needs calibration samples: quantize right after calibrating on "
                "data (not from fixed ranges or a statistics file; a statistics file carries "
                "none)"
            )
    ranges = shared_state_ranges(module, ranges)  # a state pair keeps one type across calls
    if isinstance(ranges, Mapping):
        source, default_strategy = ranges_from_mapping(ranges), GIVEN
    else:
        source, default_strategy = ranges, config.activation_strategy
    if isinstance(source, StatisticsRanges) and default_strategy == "auto":
        select_for_model(source.stats, config, _quantize_from_statistics)

    keys = tensor_names(func)
    block = func.body.block
    if probe is not None and config.bias_correction:
        block, keys = working_copy(func.body, keys)  # takes the corrected biases
    report = QuantizeReport(scheme.name)
    plan = Plan(
        scheme=scheme,
        keys=keys,
        ranges=source,
        weight_ranges=weight_range,
        full_range=config.full_range,
        bias_bits=config.bias_bits,
        rounding=config.rounding,
        report=report,
        input_strategy=default_strategy,
    )
    default = LayerSetting(
        bits=scheme.default_bits,
        mode="int",
        strategy=default_strategy,
        weight_bits=config.weight_bits,
        weight_strategy=config.weight_strategy,
    )
    if any(op.name.startswith("qnn.") for op in block.ops):
        raise NpucError(f"@{func.sym_name.data} is already quantized (it has qnn ops)")
    body = [
        op for op in block.ops if not isinstance(op, ReturnOp) and not op.has_trait(ConstantLike)
    ]
    for op in body:
        name = _layer_name(keys[op.results[0]], len(op.results) > 1) if op.results else op.name
        setting = config.overrides.setting(name, op.name, default)
        if setting.strategy != default_strategy and default_strategy == GIVEN:
            raise NpucError(
                f"layer '{name}' asks for strategy '{setting.strategy}', but only fixed ranges "
                "were given (calibrate with a statistics file to choose strategies)"
            )
        kind, reason = classify(op, setting)
        plan.layers[op] = Layer(op, name, kind, setting, reason)
    _check_overrides(func, {layer.name for layer in plan.layers.values()}, config.overrides)
    if probe is not None and config.adaround:
        learn_roundings(plan, probe, config.adaround_iterations)
    if probe is not None and config.bias_correction:
        correct_biases(plan, block, probe)
    plan.fold_clamps()
    force_recorded_outputs(plan, config.overrides)
    plan.share_concat_scales()

    new_block, results = _emit(block, plan, config)
    if plan.missing:
        missing = ", ".join(dict.fromkeys(plan.missing))
        raise MissingRanges(f"no quantization range for tensor(s) {missing}")
    old = func.body.detach_block(func.body.block)
    func.body.add_block(new_block)
    old.drop_all_references()
    block.drop_all_references()  # the working copy, if any (else `old` again: harmless)
    func.function_type = FunctionType.from_lists(
        [a.type for a in new_block.args], [v.type for v in results]
    )
    quantize_state(module, config.rounding)
    module.verify()
    check_recorded(report, config.overrides)
    for layer in report.layers.values():
        for t in (*layer.inputs, *layer.outputs):
            if t.fractional_length is not None:
                report.fractional_lengths[t.tensor] = t.fractional_length
    return report


def _argument_bits(arg: SSAValue, plan: Plan) -> int:
    """Bits of a quantized graph input: those of its first integer consumer."""
    for use in arg.uses:
        layer = plan.layers.get(use.operation)
        if layer is not None and layer.kind != "float":
            return layer.bits
    return plan.scheme.default_bits


def _emit(block: Block, plan: Plan, config: QuantizeConfig) -> tuple[Block, list[SSAValue]]:
    """The new body (and its returned values) from `block`, which is left untouched."""
    quantized_io = config.io == "quantized"
    arg_types: list[Attribute] = []
    for arg in block.args:
        if quantized_io and is_f32_tensor(arg):
            q = plan.act_type(arg, _argument_bits(arg, plan))
            assert isinstance(arg.type, TensorType)
            arg_types.append(TensorType(q, arg.type.get_shape()))
        else:
            arg_types.append(arg.type)
    new_block = Block(arg_types=arg_types)
    em = Emitter(plan, new_block)
    for old, new in zip(block.args, new_block.args, strict=True):
        new.name_hint = old.name_hint
        is_q = isinstance(new.type, TensorType) and isinstance(
            new.type.element_type, UniformQuantizedType
        )
        (em.quant_form if is_q else em.float_form)[old] = new
    returned: list[SSAValue] = []
    for op in block.ops:
        if isinstance(op, ReturnOp):
            for value in op.operands:
                if quantized_io and is_f32_tensor(value):
                    own = em.quant_form.get(value)
                    returned.append(own or em.as_bits(value, plan.scheme.default_bits))
                else:
                    returned.append(em.as_float(value))
            em.add(ReturnOp(*returned))
        elif op in plan.layers:
            with working_on("op", op):
                lower(em, plan.layers[op])
    return new_block, returned


class MissingRanges(NpucError):
    """Tensors the given ranges (a ranges or statistics file) say nothing about."""


def _read_ranges(path: str) -> dict[str, Range]:
    from npuc.input_files import read_json

    data = read_json(path, "a JSON ranges file")
    if not isinstance(data, dict) or not all(
        isinstance(r, list) and len(r) == 2 and all(_is_number(x) for x in r) for r in data.values()
    ):
        raise NpucError('a ranges file maps tensor names to [lo, hi]: {"x": [-1.0, 2.5]}', path)
    ranges = {}
    for name, (lo, hi) in data.items():
        try:
            lo, hi = float(lo), float(hi)
        except OverflowError:
            lo = hi = math.inf
        if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
            raise NpucError(
                f"the range of '{name}' must be finite numbers lo <= hi, got {data[name]}", path
            )
        ranges[name] = (lo, hi)
    return ranges


def _is_number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


@dataclass(frozen=True)
class QuantizePass(ModulePass):
    """Quantize the float `nn` entry function to `qnn` (integer-only where possible).

    scheme: int8, int8-per-channel, uint8, int16 (16x8) or pow2.
    stats / ranges / samples: where tensor ranges come from (exactly one).
    activation_strategy, weight_strategy: range strategies (with stats; weights always).
    io: "float" (quantize/dequantize at the boundary) or "quantized" (quantized signature).
    full_range: symmetric weights use [-128, 127] instead of [-127, 127].
    weight_bits, bias_bits: weight storage bits; effective bias bits (saturating).
    rounding: the requantization rounding rule of every rescaling op.
    bias_correction: subtract each weighted layer's mean output shift due to weight
      quantization from its bias (needs calibration samples: samples=N, not stats=PATH).
    adaround, adaround_iterations: learn each weight's rounding (up or down) so the layer's
      outputs on the calibration samples move least (needs samples=N, like bias_correction).
    layers: per-layer overrides, "NAME:SPEC,..." (SPEC 8, 16, int, float; NAME may be nn.OP).
    config / write_config: read / write the per-layer configuration file (JSON).
    """

    name = "quantize"

    scheme: str = "int8-per-channel"
    stats: str | None = None
    ranges: str | None = None
    samples: int = 0
    activation_strategy: str = "auto"
    weight_strategy: str = "extrema"
    io: str = "float"
    full_range: bool = False
    weight_bits: int = 8
    bias_bits: int = 32
    rounding: str = "half_away_from_zero"
    bias_correction: bool = False
    adaround: bool = False
    adaround_iterations: int = 1000
    layers: str | None = None
    config: str | None = None
    write_config: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        sources = [self.stats is not None, self.ranges is not None, self.samples > 0]
        if sum(sources) != 1:
            raise NpucError("quantize needs exactly one of stats=PATH, ranges=PATH or samples=N")
        overrides = LayerOverrides()
        if self.config is not None:
            overrides = read_layer_config(self.config)
        if self.layers is not None:
            overrides = overrides.merged(parse_layers_option(self.layers))
        config = QuantizeConfig(
            scheme=self.scheme,
            io=self.io,
            full_range=self.full_range,
            weight_bits=self.weight_bits,
            bias_bits=self.bias_bits,
            rounding=self.rounding,
            activation_strategy=self.activation_strategy,
            weight_strategy=self.weight_strategy,
            overrides=overrides,
            bias_correction=self.bias_correction,
            adaround=self.adaround,
            adaround_iterations=self.adaround_iterations,
        )
        ranges: Mapping[str, Range] | RangeSource
        if self.ranges is not None:
            ranges = _read_ranges(self.ranges)
        else:
            from .quantization.statistics import collect_statistics, load_statistics

            if self.stats is not None:
                stats, _ = load_statistics(self.stats)
            else:
                from .quantization.datasets import random_dataset

                batches = random_dataset(op, self.samples)
                stats = collect_statistics(op, batches, progress=False)
            ranges = ranges_from_statistics(stats)
        try:
            report = quantize_module(op, ranges, config)
        except MissingRanges as e:  # the file that gave the ranges lacks them
            e.location = e.location or self.ranges or self.stats
            raise
        if self.write_config is not None:
            report.write_config(self.write_config)
