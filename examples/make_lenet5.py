"""Writes examples/lenet5.onnx: a LeNet-5-style MNIST network with seeded random weights.

conv 5x5x20, max-pool 2, conv 5x5x50, max-pool 2, fc 500, relu, fc 10, softmax on a
1x1x28x28 input (Caffe's LeNet). It is the memory-planning example of
docs/memory-planning.md; re-running this script reproduces the file byte for byte.
"""

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(5)

    def weight(name: str, *shape: int) -> onnx.TensorProto:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        scale = np.sqrt(2.0 / fan_in) if len(shape) > 1 else 0.05
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name
        )

    inits = [
        weight("conv1.w", 20, 1, 5, 5),
        weight("conv1.b", 20),
        weight("conv2.w", 50, 20, 5, 5),
        weight("conv2.b", 50),
        weight("fc1.w", 500, 800),
        weight("fc1.b", 500),
        weight("fc2.w", 10, 500),
        weight("fc2.b", 10),
    ]
    pool = {"kernel_shape": [2, 2], "strides": [2, 2]}
    nodes = [
        helper.make_node("Conv", ["image", "conv1.w", "conv1.b"], ["c1"], name="conv1"),
        helper.make_node("MaxPool", ["c1"], ["p1"], name="pool1", **pool),
        helper.make_node("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], name="conv2"),
        helper.make_node("MaxPool", ["c2"], ["p2"], name="pool2", **pool),
        helper.make_node("Flatten", ["p2"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc1.w", "fc1.b"], ["f1"], name="fc1", transB=1),
        helper.make_node("Relu", ["f1"], ["r1"], name="relu1"),
        helper.make_node("Gemm", ["r1", "fc2.w", "fc2.b"], ["logits"], name="fc2", transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "lenet5",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 1, 28, 28])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-example"
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    out = Path(__file__).with_name("lenet5.onnx")
    onnx.save(build(), out)
    print(f"wrote {out}")
