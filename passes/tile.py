"""`tile`: split layers into tiles that fit the target's SRAM, cascading chains of layers.

`tile{target="ethos-u55-256-hee" optimise="size"}` plans the entry function for a
target (a shipped name or a path): each layer, or each single-consumer chain of
layers run stripe by stripe (a cascade), is cut along H, W or output channels so
that every tile's working set fits `sram_limit` (default: the arena memory's size).
"performance" minimises estimated cycles with peak SRAM under the limit, "size"
minimises peak SRAM. `manual="(3,7,4,1);(12,12,1,2)"` fixes groups by hand
(`(first, last, h_parts[, w_parts])`, layers numbered as `report=true` prints them);
the other layers are planned automatically. `cascade="rolling"` runs cascades split
along H through rolling buffers, so that no row is computed twice; `cascade="recompute"`
recomputes halo rows (as do the W parts of any cascade), at most `overlap_limit` of the
rows they need; `cascade="auto"` (the default) picks per cascade by the estimates
(manual cascades roll).

The tiled function is an unrolled sequence of `nn`/`qnn` ops on tiles plus `tile`
ops (dialects/tile.py), numerically identical to the original. The plan is
recorded on the function as `tile.*` attributes. Design and formulas: docs/tiling.md.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f64,
    i64,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from npuc.diagnostics import NpucError
from npuc.dialects.arrays import ints
from npuc.dialects.nn_base import shape_of
from npuc.graph_io import entry_function, input_names
from npuc.target import Target, available_targets, load_target

from .tiling.layers import Layer, find_layers
from .tiling.manual import check_entries, parse_manual
from .tiling.materialise import materialise
from .tiling.search import Group, Planner
from .tiling.working_set import Memories

OPTIMISE = ("performance", "size")
CASCADES = ("rolling", "recompute", "auto")


@dataclass(frozen=True)
class TilingPlan:
    """What the pass decided: groups in layer order, the estimates, and any warnings."""

    target: Target
    layers: list[Layer]
    groups: list[Group]
    sram_limit: int
    lowest_peak: int
    warnings: list[str]

    @property
    def peak(self) -> int:
        return max([g.estimate.peak for g in self.groups] + [self.lowest_peak])

    @property
    def cycles(self) -> int:
        return sum(g.estimate.cycles for g in self.groups)


@dataclass(frozen=True)
class TilePass(ModulePass):
    """Tile the entry function for a target (see the module docstring)."""

    name = "tile"

    target: str = ""
    """Target name (targets/*.toml) or path to a target file; required."""
    optimise: str = "performance"
    """"performance" (fewest estimated cycles under the SRAM limit) or "size" (least SRAM)."""
    manual: str = ""
    """Groups fixed by hand: `(first, last, h_parts[, w_parts]); ...`."""
    cascade: str = "auto"
    """"rolling" (H-split cascades keep rows in rolling buffers), "recompute" (halos), or
    "auto" (the better of the two per automatic cascade, by the estimates)."""
    overlap_limit: float = 0.5
    """Largest halo recompute of a cascade: recomputed / needed output elements."""
    sram_limit: int = 0
    """Bytes every tile's working set must fit (0: the target's arena memory size)."""
    report: bool = False
    """Print the layer table and the plan to stderr."""

    def __post_init__(self) -> None:
        if self.optimise not in OPTIMISE:
            raise NpucError(
                f"tile: optimise must be 'performance' or 'size', got '{self.optimise}'"
            )
        if self.cascade not in CASCADES:
            raise NpucError(
                f"tile: cascade must be 'rolling', 'recompute' or 'auto', got '{self.cascade}'"
            )
        if not self.overlap_limit >= 0:
            raise NpucError(f"tile: overlap_limit must be >= 0, got {self.overlap_limit}")
        if self.sram_limit < 0:
            raise NpucError(f"tile: sram_limit must be >= 0 bytes, got {self.sram_limit}")
        parse_manual(self.manual)  # syntax errors before any work

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        tile_module(op, self)


def tile_module(module: ModuleOp, options: TilePass) -> TilingPlan:
    """Plan and rewrite `module` in place; warnings (and the report) go to stderr."""
    plan = plan_tiling(module, options)
    func = entry_function(module)
    materialise(plan.layers, plan.groups, Memories.of_target(plan.target, func))
    annotate(func, plan, options)
    for warning in plan.warnings:
        print(f"tile: warning: {warning}", file=sys.stderr)
    if options.report:
        print(format_report(plan), file=sys.stderr)
    return plan


def plan_tiling(module: ModuleOp, options: TilePass) -> TilingPlan:
    """Number the layers and choose groups and parts, without changing the module."""
    if not options.target:
        names = ", ".join(available_targets())
        raise NpucError(
            f'tile: the target option is required, e.g. tile{{target="mcu-64"}} ({names})'
        )
    target = load_target(options.target)
    try:
        func = entry_function(module)
    except ValueError as e:
        raise NpucError(f"tile: {e}") from None
    layers = find_layers(func)
    entries = parse_manual(options.manual)
    check_entries(entries, layers)
    limit = options.sram_limit or target.sram.size
    planner = Planner(func, layers, target, limit, options.overlap_limit, options.cascade)
    groups, lowest = planner.plan(options.optimise, [e.as_tuple() for e in entries])
    warnings = []
    for g in groups:
        span = _span(layers, g)
        if g.estimate.working_set > limit:
            warnings.append(
                f"{span}: a tile needs {g.estimate.working_set} bytes, over the SRAM limit {limit}"
            )
        if g.manual and g.estimate.overlap > options.overlap_limit:
            warnings.append(
                f"{span}: halo recompute {g.estimate.overlap:.2f} exceeds overlap_limit "
                f"{options.overlap_limit}"
            )
    if lowest > limit:
        warnings.append(
            f"peak SRAM of at least {lowest} bytes exceeds the SRAM limit {limit}"
            + _bottleneck(planner, func, layers, groups, limit)
        )
    return TilingPlan(target, layers, groups, limit, lowest, warnings)


def _bottleneck(
    planner: Planner, func: FuncOp, layers: list[Layer], groups: list[Group], limit: int
) -> str:
    """Why the plan cannot fit: the group with the largest peak, the whole tensors live
    while it runs (which no tiling of it can shrink) and what its own tiles add."""
    g = max(groups, key=lambda g: g.estimate.peak)
    e = g.estimate
    names: dict[SSAValue, str] = dict(zip(func.body.block.args, input_names(func), strict=True))
    tensors = planner.resident_tensors(g.first, g.last)
    shown = []
    for value, size in tensors[:6]:
        ty = value.type
        dims = "x".join(map(str, ty.get_shape())) if isinstance(ty, TensorType) else "?"
        shown.append(f"'{_value_name(value, names)}' {dims} ({size} bytes)")
    more = len(tensors) - len(shown)
    if more > 0:
        shown.append(f"{more} more ({sum(s for _, s in tensors[6:])} bytes)")
    own = e.peak - e.resident
    why = (
        f": at {_span(layers, g)} ({'x'.join(map(str, e.parts))} parts), "
        f"{e.resident} bytes of whole tensors are live: {', '.join(shown) or 'none'}; "
        f"its tiles and weights add {own} bytes"
    )
    big = [(v, s) for v, s in tensors if s > limit]
    if big:
        why += "; " + ", ".join(
            f"'{_value_name(v, names)}' alone is larger than the SRAM" for v, _ in big[:3]
        )
    elif e.resident > limit:
        why += " (together more than the SRAM: they must stay whole, as inputs, outputs or "
        why += "tensors read again later, and no tiling of this layer range shrinks them)"
    return why


def _value_name(value: SSAValue, names: dict[SSAValue, str]) -> str:
    if value in names:
        return names[value]
    owner = value.owner
    attr = owner.properties.get("name") if isinstance(owner, Operation) else None
    return attr.data if isinstance(attr, StringAttr) else getattr(owner, "name", "?")


def _span(layers: list[Layer], g: Group) -> str:
    if g.first == g.last:
        return f"layer {g.first} '{layers[g.first].name}'"
    return f"layers {g.first}..{g.last} ('{layers[g.first].name}'..'{layers[g.last].name}')"


def annotate(func: FuncOp, plan: TilingPlan, options: TilePass) -> None:
    """Record the plan on the function: totals and one dictionary per group."""
    groups = []
    for g in plan.groups:
        e = g.estimate
        entry = {
            "layers": ints([g.first, g.last]),
            "name": StringAttr(plan.layers[g.first].name),
            "parts": ints(e.parts),
            "working_set": IntegerAttr(e.working_set, i64),
            "peak": IntegerAttr(e.peak, i64),
            "est_cycles": IntegerAttr(e.cycles, i64),
            "overlap": FloatAttr(round(e.overlap, 4), f64),
        }
        if e.rolling:
            entry["cascade"] = StringAttr("rolling")
        groups.append(DictionaryAttr(entry))
    func.attributes["tile.target"] = StringAttr(plan.target.name)
    func.attributes["tile.optimise"] = StringAttr(options.optimise)
    func.attributes["tile.peak_sram"] = IntegerAttr(plan.peak, i64)
    func.attributes["tile.est_cycles"] = IntegerAttr(plan.cycles, i64)
    func.attributes["tile.groups"] = ArrayAttr(groups)


def _shape(layer: Layer) -> str:
    ins = [layer.source(i) for i in layer.activations[:1]]
    shapes = [shape_of(v) for v in (*ins, layer.result)]
    return " -> ".join("x".join(map(str, s)) for s in shapes)


def format_report(plan: TilingPlan) -> str:
    """The layer table (numbering used by `manual`) and the chosen groups."""
    group_of = {k: g for g in plan.groups for k in range(g.first, g.last + 1)}
    lines = [
        f"tile: target {plan.target.name}, SRAM limit {plan.sram_limit} bytes",
        f"{'#':>4}  {'layer':<24} {'op':<20} {'shapes':<30} {'group':<9} {'parts':<9} "
        f"{'tile ws':>9}",
    ]
    for layer in plan.layers:
        g = group_of[layer.index]
        k = layer.index - g.first
        ws = g.estimate.layer_working_sets[k] if g.estimate.layer_working_sets else 0
        parts = "x".join(map(str, g.estimate.parts))
        lines.append(
            f"{layer.index:>4}  {layer.name[:24]:<24} {layer.op.name[:20]:<20} "
            f"{_shape(layer)[:30]:<30} {f'{g.first}..{g.last}':<9} {parts:<9} {ws:>9}"
        )
    lines.append("groups (peak: resident tensors + weights + largest tile):")
    for g in plan.groups:
        e = g.estimate
        tag = (" manual" if g.manual else "") + (" rolling" if e.rolling else "")
        lines.append(
            f"  {_span(plan.layers, g)}: parts {'x'.join(map(str, e.parts))}{tag}, "
            f"peak {e.peak}, tile ws {e.working_set}, cycles {e.cycles}, "
            f"overlap {e.overlap:.2f}"
        )
    lines.append(
        f"peak SRAM {plan.peak} bytes ({plan.peak / 1024:.2f} KiB), estimated cycles {plan.cycles}"
    )
    return "\n".join(lines)
