"""Writes examples/tiny_cnn.onnx: a small seeded CNN (conv-BN-relu, depthwise, pool, gemm, softmax).

It is the quick start's example model; re-running this script reproduces the file byte for byte.
"""

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(2026)

    def weight(name: str, *shape: int, scale: float = 0.3) -> onnx.TensorProto:
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name
        )

    inits = [
        weight("conv1.w", 8, 3, 3, 3),
        weight("conv1.b", 8, scale=0.1),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "bn1.scale"),
        weight("bn1.bias", 8, scale=0.1),
        weight("bn1.mean", 8, scale=0.1),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "bn1.var"),
        weight("dw.w", 8, 1, 3, 3),
        weight("pw.w", 16, 8, 1, 1),
        weight("fc.w", 10, 16),
        weight("fc.b", 10, scale=0.1),
        numpy_helper.from_array(np.array([1, -1], np.int64), "flat_shape"),
        numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
        numpy_helper.from_array(np.array(6.0, np.float32), "six"),
    ]
    nodes = [
        helper.make_node(
            "Conv", ["image", "conv1.w", "conv1.b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]
        ),
        helper.make_node(
            "BatchNormalization",
            ["c1", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"],
            ["b1"],
            name="bn1",
        ),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node(
            "MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]
        ),
        helper.make_node("Conv", ["p1", "dw.w"], ["d1"], name="dwconv", group=8, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["d1", "zero", "six"], ["d1r"], name="relu6"),
        helper.make_node("Conv", ["d1r", "pw.w"], ["p2"], name="pwconv"),
        helper.make_node("Relu", ["p2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Reshape", ["g", "flat_shape"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-example"
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    out = Path(__file__).with_name("tiny_cnn.onnx")
    onnx.save(build(), out)
    print(f"wrote {out}")
