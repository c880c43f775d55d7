"""SoftClip in models: ONNX `com.example::SoftClip` (attribute `limit`, default 1) and the
TFLite custom operator `SoftClip` (custom options: a flexbuffer map with `limit`)."""

from __future__ import annotations

from flatbuffers import flexbuffers
from xdsl.dialects.builtin import FloatAttr, f32
from xdsl.ir import SSAValue

from npuc.plugin_api import NodeContext, OpContext, UnsupportedNode, UnsupportedOperator

from .dialect import SoftClipOp

DOMAIN = "com.example"


def onnx_soft_clip(ctx: NodeContext) -> list[SSAValue]:
    limit = float(ctx.attr("limit", 1.0))
    if not limit > 0:
        raise UnsupportedNode(f"limit must be positive, got {limit}")
    return [ctx.emit(SoftClipOp, [ctx.operand(0)], {"limit": FloatAttr(limit, f32)})]


def tflite_soft_clip(ctx: OpContext) -> SSAValue:
    raw = bytes(ctx.opt("custom_options", b""))
    options = flexbuffers.Loads(raw) if raw else {}
    if not isinstance(options, dict):
        raise UnsupportedOperator("custom options must be a flexbuffer map")
    limit = float(options.get("limit", 1.0))
    if not limit > 0:
        raise UnsupportedOperator(f"limit must be positive, got {limit}")
    return ctx.emit(SoftClipOp, [ctx.value(0)], {"limit": FloatAttr(limit, f32)})
