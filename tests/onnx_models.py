"""ONNX model helpers shared by tests and benchmarks (importable: tests/ is on pytest's path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LIGHT_DIR = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def with_random_weights(model: onnx.ModelProto, seed: int) -> onnx.ModelProto:
    """Replace the ConstantOfShape weights of a light model-zoo graph by seeded random initializers.

    The light graphs ship constant-filled weights; random ones exercise real arithmetic.
    """
    rng = np.random.default_rng(seed)
    shapes = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    kept, weights = [], []
    for node in model.graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in shapes:
            kept.append(node)
            continue
        shape = [int(d) for d in shapes[node.input[0]]]
        if len(shape) >= 2:
            value = rng.standard_normal(shape, dtype=np.float32)
            value *= np.float32(1 / np.sqrt(np.prod(shape[1:])))
        else:
            value = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        weights.append(numpy_helper.from_array(value, node.output[0]))
    del model.graph.node[:]
    model.graph.node.extend(kept)
    used = {name for node in kept for name in node.input}
    unused = [t for t in model.graph.initializer if t.name not in used]
    for tensor in unused:
        model.graph.initializer.remove(tensor)
    # Old graphs also list initializers as graph inputs.
    dropped = {t.name for t in unused}
    stale_inputs = [i for i in model.graph.input if i.name in dropped]
    for value in stale_inputs:
        model.graph.input.remove(value)
    model.graph.initializer.extend(weights)
    return model


def random_init(rng: np.random.Generator, name: str, shape: list[int], scale: float = 0.3):
    """A float32 initializer of normal values times `scale`."""
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def float_graph(nodes, inits, x_shape, y_shape, opset: int = 13) -> onnx.ModelProto:
    """A checked single-input ("x"), single-output ("y") float model."""
    graph = helper.make_graph(
        nodes,
        "float",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8 if opset < 21 else 10
    )
    onnx.checker.check_model(model)
    return model


def conv3x3(
    rng: np.random.Generator, k: int, source: str, output: str, c_in: int, c_out: int
) -> tuple[onnx.NodeProto, list[onnx.TensorProto]]:
    """Node `c{k}`: a same-padded 3x3 convolution of `source` into `output` with random
    weights `w{k}` and bias `b{k}`; the node and its two initializers."""
    inits = [random_init(rng, f"w{k}", [c_out, c_in, 3, 3]), random_init(rng, f"b{k}", [c_out])]
    node = helper.make_node(
        "Conv", [source, f"w{k}", f"b{k}"], [output], name=f"c{k}", pads=[1] * 4
    )
    return node, inits


def skip_chain(seed: int = 5) -> onnx.ModelProto:
    """x -> four 3x3 convolutions of 8 channels on 24 x 24 -> + x: the input stays live
    across every layer."""
    rng = np.random.default_rng(seed)
    nodes, inits, x = [], [], "x"
    for k in range(4):
        node, weights = conv3x3(rng, k, x, f"t{k}", 8, 8)
        nodes.append(node)
        inits += weights
        x = f"t{k}"
    nodes.append(helper.make_node("Add", ["x", x], ["y"], name="add"))
    return float_graph(nodes, inits, [1, 8, 24, 24], [1, 8, 24, 24])


def residual_cnn(opset: int = 13) -> onnx.ModelProto:
    """conv+relu, max pool, a residual add, 1x1 conv, concat, sigmoid gate, avg pool, GAP, fc."""
    rng = np.random.default_rng(0)
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        n("Relu", ["c1"], ["r1"], name="relu1"),
        n("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        n("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        n("Relu", ["c2"], ["r2"], name="relu2"),
        n("Add", ["r2", "p1"], ["a"], name="add"),
        n("Conv", ["a", "w3", "b3"], ["c3"], name="conv3"),
        n("Concat", ["c3", "a"], ["cat"], name="concat", axis=1),
        n("Sigmoid", ["cat"], ["sg"], name="sig"),
        n("Mul", ["sg", "cat"], ["m"], name="mul"),
        n("AveragePool", ["m"], ["ap"], name="avgpool", kernel_shape=[2, 2], strides=[2, 2]),
        n("GlobalAveragePool", ["ap"], ["g"], name="gap"),
        n("Flatten", ["g"], ["f"], name="flatten"),
        n("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1),
    ]
    inits = [
        random_init(rng, "w1", [8, 3, 3, 3]), random_init(rng, "b1", [8], 0.1),
        random_init(rng, "w2", [8, 8, 3, 3], 0.2), random_init(rng, "b2", [8], 0.1),
        random_init(rng, "w3", [4, 8, 1, 1]), random_init(rng, "b3", [4], 0.1),
        random_init(rng, "wf", [10, 12]), random_init(rng, "bf", [10], 0.1),
    ]  # fmt: skip
    return float_graph(nodes, inits, [1, 3, 8, 8], [1, 10], opset)
