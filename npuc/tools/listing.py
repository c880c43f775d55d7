"""What the tools list on request: every pass with its description and options (`npu-opt
--help`), every shipped target with its figures (`--list-targets`)."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping

from xdsl.passes import ModulePass


def _first_line(doc: str | None) -> str:
    lines = (doc or "").strip().splitlines()
    return lines[0].strip() if lines else ""


def _option(field: dataclasses.Field) -> str:
    if field.default is not dataclasses.MISSING:
        return f"{field.name}: {field.type} = {_shown(field.default)}"
    if field.default_factory is not dataclasses.MISSING:
        return f"{field.name}: {field.type} = {_shown(field.default_factory())}"
    return f"{field.name}: {field.type} (required)"


def _shown(value: object) -> str:
    """A default as a pipeline spec writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if value in ("", ()):
        return '""' if value == "" else "()"
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return str(value)


def pass_help(passes: Mapping[str, Callable[[], type[ModulePass]]]) -> str:
    """One entry per pass: its name and one-line description, then its options."""
    lines = ["passes (-p NAME{option=value ...},NAME,...):"]
    for name, load in passes.items():
        cls = load()
        lines.append(f"  {name:<20} {_first_line(cls.__doc__)}")
        lines += [f"      {_option(f)}" for f in dataclasses.fields(cls)]
    return "\n".join(lines)


def target_lines() -> list[str]:
    """The shipped targets, one line each: MACs per cycle, SRAM, clock, description."""
    from ..target import available_targets, load_target

    lines = []
    for name in available_targets():
        t = load_target(name)
        sram = t.sram
        lines.append(
            f"{name:<20} {t.macs_per_cycle:>4} MACs/cycle, {_size(sram.size)} {sram.name}, "
            f"{t.clock_mhz:g} MHz: {t.description}"
        )
    return lines


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % (scale // 1024 or 1) == 0:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


class ListTargetsAction(argparse.Action):
    """`--list-targets`: print the shipped targets and exit."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object):
        kwargs.setdefault("help", "list the shipped targets (MACs, SRAM, clock) and exit")
        super().__init__(option_strings, dest, nargs=0, default=False, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print("\n".join(target_lines()))
        parser.exit()


class PassHelpAction(argparse.Action):
    """`-h/--help` with every pass described (importing the passes only when asked)."""

    def __init__(self, option_strings: list[str], dest: str, passes=None, **kwargs: object):
        kwargs.setdefault("help", "show this help message, every pass and its options, and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)  # type: ignore[arg-type]
        self.passes = passes or {}

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
        targets = "\n".join(f"  {line}" for line in target_lines())
        parser.epilog = (
            f"{pass_help(self.passes)}\n\nhardware targets (the target option of tile and "
            f"plan-memory):\n{targets}"
        )
        parser.print_help()
        parser.exit()
