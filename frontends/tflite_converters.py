"""The TFLite operator converters, one table keyed by (operator, kind).

`kind` is the arithmetic the operator's data asks for: "float", "int8" (TFLite's int8 and
uint8 quantization) or "int16x8" (int16 activations, int8 weights). An int16x8 operator
without an entry of its own uses its int8 converter (data movement keeps the stored
values at any width). Custom operators npuc lacks come from plugins, keyed the same way by
their custom code (`plugin_converter`).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from npuc import plugin_registry

from . import tflite_float, tflite_int8, tflite_int16, tflite_int16_luts
from .tflite_context import Converter, OpContext, Unsupported
from .tflite_quant import is_16x8

Kind = Literal["float", "int8", "int16x8"]

CONVERTERS: dict[tuple[str, Kind], Converter] = {
    **{(name, "float"): convert for name, convert in tflite_float.FLOAT.items()},
    ("QUANTIZE", "float"): tflite_int8.quantize,
    ("DEQUANTIZE", "float"): tflite_int8.dequantize,
    **{(name, "int8"): convert for name, convert in tflite_int8.INT8.items()},
    **{(name, "int16x8"): convert for name, convert in tflite_int16.INT16X8.items()},
    **{(name, "int16x8"): convert for name, convert in tflite_int16_luts.INT16X8.items()},
}

# Operators whose 16-bit form the input alone decides (an int16 index result is not).
INPUT_DECIDES = frozenset({"ARG_MAX", "ARG_MIN"})


def names(kind: Kind) -> list[str]:
    """The operators the table converts for `kind`, sorted."""
    return sorted(name for name, k in CONVERTERS if k == kind)


def quantized_kind(ctx: OpContext) -> Kind:
    """ "int16x8" for an operator with int16 data, else "int8"."""
    op_type = ctx.op.op_type
    wide = ctx.tensor(0).dtype == np.int16 if op_type in INPUT_DECIDES else is_16x8(ctx)
    return "int16x8" if wide else "int8"


def converter(ctx: OpContext, quantized: bool) -> Converter | None:
    """The converter of `ctx`'s operator for float or quantized data, if there is one."""
    name = ctx.op.op_type
    if not quantized:
        return CONVERTERS.get((name, "float"))
    if (name, "int16x8") in CONVERTERS and quantized_kind(ctx) == "int16x8":
        return CONVERTERS[(name, "int16x8")]
    return CONVERTERS.get((name, "int8"))


def plugin_converter(ctx: OpContext, quantized: bool) -> Converter | None:
    """A plugin's converter of `ctx`'s custom operator for its data (int16x8 falls back to
    int8); None if no plugin provides the custom code."""
    code = ctx.op.op_type.removeprefix("custom:")
    found = plugin_registry.tflite_converters(code)
    if not found:
        return None
    kind: Kind = quantized_kind(ctx) if quantized else "float"
    entry = found.get(kind) or (found.get("int8") if kind == "int16x8" else None)
    if entry is None:
        plugin = next(iter(found.values()))[0].name
        raise Unsupported(f"plugin '{plugin}' converts {', '.join(found)} {code}, not {kind}")
    loaded, convert = entry
    what = f"the converter of TFLite custom op '{code}' ({kind})"
    return plugin_registry.guarded(loaded, convert, what, (Unsupported,))
