"""`--list-plugins`: the plugins found, where each comes from and what it provides."""

from __future__ import annotations

import argparse
import os

from ..plugin_registry import (
    ENTRY_POINT_GROUP,
    NO_ENTRY_POINTS_VARIABLE,
    PATH_VARIABLE,
    Loaded,
    registry,
)
from ..plugins import PluginError


def add_list_plugins_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--list-plugins",
        action="store_true",
        help="list the installed plugins and what each provides, then exit",
    )


def plugin_listing() -> str:
    """One block per plugin (a broken one with what failed); every plugin is imported."""
    found = registry()
    lines = [
        f"plugins: entry points of group '{ENTRY_POINT_GROUP}'"
        + (f" (ignored: {NO_ENTRY_POINTS_VARIABLE} is set)" if _entry_points_off() else "")
        + f"; {PATH_VARIABLE}={os.environ.get(PATH_VARIABLE, '')!r}"
    ]
    if not found.names:
        lines.append("no plugins installed")
    for name in found.names:
        lines.append(f"{name}: {found.found[name].origin}")
        try:
            lines += [f"  {line}" for line in _provides(found.load(name))]
        except PluginError as e:
            lines.append(f"  broken: {e.diagnostic()}")
    return "\n".join(lines) + "\n"


def _entry_points_off() -> bool:
    return os.environ.get(NO_ENTRY_POINTS_VARIABLE, "") not in ("", "0")


def _provides(loaded: Loaded) -> list[str]:
    p = loaded.plugin
    rows = [
        ("dialect", [loaded.name] if p.dialect is not None else []),
        ("ONNX ops", [f"{d or 'ai.onnx'}::{op}" for d, op in p.onnx_converters]),
        ("TFLite custom ops", [f"{code} ({kind})" for code, kind in p.tflite_converters]),
        ("kernels", list(p.kernels)),
        (
            "quantization",
            [
                f"{op} -> {r.quantized_op} ({'/'.join(map(str, r.bits))}-bit)"
                for op, r in p.quantization.items()
            ],
        ),
        ("NPU lowerings", list(p.lowerings)),
        ("host costs", list(p.host_costs)),
        ("passes", list(p.passes)),
        ("targets", [f"{os.path.splitext(os.path.basename(t))[0]}" for t in p.targets]),
    ]
    lines = [p.description] if p.description else []
    lines += [f"{label}: {', '.join(items)}" for label, items in rows if items]
    return lines or ["provides nothing"]
