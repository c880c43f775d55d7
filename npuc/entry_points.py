"""The entry points of a group, read from the installed distributions' metadata folders.

What `importlib.metadata.entry_points(group=...)` returns, for the distributions installed
in folders on `sys.path` (the `*.dist-info` and `*.egg-info` folders there; a distribution
found twice counts where it is found first). Every npuc process looks for plugins, and
importing importlib.metadata (email, zipfile, csv, ...) costs 30-40 ms of it, more than the
look-up; this one reads only the `entry_points.txt` files, and a distribution's name and
version only when it has an entry point in the group. Distributions inside zip files on
`sys.path` are not searched.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from importlib import import_module

_METADATA_SUFFIXES = (".dist-info", ".egg-info")
_SECTION = re.compile(r"\[\s*(?P<group>[^\]]+?)\s*\]\s*$")


@dataclass(frozen=True)
class EntryPoint:
    """One entry point: `value` is `module:attribute.path` (the attribute is optional)."""

    name: str
    value: str
    group: str
    dist_name: str
    dist_version: str

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    def load(self) -> object:
        """The object the entry point names (its module imported)."""
        found: object = import_module(self.module)
        for attribute in filter(None, self.value.partition(":")[2].strip().split(".")):
            found = getattr(found, attribute)
        return found


def entry_points(group: str, path: list[str] | None = None) -> list[EntryPoint]:
    """Every entry point of `group`, in the order of `path` (default `sys.path`)."""
    seen: set[str] = set()
    found: list[EntryPoint] = []
    for folder in sys.path if path is None else path:
        for name in _metadata_folders(folder or "."):
            key = _normalized(name.rsplit(".", 1)[0].split("-", 1)[0])
            if key in seen:
                continue
            seen.add(key)
            metadata = os.path.join(folder or ".", name)
            points = _group(os.path.join(metadata, "entry_points.txt"), group)
            if points:
                dist, version = _name_and_version(metadata, name)
                found += [EntryPoint(n, v, group, dist, version) for n, v in points]
    return found


def _metadata_folders(folder: str) -> list[str]:
    try:
        names = os.listdir(folder)
    except OSError:  # missing, a file (a zip), unreadable
        return []
    return [n for n in names if n.endswith(_METADATA_SUFFIXES)]


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _group(file: str, group: str) -> list[tuple[str, str]]:
    """The (name, value) pairs of `group`'s section of an entry_points.txt."""
    try:
        with open(file, encoding="utf-8") as stream:
            lines = stream.read().splitlines()
    except (OSError, UnicodeDecodeError):  # unreadable: that distribution offers nothing
        return []
    points, inside = [], False
    for line in lines:
        text = line.strip()
        if not text or text.startswith(("#", ";")):
            continue
        section = _SECTION.match(text)
        if section:
            inside = section["group"] == group
        elif inside and "=" in text:
            name, _, value = text.partition("=")
            points.append((name.strip(), value.split("[", 1)[0].strip()))
    return points


def _name_and_version(metadata: str, folder_name: str) -> tuple[str, str]:
    """Name and Version from the metadata file's header (the folder's name if unreadable)."""
    stem = folder_name.rsplit(".", 1)[0]
    name, _, version = stem.partition("-")
    fields: dict[str, str] = {}
    for file in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(metadata, file), encoding="utf-8") as stream:
                for line in stream:
                    if not line.strip():
                        break  # the header ends at the first empty line
                    key, _, value = line.partition(":")
                    if key in ("Name", "Version") and key not in fields:
                        fields[key] = value.strip()
            break
        except (OSError, UnicodeDecodeError):
            continue
    return fields.get("Name", name), fields.get("Version", version)
