"""The stable API for npuc plugins: import what a plugin needs from here (docs/plugins.md).

Everything below keeps its name and meaning across npuc's minor versions; a plugin that
reaches into other npuc modules may break with any release.
"""

from __future__ import annotations

from xdsl.passes import ModulePass

from .diagnostics import KernelError, NpucError
from .dialects import nn, qnn
from .dialects.nn_base import F32Tensor, NNOperation
from .dialects.nn_elementwise import UnaryOperation
from .dialects.nn_shapes import Props, Shape, ShapeError, Shapes
from .dialects.npu_isa import TensorRef
from .dialects.qnn_base import QNNOperation, QTensor, qtype
from .dialects.qnn_elementwise import TableOperation
from .dialects.quant_types import UniformQuantizedType
from .frontends.onnx_graph import NodeContext
from .frontends.onnx_graph import Unsupported as UnsupportedNode
from .frontends.tflite_context import OpContext
from .frontends.tflite_context import Unsupported as UnsupportedOperator
from .integer import dequantize, lut_lookup, quantize
from .passes.npu_lowering.builder import Builder, LoweringError
from .passes.quantization.plugin_ops import QuantizeRequest
from .plugins import Plugin, PluginError, QuantizationRule
from .runtime.kernel_api import Kernel, flag, optional_float, scalar
from .tensors import from_dense, to_dense

__all__ = [
    "Builder",
    "F32Tensor",
    "Kernel",
    "KernelError",
    "LoweringError",
    "ModulePass",
    "NNOperation",
    "NodeContext",
    "NpucError",
    "OpContext",
    "Plugin",
    "PluginError",
    "Props",
    "QNNOperation",
    "QTensor",
    "QuantizationRule",
    "QuantizeRequest",
    "Shape",
    "ShapeError",
    "Shapes",
    "TableOperation",
    "TensorRef",
    "UnaryOperation",
    "UniformQuantizedType",
    "UnsupportedNode",
    "UnsupportedOperator",
    "dequantize",
    "flag",
    "from_dense",
    "lut_lookup",
    "nn",
    "optional_float",
    "qnn",
    "qtype",
    "quantize",
    "scalar",
    "to_dense",
]
