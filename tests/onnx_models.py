"""ONNX model helpers shared by tests and benchmarks (importable: tests/ is on pytest's path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

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
