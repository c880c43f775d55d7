"""NAME.layers.csv and NAME.summary.csv: the profile as spreadsheets, in the spirit of Vela's
`*_per-layer.csv` and `*_summary_*.csv` (docs/compiling.md lists the columns)."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence

from npuc.dialects.npu_isa import ENGINES

from .cycle_model import Profile
from .layer_table import LayerRow


def _csv(rows: Sequence[Sequence[object]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def _percent(x: float) -> str:
    return f"{100 * x:.3f}"


def layers_csv(rows: Sequence[LayerRow], profile: Profile) -> str:
    """One line per layer: what it is, where it runs, cycles and what bounds them, MACs,
    bytes per memory and the SRAM in use."""
    memories = list(profile.memories)
    head = [
        "index",
        "layer",
        "op",
        "runs_on",
        "cycles",
        "network_cycles_percent",
        "compute_cycles",
        "exposed_dma_cycles",
        "host_cycles",
        "bound",
        "macs",
        "network_macs_percent",
        "utilization_percent",
        "sram_in_use_bytes",
    ]
    head += [f"{m}_read_bytes" for m in memories] + [f"{m}_written_bytes" for m in memories]
    lines: list[list[object]] = [head]
    for r in rows:
        line: list[object] = [
            r.index,
            r.name,
            r.op,
            r.runs_on,
            r.cycles,
            _percent(r.cycles_share),
            r.compute_cycles,
            r.dma_cycles,
            r.host_cycles,
            r.bound,
            r.macs,
            _percent(r.macs_share),
            _percent(r.utilization),
            "" if r.sram_in_use is None else r.sram_in_use,
        ]
        line += [r.bytes_read.get(m, 0) for m in memories]
        line += [r.bytes_written.get(m, 0) for m in memories]
        lines.append(line)
    return _csv(lines)


def summary_fields(profile: Profile, network: str) -> dict[str, object]:
    """The network's figures from the profile alone."""
    fields: dict[str, object] = {
        "network": network,
        "target": profile.target,
        "clock_mhz": profile.clock_mhz,
        "macs_per_cycle": profile.macs_per_cycle,
        "inference_time_ms": f"{profile.inference_ms:.6f}",
        "inferences_per_second": f"{profile.inferences_per_s:.3f}",
        "cycles_total": profile.total_cycles,
    }
    fields |= {f"{e}_busy_cycles": profile.busy.get(e, 0) for e in ENGINES}
    fields |= {
        "macs": profile.total_macs,
        "utilization_percent": _percent(profile.utilization),
        "instructions": len(profile.instructions),
        "npu_layers": profile.share.npu_layers,
        "host_layers": profile.share.host_layers,
        "npu_macs": profile.share.npu_macs,
        "host_macs": profile.share.host_macs,
    }
    for m in profile.memories:
        fields[f"{m}_read_bytes"] = sum(layer.bytes_read.get(m, 0) for layer in profile.layers)
        fields[f"{m}_written_bytes"] = sum(
            layer.bytes_written.get(m, 0) for layer in profile.layers
        )
    if profile.sram:
        fields["peak_sram_in_use_bytes"] = max(profile.sram.values())
    return fields


def summary_csv(profile: Profile, network: str, more: Mapping[str, object] = {}) -> str:
    """A header line and one line of figures: the profile's, then `more` (the memory plan's
    region sizes and memories used, where the caller knows them)."""
    fields = summary_fields(profile, network) | dict(more)
    return _csv([list(fields), list(fields.values())])
