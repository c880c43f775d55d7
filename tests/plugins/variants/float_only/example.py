"""The example plugin with its float kernel only: SoftClip stays float, on the host."""

from dataclasses import replace

from npuc_example_ops import plugin as complete

plugin = replace(
    complete,
    kernels={"example.soft_clip": complete.kernels["example.soft_clip"]},
    quantization={},
    lowerings={},
)
