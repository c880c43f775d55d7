"""Writes model.onnx: a small seeded CNN whose activations are the plugin's custom op
`com.example::SoftClip` (conv, SoftClip, strided conv, SoftClip, average pool, gemm).

Re-running this script reproduces the file byte for byte.
"""

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(20)

    def weight(name: str, *shape: int, scale: float = 0.3) -> onnx.TensorProto:
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name
        )

    inits = [
        weight("conv1.w", 8, 3, 3, 3),
        weight("conv1.b", 8, scale=0.1),
        weight("conv2.w", 8, 8, 3, 3, scale=0.2),
        weight("conv2.b", 8, scale=0.1),
        weight("fc.w", 10, 8),
        weight("fc.b", 10, scale=0.1),
        numpy_helper.from_array(np.array([1, -1], np.int64), "flat_shape"),
    ]
    nodes = [
        helper.make_node(
            "Conv", ["image", "conv1.w", "conv1.b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]
        ),
        helper.make_node("SoftClip", ["c1"], ["s1"], name="soft_clip1", domain="com.example"),
        helper.make_node(
            "Conv",
            ["s1", "conv2.w", "conv2.b"],
            ["c2"],
            name="conv2",
            pads=[1, 1, 1, 1],
            strides=[2, 2],
        ),
        helper.make_node(
            "SoftClip", ["c2"], ["s2"], name="soft_clip2", domain="com.example", limit=3.0
        ),
        helper.make_node("GlobalAveragePool", ["s2"], ["g"], name="gap"),
        helper.make_node("Reshape", ["g", "flat_shape"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "soft_clip_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="npuc-example-ops")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    out = Path(__file__).with_name("model.onnx")
    onnx.save(build(), out)
    print(f"wrote {out}")
