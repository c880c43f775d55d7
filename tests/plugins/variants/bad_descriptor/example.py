"""A plugin whose descriptor gives a kernel for an op outside its dialect."""

from npuc_example_ops import plugin as complete

from npuc.plugin_api import Plugin

plugin = Plugin(kernels={"nn.relu": complete.kernels["example.soft_clip"]})
