"""npuc's example plugin (docs/plugins.md): the SoftClip activation end to end, a pass that
hardens it into a clip, and a target."""

from __future__ import annotations

from pathlib import Path

from npuc.plugin_api import Plugin, QuantizationRule

from .frontend import DOMAIN, onnx_soft_clip, tflite_soft_clip
from .lowering import lower_qsoft_clip
from .quantization import quantize_soft_clip
from .semantics import (
    qsoft_clip_host_macs,
    qsoft_clip_kernel,
    soft_clip_host_macs,
    soft_clip_kernel,
)


def _dialect():
    from .dialect import Example

    return Example


def _harden_pass():
    from .harden import HardenSoftClipPass

    return HardenSoftClipPass


plugin = Plugin(
    description="SoftClip (limit * tanh(x / limit)): ONNX com.example::SoftClip, TFLite "
    "custom SoftClip; an 8-bit table, lowered to the NPU's lut instruction",
    dialect=_dialect,
    onnx_converters={(DOMAIN, "SoftClip"): onnx_soft_clip},
    tflite_converters={("SoftClip", "float"): tflite_soft_clip},
    kernels={"example.soft_clip": soft_clip_kernel, "example.qsoft_clip": qsoft_clip_kernel},
    quantization={"example.soft_clip": QuantizationRule("example.qsoft_clip", quantize_soft_clip)},
    lowerings={"example.qsoft_clip": lower_qsoft_clip},
    host_costs={
        "example.soft_clip": soft_clip_host_macs,
        "example.qsoft_clip": qsoft_clip_host_macs,
    },
    passes={"example-harden-soft-clip": _harden_pass},
    targets=[Path(__file__).with_name("example-npu.toml")],
)
