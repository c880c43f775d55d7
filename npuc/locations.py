"""Source locations: each op of an imported model carries `loc("LAYER")`, the name of the
layer it came from (an ONNX node's name, a TFLite operator's output tensor).

The `name` attribute stays the key the interpreters and reports use; the location is what
`--print-debuginfo` prints and what diagnostics name. Passes that build new ops keep the
`name`, so `name_locations` gives those ops the location again after each pass.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FileLineColLoc, NameLoc, NoneAttr, StringAttr, UnknownLoc
from xdsl.ir import Attribute, Operation


def layer_of(op: Operation) -> str | None:
    """The layer name an op carries in its `name` property or attribute."""
    attr = op.properties.get("name") or op.attributes.get("name")
    return attr.data if isinstance(attr, StringAttr) and attr.data else None


def name_locations(root: Operation) -> None:
    """Give every op under `root` without a location `loc("LAYER")` from its layer name; an
    npu instruction takes the name of its layer in the program's `layers`."""
    for op in root.walk():
        if not isinstance(op.location, UnknownLoc):
            continue
        name = layer_of(op) or _program_layer(op)
        if name is not None:
            op.location = NameLoc(StringAttr(name), NoneAttr())


def _program_layer(op: Operation) -> str | None:
    index = op.properties.get("layer")
    program = op.parent_op()
    layers = program.properties.get("layers") if program is not None else None
    if index is None or layers is None or not hasattr(index, "value"):
        return None
    i = index.value.data
    names = getattr(layers, "data", ())
    return names[i].data if 0 <= i < len(names) else None


def describe(location: Attribute) -> str | None:
    """A location for a diagnostic: `layer "conv1"`, `file:line:col`, or None if unknown."""
    if isinstance(location, NameLoc):
        return f'layer "{location.desc.data}"'
    if isinstance(location, FileLineColLoc):
        return f"{location.filename.data}:{location.line.data}:{location.column.data}"
    return None
