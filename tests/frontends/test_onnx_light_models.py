"""The model-zoo graphs shipped in onnx/backend/test/data/light import, verify and compute
the same results as onnxruntime (with random weights in place of their constant ones)."""

from __future__ import annotations

import collections
import os

import numpy as np
import onnx
import pytest
from onnx_models import with_random_weights

from npuc.frontends.onnx import import_onnx
from npuc.runtime.nn_interpreter import run_module

LIGHT = [
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
]
NN_OP = {
    "Conv": "nn.conv2d",
    "BatchNormalization": "nn.batch_norm",
    "Relu": "nn.relu",
    "MaxPool": "nn.max_pool2d",
    "AveragePool": "nn.avg_pool2d",
    "GlobalAveragePool": "nn.global_avg_pool",
    "LRN": "nn.lrn",
    "Gemm": "nn.fully_connected",
    "Softmax": "nn.softmax",
    "Concat": "nn.concat",
    "Transpose": "nn.transpose",
}


def path(ox, name: str) -> str:
    return os.path.join(ox.LIGHT_DIR, f"light_{name}.onnx")


@pytest.mark.parametrize("name", LIGHT)
def test_light_model_imports(ox, name):
    model = onnx.load(path(ox, name))
    module = import_onnx(path(ox, name))
    module.verify()
    initialized = {t.name for t in model.graph.initializer}
    inputs = [vi.name for vi in model.graph.input if vi.name not in initialized]
    assert ox.io_names(module) == (inputs, [vi.name for vi in model.graph.output])
    onnx_counts = collections.Counter(node.op_type for node in model.graph.node)
    nn_counts = collections.Counter(ox.op_names(module))
    for op_type, nn_name in NN_OP.items():
        assert nn_counts[nn_name] == onnx_counts[op_type], op_type
    node_names = {node.name for node in model.graph.node}
    assert {ox.layer(op) for op in ox.nn_ops(module)} <= node_names


# AlexNet, ZFNet and VGG19 hold 60-140 M fully-connected weights: import-only.
NUMERIC = [n for n in LIGHT if n not in ("bvlc_alexnet", "vgg19", "zfnet512")]


@pytest.mark.parametrize("name", NUMERIC)
def test_light_model_matches_onnxruntime(ox, name):
    model = with_random_weights(onnx.load(path(ox, name)), seed=LIGHT.index(name))
    feeds = ox.random_feeds(model, seed=3)
    expected = ox.run_onnxruntime(model, feeds)
    got = run_module(import_onnx(model), feeds)
    assert list(got) == list(expected)
    for key, want in expected.items():
        np.testing.assert_allclose(got[key], want, rtol=1e-3, atol=1e-5, err_msg=key)
